"""Which jobs die if the SSH connection drops: tied to an SSH login terminal, not in
tmux/screen, not nohup'd or setsid-detached."""

import os
import time

from remote_probe import procfs
from remote_probe.watch.scope import is_own, own_scope
from remote_probe.wire.job_kinds import python_script

SIGHUP_BIT = 1 << 0  # SIGHUP is signal 1 -> bit 0 of SigIgn
MULTIPLEXERS = ("tmux", "screen", "SCREEN", "zellij", "byobu")
LONG_RUNNING = 60.0  # seconds before a python process counts as a job ...
# ... unless it was put in the background on purpose (it would outlive the SSH connection:
# nohup, setsid, screen, `ssh box python3 x.py`). Then it is a job from its first seconds: a
# `nohup python3 preprocess.py &` released in its first minute was in no checklist item.
DETACHED_AFTER = 3.0


def ancestry(pid, proc=procfs.PROC, scan=None, sighup=True):
    """[(pid, comm, tty_nr, sighup_ignored)] from pid up to (not including) pid 1.

    sighup=False leaves sighup_ignored False without reading each /proc/PID/status."""
    scan = scan if scan is not None else procfs.ProcScan(proc)
    chain, seen = [], set()
    while pid and pid > 1 and pid not in seen:
        seen.add(pid)
        st = scan.full(pid)
        if st is None:
            break
        comm, _state, ppid, tty_nr = st[:4]
        chain.append((pid, comm, tty_nr, sighup and bool(scan.sigign(pid) & SIGHUP_BIT)))
        pid = ppid
    return chain


def verdict(chain):
    """(protected, reason) for a process given its ancestry. Plain function, table-tested."""
    if not chain:
        return True, "gone"
    _pid, _comm, tty_nr, hup_ignored = chain[0]
    for _p, comm, _t, _h in chain[1:]:
        if comm.startswith(MULTIPLEXERS):
            return True, "runs in %s" % comm.split(":")[0]
    if hup_ignored:
        return True, "ignores hangups (nohup)"
    if tty_nr == 0:
        return True, "detached from any terminal"
    for _p, comm, _t, _h in chain[1:]:
        if comm.startswith("sshd"):
            return False, "will die if this SSH connection drops"
    return True, "not started from SSH"


# Where the system keeps its own programs: a python process running a script from there is a
# service of the OS image (networkd-dispatcher, unattended-upgrade-shutdown, supervisord on
# Ubuntu), not a job the user started; as root every cloud VM would list them.
SYSTEM_DIRS = ("/usr/bin/", "/usr/sbin/", "/usr/lib/", "/usr/libexec/", "/usr/share/", "/bin/", "/sbin/",
               "/lib/")


def system_script(cmdline):
    """Whether `python [options] SCRIPT ...` runs a script installed by the OS (plain function);
    a module or inline code is judged by what it does, not where."""
    return python_script(cmdline).startswith(SYSTEM_DIRS)


def python_jobs(min_age=LONG_RUNNING, now=None, proc=procfs.PROC, scan=None,
                detached_age=DETACHED_AFTER):
    """pids of the box's own python jobs: running min_age seconds, or detached_age when put
    in the background on purpose (watch_scope: this user's, all users' when root, a
    simulated box's only)."""
    scope = own_scope()
    now = time.time() if now is None else now
    scan = scan if scan is not None else procfs.ProcScan(proc)
    uid = os.getuid()

    def started_before(age):  # a start time, in jiffies after boot
        return (now - age - scan.btime) * procfs.CLK_TCK

    newest = started_before(min_age)
    newest_detached = started_before(min(min_age, detached_age))
    out = []
    for pid, st in scan.stats.items():
        if st[5] > newest_detached or not scan.runs_python(pid) or system_script(scan.cmdline(pid)):
            continue
        if not is_own(pid, scan, uid, scope):
            continue  # before the ancestry walk below: a busy shared box has many pythons
        if st[5] <= newest or detached(pid, scan):
            out.append(pid)
    return sorted(out)


def judged(pid, scan):
    """verdict() of pid's ancestry, reading /proc/PID/status (its SIGHUP mask) only when the
    chain alone would find it unprotected: ignoring SIGHUP can only protect, and verdict looks
    at the job's own mask, not its ancestors' (issue 12; issue 38: reading every ancestor's
    status for each young python process was a fifth of the daemon's CPU)."""
    chain = ancestry(pid, scan=scan, sighup=False)
    protected, reason = verdict(chain)
    if not protected:
        chain[0] = chain[0][:3] + (bool(scan.sigign(pid) & SIGHUP_BIT),)
        protected, reason = verdict(chain)
    return protected, reason


def detached(pid, scan):
    """Put in the background on purpose: it would outlive the SSH connection (nohup, setsid,
    screen, no terminal; tmux panes are judged as panes)."""
    return judged(pid, scan)[0]


def unprotected_jobs(gpu_pids, own_pids=(), scan=None):
    """[{pid, cmd, gpu, reason}] for jobs that would die with the SSH connection."""
    scan = scan if scan is not None else procfs.ProcScan()
    out = []
    gpu_pids = set(gpu_pids)
    for pid in sorted(gpu_pids | set(python_jobs(scan=scan))):
        if pid in own_pids:
            continue
        protected, reason = judged(pid, scan)
        if not protected and scan.stat(pid) is not None:  # not gone since /proc was listed
            out.append({"pid": pid, "cmd": scan.cmdline(pid)[:200], "gpu": pid in gpu_pids,
                        "reason": reason})
    return out
