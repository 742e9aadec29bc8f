"""Daemon CPU while autostop is armed, against the same daemon unarmed (the peer).

    python bench/daemon_cpu.py [--seconds 20] [--scenario idle]
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_scope import guarded, mkdtemp, on_exit  # noqa: E402
sys.path.insert(0, os.path.dirname(HERE))

from remote_probe import procfs, wire  # noqa: E402


def cpu_seconds(pid):
    stat = procfs.parse_pid_stat(open("/proc/%d/stat" % pid).read())
    return stat[2] / float(procfs.CLK_TCK)


def _stop_attach(p, state):
    from remote_probe.daemon import terminate
    if p.poll() is None:
        p.kill()
        p.wait()
    terminate(state)


def measure(scenario, seconds, armed):
    state = mkdtemp("gputui-bench-")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
    p = subprocess.Popen([sys.executable, "-m", "remote_probe", "attach", "--state-dir", state,
                          "--simulate", scenario], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         env=env)
    on_exit(_stop_attach, p, state)
    pid = json.loads(p.stdout.readline())["pid"]
    if armed:
        # an idle window far in the future: armed and evaluating every tick, never firing
        p.stdin.write(wire.encode({"type": "autostop_arm", "id": 1, "command": "true",
                                   "idle_seconds": 86400, "grace": 60}))
        p.stdin.flush()
    time.sleep(2)
    c0, t0 = cpu_seconds(pid), time.time()
    time.sleep(seconds)
    c1, t1 = cpu_seconds(pid), time.time()
    p.stdin.write(wire.encode({"type": "shutdown", "id": 2}))
    p.stdin.flush()
    p.stdin.close()
    p.wait(10)
    return 100.0 * (c1 - c0) / (t1 - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--scenario", default="idle")
    args = ap.parse_args()
    unarmed = measure(args.scenario, args.seconds, False)
    armed = measure(args.scenario, args.seconds, True)
    print("daemon CPU over %.0f s (%s): armed %.2f%% of one core, unarmed %.2f%%; ratio %.2f"
          % (args.seconds, args.scenario, armed, unarmed, armed / unarmed if unarmed else float("nan")))


if __name__ == "__main__":
    with guarded():
        main()
