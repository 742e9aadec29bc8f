"""Facts about the instance: when it started (PID 1) and its provider's marks
(remote_probe/provider/facts.py reads those, PID 1's environment included)."""

from remote_probe.procfs.processes import pid_start
from remote_probe.procfs.system import boot_time


def pid1_start():
    """When the container (or the machine) started: PID 1's start time, epoch seconds.

    Providers bill from the instance's start, which is this, not from our first SSH.
    """
    btime = boot_time()
    return None if btime is None else pid_start(1, btime)


def provider_facts():
    """The provider's marks on this box (remote_probe/provider/facts.py gathers them)."""
    from remote_probe.provider import facts
    return facts.gather()
