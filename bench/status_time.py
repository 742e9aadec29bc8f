"""`gputui status` wall time against plain `ssh` to the same box (issue 12).

    python bench/status_time.py [--runs 5]

A real sshd on 127.0.0.1 (the tests' fixture). Peers measured in the same run:
`ssh box true` (the floor of any remote command) and `ssh box cat /proc/stat` (the smallest
real look at a box). Cached: the probe is already on the box and its daemon running.
First time: an empty remote dir, so the probe is deployed (targets: cached <= 1.5x ssh true,
first <= 4x ssh cat /proc/stat)."""

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

from tests.support.sshd import start_sshd, stop_sshd  # noqa: E402
from remote_probe.daemon import terminate  # noqa: E402


def timed(argv):
    t0 = time.perf_counter()
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode:
        raise SystemExit("%s failed: %s" % (" ".join(argv), r.stderr))
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    box = start_sshd(pathlib.Path(tempfile.mkdtemp(prefix="gputui-bench-status-")))
    box.trust()
    gputui = [sys.executable, "-m", "tui"]
    try:
        ssh = ["ssh", "-F", box.ssh_config, "testbox"]
        true_s = statistics.median(timed(ssh + ["true"]) for _ in range(args.runs))
        cat_s = statistics.median(timed(ssh + ["cat", "/proc/stat"]) for _ in range(args.runs))
        firsts = []
        for i in range(args.runs):
            remote = os.path.join(str(box.root), "fresh-%d" % i)
            firsts.append(timed(gputui + ["status", "testbox", "--ssh-config", box.ssh_config,
                                          "--simulate", "idle", "--remote-dir", remote]))
            terminate(remote)
        cached_dir = os.path.join(str(box.root), "cached")
        timed(gputui + ["status", "testbox", "--ssh-config", box.ssh_config, "--simulate", "idle",
                        "--remote-dir", cached_dir])
        cached = statistics.median(
            timed(gputui + ["status", "testbox", "--ssh-config", box.ssh_config, "--simulate", "idle",
                            "--remote-dir", cached_dir]) for _ in range(args.runs))
        terminate(cached_dir)
        first = statistics.median(firsts)
        print("ssh box true            %6.0f ms" % (true_s * 1000))
        print("ssh box cat /proc/stat  %6.0f ms" % (cat_s * 1000))
        print("gputui status, cached   %6.0f ms = %.2fx ssh true (target <= 1.5x)" % (cached * 1000, cached / true_s))
        print("gputui status, deploy   %6.0f ms = %.2fx ssh cat /proc/stat (target <= 4x)" % (first * 1000, first / cat_s))
    finally:
        stop_sshd(box)


if __name__ == "__main__":
    main()
