"""Push and pull figures against `scp -r` and `rsync -a` on the same sshd (issue 24).

* push: a tree (one big file and 20 small ones) onto the box, timed the way the user waits:
  connect (probe on the box, daemon running), SFTP, the bytes, the box's sha256, the rename
  into place; against `scp -r` and `rsync -a` (whole commands, connect included; neither
  verifies end to end). Every run starts from an empty DEST.
* pull: the same tree back, through the download engine the checklist uses (box's sha256
  while the bytes flow), against the same two peers.
* resume: a push cut after a third of the big file (the task cancelled, as Ctrl-C does),
  then continued: how many bytes the cut lost (what progress had shown minus the part the
  box kept; the target is at most one chunk).

    python bench/transfer.py [--mb 200] [--runs 3] [--rtt-ms 300]

Direct on loopback, then through bench/relay.py adding --rtt-ms per round trip (300: 150 ms
each way). Runs are interleaved. Figures are "median (min-max)"; RESULT lines feed
bench/readme_table.py."""

import argparse
import asyncio
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from bench_box import rate_spread, start_bench_box, timed  # noqa: E402
from bench_scope import guarded  # noqa: E402

from tui.core.transfer.upload_plan import PART_SUFFIX, scan_local  # noqa: E402
from tui.remote import session as session_mod, ssh  # noqa: E402
from tui.remote.transfer import pull as puller, push as pusher, push_spread
from tui.remote.transfer.push_probe import box_files  # noqa: E402

SMALL = 20  # small files beside the big one (a code folder's worth)


def make_tree(root, mb):
    data = root / "data"
    (data / "code").mkdir(parents=True)
    with open(data / "big.bin", "wb") as f:
        for _ in range(mb):
            f.write(os.urandom(1 << 20))
    for i in range(SMALL):
        (data / "code" / ("m%02d.py" % i)).write_bytes(os.urandom(8 << 10))
    return data


def session_for(box, alias):
    s = session_mod.RemoteSession(ssh.Target.parse(alias, ssh_config=box.ssh_config),
                                  simulate="idle", remote_dir=box.remote_dir)
    s.files_early = True  # as `gputui push`/`pull` open it
    return s


async def our_push(box, alias, data, dest, cut_at=None):
    """Connect .. every file verified and in place. -> (seconds, bytes shown before a cut)."""
    t0 = time.perf_counter()
    s = session_for(box, alias)
    await s.open()
    shown = [0]

    def progress(_rel, n):
        shown[0] += n
    try:
        async with s.file_client() as client:
            files = box_files(s, client)
            root = await files.resolve(dest)
            job = asyncio.ensure_future(pusher.push(files, pusher.probe_sha(s), scan_local([str(data)]),
                                                    root, progress))
            if cut_at is not None:
                while shown[0] < cut_at and not job.done():
                    await asyncio.sleep(0.01)
                job.cancel()
            try:
                results = await job
            except asyncio.CancelledError:
                return time.perf_counter() - t0, shown[0]
        assert not [r for r in results if r.status == "failed"], results
        return time.perf_counter() - t0, shown[0]
    finally:
        await s.close()


async def our_pull(box, alias, data, local):
    """Connect .. every file verified and in place, as `gputui pull` does it (the walk, then
    tui.remote.transfer.pull.pull_files: many files at once, the box's sha256 while bytes flow)."""
    t0 = time.perf_counter()
    s = session_for(box, alias)
    await s.open()
    try:
        async with s.file_client() as sftp:
            files, _skipped = await puller.walk_sftp(sftp, str(data))
            parent = str(data.parent)
            await sftp.chdir(parent)
            results = await puller.pull_files(sftp, s, files, parent, str(local))
        assert len(results) == SMALL + 1 and all(r.status == "downloaded" for r in results), results
        return time.perf_counter() - t0
    finally:
        await s.close()



def fresh(box, path):
    """An empty folder the box user owns (the destination of one run)."""
    subprocess.run(box.ssh() + ["rm -rf %s && mkdir -p %s" % (path, path)], check=True)



def record(figure, via, peer, ours, theirs, mb):
    med = statistics.median
    rec = dict(bench="transfer", figure=figure, via=via, peer=peer, ours_s=med(ours), peer_s=med(theirs),
               ratio=med(theirs) / med(ours), ratio_min=min(theirs) / max(ours),
               ratio_max=max(theirs) / min(ours), ours_mb_s=mb / med(ours), peer_mb_s=mb / med(theirs),
               target=0.9 if via == "direct" else 1.0, higher_is_better=True)
    print("  ratio gputui/%s (speed) %.2f (%.2f-%.2f), target >= %.1f"
          % (peer, rec["ratio"], rec["ratio_min"], rec["ratio_max"], rec["target"]))
    print("RESULT " + json.dumps(rec), flush=True)


