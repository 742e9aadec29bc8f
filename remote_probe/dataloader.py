"""DataLoader facts on the box: hook stats by pid, and workers seen from outside."""

import json
import os
import re
import time

from remote_probe import procfs
from remote_probe.watch.scope import is_own, own_scope

STALE = 5.0  # seconds: a stats file older than this belongs to a stopped loop
WORKER_COMM = "pt_data_worker"  # torch >= 2.5 names its workers
SPAWN_MARKERS = ("multiprocessing.spawn", "multiprocessing.forkserver", "spawn_main")


def dl_dir(state_dir):
    return os.path.join(state_dir, "run", "dl")


def read_hook_stats(directory, now=None, alive=None):
    """Stats files written by the hook, fresh ones only; files of dead pids are removed."""
    now = time.time() if now is None else now
    alive = alive or procfs.pid_alive  # signal 0: works without /proc (the demo on macOS)
    out = []
    try:
        names = os.listdir(directory)
    except OSError:
        return out
    for name in names:
        m = re.match(r"^dl-(\d+)\.json$", name)
        if not m:
            continue
        path = os.path.join(directory, name)
        pid = int(m.group(1))
        if not alive(pid):
            try:
                os.unlink(path)
            except OSError:
                pass
            continue
        try:
            with open(path) as f:
                stats = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(stats, dict) and now - float(stats.get("t") or 0) <= STALE:
            stats["pid"] = pid
            out.append(stats)
    return sorted(out, key=lambda s: s["pid"])


def parse_psi(text):
    """'some avg10=1.23 avg60=...' -> 1.23 (share of time some task was stalled, %)."""
    for line in text.splitlines():
        if line.startswith("some "):
            for part in line.split():
                if part.startswith("avg10="):
                    return float(part[6:])
    return None


def parse_diskstats(text):
    """-> {disk: (sectors_read, io_ms)} for whole disks (partitions and virtual devs skipped)."""
    out = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) < 14:
            continue
        name = f[2]
        if name.startswith(("loop", "ram", "zram", "dm-", "sr", "md")):
            continue
        if re.match(r"^(sd[a-z]+|vd[a-z]+|xvd[a-z]+|hd[a-z]+)\d+$", name) or re.match(r"^nvme\d+n\d+p\d+$", name):
            continue  # a partition: its disk is counted already
        out[name] = (int(f[5]), int(f[12]))
    return out


class DiskBusy:
    def __init__(self):
        self.prev = None

    def read(self, now=None):
        now = time.monotonic() if now is None else now
        cur = parse_diskstats(procfs.read_text(procfs.PROC + "/diskstats"))
        prev, self.prev = self.prev, (now, cur)
        if prev is None or now <= prev[0]:
            return None
        dt = now - prev[0]
        best = None
        for name, (sectors, io_ms) in cur.items():
            if name not in prev[1]:
                continue
            s0, io0 = prev[1][name]
            busy = min(100.0, (io_ms - io0) / (dt * 10.0))
            rate = (sectors - s0) * 512 / dt
            if best is None or busy > best["busy"]:
                best = {"disk": name, "busy": round(busy, 1), "read_bps": int(rate)}
        return best


def find_workers(proc=procfs.PROC, scan=None):
    """DataLoader workers seen from outside: {trainer pid: [worker pids]} and orphans.

    Workers are processes named pt_data_worker (torch >= 2.5), spawn/forkserver children,
    or (older torch, fork) children with their parent's exact command line. Only the box's own
    (watch_scope): a neighbour's DataLoader on a shared box is not the user's to diagnose.
    """
    scan = scan if scan is not None else procfs.ProcScan(proc)
    uid, scope = os.getuid(), own_scope()
    stats = scan.stats
    cmd = scan.cmdline
    trainers, orphans = {}, []
    for pid, st in stats.items():
        comm = st[0]
        if comm != WORKER_COMM and not comm.startswith("python"):
            continue  # most of a box: two string tests each
        ppid = st[2]
        parent = stats.get(ppid)
        if comm == WORKER_COMM:
            is_worker = True
        elif parent is not None and parent[0].startswith("python"):
            c = cmd(pid)
            is_worker = any(m in c for m in SPAWN_MARKERS) or bool(c and c == cmd(ppid))
        elif ppid == 1 or parent is None:
            is_worker = any(m in cmd(pid) for m in SPAWN_MARKERS)  # a spawn worker left behind
        else:
            is_worker = False
        if not is_worker:
            continue
        if ppid == 1 or parent is None:
            if is_own(pid, scan, uid, scope):
                orphans.append(pid)
        elif ppid in trainers or is_own(ppid, scan, uid, scope):
            trainers.setdefault(ppid, []).append(pid)
    return trainers, sorted(orphans)


class LoaderWatch:
    """The outside view, refreshed with the jobs scan (every few seconds)."""

    def __init__(self):
        self.procs = procfs.ProcTable()
        self.disk = DiskBusy()

    def scan(self, scan=None):
        scan = scan if scan is not None else procfs.ProcScan()
        trainers, orphans = find_workers(scan=scan)
        # read in this pass: a worker gone since /proc was last listed is left out
        states = {}
        for pid in [w for ws in trainers.values() for w in ws] + orphans:
            st = scan.stat(pid)
            if st is not None:
                states[pid] = st[0]
        trainers = {t: [w for w in ws if w in states] for t, ws in trainers.items()}
        trainers = {t: ws for t, ws in trainers.items() if ws}
        orphans = [o for o in orphans if o in states]
        stats = self.procs.sample(list(states), scan=scan)

        def row(pid):
            s = stats.get(pid, {})
            return {"pid": pid, "cpu": s.get("cpu"), "rss": s.get("rss"), "state": states.get(pid)}
        return {
            "trainers": [{"pid": t, "workers": [row(w) for w in sorted(ws)]}
                         for t, ws in sorted(trainers.items())],
            "orphans": [row(o) for o in orphans],
            "psi": {k: parse_psi(procfs.read_text("%s/pressure/%s" % (procfs.PROC, k)))
                    for k in ("cpu", "io", "memory")},
            "disk": self.disk.read(),
        }
