"""The daemon's notifications: what the box tells the user while the laptop is closed.

The laptop pushes its settings with "notify_config" after every connect (channel URLs,
quiet hours, the templates in the user's language, the box's name); they are stored 0600
under ``<state dir>/notify`` (notify_queue.Outbox: channels.json, the queue, dedup state)
and ``settings.json``, so a daemon restart keeps them and the queued messages. Events come
from the job watch (watch_loop: finished, crashed, hung, checkpoint stale), from autostop
(countdown started, done) and from the idle meter here (GPUs idle while billing). Each is
rendered (notify_events), queued once (the Outbox's dedup key), pushed to connected apps
as "notify_event", and sent by one pump thread: urllib blocks, the event loop must not.

Secrets: channel URLs are never logged, echoed or put in a status; a channel is named by
its redacted URL (channel_urls.redact_url) or its digest (notify_queue.channel_id).
Budget and provider-balance events come from budget_watch, from the billing facts the
laptop pushes ("notify_billing"). The laptop's `[notify] events` filter arrives with the
config: a kind not listed is never queued. Stdlib only.
"""

import logging
import os
import socket
import threading
import time

from remote_probe.notify import events as notify_events, queue as notify_queue
from remote_probe.wire.channel_requests import validate_url
from remote_probe.wire.channel_urls import NotifyURLError, redact_url, scrub, secrets_of

log = logging.getLogger("gputui.probe")

IDLE_NOTIFY_S = 900.0  # GPUs idle this long while billing: say so (once per idle spell)
SETTINGS = "settings.json"
MAX_WAIT_S = 30.0


def _problem(url, exc):
    """What is wrong with a channel URL, without its secrets."""
    try:
        shown, secrets = redact_url(url), secrets_of(url)
    except (NotifyURLError, ValueError):
        shown, secrets = (url.split("://", 1)[0] + "://…" if "://" in url else "…"), []
    return scrub("%s: %s" % (shown, exc), list(secrets) + [url])


def duration_minutes(seconds):
    return "%d" % max(0, round((seconds or 0) / 60.0))


def _events_filter(events):
    """The kinds the user wants sent; None (the key left out) is every kind."""
    if not isinstance(events, (list, tuple)):
        return None
    return [k for k in events if isinstance(k, str)]


def templates_of(pushed):
    """The laptop's {kind: {"title", "body"}} -> notify_events' {kind: (title, body)}."""
    out = {}
    for kind, t in (pushed or {}).items():
        if isinstance(t, dict) and isinstance(t.get("title"), str) and isinstance(t.get("body"), str):
            out[kind] = (t["title"], t["body"])
        elif isinstance(t, (list, tuple)) and len(t) == 2:
            out[kind] = tuple(t)
    return out


