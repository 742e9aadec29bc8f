"""The daemon's watch, wired: the job watch (watch_loop), the notifier (watch_notify) and
autostop's inputs from them, behind two calls the daemon makes, so daemon.py stays its
lifetime and sampling loop.

- ``on_sample(sample)`` every tick, on the event loop: GPU history for the job watch,
  the idle rule for this sample (idle_rules: utilization, or no compute process where
  utilization is not reported), autostop's observation (hung GPUs, "release when this
  job ends", a job that just appeared), and the idle-while-billing notice.
- ``on_scan(tmux_status, scan, own_pids)`` with each jobs scan, in the daemon's tmux
  thread: judge every job, hand transitions to the notifier, -> the "watch" rows.
- ``on_clock(t)`` every tick, GPU error or not (the bill runs on): the budget watch's
  events (budget_watch: 80 % / 100 % of the budget, balance low) to the notifier; the
  clocks (clocks.py: a spot/preemption notice, the balance running out): one "clock"
  notification each, and on a new spot notice the watch setting ``save_signal`` sent to
  every running job's pid.
"""

import logging
import os
import signal

from remote_probe import procfs
from remote_probe.notify import queue as notify_queue
from remote_probe.watch.budget_watch import BudgetWatch, short_of_money
from remote_probe.watch.budget_watch import spent as budget_spent
from remote_probe.watch.clocks import ClockWatch, at_words, left_words
from remote_probe.autostop.idle_rules import idle_verdict
from remote_probe.watch.loop import OWN_MARKERS, JobWatch, gpu_inputs
from remote_probe.tmux_control import SHELLS
from remote_probe.notify.notifier import Notifier
from remote_probe.watch.scope import is_own, own_scope
from remote_probe.wire import money

log = logging.getLogger("gputui.probe")


