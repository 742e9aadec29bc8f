"""The daemon's outbox: one message per event, rate-limited per channel, retried with
exponential backoff while the box's network is down, held during the user's quiet hours,
and kept on disk so a daemon restart loses nothing.

Decisions are plain functions of (state, now) — ``is_quiet``, ``quiet_allows``,
``backoff_delay``, ``rate_wait``, ``next_try`` — tested with a fake clock; ``Outbox``
applies them to files under a private directory.

Quiet hours (the user's choice; default: none): while quiet, only URGENT_KINDS go out
(a crash, a hang, the budget spent, the provider balance about to run out: each costs
money or the night's training if it waits); everything else is held and delivered
when the quiet hours end. The window is in the user's local time, given as a UTC offset
because rented boxes usually run in UTC and may lack tz data.

Files: the directory is 0700 and must be ours and not a symlink; every file is written
0600 through a fresh temporary file opened O_CREAT|O_EXCL|O_NOFOLLOW and renamed into
place; reads use O_NOFOLLOW and check the owner. Channel URLs (secrets) live in one
file, ``channels.json``; queued messages name channels by a digest, never by URL.
Stdlib only (the probe runs on Python 3.8).
"""

import errno
import hashlib
import json
import os
import stat
import time

from remote_probe.wire.notify_kinds import KINDS, URGENT_KINDS, parse_hhmm  # noqa: F401

# ---- policy (seconds) ---------------------------------------------------------------
DEDUP_KEEP_S = 7 * 86400       # an event key sent once is not sent again for this long
BACKOFF_BASE_S = 15.0          # first retry after this, doubling each failure...
BACKOFF_FACTOR = 2.0
BACKOFF_CAP_S = 1800.0         # ...up to this
GIVE_UP_AFTER_S = 24 * 3600.0  # a message still undelivered after this is dropped
MAX_QUEUED = 500               # beyond this the oldest non-urgent messages are dropped
DEFAULT_RATE = ((6, 600.0),)   # per channel: at most 6 messages in 10 minutes
SCHEME_RATES = {
    # AutoDL's documented limits for its WeChat message API: 5 a minute, 50 a day.
    "autodl": ((5, 60.0), (50, 86400.0)),
    # ServerChan's free tier allows 5 a day; keep one slot for the crash that matters.
    "schan": ((5, 86400.0),),
}



# ---- pure decisions -----------------------------------------------------------------

def is_quiet(now, quiet):
    """Whether `now` (epoch seconds) falls in the quiet window. `quiet` is a dict
    {"start": "23:00", "end": "07:30", "utc_offset_minutes": 480} or None. A window that
    ends before it starts wraps past midnight; start == end means no quiet hours."""
    if not quiet:
        return False
    start, end = parse_hhmm(quiet.get("start")), parse_hhmm(quiet.get("end"))
    if start is None or end is None or start == end:
        return False
    offset = quiet.get("utc_offset_minutes") or 0
    minute = int(((now / 60.0) + offset) % (24 * 60))
    if start < end:
        return start <= minute < end
    return minute >= start or minute < end


def quiet_ends(now, quiet):
    """Epoch seconds when the current quiet window ends (now if not quiet)."""
    if not is_quiet(now, quiet):
        return now
    end = parse_hhmm(quiet.get("end"))
    offset = quiet.get("utc_offset_minutes") or 0
    local_minute = ((now / 60.0) + offset) % (24 * 60)
    wait = (end - local_minute) % (24 * 60)
    return now + wait * 60.0


def quiet_allows(kind, quiet):
    """Kinds that go through quiet hours: URGENT_KINDS unless the user listed others."""
    allow = (quiet or {}).get("allow")
    if isinstance(allow, (list, tuple)):
        return kind in allow or kind == "test"
    return kind in URGENT_KINDS


def backoff_delay(failures):
    """Seconds before retry number `failures` (1-based): 15, 30, 60, ... capped at 30 min."""
    if failures <= 0:
        return 0.0
    return min(BACKOFF_CAP_S, BACKOFF_BASE_S * (BACKOFF_FACTOR ** (failures - 1)))


def rate_wait(sent_times, now, limits):
    """Seconds until one more message fits every (count, per_seconds) limit, given the
    times messages went out on this channel; 0 when it fits now."""
    wait = 0.0
    for count, per in limits:
        recent = sorted(t for t in sent_times if t > now - per)
        if len(recent) >= count:
            wait = max(wait, recent[len(recent) - count] + per - now)
    return max(0.0, wait)


