"""The app under a flood of processes: RSS and frame time at 2, 5,000 and 50,000 GPU
processes per sample (issue 10).

Each sample is built like a hostile or huge box would send it (fresh pids every sample: the
worst case for per-pid state), encoded to a line, passed through the client's boundary
(wire.decode_clean, which caps the rows) and handed to the real app's listener; the app
runs headless at 160x50 and every sample is followed by a full repaint of the dashboard.
Frame time = sample handed over -> widgets refreshed and the screen composed. The peer: the same app fed 2 processes.

    python bench/app_flood.py [--samples 60]
"""

import argparse
import asyncio
import gc
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from remote_probe import wire  # noqa: E402
from tui.core.config import Config  # noqa: E402
from tui.remote import ssh  # noqa: E402
from tui.ui.app import GputuiApp, StateChanged, _AppListener  # noqa: E402

INVENTORY = {"type": "inventory", "backend": "sim", "driver": "550.54.15", "cuda_driver": "12.4",
             "gpus": [{"index": i, "name": "NVIDIA H100 80GB HBM3", "mem_total": 81559,
                       "power_limit": 700} for i in range(8)],
             "host": {"ncpu": 64, "boot_id": "bench", "boot_time": time.time() - 3600}}


def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0


def sample(seq, n, base_pid):
    gpus = [wire.gpu_row({"util": 80, "mem_util": 40, "mem_used": 60000, "temp": 70, "power": 600,
                          "clock_sm": 1980, "clock_mem": 2619, "pstate": 0, "fan": None,
                          "throttle": 0, "ecc_errors": 0}) for _ in range(8)]
    procs = [wire.proc_row({"pid": base_pid + i, "gpu": i % 8, "kind": "C", "gpu_mem": 1000 + i % 97,
                            "cpu": 1.0, "rss": 1000, "host_pid": None, "local": True})
             for i in range(n)]
    return {"type": "sample", "seq": seq, "t": time.time(), "gpus": gpus, "procs": procs,
            "host": {"cpu": 12.0, "mem_used": 1000, "mem_total": 100000}}


async def run(n, samples):
    cfg = ssh.Target.parse("127.0.0.1")
    app = GputuiApp(cfg, config=Config({}), ledger=None)
    app.run_session = lambda: None  # no box: samples come from this bench
    listener = _AppListener(app)
    frames = []
    async with app.run_test(size=(160, 50)) as pilot:
        listener.on_inventory(dict(INVENTORY))
        await pilot.pause(0.1)
        rss0 = None
        for seq in range(1, samples + 1):
            # cut like the daemon does (500 rows with the most GPU memory, the rest counted);
            # an uncut 50k-row line is skipped whole by the client as too long
            s = sample(seq, n, 100000 + seq * n)
            s["procs"], s["procs_more"] = wire.cap_procs(
                s["procs"], key=lambda row: row[wire.ProcCol.GPU_MEM] or 0)
            line = wire.encode(s)
            msg = wire.decode_clean(line.decode() if isinstance(line, bytes) else line)
            t0 = time.perf_counter()
            listener.on_sample(msg)
            app.state_changed(StateChanged(app.box))
            await pilot.pause()  # messages handled, widgets refreshed, the screen composed
            frames.append((time.perf_counter() - t0) * 1000)
            if seq == 10:
                gc.collect()
                rss0 = rss_mb()
        gc.collect()
        rss1 = rss_mb()
    frames.sort()
    return frames[len(frames) // 2], frames[int(len(frames) * 0.95) - 1], rss1, rss1 - rss0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=60)
    args = ap.parse_args()
    base = None
    for n in (2, 5000, 50000):
        p50, p95, rss, growth = asyncio.run(run(n, args.samples))
        base = base or p50
        print("%6d procs/sample  frame p50 %6.1f ms  p95 %6.1f ms (%.1fx the 2-process frame)  "
              "RSS %5.1f MB, +%.1f MB over the last %d samples" % (n, p50, p95, p50 / base, rss, growth,
                                                                    args.samples - 10), flush=True)


if __name__ == "__main__":
    main()
