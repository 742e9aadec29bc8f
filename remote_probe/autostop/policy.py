"""Autostop, enforced by the daemon on the box so it works with the laptop closed.

Armed from the app (with the exact release command shown and confirmed there), it
watches for "all GPUs idle for N seconds" and/or a hard deadline. When a condition is
met it warns everyone (tmux clients, logged-in terminals, the app) for a grace period
that can be cancelled from the app or on the box with the ``cancel-autostop`` script in the
probe's folder (the command is in ``gputui status`` and the arming dialog),
then runs the release command and logs what happened. The armed state is a file, so
it survives daemon restarts.
"""

import json
import os
import shlex
import shutil
import subprocess
import time

from remote_probe.autostop import release_verify
from remote_probe.autostop.idle_rules import RULE_UTILIZATION, idle_verdict
from remote_probe.wire import paste_words
from remote_probe.wire import DEFAULT_THRESHOLD, all_idle  # noqa: F401 - the idle rule, shared with the laptop

STATE_FILE = "autostop.json"
EVENTS_FILE = "autostop-events.jsonl"
CANCEL_SCRIPT = "cancel-autostop"


def armed_in(state_dir):
    """The armed autostop stored in state_dir (a dict with its command), or None."""
    try:
        with open(os.path.join(state_dir, STATE_FILE)) as f:
            data = json.load(f)
        return data if isinstance(data, dict) and data.get("command") else None
    except (OSError, ValueError):
        return None


def decide(armed, t, idle_since, grace_until, grace_reason, job_done_since=None,
           other_jobs=False, appeared=None, sample_s=1.0, budget_spent=False):
    """What autostop does at time t. Plain function, table-tested.

    armed: dict(idle_seconds, deadline, grace, when_job_done) or None.
    job_done_since: when the job named by when_job_done ended (None while it runs);
    other_jobs: another GPU job runs (then "release when done" waits);
    appeared: when the newest job started (epoch), so that one started within the last
    sample before the release moment (too new for any sample to show) cancels it
    (issue 20); sample_s: the sampling interval; budget_spent: the session's or the day's
    budget is spent (budget_watch.spent), which releases when armed with at_budget (issue 36).
    Returns (action, reason) with action one of: None, "start_grace", "cancel_grace",
    "cancel_deadline", "fire".
    """
    if not armed:
        return None, None
    deadline = armed.get("deadline")
    deadline_due = deadline is not None and t >= deadline
    idle_due = (armed.get("idle_seconds") is not None and idle_since is not None
                and t - idle_since >= armed["idle_seconds"])
    job_due = (bool(armed.get("when_job_done")) and job_done_since is not None
               and t >= job_done_since and not other_jobs)
    budget_due = bool(armed.get("at_budget")) and bool(budget_spent)

    def just_appeared(moment):
        # between the last sample before `moment` and the first after it: no sample
        # showed it (a deadline that passed while the daemon was down is still kept)
        return (appeared is not None
                and moment - sample_s < appeared <= min(t, moment + sample_s))

    if grace_until is not None:
        if grace_reason == "idle" and not idle_due and not deadline_due:
            return "cancel_grace", "GPU busy again"
        if grace_reason == "idle" and idle_since is not None and appeared is not None \
                and appeared > idle_since:
            return "cancel_grace", "a job started"
        if grace_reason == "job_done" and other_jobs:
            return "cancel_grace", "another GPU job runs"
        if t >= grace_until:
            if just_appeared(grace_until):
                return "cancel_grace", "a job started just before the release"
            return "fire", grace_reason
        return None, None
    if deadline_due:
        if just_appeared(deadline):
            return "cancel_deadline", "a job started just before the deadline"
        return "start_grace", "deadline"
    if budget_due:  # money spent stays spent: a busy GPU does not cancel this one
        return "start_grace", "budget"
    if idle_due:
        return "start_grace", "idle"
    if job_due:
        return "start_grace", "job_done"
    return None, None


