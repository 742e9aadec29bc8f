"""Processes: per-pid CPU and RSS (ProcTable), /proc kept across passes (ProcIndex,
ProcScan) and the holders of /dev/nvidiaN (the GPU users a container's driver cannot name)."""

import os
import re
import time

from remote_probe.procfs.reader import CLK_TCK, PAGE_MIB, PROC, read_text
from remote_probe.procfs.system import boot_time, parse_proc_stat

NVIDIA_DEV = re.compile(r"^/dev/nvidia(\d+)$")


def parse_pid_stat(text):
    """-> (state, ppid, utime+stime jiffies, starttime jiffies, rss pages) or None.

    The command name may contain spaces and ')' so we split at the last ')'.
    """
    end = text.rfind(")")
    if end < 0:
        return None
    f = text[end + 2:].split()
    try:
        return f[0], int(f[1]), int(f[11]) + int(f[12]), int(f[19]), int(f[21])
    except (IndexError, ValueError):
        return None


def parse_status_uid(text):
    for line in text.splitlines():
        if line.startswith("Uid:"):
            try:
                return int(line.split()[1])
            except (IndexError, ValueError):
                return None
    return None


_user_cache = {}


def user_name(uid):
    if uid is None:
        return None
    if uid not in _user_cache:
        # imported here: a Windows laptop imports the simulator (the demo's scenario list)
        # through this package, and has no pwd
        import pwd
        try:
            _user_cache[uid] = pwd.getpwuid(uid).pw_name
        except KeyError:
            _user_cache[uid] = str(uid)
    return _user_cache[uid]


def start_epoch(start_jiffies, btime):
    """A process's start (stat field 22, clock ticks after boot) as epoch seconds."""
    return round(btime + start_jiffies / float(CLK_TCK), 1)


def pid_start(pid, btime=None):
    """When `pid` started, epoch seconds; None if it is gone."""
    stat = parse_pid_stat(read_text("%s/%d/stat" % (PROC, pid)))
    if stat is None:
        return None
    return start_epoch(stat[3], boot_time() if btime is None else btime)


def read_cmdline(pid):
    raw = read_text("%s/%d/cmdline" % (PROC, pid))
    return " ".join(part for part in raw.split("\0") if part)


class ProcTable:
    """Per-process CPU %, RSS and static facts for a set of pids.

    Each tick reads one file per pid (/proc/PID/stat); user and command line are read
    once per process lifetime (keyed by pid + start time, so pid reuse is noticed).
    This is why the probe is cheaper per tick than psutil-based samplers.
    """

    def __init__(self):
        self.prev = {}  # pid -> (cpu jiffies, monotonic time)
        self.meta = {}  # pid -> dict(pid, user, cmd, start)
        self._start = {}  # pid -> starttime jiffies
        self._btime = boot_time() or 0

    def sample(self, pids, now=None, scan=None):
        """-> {pid: {"cpu":%, "rss":MiB, "ppid":pid}} for the pids that exist; updates meta.

        With `scan` (a ProcScan just taken) the stat lines come from it, not read again.
        """
        now = time.monotonic() if now is None else now
        out, new_prev = {}, {}
        for pid in pids:
            stat = scan.stat(pid) if scan is not None else parse_pid_stat(
                read_text("%s/%d/stat" % (PROC, pid)))
            if stat is None:
                continue
            _state, ppid, cpu_j, start_j, rss_pages = stat
            if self._start.get(pid) != start_j:
                self._start[pid] = start_j
                self.prev.pop(pid, None)
                self.meta[pid] = {
                    "pid": pid,
                    "user": user_name(scan.uid(pid) if scan is not None else parse_status_uid(
                        read_text("%s/%d/status" % (PROC, pid)))),
                    "cmd": (scan.cmdline(pid) if scan is not None else read_cmdline(pid))[:300],
                    "start": start_epoch(start_j, self._btime),
                }
            elif not self.meta[pid]["cmd"]:  # read mid-exec (empty then): look again
                self.meta[pid]["cmd"] = read_cmdline(pid)[:300]
            prev = self.prev.get(pid)
            cpu = None
            if prev is not None and now > prev[1]:
                cpu = round(100.0 * (cpu_j - prev[0]) / CLK_TCK / (now - prev[1]), 1)
            new_prev[pid] = (cpu_j, now)
            out[pid] = {"cpu": cpu, "rss": round(rss_pages * PAGE_MIB), "ppid": ppid}
        self.prev = new_prev
        for pid in list(self.meta):
            if pid not in out:
                del self.meta[pid]
                self._start.pop(pid, None)
        return out


