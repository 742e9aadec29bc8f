"""The wire under a flood of processes: 2, 5,000 and 50,000 GPU processes per sample.

Box side: a real Daemon (simulator backend, whose process list is swapped for N fake
host-namespace GPU processes with fresh pids every tick, the worst case: 15k new pids
a second) ticks for a while; we report ms per tick, the encoded sample size and the
daemon's RSS growth from tick 10 to the last tick (flat = bounded structures).

Laptop side: the client boundary (wire.decode_clean) on each sample, in ms, and the
RSS growth of a ProbeClient fed the same samples through a real StreamReader. The
peer: plain json.loads of the same line (what the client did before validation).

    python bench/wire_load.py [--ticks 120]
"""

import argparse
import asyncio
import gc
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from remote_probe import daemon as daemon_mod  # noqa: E402
from remote_probe import wire  # noqa: E402
from tui.remote.probe.client import ProbeClient  # noqa: E402


def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1048576.0


class Writer:
    def write(self, data):
        pass

    def write_eof(self):
        pass


async def box_side(n, ticks, state_dir):
    d = daemon_mod.Daemon(state_dir, simulate="idle")
    first_pid = [4_000_000]

    def flood():
        base = first_pid[0]
        first_pid[0] += n  # every tick: n processes never seen before
        gpus = [{"util": 90, "mem_util": 50, "mem_used": 1000, "temp": 60, "power": 300,
                 "clock_sm": 1400, "clock_mem": 1500, "pstate": 0, "fan": 40, "throttle": 0,
                 "ecc_errors": 0}]
        return gpus, [{"pid": base + i, "gpu": 0, "gpu_mem": i % 9000, "kind": "C"}
                      for i in range(n)]
    d.backend.sample = flood
    d.stop_event = asyncio.Event()
    lines, times, rss = [], [], {}
    for t in range(ticks):
        t0 = time.perf_counter()
        await d.tick()
        times.append(time.perf_counter() - t0)
        lines.append(d.history.ring[-1][1])
        if t == 9:
            gc.collect()
            rss["start"] = rss_mib()
    gc.collect()
    rss["end"] = rss_mib()
    d.backend.close()
    d.pool.shutdown(wait=False)
    d.tmux_pool.shutdown(wait=False)
    d.install_pool.shutdown(wait=False)
    times.sort()
    return lines, {"tick_ms_median": round(1000 * times[len(times) // 2], 2),
                   "line_bytes": len(lines[-1]),
                   "daemon_rss_growth_mib": round(rss["end"] - rss["start"], 1)}


async def laptop_side(lines, uncapped_line):
    out = {}
    t0 = time.perf_counter()
    for line in lines:
        wire.decode_clean(line)
    out["decode_clean_ms"] = round(1000 * (time.perf_counter() - t0) / len(lines), 3)
    t0 = time.perf_counter()
    for line in lines:
        json.loads(line)
    out["json_loads_ms (peer)"] = round(1000 * (time.perf_counter() - t0) / len(lines), 3)
    t0 = time.perf_counter()
    try:
        wire.decode_clean(uncapped_line)
        out["uncapped_line"] = "accepted"
    except wire.ProtocolError as exc:
        out["uncapped_line"] = "skipped: %s" % exc
    out["uncapped_ms"] = round(1000 * (time.perf_counter() - t0), 2)
    reader, pushed = asyncio.StreamReader(limit=wire.MAX_LINE * 2), [0]
    client = ProbeClient(reader, Writer(), on_push=lambda m: pushed.__setitem__(0, pushed[0] + 1))
    reader.feed_data(wire.encode(wire.hello("probe", "0", [])))
    await client.start()
    gc.collect()
    before = rss_mib()
    for _ in range(5):  # five rounds of the same samples, as a long session would
        for line in lines:
            reader.feed_data(line)
            await asyncio.sleep(0)
    await asyncio.sleep(0.05)
    gc.collect()
    out["client_rss_growth_mib"] = round(rss_mib() - before, 1)
    out["pushed"] = pushed[0]
    await client.close()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ticks", type=int, default=60)
    ap.add_argument("--sizes", default="2,5000,50000")
    args = ap.parse_args()
    print("%8s  %s" % ("procs", "figures"))
    for n in [int(x) for x in args.sizes.split(",")]:
        with tempfile.TemporaryDirectory() as state:
            lines, box = asyncio.run(box_side(n, args.ticks, state))
        rows = [[4_000_000 + i, 0, i % 9000, None, None, wire.PROC_HOST_PID] for i in range(n)]
        uncapped = wire.encode({"type": "sample", "seq": 1, "t": 1.0, "gpus": [],
                                "procs": rows, "host": {}})
        laptop = asyncio.run(laptop_side(lines, uncapped))
        print("%8d  %s" % (n, json.dumps(dict(box, **laptop))))


if __name__ == "__main__":
    main()