def both_ways(box, alias, via, data, mb, runs, work):
    ssh_cmd = "ssh -F %s" % box.ssh_config
    dest = box.home / "dest"
    push = {"gputui": [], "scp -r": [], "rsync -a": []}
    pull = {"gputui": [], "scp -r": [], "rsync -a": []}
    for _ in range(runs):
        for name in push:  # interleaved: a loaded machine hits all three alike
            fresh(box, dest)
            if name == "gputui":
                push[name].append(asyncio.run(our_push(box, alias, data, str(dest)))[0])
            elif name == "scp -r":
                push[name].append(timed(["scp", "-q", "-r", "-F", box.ssh_config, str(data), "%s:%s/" % (alias, dest)]))
            else:
                push[name].append(timed(["rsync", "-a", "-e", ssh_cmd, str(data), "%s:%s/" % (alias, dest)]))
        for name in pull:
            local = work / "pulled"
            shutil.rmtree(local, ignore_errors=True)
            local.mkdir()
            boxed = dest / "data"
            if name == "gputui":
                pull[name].append(asyncio.run(our_pull(box, alias, boxed, local)))
            elif name == "scp -r":
                pull[name].append(timed(["scp", "-q", "-r", "-F", box.ssh_config, "%s:%s" % (alias, boxed), str(local)]))
            else:
                pull[name].append(timed(["rsync", "-a", "-e", ssh_cmd, "%s:%s" % (alias, boxed), str(local)]))
    for what, table in (("push", push), ("pull", pull)):
        print("%s of a %d MB tree (+%d small files), %s, %d interleaved runs, median (min-max):"
              % (what, mb, SMALL, via, runs))
        for name, xs in table.items():
            print("  %-8s %s" % (name, rate_spread(xs, mb, 6)))
        for peer in ("scp -r", "rsync -a"):
            record("%s, %d MB tree" % (what, mb), via, peer, table["gputui"], table[peer], mb)


def resume(box, alias, via, data, mb):
    dest = box.home / "dest"
    fresh(box, dest)
    size = (data / "big.bin").stat().st_size
    _t, shown = asyncio.run(our_push(box, alias, data, str(dest), cut_at=size // 3))
    part = dest / "data" / ("big.bin" + PART_SUFFIX)
    # a spread file keeps one part per segment (tui/remote/transfer/push_spread.py), each of its own length
    segs = push_spread.segments(size)
    kept = 0
    for k, (start, end) in enumerate(segs):
        p = part if k == 0 else pathlib.Path(push_spread.seg_name(str(part), k))
        kept += min(p.stat().st_size, end - start) if p.exists() else 0
    t, _ = asyncio.run(our_push(box, alias, data, str(dest)))
    lost = max(0, shown - kept)
    chunk = pusher.BLOCK
    print("resume, %s: cut at %.1f MB shown, the box kept %.1f MB; lost %d bytes (%.2f chunks of %d KiB); "
          "the rest took %.1f s" % (via, shown / 1e6, kept / 1e6, lost, lost / chunk, chunk >> 10, t))
    print("RESULT " + json.dumps(dict(bench="transfer", figure="resume loss, %d MB file" % mb, via=via,
                                      lost_bytes=lost, lost_chunks=lost / chunk, target_chunks=1)), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rtt-ms", type=float, default=300,
                    help="also measure through a loopback relay adding this round trip (0: direct only)")
    args = ap.parse_args()
    with guarded():
        box = start_bench_box(rtt_ms=args.rtt_ms)
        work = pathlib.Path(box.home / "bench-local")
        work.mkdir()
        data = make_tree(work, args.mb)
        os.chmod(work, 0o755)
        for path in [work] + list(work.rglob("*")):
            box.give(path)  # scp/rsync run as the laptop user but read the same files
        both_ways(box, "testbox", "direct", data, args.mb, args.runs, work)
        resume(box, "testbox", "direct", data, args.mb)
        if args.rtt_ms:
            via = "relay +%.0f ms RTT" % args.rtt_ms
            both_ways(box, "relaybox", via, data, args.mb, args.runs, work)
            resume(box, "relaybox", via, data, args.mb)


if __name__ == "__main__":
    main()
