"""What the kernel counts for a job, read from /proc and the cgroup: the box's OOM kills and
the bytes a job's processes have written (its sign of life when it prints nothing).
Stdlib only (the probe runs on Python 3.8)."""

from remote_probe.procfs.reader import PROC

KEEP_S = 960.0  # the write history kept: twice jobwatch.HUNG_AFTER_S, the longest hang window


def parse_oom_kills(text):
    """The oom_kill counter from a cgroup's memory.events (v2) or memory.oom_control (v1)."""
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "oom_kill" and parts[1].isdigit():
            return int(parts[1])
    return None


def memory_oom_kills(paths=("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control")):
    """This box's (container's) OOM kill count, or None where the cgroup does not say.
    The daemon samples it; a rise while a job died is the OOM killer's evidence."""
    for path in paths:
        try:
            with open(path, "r") as f:
                count = parse_oom_kills(f.read(4096))
        except OSError:
            continue
        if count is not None:
            return count
    return None


def proc_chars_written(pid, proc=PROC):
    """Bytes a process has written so far (wchar in /proc/PID/io: files, pipes and the
    terminal alike), or None where it cannot be read. A count that stops rising is "no
    output and no file written" without scanning the disk."""
    try:
        with open("%s/%d/io" % (proc, pid), "r") as f:
            for line in f.read(4096).splitlines():
                if line.startswith("wchar:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


class WriteWatch:
    """When a job last wrote anything, from successive wchar readings of its processes."""

    def __init__(self, keep_s=KEEP_S):
        self.keep_s = keep_s
        self.last = {}     # pid -> wchar
        self.changed_t = None
        self.written = 0   # bytes written by the job's processes since the first reading
        self.history = []  # (t, written), the last keep_s or so

    def observe(self, t, counts):
        """counts: {pid: wchar or None} for the job's processes now."""
        for pid, count in counts.items():
            if count is None:
                continue
            if self.last.get(pid) != count:
                if pid in self.last or self.changed_t is None:
                    self.changed_t = t
                if pid in self.last and count > self.last[pid]:
                    self.written += count - self.last[pid]
                self.last[pid] = count
        self.history.append((t, self.written))
        while len(self.history) > 2 and self.history[1][0] < t - self.keep_s:
            self.history.pop(0)
        return self.changed_t

    def bytes_since(self, t0):
        """Bytes the job wrote since t0 (from the nearest reading before it); None unknown."""
        before = [w for t, w in self.history if t <= t0]
        if not before or not self.history:
            return None
        return self.history[-1][1] - before[-1]
