"""Shutdown-checklist figures through a real sshd on loopback:

* checklist wall time on a box with 10,000 files under the artifact paths, against
  `find` over ssh listing the same tree (the peer: the least a scan can do);
* download throughput of gputui's resumable, sha256-verified SFTP download against `scp`
  of the same file.

    python bench/checklist_bench.py [--files 10000] [--mb 256]
"""

import argparse
import asyncio
import os
import pathlib
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

from tests.support.sshd import start_sshd, stop_daemon, stop_sshd  # noqa: E402

from remote_probe import wire  # noqa: E402
from tui.remote import session as session_mod, ssh  # noqa: E402
from tui.core.transfer import download, sha256_file  # noqa: E402


def make_tree(root, n):
    exts = [".log", ".txt", ".json", ".pt", ".png", ".py"]
    for i in range(n):
        d = root / ("run%02d" % (i % 20)) / ("step%03d" % (i % 97))
        d.mkdir(parents=True, exist_ok=True)
        (d / ("f%05d%s" % (i, exts[i % len(exts)]))).write_bytes(b"x" * 64)


async def checklist_time(box, root):
    target = ssh.Target.parse("testbox", ssh_config=box.ssh_config)
    s = session_mod.RemoteSession(target, simulate="idle", remote_dir=box.remote_dir)
    await s.open()
    try:
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            reply = await s.request(wire.CHECKLIST, timeout=300, artifact_paths=[str(root)],
                                    roots=[str(root)], temp_dirs=[], cache_dirs=[])
            times.append(time.perf_counter() - t0)
        return min(times), reply["facts"]["artifacts"]
    finally:
        await s.close()


def find_time(box, root):
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        subprocess.run(["ssh", "-F", box.ssh_config, "testbox", "find %s -type f | wc -l" % root],
                       stdout=subprocess.PIPE, check=True)
        times.append(time.perf_counter() - t0)
    return min(times)


async def our_download(box, remote, size, mtime, sha, dest):
    conn = await ssh.connect(ssh.Target.parse("testbox", ssh_config=box.ssh_config))
    try:
        async with conn.start_sftp_client() as sftp:
            t0 = time.perf_counter()
            r = await download(sftp, remote, dest, size, mtime, expected_sha=sha)
            return time.perf_counter() - t0, r
    finally:
        conn.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--mb", type=int, default=256)
    args = ap.parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix="gputui-bench-"))
    box = start_sshd(work / "box")
    box.trust()
    try:
        tree = work / "artifacts"
        make_tree(tree, args.files)
        ours, arts = asyncio.run(checklist_time(box, tree))
        peer = find_time(box, tree)
        print("checklist facts, %d files under the artifact paths (%d artifacts found, %d looked at):"
              % (args.files, len(arts["files"]), arts["looked_at"]))
        print("  gputui checklist scan %.2f s (includes git + temp scans); peer `ssh find | wc` %.2f s; "
              "ratio %.2f" % (ours, peer, ours / peer))
        big = work / "big.pt"
        with open(big, "wb") as f:
            for _ in range(args.mb):
                f.write(os.urandom(1 << 20))
        st = big.stat()
        sha = sha256_file(str(big))
        scp_times, our_times = [], []
        for i in range(3):
            dest = work / ("scp%d" % i)
            t0 = time.perf_counter()
            subprocess.run(["scp", "-q", "-F", box.ssh_config, "testbox:%s" % big, str(dest)], check=True)
            scp_times.append(time.perf_counter() - t0)
            t, r = asyncio.run(our_download(box, str(big), st.st_size, st.st_mtime, sha, str(work / ("ours%d" % i))))
            assert r.status == "downloaded", r
            our_times.append(t)
        mb = st.st_size / 1e6
        ours_rate, scp_rate = mb / min(our_times), mb / min(scp_times)
        print("download of %d MB over loopback sshd (best of 3):" % args.mb)
        print("  gputui SFTP (resumable + sha256 verify) %.0f MB/s; scp %.0f MB/s; ratio %.2f (target >= 0.8)"
              % (ours_rate, scp_rate, ours_rate / scp_rate))
    finally:
        stop_daemon(box.remote_dir)
        stop_sshd(box)


if __name__ == "__main__":
    main()
