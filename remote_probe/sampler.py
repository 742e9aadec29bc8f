"""One sampling tick: GPU backend + /proc, joined into a wire sample (wire.SAMPLE)."""

import os
import platform
import socket
import sys
import time

from remote_probe import __version__, procfs, wire
from remote_probe.backends import BackendError
from remote_probe.watch.scope import simulated_start

NO_STATS = {"cpu": None, "rss": None, "ppid": None}  # a host pid, or one gone mid-tick
FD_SCAN_EVERY = 5.0  # seconds; scanning every /proc/*/fd is the costliest thing we do
DISKS_EVERY = 10  # samples between disk usage reports


def join_container_pids(gpu_procs, local_pids, fd_holders, minor_to_index, own_pids=(),
                        room=None):
    """Match the GPU processes the driver reports with processes this /proc can see.

    In a container NVML reports host-namespace pids. A reported pid that exists here is
    ``local``. An unknown one is paired with the single local process holding that GPU's
    ``/dev/nvidiaN`` open when that is unambiguous; otherwise it stays a row labelled as a
    host pid (never dropped). Local fd holders the driver did not report are added
    with kind "?" for GPUs where the driver reported nothing visible, while there is
    `room` (rows in all; None: no bound). They have no GPU memory figure, so the sample's
    row cap (wire.cap_procs, biggest GPU memory first) would leave them out first anyway.
    Returns (rows as dicts with wire.PROC_FIELDS keys (cpu/rss filled in later), how many
    fd holders found no room).
    """
    holders = {}
    for pid, minors in fd_holders.items():
        if pid in own_pids:
            continue
        for minor in minors:
            gpu = minor_to_index.get(minor)
            if gpu is not None:
                holders.setdefault(gpu, []).append(pid)
    rows, unmapped, claimed = [], {}, set()
    for p in gpu_procs:
        if p["pid"] in local_pids:
            rows.append(dict(p, local=1, host_pid=None))
            claimed.add(p["pid"])
        else:
            unmapped.setdefault(p["gpu"], []).append(p)
    for gpu, group in sorted(unmapped.items(), key=lambda kv: (kv[0] is None, kv[0])):
        candidates = [pid for pid in sorted(holders.get(gpu, ())) if pid not in claimed]
        if len(group) == 1 and len(candidates) == 1:
            rows.append(dict(group[0], pid=candidates[0], local=1, host_pid=group[0]["pid"]))
            claimed.add(candidates[0])
        else:
            rows.extend(dict(p, local=0, host_pid=None) for p in group)
    reported_gpus = {r["gpu"] for r in rows if r["local"]}
    left_out = 0
    for gpu, pids in sorted(holders.items()):
        if gpu in reported_gpus:
            continue
        for pid in sorted(pids):
            if pid in claimed:
                continue
            claimed.add(pid)
            if room is not None and len(rows) >= room:
                left_out += 1
                continue
            rows.append({"pid": pid, "gpu": gpu, "gpu_mem": None, "kind": "?",
                         "local": 1, "host_pid": None})
    return rows, left_out


