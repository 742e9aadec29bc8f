"""Which processes the daemon counts as the box's own: its user's (every user's when it runs
as root) and, on a simulated box (`gputui demo`, the test boxes, where the "box" is the laptop or
CI machine itself), only those started inside that box (GPUTUI_SIM_SCOPE in their environment).

One rule for the python-job scan, the DataLoader scan and the simulator's job adoption, so the
Jobs panel, the DataLoader panel and the GPU process table never disagree about whose a process
is: a neighbour's training run on a shared box, or the laptop's own python programs under the
demo, are not the user's jobs."""

import os

from remote_probe.procfs.reader import PROC

SCOPE_VAR = "GPUTUI_SIM_SCOPE"
STARTED_VAR = "GPUTUI_SIM_STARTED"  # the demo box's "rented at" (epoch seconds)


def own_scope():
    """The simulated box this daemon runs for, or None on a real box."""
    return os.environ.get(SCOPE_VAR)


def simulated_start():
    """When a simulated box says it was rented (`gputui demo`: an hour before the demo began),
    instead of PID 1's start: the laptop's uptime made a fresh demo open on a blown budget.
    None on a real box (no scope), whatever the environment says."""
    if own_scope() is None:
        return None
    try:
        return float(os.environ[STARTED_VAR])
    except (KeyError, ValueError):
        return None


def scope_of(pid, proc=None):
    """The GPUTUI_SIM_SCOPE value in a process's environment (None if absent or unreadable)."""
    try:
        with open("%s/%s/environ" % (proc or PROC, pid), "rb") as f:
            for item in f.read().split(b"\0"):
                if item.startswith(SCOPE_VAR.encode() + b"="):
                    return item.split(b"=", 1)[1].decode("utf-8", "replace")
    except OSError:
        pass
    return None


def is_own(pid, scan, uid=None, scope=None):
    """Whether pid is one of this box's processes: the user's (root: anyone's) and of the
    simulated box's scope when there is one. scan: a procfs.ProcScan (its uid cache is shared)."""
    uid = os.getuid() if uid is None else uid
    if uid != 0 and scan.uid(pid) != uid:
        return False
    return scope is None or scope_of(pid, scan.proc) == scope
