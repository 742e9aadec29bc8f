"""The fleet at 20 boxes, through one real sshd on loopback (20 ssh_config aliases, each box
its own remote dir, so its own probe daemon; simulator scenario "idle"):

* time until every box is live with its history in, for `gputui fleet` (the app, headless),
  cold (probes deployed, daemons started) and warm (daemons already running);
* the fleet app's CPU and RSS while it sits idle watching 20 live boxes, and its event-loop
  lag (how late a 50 ms timer fires: how late a key press would be handled);
* against the peer: 20 separate `gputui status HOST` runs one after another (what checking
  each box by hand costs), wall time and CPU.

    python bench/fleet.py [--boxes 20] [--idle 20]
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_scope import guarded, mkdtemp, on_exit  # noqa: E402
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

import psutil  # noqa: E402

CHILD = r'''
import json, sys, time
t0 = time.monotonic()  # imports count: a `gputui status` run pays them too
from tui.ui.fleet_app import FleetApp
app = FleetApp(ssh_config=sys.argv[1])
window = float(sys.argv[2])
lags = []
def check():
    if app.fleet.settled() and not getattr(app, "_said", False):
        app._said = True
        live = sum(1 for b in app.fleet.boxes if b.session_state == "live")
        print(json.dumps({"all_live_s": round(time.monotonic() - t0, 2), "live": live}), flush=True)
        probe(time.monotonic() + 0.05, time.monotonic() + window)
def probe(due, end):
    # event-loop lag: how late a 50 ms timer fires is how late a key press would be handled
    import asyncio
    now = time.monotonic()
    lags.append(max(0.0, now - due))
    if now < end:
        asyncio.get_running_loop().call_later(0.05, probe, now + 0.05, end)
    else:
        lags.sort()
        print(json.dumps({"lag_p50_ms": round(lags[len(lags) // 2] * 1000, 1),
                          "lag_p99_ms": round(lags[int(len(lags) * 0.99)] * 1000, 1),
                          "lag_max_ms": round(lags[-1] * 1000, 1)}), flush=True)
app.call_later(lambda: app.set_interval(0.05, check))
app.run(headless=True, size=(170, 40))
'''


def fleet_run(ssh_config, idle_seconds):
    """Start the fleet app headless; -> (seconds to all live, CPU % and RSS MiB while idle)."""
    proc = subprocess.Popen([sys.executable, "-c", CHILD, ssh_config, str(idle_seconds + 3)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        if not line:
            raise SystemExit("fleet app ended: %s" % proc.stderr.read()[-2000:])
        first = json.loads(line)
        p = psutil.Process(proc.pid)
        time.sleep(3)  # let the backlog settle
        c0, w0 = sum(p.cpu_times()[:2]), time.monotonic()
        rss = []
        while time.monotonic() - w0 < idle_seconds:
            rss.append(p.memory_info().rss)
            time.sleep(1)
        cpu = (sum(p.cpu_times()[:2]) - c0) / (time.monotonic() - w0) * 100
        first.update(json.loads(proc.stdout.readline()))
        return first, cpu, max(rss) / 2 ** 20
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def status_runs(ssh_config, names):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    failed = 0
    for name in names:
        r = subprocess.run([sys.executable, "-m", "tui", "status", name, "--ssh-config", ssh_config,
                            "--simulate", "idle", "--remote-dir", remote_dirs[name]], cwd=ROOT,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        failed += r.returncode != 0
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, failed


remote_dirs = {}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--boxes", type=int, default=20)
    ap.add_argument("--idle", type=float, default=20.0, help="seconds to watch the idle app")
    args = ap.parse_args()
    tmp = mkdtemp("gputui-fleet-bench-")
    for var in ("CONFIG", "STATE", "DATA"):
        os.environ["GPUTUI_%s_DIR" % var] = os.path.join(tmp, var.lower())
    import pathlib

    from tests.support.sshd import start_sshd, stop_daemon, stop_sshd
    from tests.support.fleet_fixtures import write_fleet
    box = start_sshd(pathlib.Path(tmp) / "box")
    on_exit(stop_sshd, box)
    box.trust()
    names = ["box%02d" % i for i in range(args.boxes)]
    ssh_config = write_fleet(box, {n: ("idle", 1.0) for n in names}, alarm_minutes=30)
    for n in names:
        remote_dirs[n] = os.path.join(str(box.root), "remote-%s" % n)
    try:
        print("fleet of %d boxes, one sshd on loopback, scenario idle, %d CPUs"
              % (args.boxes, os.cpu_count()))
        cold, cpu_c, rss_c = fleet_run(ssh_config, args.idle)
        print("gputui fleet, cold (deploy + start %d daemons): all live in %.2f s (%d live); "
              "idle app %.1f%% CPU, %.0f MiB RSS; loop lag p50/p99/max %.1f/%.1f/%.1f ms"
              % (args.boxes, cold["all_live_s"], cold["live"], cpu_c, rss_c, cold["lag_p50_ms"],
                 cold["lag_p99_ms"], cold["lag_max_ms"]))
        warm, cpu_w, rss_w = fleet_run(ssh_config, args.idle)
        print("gputui fleet, warm (daemons running): all live in %.2f s (%d live); "
              "idle app %.1f%% CPU, %.0f MiB RSS; loop lag p50/p99/max %.1f/%.1f/%.1f ms"
              % (warm["all_live_s"], warm["live"], cpu_w, rss_w, warm["lag_p50_ms"],
                 warm["lag_p99_ms"], warm["lag_max_ms"]))
        wall, cpu, failed = status_runs(ssh_config, names)
        print("%d separate `gputui status` runs (warm, one after another): %.2f s wall, %.2f s CPU, "
              "%d failed; one snapshot each, nothing live afterwards"
              % (args.boxes, wall, cpu, failed))
        print("ratio: the fleet has all %d live in %.1fx less time than one pass of status runs"
              % (args.boxes, wall / warm["all_live_s"]))
    finally:
        for n in names:
            stop_daemon(remote_dirs[n])


if __name__ == "__main__":
    with guarded():
        main()
