"""Reconnect figures through a real sshd on loopback:

* time from link restoration (sshd back after an outage) to live data again, gputui's
  reconnect loop (immediate retry + port watch) against plain capped backoff (the peer);
* bytes on the wire for a 10-minute backfill (600 samples), raw and as SSH compression
  (zlib) would carry it.

    python bench/reconnect.py [--outage 3] [--runs 3]
"""

import argparse
import asyncio
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

from tests.support.sshd import SSHD, start_sshd, stop_daemon, stop_sshd  # noqa: E402

from remote_probe import wire  # noqa: E402
from tui.remote import session as session_mod, ssh  # noqa: E402


class Rec(session_mod.Listener):
    def __init__(self):
        self.samples = []

    def on_sample(self, s):
        self.samples.append((time.perf_counter(), s["seq"]))


async def restoration_time(box, outage, use_watch):
    target = ssh.Target.parse("testbox", ssh_config=box.ssh_config)
    rec = Rec()
    s = session_mod.RemoteSession(target, simulate="a100x2", remote_dir=box.remote_dir, listener=rec)
    if not use_watch:
        async def no_watch(was_down):
            return None
        s._port_watch = no_watch
    runner = asyncio.ensure_future(s.run())
    while s.state != session_mod.LIVE:
        await asyncio.sleep(0.02)
    # outage: sshd and every session go away
    box.proc.kill()
    box.proc.wait()
    for pid in box.session_pids():
        os.kill(pid, 9)
    subprocess.run(["pkill", "-9", "-f", "sshd: .*@notty"], stderr=subprocess.DEVNULL)
    await asyncio.sleep(outage)
    cfg = box.root / "sshd_config"
    box.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(cfg)], stdout=open(box.log, "ab"),
                                stderr=subprocess.STDOUT)
    restored = time.perf_counter()
    n = len(rec.samples)
    while not any(t > restored for t, _ in rec.samples[n:]):
        await asyncio.sleep(0.01)
    first = [t for t, _ in rec.samples[n:] if t > restored][0]
    await s.close()
    runner.cancel()
    return first - restored


async def backfill_bytes(box, minutes=10):
    """Run a fast daemon (20 Hz) to collect 600 samples, then measure one backfill."""
    state = box.remote_dir
    stop_daemon(state)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
    d = subprocess.Popen([sys.executable, "-m", "remote_probe", "daemon", "--state-dir", state,
                          "--simulate", "h100x8", "--interval", "0.05"], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    await asyncio.sleep(minutes * 60 * 0.05 + 2)
    proc = subprocess.Popen([sys.executable, "-m", "remote_probe", "attach", "--state-dir", state,
                             "--simulate", "h100x8"], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    proc.stdout.readline()  # the hello
    proc.stdin.write(wire.encode({"type": "subscribe", "id": 1,
                                  "since_seq": 0}))
    proc.stdin.flush()
    raw = b""
    count = 0
    reply = proc.stdout.readline()
    total = wire.decode(reply)["backlog"]
    while count < total:
        line = proc.stdout.readline()
        if b'"type":"sample"' in line[:30]:
            count += 1
            raw += line
    proc.stdin.close()
    proc.kill()
    d.terminate()
    d.wait(10)
    per = len(raw) / count
    ten_min = per * 600
    return ten_min, len(zlib.compress(raw, 6)) / count * 600, count


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--outage", type=float, default=3.0)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    box = start_sshd(pathlib.Path(tempfile.mkdtemp(prefix="gputui-bench-")))
    box.trust()
    try:
        async def all_runs():
            ours = [await restoration_time(box, args.outage, True) for _ in range(args.runs)]
            peer = [await restoration_time(box, args.outage, False) for _ in range(args.runs)]
            return ours, peer
        ours, peer = asyncio.run(all_runs())
        print("link restored after a %.0f s outage -> live data again (%d runs, median):"
              % (args.outage, args.runs))
        print("  gputui (retry + port watch)  %.2f s  (max %.2f; target <= 2 s)" % (statistics.median(ours), max(ours)))
        print("  peer (capped backoff only)   %.2f s  (max %.2f)" % (statistics.median(peer), max(peer)))
        print("  ratio %.2f" % (statistics.median(ours) / statistics.median(peer)))
        raw, packed, n = asyncio.run(backfill_bytes(box))
        print("10-minute backfill, 8 GPUs / 64 processes: %.0f kB raw NDJSON, %.0f kB with SSH "
              "zlib compression (ratio %.2f; measured over %d samples)" % (raw / 1e3, packed / 1e3, packed / raw, n))
    finally:
        stop_daemon(box.remote_dir)
        stop_sshd(box)


if __name__ == "__main__":
    main()