def parse_pid_stat_full(text):
    """-> (comm, state, ppid, tty_nr, cpu jiffies, start jiffies, rss pages) or None."""
    begin, end = text.find("("), text.rfind(")")
    if begin < 0 or end < begin:
        return None
    f = text[end + 2:].split()
    try:
        return (text[begin + 1:end], f[0], int(f[1]), int(f[4]), int(f[11]) + int(f[12]),
                int(f[19]), int(f[21]))
    except (IndexError, ValueError):
        return None


def parse_status_fields(text):
    """-> (uid, SigIgn mask) from /proc/PID/status text; None where missing."""
    uid = sigign = None
    for line in text.splitlines():
        if line.startswith("Uid:"):
            try:
                uid = int(line.split()[1])
            except (IndexError, ValueError):
                pass
        elif line.startswith("SigIgn:"):
            try:
                sigign = int(line.split()[1], 16)
            except (IndexError, ValueError):
                pass
    return uid, sigign


REFRESH_EVERY = 24  # passes: an unchanged process's stat is read again this often (2 min at 5 s)
YOUNG_SECONDS = 60.0  # a new pid this young is read again at the next pass (it may exec yet)
# Share of a core the daemon's /proc listing may take: readdir of /proc costs ~2 us a process
# with cold caches, so 2,000 processes are listed every 10 s, 150 on every jobs scan.
LIST_BUDGET = 0.0004
_cpu_clock = getattr(time, "thread_time", time.process_time)


def list_proc(proc=PROC):
    """-> {pid: inode of /proc/PID}. One readdir, no per-pid reads: the kernel gives a new
    process (a reused pid too) a new /proc/PID inode, so an unchanged pair means an
    unchanged process at no cost."""
    try:
        with os.scandir(proc) as entries:
            return {int(e.name): e.inode() for e in entries if e.name.isdigit()}
    except OSError:
        return {}


def listing_due(cost, since, budget):
    """Whether to list /proc again: the last listing took `cost` CPU seconds `since`
    seconds ago. None budget: every time."""
    return budget is None or cost <= since * budget


def pids_to_read(known, listed, stats, recent, pass_no, every=REFRESH_EVERY):
    """-> (pids whose /proc/PID/stat a pass reads, pids that left, pids new or reused).

    known, listed: {pid: inode} at the last pass and now; stats: {pid: stat tuple as
    parse_pid_stat_full gives} as last read; recent: the pids new at the last pass. Read:
    new pids and reused ones (another inode), children of a process that exited (they were
    reparented), recent ones once more (a forked shell may since have exec'd python, a
    DataLoader worker named itself), and a rotating 1/`every` of the rest, so an exec or
    rename in a long-lived process is seen within `every` passes. The rest cost nothing.
    """
    gone = {pid for pid in known if pid not in listed}
    orphaned = {pid for pid, st in stats.items() if st[2] in gone} if gone else ()
    new = {pid for pid, ino in listed.items() if known.get(pid) != ino}
    read = {pid for pid in listed if (pid + pass_no) % every == 0}
    read |= new
    read.update(pid for pid in recent if pid in listed)
    read.update(pid for pid in orphaned if pid in listed)
    return read, gone, new