def limits_for(scheme):
    return SCHEME_RATES.get(scheme, DEFAULT_RATE)


def next_try(msg, channel, now, quiet, sent_times, scheme=None):
    """When delivery of `msg` on `channel` may be tried (epoch seconds), or None when it
    never will (delivered, or given up)."""
    state = msg["channels"].get(channel)
    if state is None or state.get("done"):
        return None
    if now - msg["created"] > GIVE_UP_AFTER_S:
        return None
    at = max(now, state.get("retry_at") or 0.0)
    if not quiet_allows(msg["kind"], quiet):
        at = max(at, quiet_ends(at, quiet))
    return at + rate_wait(sent_times, at, limits_for(scheme))


def channel_id(url):
    """A stable name for a channel URL that reveals nothing of it."""
    return hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]


def prune_keys(sent_keys, now):
    return {k: t for k, t in sent_keys.items() if now - t < DEDUP_KEEP_S}


# ---- private files --------------------------------------------------------------------

def _check_dir(path):
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise OSError(errno.ENOTDIR, "not a private directory", path)
    if st.st_uid != os.getuid():
        raise OSError(errno.EPERM, "owned by another user", path)
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)


def write_private(path, data):
    """Write bytes to `path` as 0600: a new temp file (O_EXCL|O_NOFOLLOW) renamed over it,
    so a symlink planted at either name is never followed."""
    tmp = "%s.tmp%d" % (path, os.getpid())
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def read_private(path, limit=1 << 20):
    """Bytes of a regular file we own (never through a symlink); None if absent or not ours."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
            return None
        return os.read(fd, limit)
    finally:
        os.close(fd)


def _load_json(path, default):
    raw = read_private(path)
    if raw is None:
        return default
    try:
        return json.loads(raw.decode("utf-8"))
    except ValueError:
        return default


def _dump(path, obj):
    write_private(path, json.dumps(obj, sort_keys=True).encode("utf-8"))


# ---- the outbox ---------------------------------------------------------------------

class Outbox:
    """Messages waiting to go out, on disk under `directory`.

    ``send(url, title, body, kind)`` returns an object with ``ok`` and ``retryable``
    (notify_send.send); ``clock`` returns epoch seconds. Both injectable for tests."""

    def __init__(self, directory, send=None, clock=time.time):
        self.dir = directory
        self.clock = clock
        if send is None:
            from remote_probe.notify.send import send
        self._send = send
        _check_dir(directory)
        _check_dir(os.path.join(directory, "queue"))
        self.channels = {}   # id -> url
        self.quiet = None
        self.events = None
        self.sent_keys = {}
        self.sent_times = {}  # channel id -> [epoch seconds]
        self.last_errors = {}  # channel id -> reason of the last failure (no secrets)
        self._load()

    # -- persistence
    def _path(self, *names):
        return os.path.join(self.dir, *names)

    def _load(self):
        conf = _load_json(self._path("channels.json"), {})
        urls = conf.get("urls") if isinstance(conf, dict) else None
        self.channels = {channel_id(u): u for u in urls or [] if isinstance(u, str)}
        self.quiet = conf.get("quiet") if isinstance(conf, dict) else None
        events = conf.get("events") if isinstance(conf, dict) else None
        self.events = events if isinstance(events, list) else None
        state = _load_json(self._path("state.json"), {})
        now = self.clock()
        self.sent_keys = prune_keys(dict(state.get("sent_keys") or {}), now)
        self.sent_times = {k: [t for t in v if now - t < 86400]
                           for k, v in (state.get("sent_times") or {}).items()}
        self.messages = {}
        for name in sorted(os.listdir(self._path("queue"))):
            if not name.endswith(".json"):
                continue
            msg = _load_json(self._path("queue", name), None)
            if isinstance(msg, dict) and isinstance(msg.get("channels"), dict) and "id" in msg:
                self.messages[msg["id"]] = msg
            else:
                self._remove(name[:-5])  # unreadable: dropping it beats retrying forever

    def _save_state(self):
        _dump(self._path("state.json"), {"sent_keys": self.sent_keys, "sent_times": self.sent_times})

    def _save(self, msg):
        _dump(self._path("queue", msg["id"] + ".json"), msg)

    def _remove(self, msg_id):
        self.messages.pop(msg_id, None)
        try:
            os.unlink(self._path("queue", msg_id + ".json"))
        except FileNotFoundError:
            pass

    # -- configuration (pushed by the laptop)
    def configure(self, urls, quiet=None, events=None):
        """The laptop's settings (tui/core/notify/settings.py NotifySettings.wire()):
        channel URLs, quiet hours, and the event kinds wanted (None: all)."""
        urls = [u for u in urls if isinstance(u, str)]
        events = list(events) if isinstance(events, (list, tuple)) else None
        _dump(self._path("channels.json"), {"urls": urls, "quiet": quiet, "events": events})
        self.channels = {channel_id(u): u for u in urls}
        self.quiet = quiet
        self.events = events

    # -- events
    def enqueue(self, kind, key, title, body):
        """Queue one message for every channel; False when this event key went out (or
        is queued) already, or there is no channel."""
        now = self.clock()
        if not self.channels or key in self.sent_keys:
            return False
        if self.events is not None and kind not in self.events and kind != "test":
            return False
        if any(m["key"] == key for m in self.messages.values()):
            return False
        msg_id = "%d-%s" % (int(now * 1000), hashlib.sha256(key.encode("utf-8")).hexdigest()[:8])
        msg = {"id": msg_id, "key": key, "kind": kind, "title": title, "body": body,
               "created": now, "channels": {c: {"failures": 0} for c in self.channels}}
        self.messages[msg_id] = msg
        self._save(msg)
        self.sent_keys[key] = now
        self._save_state()
        self._trim()
        return True

    def _trim(self):
        if len(self.messages) <= MAX_QUEUED:
            return
        order = sorted(self.messages.values(),
                       key=lambda m: (m["kind"] in URGENT_KINDS, m["created"]))
        for msg in order[:len(self.messages) - MAX_QUEUED]:
            self._remove(msg["id"])

    def _scheme(self, cid):
        url = self.channels.get(cid, "")
        return url.split("://", 1)[0].lower() if "://" in url else None

    def due(self, now=None):
        """(message, channel id) pairs that may be tried now, oldest first."""
        now = self.clock() if now is None else now
        out = []
        for msg in sorted(self.messages.values(), key=lambda m: m["created"]):
            for cid in msg["channels"]:
                if cid not in self.channels:
                    continue
                at = next_try(msg, cid, now, self.quiet, self.sent_times.get(cid, []), self._scheme(cid))
                if at is not None and at <= now:
                    out.append((msg, cid))
        return out

    def next_wakeup(self, now=None):
        """Earliest time anything may be tried (None when nothing waits)."""
        now = self.clock() if now is None else now
        times = [next_try(m, c, now, self.quiet, self.sent_times.get(c, []), self._scheme(c))
                 for m in self.messages.values() for c in m["channels"] if c in self.channels]
        times = [t for t in times if t is not None]
        return min(times) if times else None

    def pump(self):
        """Try everything due now; returns [(kind, channel id, ok, reason)]."""
        results = []
        for msg, cid in self.due():
            now = self.clock()
            # The rate limit counts this message even if it is sent in the same pump.
            if rate_wait(self.sent_times.get(cid, []), now, limits_for(self._scheme(cid))) > 0:
                continue
            res = self._send(self.channels[cid], msg["title"], msg["body"], _notify_type(msg["kind"]))
            state = msg["channels"][cid]
            if res.ok:
                state["done"] = True
                self.sent_times.setdefault(cid, []).append(now)
                self.last_errors.pop(cid, None)
            else:
                self.last_errors[cid] = res.reason
                state["failures"] = state.get("failures", 0) + 1
                if res.retryable:
                    state["retry_at"] = now + backoff_delay(state["failures"])
                else:
                    state["done"] = True
                    state["error"] = res.reason
            results.append((msg["kind"], cid, bool(res.ok), res.reason))
            if all(s.get("done") for c, s in msg["channels"].items() if c in self.channels):
                self._remove(msg["id"])
            else:
                self._save(msg)
        # Given up (too old) or channels removed from the config: drop.
        now = self.clock()
        for msg in list(self.messages.values()):
            live = [c for c in msg["channels"] if c in self.channels]
            if not live or now - msg["created"] > GIVE_UP_AFTER_S:
                self._remove(msg["id"])
        if results:
            self._save_state()
        return results


def _notify_type(kind):
    if kind in ("crashed", "hung", "budget_100", "balance_low", "clock", "release_unverified"):
        return "failure"
    if kind in ("finished", "autostop_done"):
        return "success"
    if kind in ("idle", "autostop_countdown", "budget_80", "checkpoint_stale"):
        return "warning"
    return "info"