class BoxWatch:
    def __init__(self, state_dir, autostop, interval=1.0, push=None):
        # A tmux server this daemon starts inherits its signal mask: with SIGCHLD blocked
        # (started under `timeout`, some init shims) tmux never reaps a pane's process and
        # a finished pane never shows its exit status.
        if hasattr(signal, "pthread_sigmask"):
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGCHLD])
        self.autostop = autostop
        self.jobs = JobWatch()
        self.push = push  # callable(msg) on the event loop
        self.loop = None
        self.rows = []
        try:
            self.notifier = Notifier(state_dir, push=self._push_threadsafe)
        except OSError as exc:  # a state dir we cannot use privately: no notifications
            log.warning("notifications off: %s", exc)
            self.notifier = None
        # the billing facts live beside the channels: private, kept across restarts
        self.budget = BudgetWatch(self.notifier.dir) if self.notifier is not None else None
        self.clock_watch = ClockWatch(state_dir)
        self.clocks_told = set()  # clock keys notified (a spot notice: its signal sent too)
        # spot notice key -> what the save signal did; kept, so a restarted daemon signals once
        self.clocks_signalled = self._load_signalled()
        self.apply_settings()
        autostop.sample_s = interval
        autostop.appeared_probe = self.newest_job_start
        if self.notifier is not None:
            autostop.listeners.append(self.notifier.on_autostop)

    def apply_settings(self):
        watch = self.notifier.watch_settings() if self.notifier else {}
        self.jobs.configure(watch.get("hung_after_s"), watch.get("checkpoint_stale_s"),
                            watch.get("stall_min_s"))

    def start(self, loop):
        self.loop = loop
        if self.notifier is not None:
            self.notifier.start()
        self.clock_watch.start()

    def stop(self):
        if self.notifier is not None:
            self.notifier.stop()
        self.clock_watch.stop()

    def _push_threadsafe(self, msg):
        if self.loop is not None and self.push is not None:
            self.loop.call_soon_threadsafe(self.push, msg)

    # -- each tick --------------------------------------------------------------------
    def on_sample(self, sample, inventory):
        self.jobs.observe_sample(sample, inventory)
        gpus = gpu_inputs(sample)
        hung = self.jobs.hung_gpus()
        armed = self.autostop.armed or {}
        target = armed.get("when_job_done")
        self.autostop.observe(
            None, None, t=sample["t"], gpus=gpus, hung_gpus=hung,
            job_done_since=self.jobs.job_done_since(target) if target else None,
            other_jobs=self.jobs.other_gpu_jobs(target) if target else False,
            appeared=self.jobs.newest_start(),
            budget_spent=bool(self.budget) and budget_spent(self.budget.facts, sample["t"]))
        if self.notifier is not None:
            idle, _rule = idle_verdict(gpus, armed.get("threshold", 5.0), hung,
                                       bool(armed.get("hung_counts_idle")))
            self.notifier.observe_idle(sample["t"], idle and bool(gpus), self.autostop.status())

    def on_clock(self, t):
        self.tell_clocks(t)
        # Nothing is judged told while there is no channel to tell it through (the billing
        # facts may come in before the channels do): a level reached meanwhile goes out then.
        if self.budget is None or self.notifier is None or not self.notifier.can_send():
            return
        for kind, fields, run in self.budget.check(t):
            self.notifier.emit(kind, fields, run=run)

    # -- the clocks (clocks.py) ------------------------------------------------------------
    def clocks(self, t):
        facts = self.budget.facts if self.budget is not None else None
        return self.clock_watch.clocks(t, facts)

    def tell_clocks(self, t):
        """A new spot notice: the save signal to each running job (once); each clock one
        urgent "clock" notification, once there is a channel to tell it through."""
        for c in self.clocks(t):
            key = "%s:%s:%d" % (c["kind"], c["source"], int(c["at"]))
            if c["kind"] == "balance_zero":
                if c["seconds_left"] > BALANCE_NOTIFY_S:
                    continue
                key = "balance_zero:%d" % int((self.budget.facts or {}).get("start") or 0)
            if key in self.clocks_told:
                continue
            if c["kind"] == "spot_notice":
                if key not in self.clocks_signalled:
                    self.clocks_signalled[key] = self.send_save_signal()
                    self._save_signalled()
                c["saved"] = self.clocks_signalled[key]
            if self.notifier is None or not self.notifier.can_send():
                continue
            self.clocks_told.add(key)
            self.notifier.emit("clock", {"clock": c["what"], "left": left_words(c["seconds_left"]),
                                         "at": at_words(c["at"]), "source": c["source"],
                                         "action": clock_action(c)}, run=key)

    def _signalled_path(self):
        return os.path.join(self.notifier.dir, CLOCKS_FILE) if self.notifier is not None else None

    def _load_signalled(self):
        path = self._signalled_path()
        kept = notify_queue._load_json(path, {}) if path else {}
        return {k: v for k, v in kept.items() if isinstance(k, str)} if isinstance(kept, dict) else {}

    def _save_signalled(self):
        path = self._signalled_path()
        if path:
            try:
                notify_queue._dump(path, dict(list(self.clocks_signalled.items())[-50:]))
            except OSError as exc:
                log.warning("clock state not kept: %s", exc)

    def send_save_signal(self):
        """The watch setting save_signal (e.g. "USR1") to every running job's pid ->
        what was done, in words (None without the setting)."""
        name = (self.notifier.watch_settings().get("save_signal") if self.notifier else None)
        if not name:
            return None
        name = str(name).upper().replace("SIG", "", 1)
        signum = getattr(signal, "SIG" + name, None)
        if name not in SAVE_SIGNALS or not isinstance(signum, int):  # never KILL or STOP
            return "save_signal %s is not one gputui sends (%s)." % (name, ", ".join(SAVE_SIGNALS))
        done = []
        for row in self.jobs.rows():
            pid = row.get("pid")
            if not pid or row.get("state") not in ("running", "hung", "waiting"):
                continue
            try:
                os.kill(pid, signum)
                done.append("%s (pid %d)" % (row.get("name") or row.get("id"), pid))
            except OSError as exc:
                log.warning("save signal to pid %s: %s", pid, exc)
        log.info("clock: SIG%s sent to %d job(s)", name, len(done))
        return "gputui sent SIG%s to %s." % (name, ", ".join(done) if done else "no running job")

    def newest_job_start(self):
        """The newest start among running jobs, looked up now: the jobs scan is seconds
        old, and a job started since then may not have touched a GPU yet. New processes
        count when they run in tmux (how jobs are started on a box), not any process."""
        newest = self.jobs.newest_start()
        scan = procfs.ProcScan()
        uid, scope = os.getuid(), own_scope()
        for pid in scan.stats:
            start = scan.start(pid)
            if start is None or (newest is not None and start <= newest) or pid == os.getpid():
                continue
            # the box's own processes only (watch_scope): a simulated box as root counted every
            # test box's new tmux job as "a job started just before the release" and never fired
            if not _in_tmux(pid, scan) or not is_own(pid, scan, uid, scope):
                continue
            if (scan.comm(pid) or "") in SHELLS or any(m in scan.cmdline(pid) for m in OWN_MARKERS):
                continue
            newest = start
        return newest

    # -- each jobs scan (tmux thread) ------------------------------------------------------
    def on_scan(self, tmux_status, scan, own_pids=()):
        if not self.jobs.due():
            return self.rows
        for ev in self.jobs.scan(tmux_status, scan, own_pids):
            if self.notifier is not None:
                fields = ev["fields"]
                cost = job_cost_text(self.budget.facts if self.budget else None, ev.get("runtime_s"))
                if cost and ev["kind"] in ("crashed", "hung", "finished"):
                    fields = dict(fields, runtime="%s (%s)" % (fields["runtime"], cost))
                self.notifier.emit(ev["kind"], fields, job=ev["job"], run=ev["run"])
        self.rows = self.jobs.rows()
        if self.budget is not None and self.notifier is not None and self.notifier.can_send():
            names = dict((r["id"], r.get("name") or r["id"]) for r in self.rows)
            for job_id, run, reason in short_of_money(self.budget.facts, self.jobs.last_scan, self.rows):
                self.notifier.emit("budget_short", {"job": names[job_id], "reason": reason},
                                   job=job_id, run=run)
        return self.rows

    # -- requests ---------------------------------------------------------------------
    def configure(self, msg):
        if self.notifier is None:
            raise OSError("notifications are off on this box: its state directory is not private")
        reply = self.notifier.configure(msg)
        self.apply_settings()
        return reply

    def set_billing(self, msg, now):
        if self.budget is None:
            raise OSError("notifications are off on this box: its state directory is not private")
        return self.budget.set_facts(msg, now)


