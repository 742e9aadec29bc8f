"""The box as a whole, from /proc and /sys: CPU, memory, load, the cgroup's CPU limit, boot."""

from remote_probe.procfs.reader import PROC, read_text


# ---------------------------------------------------------------- CPU
def parse_proc_stat(text):
    """-> (total_line, [per_core_lines], btime); each line is a tuple of jiffies."""
    total, cores, btime = None, [], None
    for line in text.splitlines():
        if line.startswith("cpu"):
            parts = line.split()
            vals = tuple(int(x) for x in parts[1:])
            if parts[0] == "cpu":
                total = vals
            else:
                cores.append(vals)
        elif line.startswith("btime "):
            btime = int(line.split()[1])
    return total, cores, btime


def cpu_busy_idle(vals):
    """(busy, idle, iowait) jiffies of one cpu line. guest time is already in user."""
    vals = tuple(vals) + (0,) * (8 - len(vals))
    user, nice, system, idle, iowait, irq, softirq, steal = vals[:8]
    return user + nice + system + irq + softirq + steal, idle, iowait


class CpuMeter:
    """CPU utilization between two calls, total and per core, plus iowait share."""

    def __init__(self, path=PROC + "/stat"):
        self.path = path
        self.prev = None

    def read(self):
        total, cores, _ = parse_proc_stat(read_text(self.path))
        if total is None:  # no /proc/stat (macOS): not available, not "0 % busy"
            self.prev = None
            return {"cpu": None, "cores": [], "iowait": None, "ncpu": 0}
        cur = [cpu_busy_idle(total or ())] + [cpu_busy_idle(c) for c in cores]
        prev, self.prev = self.prev, cur
        if prev is None or len(prev) != len(cur):
            return {"cpu": None, "cores": [None] * len(cores), "iowait": None,
                    "ncpu": len(cores)}
        pcts, iowait = [], None
        for i, ((b1, i1, w1), (b0, i0, w0)) in enumerate(zip(cur, prev)):
            span = (b1 - b0) + (i1 - i0) + (w1 - w0)
            pcts.append(round(100.0 * (b1 - b0) / span, 1) if span > 0 else 0.0)
            if i == 0:
                iowait = round(100.0 * (w1 - w0) / span, 1) if span > 0 else 0.0
        return {"cpu": pcts[0], "cores": [round(p) for p in pcts[1:]], "iowait": iowait,
                "ncpu": len(cores)}


def boot_time():
    return parse_proc_stat(read_text(PROC + "/stat"))[2]


def boot_id():
    return read_text(PROC + "/sys/kernel/random/boot_id").strip() or None


# ---------------------------------------------------------------- memory, load
def parse_meminfo(text):
    """-> dict of MiB values for the keys we show."""
    kb = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            kb[key] = int(parts[0])
    if "MemTotal" not in kb:  # no /proc/meminfo (macOS): not available, not "0 MiB"
        return dict.fromkeys(("mem_total", "mem_used", "mem_avail", "swap_total", "swap_used"))
    total = kb.get("MemTotal", 0)
    avail = kb.get("MemAvailable", kb.get("MemFree", 0) + kb.get("Cached", 0))
    return {
        "mem_total": total // 1024,
        "mem_used": (total - avail) // 1024,
        "mem_avail": avail // 1024,
        "swap_total": kb.get("SwapTotal", 0) // 1024,
        "swap_used": (kb.get("SwapTotal", 0) - kb.get("SwapFree", 0)) // 1024,
    }


def parse_loadavg(text):
    parts = text.split()
    try:
        return [float(parts[0]), float(parts[1]), float(parts[2])]
    except (IndexError, ValueError):
        return [None, None, None]


def cgroup_cpu_limit():
    """CPUs the container may use (cgroup v2 cpu.max), or None when unlimited.

    Rented containers often see all 128 host cores in /proc/stat but may use 12.
    """
    text = read_text("/sys/fs/cgroup/cpu.max").split()
    if len(text) == 2 and text[0] != "max":
        try:
            return round(int(text[0]) / int(text[1]), 1)
        except (ValueError, ZeroDivisionError):
            return None
    return None