class ProcIndex:
    """/proc kept across passes at a cost that follows what changed, not the box's size:
    2,000 idle processes cost a readdir and a rotating 1/REFRESH_EVERY of their stat files.
    A pid is known by its /proc/PID inode (see list_proc); its start time is not enough:
    a pid can be reused within one clock tick.

    `stats` is what each pid's stat said when last read (see pids_to_read for when that
    is); `cache` holds command lines and owners, keyed by (start, comm) per pid. With a
    `budget` (share of a core), /proc is listed only as often as that allows: in between,
    a pass reuses the last listing (ProcScan still reads the pids it is asked about). Used
    by one thread at a time (the daemon's jobs scans hold a lock).
    """

    def __init__(self, proc=PROC, cache=None, every=REFRESH_EVERY, budget=None,
                 clock=time.monotonic):
        self.proc = proc
        self.every = every
        self.budget, self.clock = budget, clock
        self.listed_at, self.list_cost = None, 0.0
        self.btime = parse_proc_stat(read_text(proc + "/stat"))[2] or 0
        self.stats = {}  # pid -> parse_pid_stat_full tuple
        self.inodes = {}  # pid -> /proc/PID inode at the last pass
        self.cache = cache if cache is not None else {}
        self.passes = 0
        self.last_read = set()  # pids whose stat the last pass read
        self.last_gone = set()  # pids that left before the last pass
        self.last_new = set()  # pids new (or reused) at the last pass

    def refresh(self):
        """One pass: returns the pids whose stat it read (none when not listing now)."""
        now = self.clock()
        if self.listed_at is not None and not listing_due(self.list_cost, now - self.listed_at,
                                                          self.budget):
            self.last_read, self.last_gone = set(), set()
            return self.last_read
        self.passes += 1
        cpu = _cpu_clock()
        listed = list_proc(self.proc)
        self.listed_at, self.list_cost = now, _cpu_clock() - cpu
        read, gone, self.last_new = pids_to_read(self.inodes, listed, self.stats, self.last_new,
                                                 self.passes, self.every)
        for pid in gone:
            self.stats.pop(pid, None)
            self.cache.pop(pid, None)  # bounded by the live processes
        for pid in self.last_new:
            if pid in self.inodes:  # another process under a pid we knew: reused, maybe
                self.cache.pop(pid, None)  # within the same clock tick (same start time)
        if self.passes == 1:  # a cache handed in may hold pids gone since
            for pid in [p for p in self.cache if p not in listed]:
                del self.cache[pid]
        self.inodes = listed
        for pid in read:
            self.read(pid)
        # Only young new pids are worth a second look: on the daemon's first pass every pid
        # is "new", and reading 2,000 day-old processes twice was the +2,000 growth left.
        born_before = (time.time() - YOUNG_SECONDS - self.btime) * CLK_TCK
        self.last_new = {pid for pid in self.last_new
                         if pid in self.stats and self.stats[pid][5] > born_before}
        self.last_read, self.last_gone = read, gone
        return read

    def read(self, pid):
        """Read one pid's stat now; -> the tuple, or None (it is gone, and dropped)."""
        st = parse_pid_stat_full(read_text("%s/%d/stat" % (self.proc, pid)))
        if st is None:
            self.stats.pop(pid, None)
            self.inodes.pop(pid, None)
        else:
            self.stats[pid] = st
        return st