class Sampler:
    def __init__(self, backend, clock=time.monotonic):
        self.backend = backend
        self.clock = clock
        self.cpu = procfs.CpuMeter()
        # the baseline now, so the first tick (moments later, at daemon start) already has a
        # CPU figure: a first snapshot need not wait a second for a delta (issue 12)
        self.cpu.read()
        self.net = procfs.NetMeter()
        self.disks = procfs.DiskMeter()
        self.procs = procfs.ProcTable()
        self._fd = (-1e9, {})
        self.gpu_error = None
        self.ticks = 0
        self.own_pids = {os.getpid(), os.getppid()}

    def host_facts(self):
        """Facts about the box that do not change while the daemon runs."""
        return {
            "hostname": socket.gethostname(),
            "kernel": platform.release(),
            "python": platform.python_version(),
            "python_exe": sys.executable,
            "ncpu": os.cpu_count(),
            "cpu_limit": procfs.cgroup_cpu_limit(),
            "boot_id": procfs.boot_id(),
            "boot_time": procfs.boot_time(),
            "instance_start": simulated_start() or procfs.pid1_start(),
            "provider": procfs.provider_facts(),
            "probe_version": __version__,
        }

    def inventory(self):
        try:
            inv = dict(self.backend.inventory())
        except BackendError as exc:
            inv = {"backend": self.backend.name, "gpus": [], "reason": str(exc)}
        inv["host"] = self.host_facts()
        return inv

    def _fd_holders(self, now):
        if now - self._fd[0] > FD_SCAN_EVERY:
            self._fd = (now, procfs.nvidia_fd_holders())
        return self._fd[1]

    def tick(self):
        now = self.clock()
        gpus, gpu_procs = [], []
        try:
            gpus, gpu_procs = self.backend.sample()
            self.gpu_error = None
        except BackendError as exc:
            self.gpu_error = str(exc)
        # 50k GPU processes (a hostile or broken box) would cost a /proc lookup each:
        # keep the ones using the most GPU memory, count the rest (the UI says "N more").
        gpu_procs, more = wire.cap_procs(gpu_procs)
        local = set()
        if not procfs.proc_available():
            # no /proc (the demo on macOS): nothing tells a container's host pids apart, so the
            # backend's processes are this machine's; their CPU and RSS are not available
            local = set(p["pid"] for p in gpu_procs)
        for p in gpu_procs:
            if os.path.exists("%s/%d" % (procfs.PROC, p["pid"])):
                local.add(p["pid"])
        needs_fds = len(local) < len(gpu_procs) or (gpus and not gpu_procs and any(
            (g.get("mem_used") or 0) > 1024 for g in gpus))
        holders = self._fd_holders(now) if needs_fds else {}
        minor_to_index = {}
        if holders:
            for g in self.backend.inventory().get("gpus", []):
                minor = g.get("minor")
                minor_to_index[g["index"] if minor is None else minor] = g["index"]
        rows, no_room = join_container_pids(gpu_procs, local, holders, minor_to_index,
                                            self.own_pids, room=wire.MAX_PROC_ROWS)
        more += no_room
        stats = self.procs.sample([r["pid"] for r in rows if r["local"]], now)
        for r in rows:
            r.update(stats.get(r["pid"], NO_STATS) if r["local"] else NO_STATS)
            if r.get("host_pid") and r["pid"] in self.procs.meta:
                self.procs.meta[r["pid"]]["host_pid"] = r["host_pid"]
        cpu = self.cpu.read()
        mem = procfs.parse_meminfo(procfs.read_text(procfs.PROC + "/meminfo"))
        host = {
            "cpu": cpu["cpu"], "cores": cpu["cores"], "iowait": cpu["iowait"],
            "load": procfs.parse_loadavg(procfs.read_text(procfs.PROC + "/loadavg")),
            "mem_total": mem["mem_total"], "mem_used": mem["mem_used"],
            "swap_total": mem["swap_total"], "swap_used": mem["swap_used"],
        }
        # Disk usage moves slowly and costs ~80 bytes a mount: every DISKS_EVERY ticks.
        if self.ticks % DISKS_EVERY == 0:
            host["disks"] = self.disks.read(now)
        self.ticks += 1
        host.update(self.net.read(now))
        sample = {
            "type": wire.SAMPLE,
            "t": round(time.time(), 2),
            "gpus": [wire.gpu_row(g) for g in gpus],
            "procs": [wire.proc_row(r) for r in rows],
            "host": host,
        }
        if self.gpu_error:
            sample["gpu_error"] = self.gpu_error
        if more:
            sample["procs_more"] = more
        return sample

    def proc_meta(self, pids):
        played = getattr(self.backend, "proc_facts", None)  # the simulator's, without /proc
        out = []
        for p in pids:
            meta = self.procs.meta.get(p) or (played(p) if played else None)
            if meta:
                out.append(meta)
        return out
