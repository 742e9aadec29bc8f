"""Terminal (PTY) transport against the exec channel, through real sshd on loopback:

* connect -> first sample, probe deployed and daemon running (a reconnect, the usual case);
* connect -> first sample on a fresh box (deploy + daemon start);
* probe deploy time (the script's NEED -> GOT: upload, sha256 check, rename);
* download throughput through the probe channel (the PTY-only path) against SFTP.

    python bench/transport.py [--runs 5] [--size-mb 64]
    python bench/transport.py --short     # one run, 4 MB: the suite's check that it still works

Everything it starts (two sshd, probe daemons, a temp dir) is stopped and removed on the way out,
also on Ctrl-C, SIGTERM or SIGHUP.
"""

import argparse
import asyncio
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
import pathlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from bench_box import stop_with_sessions  # noqa: E402
from tests.support.pty_fixtures import me, start_box, stop_box, write_pty_only  # noqa: E402
from tests.support.sshd import start_sshd, stop_daemon, stop_sshd  # noqa: E402

from tui.core.transfer import download as transfer  # noqa: E402
from tui.remote import session as session_mod, ssh  # noqa: E402
from tui.remote.probe.bundle import build_probe  # noqa: E402


class Rec(session_mod.Listener):
    def __init__(self):
        self.first = None

    def on_sample(self, s):
        if self.first is None:
            self.first = time.perf_counter()


async def connect_to_first_sample(box, remote_dir, fresh):
    if fresh:
        stop_daemon(remote_dir)
        shutil.rmtree(remote_dir, ignore_errors=True)
    rec = Rec()
    s = session_mod.RemoteSession(ssh.Target.parse("testbox", ssh_config=box.ssh_config),
                                  simulate="a100x2", remote_dir=remote_dir, listener=rec)
    t0 = time.perf_counter()
    await s.open()
    while rec.first is None:
        await asyncio.sleep(0.002)
    took = rec.first - t0
    deploy = s.deploy_seconds
    transport = s.transport_name
    await s.close()
    return took, deploy, transport


async def download_rate(box, remote_dir, path, size):
    s = session_mod.RemoteSession(ssh.Target.parse("testbox", ssh_config=box.ssh_config),
                                  simulate="idle", remote_dir=remote_dir)
    await s.open()
    try:
        st = os.stat(path)
        with tempfile.TemporaryDirectory() as dest:
            t0 = time.perf_counter()
            async with s.file_client() as files:
                r = await transfer.download(files, path, dest, st.st_size, st.st_mtime)
            took = time.perf_counter() - t0
        assert r.status == "downloaded", r
        return size / took / 1e6, type(files).__name__
    finally:
        await s.close()


def med(xs):
    return statistics.median(xs)


async def measure(exec_box, pty_box, tmp, runs, size):
    blob = tmp / "blob.bin"
    blob.write_bytes(os.urandom(size))
    data, _ = build_probe()
    print("probe zipapp: %.0f KiB" % (len(data) / 1024))
    figures = {}
    for name, box in (("exec", exec_box), ("pty", pty_box)):
        rdir = str(tmp / ("remote-" + name))
        cold, deploys, warm = [], [], []
        for _ in range(runs):
            took, deploy, transport = await connect_to_first_sample(box, rdir, fresh=True)
            assert transport == name, transport
            cold.append(took)
            deploys.append(deploy)
            took, deploy, _ = await connect_to_first_sample(box, rdir, fresh=False)
            assert deploy is None
            warm.append(took)
        rate, how = await download_rate(box, rdir, str(blob), size)
        stop_daemon(rdir)
        figures[name] = (med(warm), med(cold), med(deploys), rate)
        print("%-4s connect->first sample: warm %.0f ms, fresh box %.0f ms; deploy %.0f ms; "
              "download %.0f MB/s (%s)" % (name, med(warm) * 1e3, med(cold) * 1e3,
                                          med(deploys) * 1e3, rate, how))
    e, p = figures["exec"], figures["pty"]
    print("ratio pty/exec: warm connect %.2fx, fresh connect %.2fx, deploy %.2fx, "
          "download %.2fx (median of %d)" % (p[0] / e[0], p[1] / e[1], p[2] / e[2], p[3] / e[3], runs))


def _interrupted(signum, frame):
    raise KeyboardInterrupt  # unwinds through the finally below, like Ctrl-C


def main(runs, size):
    # SIGTERM/SIGHUP would otherwise end the process without the cleanup
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # SIGINT too: a `&` job ignores it
        signal.signal(sig, _interrupted)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="gputui-bench-transport-"))
    started = []  # (stop, box): whatever got started, stopped in reverse
    try:
        exec_box = start_sshd(tmp / "exec")
        started.append((stop_sshd, exec_box))
        exec_box.trust()
        (tmp / "pty").mkdir()
        script = write_pty_only(tmp / "pty")
        pty_box = start_box(tmp / "pty", [me()], extra_config="ForceCommand %s" % script, subsystem=None)
        started.append((stop_box, pty_box))
        asyncio.run(measure(exec_box, pty_box, tmp, runs, size))
    except KeyboardInterrupt:
        print("interrupted: cleaning up", file=sys.stderr)
        return 130
    finally:
        # stop signals while cleaning up, so a second one cannot leave half of it behind
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        for name in ("exec", "pty"):
            try:
                stop_daemon(str(tmp / ("remote-" + name)))
            except Exception as e:  # noqa: BLE001 - keep cleaning up
                print("stopping the %s daemon: %s" % (name, e), file=sys.stderr)
        for stop, box in reversed(started):
            stop_with_sessions(box, stop)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--size-mb", type=int, default=64, help="download size (default 64)")
    ap.add_argument("--short", action="store_true", help="one run, a 4 MB download (a smoke run)")
    args = ap.parse_args()
    if args.short:
        args.runs, args.size_mb = 1, 4
    sys.exit(main(args.runs, args.size_mb << 20))
