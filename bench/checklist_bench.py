"""Shutdown-checklist figures through a real sshd on loopback (issues 12, 26):

* checklist wall time on a box with 10,000 files under the artifact paths, against `find` over
  ssh listing the same tree (the peer: the least a scan can do);
* a checklist download, timed the way the user waits for it: connect (probe already on the
  box, daemon running), SFTP, the bytes, the box's sha256 (asked while the bytes flow) and the
  local one, until the verified file is in place, against `scp box:file .` (whole command,
  connect included; it verifies nothing) and, for reference, scp followed by sha256sum on
  both ends. Runs are interleaved (scp, gputui, scp, ...) so a loaded machine hits both alike.

    python bench/checklist_bench.py [--files 10000] [--mb 300] [--runs 3] [--rtt-ms 200]

The box user has a plain shell and an empty home (bench/bench_box.py). With --rtt-ms the
download is measured again through bench/relay.py adding that round trip (200: 100 ms each
way). Figures are "median (min-max)"; RESULT lines feed bench/readme_table.py."""

import argparse
import asyncio
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from bench_box import SHELL, rate_spread, start_bench_box, timed  # noqa: E402
from bench_scope import guarded  # noqa: E402

from remote_probe import wire  # noqa: E402
from tui.remote import session as session_mod, ssh  # noqa: E402
from tui.core.transfer import download as transfer  # noqa: E402


def make_tree(root, n):
    exts = [".log", ".txt", ".json", ".pt", ".png", ".py"]
    for i in range(n):
        d = root / ("run%02d" % (i % 20)) / ("step%03d" % (i % 97))
        d.mkdir(parents=True, exist_ok=True)
        (d / ("f%05d%s" % (i, exts[i % len(exts)]))).write_bytes(b"x" * 64)


def session_for(box, alias):
    return session_mod.RemoteSession(ssh.Target.parse(alias, ssh_config=box.ssh_config),
                                     simulate="idle", remote_dir=box.remote_dir)


async def checklist_time(box, root):
    s = session_for(box, "testbox")
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
        subprocess.run(box.ssh() + ["find %s -type f | wc -l" % root], stdout=subprocess.PIPE, check=True)
        times.append(time.perf_counter() - t0)
    return min(times)


async def our_download(box, alias, remote, dest):
    """Connect to verified file, as the Release screen's download does it (release_actions)."""
    t0 = time.perf_counter()
    s = session_for(box, alias)
    await s.open()
    try:
        size, mtime = os.stat(remote).st_size, os.stat(remote).st_mtime  # the checklist's facts

        async def box_sha():
            reply = await s.request(wire.SHA256, timeout=600, paths=[remote])
            return (reply.get("sha256") or {}).get(remote)
        async with s.file_client() as files:
            r = await transfer.download(files, remote, dest, size, mtime, expected_sha=box_sha)
        assert r.status == "downloaded", r
        return time.perf_counter() - t0
    finally:
        await s.close()




def downloads(box, alias, big, mb, runs, via, work):
    scp, scp_sha, ours = [], [], []
    for i in range(runs):
        dest = work / ("scp%d" % i)
        scp.append(timed(["scp", "-q", "-F", box.ssh_config, "%s:%s" % (alias, big), str(dest)]))
        os.unlink(dest)
        if via == "direct":  # through the relay this would be scp's time again
            t0 = time.perf_counter()
            subprocess.run(["scp", "-q", "-F", box.ssh_config, "%s:%s" % (alias, big), str(dest)], check=True)
            subprocess.run(box.ssh(alias) + ["sha256sum", str(big)], check=True, stdout=subprocess.DEVNULL)
            subprocess.run(["sha256sum", str(dest)], check=True, stdout=subprocess.DEVNULL)
            scp_sha.append(time.perf_counter() - t0)
            os.unlink(dest)
        out = work / ("ours%d" % i)
        out.mkdir()
        ours.append(asyncio.run(our_download(box, alias, str(big), str(out))))
        subprocess.run(["rm", "-rf", str(out)], check=True)
    print("download of %d MB, %s (box user %s, %s), %d interleaved runs, median (min-max):"
          % (mb, via, box.user, SHELL, runs))
    print("  gputui (connect .. verified file)  %s" % rate_spread(ours, mb))
    print("  scp (whole command)                %s" % rate_spread(scp, mb))
    if scp_sha:
        print("  scp + sha256sum on both ends       %s" % rate_spread(scp_sha, mb))
    med = statistics.median
    rec = dict(bench="checklist_bench", figure="checklist download, %d MB" % mb, via=via,
               peer="scp", ours_s=med(ours), peer_s=med(scp), ratio=med(scp) / med(ours),
               ratio_min=min(scp) / max(ours), ratio_max=max(scp) / min(ours),
               ours_mb_s=mb / med(ours), peer_mb_s=mb / med(scp), target=0.9 if via == "direct" else 1.0,
               higher_is_better=True)
    print("  ratio gputui/scp (speed) %.2f (%.2f-%.2f)%s"
          % (rec["ratio"], rec["ratio_min"], rec["ratio_max"],
             "; vs scp + sha256sum %.2f" % (med(scp_sha) / med(ours)) if scp_sha else ""))
    print("RESULT " + json.dumps(rec), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--mb", type=int, default=300)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rtt-ms", type=float, default=0,
                    help="also measure the download through a loopback relay adding this round trip")
    ap.add_argument("--no-scan", action="store_true", help="only the download")
    args = ap.parse_args()
    with guarded():
        box = start_bench_box(rtt_ms=args.rtt_ms)
        work = box.home / "bench"
        work.mkdir()
        if not args.no_scan:
            tree = work / "artifacts"
            make_tree(tree, args.files)
            subprocess.run(["chown", "-R", box.user, str(tree)], check=True)
            ours, arts = asyncio.run(checklist_time(box, tree))
            peer = find_time(box, tree)
            print("checklist facts, %d files under the artifact paths (%d artifacts found, %d looked at):"
                  % (args.files, len(arts["files"]), arts["looked_at"]))
            print("  gputui checklist scan %.2f s (includes git + temp scans); peer `ssh find | wc` %.2f s; "
                  "ratio %.2f" % (ours, peer, ours / peer))
            print("RESULT " + json.dumps(dict(bench="checklist_bench", figure="checklist scan, %d files"
                                              % args.files, via="direct", peer="ssh find | wc",
                                              ours_s=ours, peer_s=peer, ratio=ours / peer)))
        big = work / "big.pt"
        with open(big, "wb") as f:
            for _ in range(args.mb):
                f.write(os.urandom(1 << 20))
        box.give(big)
        local = pathlib.Path(work / "local")
        local.mkdir()
        downloads(box, "testbox", big, args.mb, args.runs, "direct", local)
        if args.rtt_ms:
            downloads(box, "relaybox", big, args.mb, args.runs, "relay +%.0f ms RTT" % args.rtt_ms, local)


if __name__ == "__main__":
    main()