class ProcScan:
    """One pass over /proc, shared by everything one jobs scan asks about processes:
    the dataloader worker search, python jobs, their ancestry, tmux pane start times.

    Alone, it reads every /proc/PID/stat once. Given a ProcIndex kept across scans (the
    daemon's), it reads only what pids_to_read says, or nothing between listings; `stat()`
    (CPU, RSS, state) is always read in this pass, and `full()` reads a pid not listed yet.
    Command lines and owners are read on demand and kept across scans, keyed by (pid, start
    time, comm) and dropped when the pid's inode changes: exec changes comm, a reused pid
    has another inode. SigIgn is read live (a process may start ignoring SIGHUP at any
    time) and only for the few pids that ask.
    """

    def __init__(self, proc=PROC, cache=None, index=None):
        if index is None:
            index = ProcIndex(proc, cache)
        index.refresh()
        self.index = index
        self.proc = index.proc
        self.btime = index.btime
        self.stats = index.stats
        self.cache = index.cache
        self._fresh = set(index.last_read)  # read in this pass

    def _facts(self, pid):
        st = self.stats.get(pid)
        if st is None:
            return {}
        key = (st[5], st[0])
        entry = self.cache.get(pid)
        if entry is None or entry[0] != key:
            entry = (key, {})
            self.cache[pid] = entry
        return entry[1]

    def cmdline(self, pid):
        facts = self._facts(pid)
        # an empty one may have been read mid-exec: look once more next scan (kernel threads
        # stay empty, so not more than that)
        if not facts.get("cmd") and facts.get("cmd_reads", 0) < 2:
            raw = read_text("%s/%d/cmdline" % (self.proc, pid))
            facts["cmd"] = " ".join(part for part in raw.split("\0") if part)
            facts["cmd_reads"] = facts.get("cmd_reads", 0) + 1
        return facts.get("cmd", "")

    def runs_python(self, pid):
        """Whether the command line's program is python (python3, python3.11, a path)."""
        facts = self._facts(pid)
        py = facts.get("python")
        if py is None:
            cmd = self.cmdline(pid)
            py = os.path.basename(cmd.split(" ", 1)[0]).startswith("python") if cmd else False
            if cmd:  # an empty one may yet be read again (see cmdline)
                facts["python"] = py
        return py

    def uid(self, pid):
        facts = self._facts(pid)
        if "uid" not in facts:
            facts["uid"] = parse_status_fields(read_text("%s/%d/status" % (self.proc, pid)))[0]
        return facts.get("uid")

    def sigign(self, pid):
        return parse_status_fields(read_text("%s/%d/status" % (self.proc, pid)))[1] or 0

    def full(self, pid):
        """The pid's stat as parse_pid_stat_full gives, or None; a pid the index has not
        listed (it started since the last listing: a new GPU job, a new tmux pane) is read."""
        st = self.stats.get(pid)
        if st is None and pid not in self._fresh:
            self._fresh.add(pid)
            st = self.index.read(pid)
        return st

    def comm(self, pid):
        st = self.full(pid)
        return st[0] if st else None

    def ppid(self, pid):
        st = self.full(pid)
        return st[2] if st else None

    def start(self, pid):
        """Start as epoch seconds, or None if the pid is gone."""
        st = self.full(pid)
        return start_epoch(st[5], self.btime) if st else None

    def stat(self, pid):
        """(state, ppid, cpu jiffies, start jiffies, rss pages), as parse_pid_stat gives,
        read in this pass (these change every second); None if the pid is gone."""
        if pid not in self._fresh:
            self._fresh.add(pid)
            self.index.read(pid)
        st = self.stats.get(pid)
        return (st[1], st[2], st[4], st[5], st[6]) if st else None


def list_pids():
    try:
        return [int(name) for name in os.listdir(PROC) if name.isdigit()]
    except OSError:  # no /proc (macOS): no processes to list
        return []


def nvidia_fd_holders(proc=PROC):
    """-> {pid: set of GPU minor numbers} of processes holding /dev/nvidiaN open.

    In containers NVML reports host-namespace pids that this /proc does not have;
    the fds tell which local processes really use which GPU.
    """
    out = {}
    try:
        names = os.listdir(proc)
    except OSError:  # no /proc (macOS)
        names = []
    for name in names:
        if not name.isdigit():
            continue
        fd_dir = "%s/%s/fd" % (proc, name)
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        gpus = set()
        for fd in fds:
            try:
                target = os.readlink(fd_dir + "/" + fd)
            except OSError:
                continue
            m = NVIDIA_DEV.match(target)
            if m:
                gpus.add(int(m.group(1)))
        if gpus:
            out[int(name)] = gpus
    return out
