"""Small facts the job watch (watch/loop.py) reads: per-GPU idle inputs of a sample, the
lines a pane shows that are new, a process tree, a job's name and run time in words.
Pure functions, stdlib only (Python 3.8)."""

from remote_probe import procfs
from remote_probe.watch import jobwatch, kernel_log
from remote_probe.wire import GpuCol, ProcCol, proc_flags
from remote_probe.wire.rows import PROC_FD_ONLY, PROC_GRAPHICS


def pane_name(session, window, pane):
    return "%s:%s.%s" % (session.get("name"), window.get("index"), pane.get("index"))


def runtime_text(seconds):
    seconds = max(0, int(seconds or 0))
    if seconds < 120:
        return "%d s" % seconds
    if seconds < 7200:
        return "%d min" % (seconds // 60)
    return "%d h %02d min" % (seconds // 3600, seconds % 3600 // 60)


def gpu_inputs(sample):
    """[(util or None, compute process count)] per GPU of a sample, for idle_rules.
    Processes beyond the row cap (procs_more) count on GPU 0: never idle by omission."""
    gpus = sample.get("gpus") or []
    counts = [0] * len(gpus)
    for row in sample.get("procs", ()):
        if proc_flags(row) & (PROC_GRAPHICS | PROC_FD_ONLY):
            continue
        g = row[ProcCol.GPU]
        if isinstance(g, int) and 0 <= g < len(counts):
            counts[g] += 1
    if counts and sample.get("procs_more"):
        counts[0] += sample["procs_more"]
    return [(row[GpuCol.UTIL], counts[i]) for i, row in enumerate(gpus)]


def _count(lines, line):
    """How often a (sanitized, stripped) line is on screen."""
    return sum(1 for x in lines if jobwatch.sanitize_line(x).strip() == line)


def new_lines(before, after):
    """The lines of `after` that were not on screen in `before` (the pane scrolled):
    after the longest head of `after` that is the tail of `before`."""
    while before and not before[-1].strip():
        before = before[:-1]
    for k in range(min(len(before), len(after)), 0, -1):
        if after[:k] == before[-k:]:
            return after[k:]
    return after


def _tree(pid, children):
    """pid and its descendants."""
    out, stack = [], [pid] if pid else []
    seen = set()
    while stack and len(out) < 4096:
        p = stack.pop()
        if p in seen:
            continue
        seen.add(p)
        out.append(p)
        stack.extend(children.get(p, ()))
    return set(out)


def _has_ancestor_in(pid, candidates, scan):
    seen = set()
    p = scan.ppid(pid)
    while p and p > 1 and p not in seen:
        if p in candidates:
            return True
        seen.add(p)
        p = scan.ppid(p)
    return False


def rank_environ(pid):
    """A process's environment (RANK, LOCAL_RANK), {} where it cannot be read."""
    try:
        with open("%s/%d/environ" % (procfs.PROC, pid), "rb") as f:
            raw = f.read(65536)
    except OSError:
        return {}
    out = {}
    for item in raw.split(b"\0"):
        name, sep, value = item.partition(b"=")
        if sep and name in (b"RANK", b"LOCAL_RANK"):
            out[name.decode()] = value.decode("ascii", "replace")
    return out


def cmdline_of(pid):
    try:
        with open("%s/%d/cmdline" % (procfs.PROC, pid), "rb") as f:
            return f.read(4096).replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def kernel_lines(pids, since, pcis=()):
    """The kernel's lines about a job that ended (its OOM kill, its GPUs' Xids) since it
    started; [] where the box does not let us read the kernel's ring (most containers)."""
    return kernel_log.for_job(kernel_log.read_events(since=since - 5), [p for p in pids if p], pcis)