CLOCKS_FILE = "clocks.json"  # beside the channels: the spot notices already signalled
SAVE_SIGNALS = ("USR1", "USR2", "TERM", "INT", "HUP")  # as tui/core/notify/settings.py allows
BALANCE_NOTIFY_S = 3600.0  # the balance's clock is told an hour before it runs out


def clock_action(clock):
    """What to do / what gputui did, in words."""
    if clock["kind"] == "balance_zero":
        return "Top up the balance, or save your work and copy it off before the box stops."
    saved = clock.get("saved")
    if clock["action"] == "stop" or clock["action"] == "hibernate":
        what = "Save a checkpoint now; the box will %s." % clock["action"]
    else:
        what = "Save a checkpoint and copy it off now; the box and its disk will be deleted."
    return what + (" " + saved if saved else "")


def job_cost_text(facts, runtime_s):
    """What a job's run cost at the box's rate, in words ("¥12.40 so far"), or None without a
    rate (the laptop pushes it with notify_billing). Plain function."""
    rate = (facts or {}).get("rate_per_hour")
    if rate is None or runtime_s is None:
        return None
    cost = money.cost_for(max(0.0, runtime_s), rate, "second")
    return "%s so far" % money.format_money(cost, facts.get("currency"))


def _in_tmux(pid, scan):
    seen = set()
    p = scan.ppid(pid)
    while p and p > 1 and p not in seen:
        seen.add(p)
        if (scan.comm(p) or "").startswith("tmux"):
            return True
        p = scan.ppid(p)
    return False