class Notifier:
    def __init__(self, state_dir, push=None, clock=time.time, send=None):
        self.dir = os.path.join(state_dir, "notify")
        self.clock = clock
        self.push = push  # callable(msg) on any thread; the daemon hands it to the loop
        self.outbox = notify_queue.Outbox(self.dir, send=send, clock=clock)
        self.lock = threading.Lock()  # the Outbox: the pump thread and configure/test
        self.wake = threading.Event()
        self.pending = []  # events from the loop, queued by the pump thread
        self.stopped = False
        self.settings = notify_queue._load_json(os.path.join(self.dir, SETTINGS), {}) or {}
        self.idle_since = None
        self.idle_told = False
        self.thread = None

    # -- settings --------------------------------------------------------------------
    @property
    def box(self):
        return self.settings.get("box") or socket.gethostname()

    @property
    def enabled(self):
        return self.settings.get("enabled", True) is not False

    def can_send(self):
        """Notifications on and at least one channel: an event now would be queued."""
        return self.enabled and bool(self.outbox.channels)

    def watch_settings(self):
        return dict(self.settings.get("watch") or {})

    def configure(self, msg):
        """A notify_config request -> its reply (redacted channels, problems)."""
        urls, shown, problems = [], [], []
        for url in msg.get("channels") or []:
            why = validate_url(url) if isinstance(url, str) else "not a URL"
            if why:
                problems.append(_problem(url, why))
                continue
            urls.append(url)
            shown.append(redact_url(url))
        settings = {"templates": msg.get("templates") or {}, "causes": msg.get("causes") or {},
                    "box": msg.get("box") if isinstance(msg.get("box"), str) else None,
                    "enabled": msg.get("enabled", True) is not False,
                    "watch": msg.get("watch") or {}}
        with self.lock:
            self.outbox.configure(urls, msg.get("quiet"), _events_filter(msg.get("events")))
            notify_queue._dump(os.path.join(self.dir, SETTINGS), settings)
            self.settings = settings
        log.info("notification settings: %d channel(s), %d problem(s)", len(urls), len(problems))
        self.wake.set()
        return {"channels": shown, "problems": problems}

    def channels(self):
        with self.lock:
            return [redact_url(u) for u in self.outbox.channels.values()]

    def test(self):
        """A test message through every channel now (not queued); -> results."""
        with self.lock:
            urls = list(self.outbox.channels.values())
        results = []
        for url in urls:
            shown = redact_url(url)
            title, body = self.render("test", {"box": self.box, "channel": shown})
            res = self.outbox._send(url, title, body, "info")
            results.append({"channel": shown, "ok": bool(res.ok),
                            "reason": scrub(str(res.reason), secrets_of(url) + [url])})
        log.info("notification test: %d of %d channel(s) ok",
                 sum(1 for r in results if r["ok"]), len(results))
        return {"results": results}

    def render(self, kind, fields):
        return notify_events.render(kind, dict(fields, box=fields.get("box") or self.box),
                                    templates_of(self.settings.get("templates")),
                                    self.settings.get("causes"))

    # -- events (any thread) -------------------------------------------------------------
    def emit(self, kind, fields, job=None, run=None):
        """Queue one event; the pump thread renders, dedups, pushes and sends it."""
        with self.lock:
            self.pending.append((kind, dict(fields), job, run, self.clock()))
        self.wake.set()

    def observe_idle(self, t, idle, autostop_status):
        """Each sample: GPUs idle while billing for IDLE_NOTIFY_S -> one "idle" event per spell."""
        if not idle:
            self.idle_since = None
            self.idle_told = False
            return
        if self.idle_since is None:
            self.idle_since = t
        after = self.watch_settings().get("idle_notify_s") or IDLE_NOTIFY_S
        if self.idle_told or t - self.idle_since < after:
            return
        self.idle_told = True
        armed = (autostop_status or {}).get("armed") or {}
        if armed.get("idle_seconds"):
            left = max(0.0, armed["idle_seconds"] - (t - self.idle_since))
            autostop = "Autostop releases the box in %s min." % duration_minutes(left)
        else:
            autostop = "Autostop is not armed for idle GPUs."
        self.emit("idle", {"idle_minutes": duration_minutes(t - self.idle_since),
                           "autostop": autostop}, run=int(self.idle_since))

    def on_autostop(self, event):
        """Autostop's events (its listeners): countdown started, release done."""
        kind = event.get("event")
        if kind == "grace":
            self.emit("autostop_countdown", {"minutes": duration_minutes(event.get("seconds")),
                                             "reason": event.get("reason")},
                      run=int(event.get("t") or 0))
        elif kind == "fired":
            code = event.get("exit")
            self.emit("autostop_done", {"reason": "%s (exit %s)" % (event.get("reason"), code)},
                      run=int(event.get("t") or 0))
        elif kind == "release_unverified":  # released, and still up on this boot (release_verify)
            self.emit("release_unverified", {"at": event.get("at"), "evidence": event.get("evidence")},
                      run=int(event.get("ran_at") or 0))

    # -- the pump thread -----------------------------------------------------------------
    def start(self):
        self.thread = threading.Thread(target=self._run, name="notify-pump", daemon=True)
        self.thread.start()

    def stop(self):
        self.stopped = True
        self.wake.set()

    def _run(self):
        while not self.stopped:
            try:
                wait = self.step()
            except Exception:  # a bug here must not end notifications for the night
                log.exception("notification pump failed")
                wait = MAX_WAIT_S
            self.wake.wait(wait)
            self.wake.clear()

    def step(self):
        """Queue what came in, send what is due; -> seconds until the next try."""
        with self.lock:
            pending, self.pending = self.pending, []
        for kind, fields, job, run, t in pending:
            title, body = self.render(kind, fields)
            key = notify_events.event_key(kind, self.box, job, run)
            with self.lock:
                repeat = key in self.outbox.sent_keys
                queued = self.enabled and self.outbox.enqueue(kind, key, title, body)
            log.info("notification %s%s: %s", kind, " for %s" % job if job else "",
                     "queued" if queued else "not queued (sent before, disabled or no channel)")
            if self.push is not None and not repeat:
                self.push({"type": "notify_event", "kind": kind, "job": job, "title": title,
                           "body": body, "t": round(t, 3), "sent": False})
        with self.lock:
            results = self.outbox.pump()
            nxt = self.outbox.next_wakeup()
        for kind, cid, ok, reason in results:
            log.info("notification %s via channel %s: %s", kind, cid,
                     "sent" if ok else "failed (%s)" % reason)
        if nxt is None:
            return MAX_WAIT_S
        return max(0.2, min(MAX_WAIT_S, nxt - self.clock()))
