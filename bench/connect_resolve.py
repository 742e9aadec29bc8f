"""What resolving ~/.ssh/config through `ssh -G` costs, and connect time on loopback.

* resolve: gputui's `ssh -G` path vs asyncssh's own parser (the fallback), per destination;
* connect: TCP + key exchange + public-key login + running `true` through a real sshd,
  gputui (asyncssh, config resolved by ssh -G) vs OpenSSH's `ssh -o BatchMode=yes box true`.

    python bench/connect_resolve.py [--runs 10]
"""

import argparse
import asyncio
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

from tests.support.sshd import start_sshd, stop_sshd  # noqa: E402

from tui.remote import ssh  # noqa: E402


def median_ms(fn, runs):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


async def gputui_connect(target):
    conn = await ssh.connect(target)
    await conn.run("true", check=True)  # same work as the peer: a session running `true`
    conn.close()
    await conn.wait_closed()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="gputui_bench_")
    box = start_sshd(pathlib.Path(root))
    box.trust()
    try:
        target = ssh.Target.parse("testbox", ssh_config=box.ssh_config)
        g = median_ms(lambda: ssh.resolve(target), args.runs)
        a = median_ms(lambda: ssh.resolve(target, binary=""), args.runs)
        print("resolve  ssh -G %.1f ms   asyncssh parser %.1f ms   (x%.1f)" % (g, a, g / a))
        ours = median_ms(lambda: asyncio.run(gputui_connect(target)), args.runs)
        peer = median_ms(lambda: subprocess.run(
            ["ssh", "-F", box.ssh_config, "-o", "BatchMode=yes", "testbox", "true"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            check=True), args.runs)
        print("connect  gputui %.0f ms   OpenSSH ssh %.0f ms   (ratio %.2f)"
              % (ours, peer, ours / peer))
    finally:
        stop_sshd(box)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
