"""Sample taken on the box -> frame on the user's terminal, p50/p95 (issue 12: 50 ms; issue 25: 25 ms
at 2, 8 and 16 GPUs with the other core busy).

    python bench/latency.py [--seconds 30] [--no-hog]

`gputui connect` runs on a real pseudo-terminal (160x50) against the demo box (a separate
process: embedded SSH server + simulator). The frame log (bench/frame_log.py, plugged in as
the app's Textual driver) records the wall time of the first frame it writes to the terminal
after each new sample, with that sample's tick time from the probe (same machine, same clock).
A CPU hog (a busy loop in another process, what a laptop with a browser open looks like) runs
through each case unless --no-hog. Printed as the ratio to the 25 ms target, for 2, 8 and 16
GPUs and for 8 GPUs with 2,000 extra processes on the box."""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from app_cost import REPO, SCREENS, extra_processes, spawn_pty, start_demo  # noqa: E402
from bench_scope import cleanup, guarded, kill_pid, on_exit, temp_path  # noqa: E402
from frame_log import frame_log_env  # noqa: E402

TARGET_MS = 25.0
CASES = (("a100x2", 0), ("h100x8", 0), ("a10x16", 0), ("h100x8", 2000))
HOG = "while True: pass"


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def measure(scenario, extra, seconds):
    log = temp_path("gputui-frames-", ".view")
    env = frame_log_env(dict(os.environ, TERM="xterm-256color", PYTHONPATH=REPO), log)
    env.pop("TMUX", None)
    info = start_demo()
    sleepers = extra_processes(extra)
    app = None
    try:
        app, _ = spawn_pty([sys.executable, "-m", "tui", "connect", "gputui-demo", "--ssh-config",
                            info["config"], "--simulate", scenario], env, REPO)
        deadline = time.time() + 60
        while b"live" not in SCREENS.get(app, b"") and time.time() < deadline:
            time.sleep(0.2)
        time.sleep(3)  # past the backfill of the first connect
        start = time.time()
        time.sleep(seconds)
        rows = [line.split() for line in open(log)]
        views = [tuple(map(float, line.split())) for line in open(log + ".view")]
        views = [v for v in views if v[0] < 60] or [(0.0, 0.0)]  # refreshes before any sample
        print("  queue->view p50 %.1f ms, refresh_view p50 %.1f ms" % (
            pct([v[0] * 1000 for v in views], 0.5), pct([v[1] * 1000 for v in views], 0.5)))
        lat = [(float(f) - float(t)) * 1000 for f, _seq, t, _r in rows if float(t) >= start]
        wire = [(float(r) - float(t)) * 1000 for _f, _seq, t, r in rows if float(t) >= start]
        return lat, wire
    finally:
        if app:
            kill_pid(app)
        for p in sleepers:
            p.kill()
            p.wait()
        cleanup()  # the demo box (daemon, server, its dir), the frame logs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--no-hog", action="store_true", help="without the busy loop on the other core")
    ap.add_argument("--cases", type=int, default=len(CASES),
                    help="only the first N of the %d cases (the suite's short run)" % len(CASES))
    args = ap.parse_args()
    with guarded():
        run(args)


def cpu_hog():
    """A busy loop in its own process, stopped by cleanup() at the end of the case."""
    hog = subprocess.Popen([sys.executable, "-c", HOG])
    on_exit(lambda: (hog.kill(), hog.wait()))


def run(args):
    print("CPU hog: %s" % ("none" if args.no_hog else "one busy process through each case"))
    for scenario, extra in CASES[:max(1, args.cases)]:
        if not args.no_hog:
            cpu_hog()
        lat, wire = measure(scenario, extra, args.seconds)
        if not lat:
            print("%-7s +%4d procs  no frames logged" % (scenario, extra))
            continue
        p50, p95 = pct(lat, 0.5), pct(lat, 0.95)
        print("%-7s +%4d procs  sample->frame p50 %6.1f ms  p95 %6.1f ms  (%d samples)  "
              "p95 = %.2fx the %d ms target; of p50, box+wire %.1f ms, app %.1f ms"
              % (scenario, extra, p50, p95, len(lat), p95 / TARGET_MS, TARGET_MS, pct(wire, 0.5),
                 p50 - pct(wire, 0.5)), flush=True)
        # no peer draws gputui's frames: the ratio is to the target (bench/readme_table.py)
        print("RESULT " + json.dumps(dict(
            bench="latency", figure="sample -> frame p95, %s%s" % (scenario, " +%d procs" % extra if extra else ""),
            via="demo box (loopback), %s" % ("no hog" if args.no_hog else "CPU hog on the other core"),
            peer="target", ours_s=p95 / 1000, peer_s=TARGET_MS / 1000, ratio=p95 / TARGET_MS,
            target=1.0 if not extra else None, p50_s=p50 / 1000)), flush=True)


if __name__ == "__main__":
    main()
