"""Autostop, enforced by the daemon on the box so it works with the laptop closed.

Armed from the app (with the exact release command shown and confirmed there), it
watches for "all GPUs idle for N seconds" and/or a hard deadline. When a condition is
met it warns everyone (tmux clients, logged-in terminals, the app) for a grace period
that can be cancelled from the app or on the box with ``~/.cache/gputui/cancel-autostop``,
then runs the release command and logs what happened. The armed state is a file, so
it survives daemon restarts.
"""

import json
import os
import shlex
import shutil
import subprocess
import time

from .wire import paste_words
from .wire import DEFAULT_THRESHOLD, all_idle  # noqa: F401 - the idle rule, shared with the laptop

STATE_FILE = "autostop.json"
EVENTS_FILE = "autostop-events.jsonl"
CANCEL_SCRIPT = "cancel-autostop"


def decide(armed, t, idle_since, grace_until, grace_reason):
    """What autostop does at time t. Plain function, table-tested.

    armed: dict(idle_seconds, deadline, grace) or None.
    Returns (action, reason) with action one of: None, "start_grace", "cancel_grace", "fire".
    """
    if not armed:
        return None, None
    deadline_due = armed.get("deadline") is not None and t >= armed["deadline"]
    idle_due = (armed.get("idle_seconds") is not None and idle_since is not None
                and t - idle_since >= armed["idle_seconds"])
    if grace_until is not None:
        if grace_reason == "idle" and not idle_due and not deadline_due:
            return "cancel_grace", "GPU busy again"
        if t >= grace_until:
            return "fire", grace_reason
        return None, None
    if deadline_due:
        return "start_grace", "deadline"
    if idle_due:
        return "start_grace", "idle"
    return None, None


class Autostop:
    def __init__(self, state_dir, probe_command=None, clock=time.time, notify=None):
        self.state_dir = state_dir
        self.clock = clock
        self.notify = notify or notify_box
        self.armed = self._load()
        self.idle_since = None
        self.grace_until = None
        self.grace_reason = None
        self.listeners = []  # callables(event dict): the daemon pushes these to the app
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
        try:
            with open(self._path(STATE_FILE)) as f:
                data = json.load(f)
            return data if isinstance(data, dict) and data.get("command") else None
        except (OSError, ValueError):
            return None

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
            threshold=DEFAULT_THRESHOLD):
        if not command or not isinstance(command, str):
            raise ValueError("autostop needs the release command to run")
        if idle_seconds is None and deadline is None:
            raise ValueError("autostop needs an idle window or a deadline")
        self.armed = {"command": command, "idle_seconds": idle_seconds, "deadline": deadline,
                      "grace": float(grace), "threshold": float(threshold),
                      "armed_at": self.clock()}
        self.idle_since = None
        self.grace_until = None
        self._save()
        self.log("armed", command=command, idle_seconds=idle_seconds, deadline=deadline,
                 grace=grace)
        return self.status()

    def _clear(self):
        """Not armed any more, in memory and on disk."""
        self.armed = None
        self.grace_until = None
        try:
            os.unlink(self._path(STATE_FILE))
        except OSError:
            pass

    def disarm(self, reason="cancelled"):
        was = self.armed is not None
        self._clear()
        if was:
            self.log("disarmed", reason=reason)
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
        }

    # -- each tick ---------------------------------------------------------------
    def observe(self, utils, compute_procs, t=None):
        if not self.armed:
            self.idle_since = None
            return None
        t = self.clock() if t is None else t
        if all_idle(utils, compute_procs, self.armed.get("threshold", DEFAULT_THRESHOLD)):
            if self.idle_since is None:
                self.idle_since = t
        else:
            self.idle_since = None
        action, reason = decide(self.armed, t, self.idle_since, self.grace_until, self.grace_reason)
        if action == "start_grace":
            self.grace_until = t + self.armed["grace"]
            self.grace_reason = reason
            why = ("all GPUs idle for %d min" % round((t - self.idle_since) / 60.0)
                   if reason == "idle" else "the deadline was reached")
            msg = ("gputui autostop: %s. Running `%s` in %d s. Cancel: %s"
                   % (why, self.armed["command"], self.armed["grace"], self.cancel_command()))
            self.notify(msg)
            return self.log("grace", reason=reason, seconds=self.armed["grace"],
                            command=self.armed["command"], message=msg,
                            idle_since=self.idle_since)
        if action == "cancel_grace":
            self.grace_until = None
            self.notify("gputui autostop: countdown stopped, a GPU is busy again.")
            return self.log("grace_cancelled", reason=reason)
        if action == "fire":
            return self.fire(reason)
        return None

    def fire(self, reason):
        command = self.armed["command"]
        self._clear()
        self.notify("gputui autostop: running `%s` now." % command)
        code, output = run_release(command)
        return self.log("fired", reason=reason, command=command, exit=code, output=output[-2000:])


def release_env():
    """The release command sees the container's env (RUNPOD_POD_ID etc.) plus ours."""
    from .provider_facts import pid1_environ
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