class Autostop:
    def __init__(self, state_dir, probe_command=None, clock=time.time, notify=None, boot_id=None):
        self.state_dir = state_dir
        self.clock = clock
        self.notify = notify or notify_box
        self.armed = self._load()
        self.idle_since = None
        self.grace_until = None
        self.grace_reason = None
        self.listeners = []  # callables(event dict): the daemon pushes these to the app
        self.rule = RULE_UTILIZATION  # the idle rule in force (idle_rules), for the status
        self.sample_s = 1.0  # the daemon's sampling interval
        # () -> epoch of the newest job start, looked up fresh just before a release (the
        # daemon's jobs scan is seconds old); None: trust what observe() was given
        self.appeared_probe = None
        self.last_appeared = None
        self.budget_spent = False  # the last observe's word from the budget watch
        # the last release command run on this box (release_verify: still up after it?)
        self.release = release_verify.load(state_dir)
        self.boot_id = boot_id
        self.verify_setting = lambda: None  # () -> the watch settings' release_verify_s
        if probe_command:
            self._write_cancel_script(probe_command)

    # -- persistence -------------------------------------------------------------
    def _path(self, name):
        return os.path.join(self.state_dir, name)

    def cancel_command(self):
        """What the user types on the box to cancel: `sh FILE`, not `FILE`, so it runs from a
        noexec /tmp fallback too; quoted for bash, zsh and fish alike."""
        return paste_words.join(["sh", self._path(CANCEL_SCRIPT)])

    def _load(self):
        return armed_in(self.state_dir)

    def _save(self):
        tmp = self._path(STATE_FILE + ".tmp")
        with open(tmp, "w") as f:
            json.dump(self.armed, f)
        os.replace(tmp, self._path(STATE_FILE))

    def _write_cancel_script(self, probe_command):
        path = self._path(CANCEL_SCRIPT)
        script = "#!/bin/sh\n# Cancels gputui's autostop on this box.\nexec %s autostop-cancel --state-dir %s\n" % (
            " ".join(shlex.quote(a) for a in probe_command), shlex.quote(self.state_dir))
        try:
            with open(path + ".tmp", "w") as f:
                f.write(script)
            os.chmod(path + ".tmp", 0o700)
            os.replace(path + ".tmp", path)
        except OSError:
            pass

    def log(self, kind, **fields):
        event = dict(fields, event=kind, t=round(self.clock(), 1))
        try:
            with open(self._path(EVENTS_FILE), "a") as f:
                f.write(json.dumps(event) + "\n")
        except OSError:
            pass
        for listener in list(self.listeners):
            listener(event)
        return event

    def events(self, since=0.0, limit=50):
        try:
            with open(self._path(EVENTS_FILE)) as f:
                lines = f.readlines()[-500:]
        except OSError:
            return []
        out = []
        for line in lines:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("t", 0) > since:
                out.append(e)
        return out[-limit:]

    # -- control -----------------------------------------------------------------
    def arm(self, command, idle_seconds=None, deadline=None, grace=120.0,
            threshold=DEFAULT_THRESHOLD, when_job_done=None, hung_counts_idle=False, action=None,
            verify_s=None, at_budget=False):
        if not command or not isinstance(command, str):
            raise ValueError("autostop needs the release command to run")
        if idle_seconds is None and deadline is None and not when_job_done and not at_budget:
            raise ValueError("autostop needs an idle window, a deadline, a budget or a job to wait for")
        if when_job_done is not None and not isinstance(when_job_done, str):
            raise ValueError("when_job_done: expected a job id")
        self.armed = {"command": command, "idle_seconds": idle_seconds, "deadline": deadline,
                      "grace": float(grace), "threshold": float(threshold),
                      "armed_at": self.clock(), "when_job_done": when_job_done or None,
                      "hung_counts_idle": bool(hung_counts_idle), "at_budget": bool(at_budget)}
        if isinstance(action, str) and action:  # the provider's action it runs (stop, terminate...)
            self.armed["action"] = action[:100]
        if verify_s is not None:  # the release's verify window (release_verify; tests: short)
            self.armed["verify_s"] = release_verify.verify_window(verify_s)
        self.idle_since = None
        self.grace_until = None
        self._save()
        self.log("armed", command=command, idle_seconds=idle_seconds, deadline=deadline,
                 grace=grace, when_job_done=when_job_done or None)
        return self.status()

    def _clear(self):
        """Not armed any more, in memory and on disk."""
        self.armed = None
        self.grace_until = None
        try:
            os.unlink(self._path(STATE_FILE))
        except OSError:
            pass

    def disarm(self, reason="cancelled", **fields):
        was = self.armed is not None
        self._clear()
        if was:
            self.log("disarmed", reason=reason, **fields)
            self.notify("gputui: autostop %s." % reason)
        return self.status()

    def status(self):
        now = self.clock()
        return {
            "armed": self.armed,
            "idle_for": (now - self.idle_since) if self.idle_since is not None else 0.0,
            "grace_left": max(0.0, self.grace_until - now) if self.grace_until else None,
            "grace_reason": self.grace_reason if self.grace_until else None,
            "cancel_command": self.cancel_command(),
            "rule": self.rule,
            "when_job_done": (self.armed or {}).get("when_job_done"),
            "release": release_verify.status_of(self.release, now, self._boot()),
        }

    # -- each tick ---------------------------------------------------------------
    def observe(self, utils, compute_procs, t=None, gpus=None, hung_gpus=(), job_done_since=None,
                other_jobs=False, appeared=None, budget_spent=False):
        """One sample. gpus: [(util or None, compute processes)] per GPU, when known (then
        idle_rules decides, so MIG slices without utilization can be idle); hung_gpus:
        GPUs whose compute processes are all hung jobs (idle only if the user opted in)."""
        if not self.armed:
            self.idle_since = None
            return None
        t = self.clock() if t is None else t
        threshold = self.armed.get("threshold", DEFAULT_THRESHOLD)
        if gpus is not None:
            idle, self.rule = idle_verdict(gpus, threshold, hung_gpus,
                                           bool(self.armed.get("hung_counts_idle")))
        else:
            idle = all_idle(utils, compute_procs, threshold)
        if idle:
            if self.idle_since is None:
                self.idle_since = t
            if appeared is not None and appeared > self.idle_since:
                self.idle_since = min(t, appeared)  # a job started: the idle spell begins after it
        else:
            self.idle_since = None
        self.budget_spent = budget_spent
        action, reason = self._decide(t, job_done_since, other_jobs, appeared)
        self.last_appeared = appeared
        if action == "fire" and self.appeared_probe is not None:
            # The last look before releasing: a job too new for the last scan counts too.
            try:
                fresh = self.appeared_probe()
            except Exception:  # a failed look must not stop a release the user armed
                fresh = None
            if fresh is not None and (appeared is None or fresh > appeared):
                action, reason = self._decide(t, job_done_since, other_jobs, fresh)
                self.last_appeared = fresh
        if action == "start_grace":
            self.grace_until = t + self.armed["grace"]
            self.grace_reason = reason
            if reason == "idle":
                why = "all GPUs idle for %d min" % round((t - self.idle_since) / 60.0)
            elif reason == "job_done":
                why = "job %s ended" % self.armed.get("when_job_done")
            elif reason == "budget":
                why = "the budget is spent"
            else:
                why = "the deadline was reached"
            msg = ("gputui autostop: %s. Running `%s` in %d s. Cancel: %s"
                   % (why, self.armed["command"], self.armed["grace"], self.cancel_command()))
            self.notify(msg)
            return self.log("grace", reason=reason, seconds=self.armed["grace"],
                            command=self.armed["command"], message=msg,
                            idle_since=self.idle_since)
        if action in ("cancel_grace", "cancel_deadline"):
            was = self.grace_reason if self.grace_until is not None else "deadline"
            self.grace_until = None
            if was == "deadline" or action == "cancel_deadline":
                # The deadline came with a job just started: it is not enforced on that job.
                self.armed["deadline"] = None
                if self.armed.get("idle_seconds") is None and not self.armed.get("when_job_done"):
                    self.disarm(reason, job_started=self.last_appeared)
                    return {"event": "disarmed", "reason": reason, "job_started": self.last_appeared}
                self._save()
            self.notify("gputui autostop: countdown stopped, %s." % reason)
            return self.log("grace_cancelled", reason=reason, job_started=self.last_appeared)
        if action == "fire":
            return self.fire(reason)
        return None

    def _decide(self, t, job_done_since, other_jobs, appeared):
        return decide(self.armed, t, self.idle_since, self.grace_until, self.grace_reason,
                      job_done_since, other_jobs, appeared, self.sample_s, self.budget_spent)

    def fire(self, reason):
        command = self.armed["command"]
        verify_s = self.armed.get("verify_s")
        self._clear()
        self.notify("gputui autostop: running `%s` now." % command)
        code, output = run_release(command)
        self.record_release(command, code, "autostop", verify_s)
        return self.log("fired", reason=reason, command=command, exit=code, output=output[-2000:])

    # -- was the release real? (release_verify) ----------------------------------------
    def _boot(self):
        if self.boot_id is None:
            from remote_probe.procfs import boot_id, pid1_start
            self.boot_id = release_verify.boot_key(boot_id(), pid1_start()) or ""
        return self.boot_id

    def record_release(self, command, code, via, verify_s=None):
        """A release command ran (autostop or the app's release): kept in the state dir."""
        window = release_verify.verify_window(verify_s, self.verify_setting())
        self.release = release_verify.new_record(command, code, self.clock(), self._boot(),
                                                 window, via)
        release_verify.save(self.state_dir, self.release)
        return self.release

    def check_release(self, t=None):
        """Each tick: still up on the same boot past the verify window -> the alarm, once."""
        t = self.clock() if t is None else t
        record = self.release
        if record is None or not release_verify.alarm_due(record, t, self._boot()):
            return None
        record["told"] = True
        release_verify.save(self.state_dir, record)
        return self.log("release_unverified", command=record.get("command"),
                        exit=record.get("exit"), ran_at=record.get("ran_at"),
                        at=release_verify.clock_hm(record["ran_at"]),
                        evidence=release_verify.evidence(record, release_verify.read_uptime()),
                        delay=round(t - record["ran_at"], 1))


def release_env():
    """The release command sees the container's env (RUNPOD_POD_ID etc.) plus ours."""
    from remote_probe.provider.facts import pid1_environ
    env = pid1_environ()
    env.update(os.environ)
    return env


def run_release(command, timeout=120):
    try:
        out = subprocess.run(["/bin/sh", "-c", command], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
                             env=release_env())
        return out.returncode, out.stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        return None, "timed out after %d s" % timeout
    except OSError as exc:
        return None, str(exc)


def notify_box(message):
    """Tell everyone on the box: every tmux client, and logged-in terminals (wall)."""
    tmux = shutil.which("tmux")
    if tmux:
        try:
            clients = subprocess.run([tmux, "list-clients", "-F", "#{client_name}"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     timeout=3).stdout.decode().split()
            for client in clients:
                subprocess.run([tmux, "display-message", "-d", "10000", "-c", client, message],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=3)
        except (OSError, subprocess.TimeoutExpired):
            pass
    wall = shutil.which("wall")
    if wall:
        try:
            subprocess.run([wall], input=message.encode(), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=3)
        except (OSError, subprocess.TimeoutExpired):
            pass
