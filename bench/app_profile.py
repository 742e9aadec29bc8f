"""Where the idle dashboard's CPU goes: the real `gputui connect` under cProfile (issue 38).

    python bench/app_profile.py [--case h100x8@120x40] [--seconds 30] [--top 40] [--box demo|sshd]

The app runs as bench/app_cost.py runs it (a real pty of the case's size, the box running the
simulator), with cProfile on in its own process: the profile is cleared after the warm-up and
written after `--seconds` on the dashboard. Prints the functions with most own time and most
cumulative time per second, and the whole profile's calls per second. Orientation for cutting
work, not a figure: the figure is app_cost's (CPU against the floor, from outside)."""

import argparse
import os
import pstats
import re
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from app_cost import SCREENS, bare_env, parse_case, spawn_pty, start_box  # noqa: E402
from bench_scope import cleanup, guarded, kill_pid, mkdtemp  # noqa: E402

REPO = os.path.dirname(HERE)

# The app's own process: cProfile from the first line; SIGUSR2 clears, SIGUSR1 writes the file.
WRAPPER = r"""
import cProfile, signal, sys
out = sys.argv[1]
prof = cProfile.Profile()
def write(*_):
    prof.disable(); prof.dump_stats(out); prof.enable()
signal.signal(signal.SIGUSR1, write)
signal.signal(signal.SIGUSR2, lambda *_: prof.clear())
sys.argv = ["gputui"] + sys.argv[2:]
prof.enable()
from tui.cli import entry
entry()
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", default="h100x8@120x40")
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--warm", type=float, default=10)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--box", choices=("demo", "sshd"), default="demo")
    ap.add_argument("--save", help="keep the profile here")
    args = ap.parse_args()
    with guarded():
        run(args)


def run(args):
    scenario, cols, rows = parse_case(args.case)
    laptop = mkdtemp("gputui-profile-laptop-")
    env = dict(bare_env(), PYTHONPATH=REPO,
               **{"GPUTUI_%s_DIR" % v: os.path.join(laptop, v.lower()) for v in ("CONFIG", "STATE", "DATA")})
    out = args.save or os.path.join(laptop, "app.pstats")
    alias, ssh_config, app_args, via = start_box(args.box)
    pid, _fd = spawn_pty([sys.executable, "-c", WRAPPER, out, "connect", alias, "--ssh-config", ssh_config,
                          "--simulate", scenario] + app_args, env, REPO, (rows, cols))
    try:
        deadline = time.time() + 60
        while b"live" not in SCREENS.get(pid, b"") and time.time() < deadline:
            time.sleep(0.5)
        time.sleep(args.warm)
        os.kill(pid, signal.SIGUSR2)
        time.sleep(args.seconds)
        os.kill(pid, signal.SIGUSR1)
        time.sleep(1.5)
        stats = pstats.Stats(out)
    finally:
        kill_pid(pid)
        cleanup()  # the box, the laptop dirs (and the profile, unless --save put it elsewhere)
    total_calls = sum(v[1] for v in stats.stats.values())
    total_time = sum(v[2] for v in stats.stats.values())
    print("%s %s, %s: %.0f calls/s, %.1f ms own time/s under the profiler"
          % (scenario, "%dx%d" % (cols, rows), via, total_calls / args.seconds, 1000 * total_time / args.seconds))

    def where(k):
        path = k[0]
        path = os.path.relpath(path, REPO) if path.startswith(REPO) else re.sub(r".*site-packages/", "", path)
        return "%s:%d %s" % (path, k[1], k[2])

    for title, col in (("own time", 2), ("cumulative", 3)):
        print("-- by %s (per second: calls, ms)" % title)
        for k, v in sorted(stats.stats.items(), key=lambda kv: -kv[1][col])[:args.top]:
            print("  %8.0f %7.2f  %s" % (v[1] / args.seconds, 1000 * v[col] / args.seconds, where(k)))


if __name__ == "__main__":
    main()
