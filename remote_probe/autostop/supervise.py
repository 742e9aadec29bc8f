"""Autostop survives the daemon (issue 20): a tiny watcher, started detached by the daemon
while autostop is armed, that starts the daemon again when it dies (`kill -9`, the OOM
killer, a `pkill python`) so the armed release still runs with nobody connected. It exits
as soon as autostop is disarmed or has fired (the armed state file is gone).

It names itself "gputui-watch" (PR_SET_NAME), so a `pkill python` that takes the daemon
leaves it standing. One per state dir (its own lock). Stdlib only.
"""

import fcntl
import json
import logging
import os
import subprocess
import sys
import time

from remote_probe import procfs
from remote_probe.autostop.policy import STATE_FILE
from remote_probe.paths import lock_path, self_command

log = logging.getLogger("gputui.probe")

SUPERVISE_LOCK = "supervise.lock"
CHECK_EVERY = 1.0  # seconds between looks at the daemon's lock
RESTART_GRACE = 5.0  # a daemon just started gets this long to take its lock


def next_step(armed, daemon_alive, owner_gone=False):
    """What the watcher does now: "exit", "restart" or "wait". Plain function, table-tested."""
    if not armed or owner_gone:
        return "exit"
    return "wait" if daemon_alive else "restart"


def daemon_alive(state_dir):
    """The daemon holds its lock while it runs: if we can take it, nobody runs."""
    return lock_held(lock_path(state_dir))


def lock_held(path):
    """Whether a process holds the flock on `path` (the daemon's, the watcher's): the
    liveness test that needs no /proc and cannot be fooled by a reused pid."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # also drops the lock if we took it
    return False


def owner_gone():
    """The demo's daemon dies with the demo (GPUTUI_OWNER_PID): so does its watcher."""
    owner = os.environ.get("GPUTUI_OWNER_PID")
    if not owner or not owner.isdigit():
        return False
    try:
        os.kill(int(owner), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def _name_self(name=b"gputui-watch"):
    try:
        import ctypes
        ctypes.CDLL(None).prctl(15, ctypes.c_char_p(name), 0, 0, 0)  # PR_SET_NAME
    except Exception:  # noqa: BLE001 - only a nicer name in ps, and safety from pkill python
        pass


def run_supervisor(state_dir, spawn_daemon, simulate=None, check_every=CHECK_EVERY):
    """Entry point of ``probe supervise``; spawn_daemon(state_dir, simulate) is attach's
    (passed in: attach imports this module). Returns an exit code."""
    lock = open(os.path.join(state_dir, SUPERVISE_LOCK), "a+")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0  # one watcher per state dir is enough
    lock.seek(0)
    lock.truncate()
    lock.write(json.dumps({"pid": os.getpid()}))
    lock.flush()
    _name_self()
    armed_file = os.path.join(state_dir, STATE_FILE)
    while True:
        step = next_step(os.path.exists(armed_file), daemon_alive(state_dir), owner_gone())
        if step == "exit":
            return 0
        if step == "restart":
            log.warning("the probe daemon is gone while autostop is armed; starting it again")
            spawn_daemon(state_dir, simulate)
            time.sleep(RESTART_GRACE)
        time.sleep(check_every)


def start_supervisor(state_dir, simulate=None):
    """Start the watcher, detached (its own session: it outlives the daemon). A second
    one started while one runs exits at once (its lock)."""
    argv, env = self_command()
    argv = argv + ["supervise", "--state-dir", state_dir]
    if simulate:
        argv += ["--simulate", simulate]
    try:
        with open(os.devnull, "rb") as null:
            log_fd = os.open(os.path.join(state_dir, "daemon.log"),
                             os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                subprocess.Popen(argv, env=env, stdin=null, stdout=log_fd, stderr=log_fd, cwd="/",
                                 close_fds=True, start_new_session=True)
            finally:
                os.close(log_fd)
    except OSError as exc:
        log.warning("autostop watcher not started: %s", exc)


def stop_supervisor(state_dir, signal_number=15):
    """For terminate() (the demo's exit, tests): the watcher first, so it starts nothing."""
    try:
        with open(os.path.join(state_dir, SUPERVISE_LOCK)) as f:
            pid = json.loads(f.read() or "{}").get("pid")
    except (OSError, ValueError):
        return
    if isinstance(pid, int) and pid > 1:
        if not watcher_pid_is_ours(pid, os.path.join(state_dir, SUPERVISE_LOCK)):
            return  # gone, or the pid was reused by something else
        try:
            os.kill(pid, signal_number)
        except OSError:
            return
        # gone before the caller stops the daemon: a watcher still in its loop would start it again
        procfs.wait_gone(pid, 2.0)


def watcher_pid_is_ours(pid, lock_file):
    """Whether `pid` (read from the watcher's lock file) is still the watcher."""
    comm = procfs.read_text("%s/%d/comm" % (procfs.PROC, pid), None)
    return still_the_watcher(comm, procfs.proc_available(),
                             lambda: procfs.pid_alive(pid) and lock_held(lock_file))


def still_the_watcher(comm, proc_available, alive_and_locked):
    """Its name in /proc says so where there is one; without /proc (macOS runs the demo's
    probe) the lock does: the watcher holds it while it runs and wrote its pid after taking
    it. alive_and_locked: asked only then. Plain function, table-tested."""
    if comm is not None:
        return comm.strip() in ("gputui-watch", os.path.basename(sys.executable))
    if proc_available:
        return False  # /proc is there and has no such process: it is gone
    return bool(alive_and_locked())
