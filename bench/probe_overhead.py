"""Probe sampling cost against a psutil-based sampler of the same processes.

nvitop and gpustat sample host and process facts through psutil; the probe reads
/proc itself and caches what cannot change. Both samplers get the same GPU data from
the same backend, so the ratio isolates the host/process side.

Prints: CPU ms per tick (probe, psutil peer, ratio), daemon RSS, bytes per sample on
the wire, and connect -> first sample through a real sshd (probe already deployed).

    python bench/probe_overhead.py [--scenario h100x8] [--nvml] [--ticks 50] [--no-ssh]
"""

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_scope import guarded, mkdtemp, on_exit  # noqa: E402
sys.path.insert(0, os.path.dirname(HERE))

from remote_probe import wire  # noqa: E402
from remote_probe.backends import select_backend  # noqa: E402
from remote_probe.sampler import Sampler  # noqa: E402


class PsutilSampler:
    """How nvitop/gpustat sample: cached psutil.Process objects + psutil host calls."""

    def __init__(self, backend):
        import psutil
        self.psutil = psutil
        self.backend = backend
        self.procs = {}
        psutil.cpu_percent(percpu=True)

    def tick(self):
        ps = self.psutil
        gpus, gpu_procs = self.backend.sample()
        rows = []
        for p in gpu_procs:
            proc = self.procs.get(p["pid"])
            if proc is None:
                try:
                    proc = self.procs[p["pid"]] = ps.Process(p["pid"])
                except ps.Error:
                    continue
            try:
                with proc.oneshot():
                    rows.append((p["pid"], proc.cpu_percent(), proc.memory_info().rss,
                                 proc.username(), " ".join(proc.cmdline()), proc.create_time()))
            except ps.Error:
                self.procs.pop(p["pid"], None)
        host = {
            "cores": ps.cpu_percent(percpu=True),
            "times": ps.cpu_times_percent(),
            "mem": ps.virtual_memory(), "swap": ps.swap_memory(),
            "load": os.getloadavg(),
            "disks": [ps.disk_usage(d.mountpoint) for d in ps.disk_partitions()],
            "net": ps.net_io_counters(),
        }
        return gpus, rows, host


def cpu_per_tick(fn, ticks):
    fn()
    fn()
    t0 = time.process_time()
    w0 = time.perf_counter()
    for _ in range(ticks):
        fn()
    return ((time.process_time() - t0) / ticks * 1000.0, (time.perf_counter() - w0) / ticks * 1000.0)


def sampler_costs(scenario, use_nvml, ticks):
    state = mkdtemp("gputui-bench-")
    backend, _ = select_backend(None if use_nvml else scenario, state_dir=state,
                                prefer="nvml" if use_nvml else None)
    try:
        time.sleep(0.5)  # let the simulated jobs start
        probe = Sampler(backend)
        peer = PsutilSampler(backend)
        nproc = len(backend.sample()[1])
        # Alternate the two so machine noise hits both alike.
        probe_ms, peer_ms = [], []
        for _ in range(3):
            probe_ms.append(cpu_per_tick(probe.tick, ticks // 3))
            peer_ms.append(cpu_per_tick(peer.tick, ticks // 3))
        backend_only = cpu_per_tick(backend.sample, ticks // 3)
        return {
            "gpus": len(backend.inventory()["gpus"]), "processes": nproc,
            "probe_cpu_ms": statistics.median(c for c, _ in probe_ms),
            "peer_cpu_ms": statistics.median(c for c, _ in peer_ms),
            "gpu_backend_cpu_ms": backend_only[0],
            "backend": backend.name,
        }
    finally:
        backend.close()


def _stop_attach(p, state):
    from remote_probe.daemon import terminate
    if p.poll() is None:
        p.kill()
        p.wait()
    terminate(state)


def daemon_figures(scenario, use_nvml, seconds=6):
    """Start a real daemon through `attach`, read samples off the socket, measure it."""
    state = mkdtemp("gputui-bench-")
    argv = [sys.executable, "-m", "remote_probe", "attach", "--state-dir", state]
    if not use_nvml:
        argv += ["--simulate", scenario]
    env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    on_exit(_stop_attach, p, state)
    hello = json.loads(p.stdout.readline())
    p.stdin.write(wire.encode({"type": "subscribe", "id": 1, "since_seq": 0}))
    p.stdin.flush()
    sizes, deadline = [], time.time() + seconds
    while time.time() < deadline:
        line = p.stdout.readline()
        if b'"type":"sample"' in line[:30]:
            sizes.append(len(line))
    rss = None
    with open("/proc/%d/status" % hello["pid"]) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024.0
    p.stdin.write(wire.encode({"type": "shutdown", "id": 2}))
    p.stdin.flush()
    p.stdin.close()
    p.wait(10)
    return {"daemon_rss_mb": rss, "bytes_per_sample": statistics.mean(sizes[1:] or sizes),
            "samples": len(sizes)}


def first_sample_times(runs=5):
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
    import pathlib
    from tests.support.sshd import start_sshd, stop_daemon, stop_sshd
    from tui.remote import session as session_mod, ssh

    box = start_sshd(pathlib.Path(mkdtemp("gputui-bench-sshd-")))
    on_exit(stop_sshd, box)
    on_exit(stop_daemon, box.remote_dir)
    box.trust()
    target = ssh.Target.parse("testbox", ssh_config=box.ssh_config)

    class L(session_mod.Listener):
        def __init__(self):
            self.first = asyncio.get_event_loop().create_future()

        def on_sample(self, sample):
            if not self.first.done():
                self.first.set_result(time.perf_counter())

    async def once():
        listener = L()
        s = session_mod.RemoteSession(target, simulate="a100x2", remote_dir=box.remote_dir,
                                      listener=listener)
        t0 = time.perf_counter()
        await s.open()
        t1 = await asyncio.wait_for(listener.first, 10)
        await s.close()
        return t1 - t0

    async def main():
        await session_mod.snapshot(target, simulate="a100x2", remote_dir=box.remote_dir)  # deploy
        return [await once() for _ in range(runs)]

    return asyncio.run(main())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", default="h100x8")
    ap.add_argument("--nvml", action="store_true", help="use the real GPU through NVML")
    ap.add_argument("--ticks", type=int, default=60)
    ap.add_argument("--no-ssh", action="store_true")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    res = sampler_costs(args.scenario, args.nvml, args.ticks)
    res["ratio"] = res["probe_cpu_ms"] / res["peer_cpu_ms"]
    print("sampling tick, %d GPUs (%s), %d GPU processes, real /proc:"
          % (res["gpus"], res["backend"], res["processes"]))
    print("  probe   %.2f ms CPU/tick" % res["probe_cpu_ms"])
    print("  psutil  %.2f ms CPU/tick (peer: nvitop/gpustat-style sampler)" % res["peer_cpu_ms"])
    print("  ratio   %.2f  (target <= 0.33)" % res["ratio"])
    print("  (GPU backend alone: %.2f ms/tick, in both)" % res["gpu_backend_cpu_ms"])
    res.update(daemon_figures(args.scenario, args.nvml))
    print("daemon RSS %.1f MB (target <= 40); %.0f bytes per sample on the wire (target <= 2048)"
          % (res["daemon_rss_mb"], res["bytes_per_sample"]))
    if not args.no_ssh:
        times = first_sample_times()
        res["first_sample_s"] = statistics.median(times)
        print("connect -> first sample through real sshd, probe deployed: median %.3f s "
              "(min %.3f, max %.3f, %d runs; target <= 1.5 s)"
              % (res["first_sample_s"], min(times), max(times), len(times)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    with guarded():
        main()
