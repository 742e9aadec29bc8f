"""Push and pull figures against `scp -r` and `rsync -a` on the same sshd (issue 24).

* push: a tree (one big file and 20 small ones) onto the box, timed the way the user waits:
  connect (probe on the box, daemon running), SFTP, the bytes, the box's sha256, the rename
  into place; against `scp -r` and `rsync -a` (whole commands, connect included; neither
  verifies end to end). Every run starts from an empty DEST.
* pull: the same tree back, through the download engine the checklist uses (box's sha256
  while the bytes flow), against the same two peers.
* laptop cost of a pull (issue 38): `gputui pull` as the user runs it (its own process, start-up
  and connect included, this tree's code, compiled as an install is) against `scp -r` for the
  same tree, interleaved: the laptop's CPU seconds (user + sys, per GB and in all) and peak RSS
  of each command with its children (scp's ssh), read by GNU time from a small parent.
* resume: a push cut after a third of the big file (the task cancelled, as Ctrl-C does),
  then continued: how many bytes the cut lost (what progress had shown minus the part the
  box kept; the target is at most one chunk).

    python bench/transfer.py [--mb 200] [--runs 3] [--rtt-ms 300] [--laptop-only]

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
import tempfile
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



REPO = os.path.dirname(HERE)
GNU_TIME = "/usr/bin/time"


def laptop_use(argv, env=None):
    """(wall s, CPU s user+sys, peak RSS MB) of a command with the children it waits for.
    Through GNU time where there is one: a child forked from this Python starts with this
    Python's pages, and its ru_maxrss counts them (scp's 13 MB read 23)."""
    if os.path.exists(GNU_TIME):
        fd, out = tempfile.mkstemp(prefix="gputui-bench-time-")
        os.close(fd)
        try:
            t0 = time.perf_counter()
            subprocess.run([GNU_TIME, "-f", "%U %S %M", "-o", out] + argv, check=True, env=env, cwd=REPO,
                           stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
            wall = time.perf_counter() - t0
            user, sys_s, rss_kb = open(out).read().split()[-3:]
        finally:
            os.unlink(out)
        return wall, float(user) + float(sys_s), int(rss_kb) / 1024
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    _pid, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0, argv
    return time.perf_counter() - t0, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def laptop_cost(box, alias, via, data, mb, runs, work):
    """`gputui pull` (this tree, `python -m tui`) against `scp -r` for the same tree, interleaved:
    the laptop's CPU and peak RSS. The pulled tree is put back beside the box's copy each time."""
    dest = box.home / "dest"
    fresh(box, dest)
    subprocess.run(box.ssh(alias) + ["cp -r %s %s/" % (data, dest)], check=True)
    boxed = dest / "data"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # .pyc, as installed
    env["PYTHONPATH"] = REPO
    local = work / "pulled"
    ours = [sys.executable, "-m", "tui", "pull", "%s:%s" % (alias, boxed), str(local), "--ssh-config",
            box.ssh_config, "--remote-dir", box.remote_dir, "--simulate", "idle"]
    peers = {"gputui": lambda: laptop_use(ours, env),
             "scp -r": lambda: laptop_use(["scp", "-q", "-r", "-F", box.ssh_config, "%s:%s" % (alias, boxed),
                                           str(local)])}
    got = {name: [] for name in peers}
    for rnd in range(runs + 1):  # the first round warms up: the probe on the box, the .pyc
        for name, run in peers.items():
            shutil.rmtree(local, ignore_errors=True)
            local.mkdir()
            use = run()
            if rnd:
                got[name].append(use)
    with open(local / "data" / "big.bin", "rb") as a, open(data / "big.bin", "rb") as b:
        assert a.read(1 << 20) == b.read(1 << 20)  # the last pull (scp's) is the tree: sanity
    gb = mb * (1 << 20) / 1e9
    med = statistics.median
    print("laptop cost of a pull of a %d MB tree (+%d small files), %s, %d interleaved runs, whole commands, "
          "median (min-max):" % (mb, SMALL, via, runs))
    for name, xs in got.items():
        wall, cpu, rss = ([x[i] for x in xs] for i in range(3))
        print("  %-8s CPU %5.2f s (%.2f-%.2f) = %5.2f s/GB, peak RSS %5.1f MB (%.1f-%.1f), %6.1f MB/s"
              % (name, med(cpu), min(cpu), max(cpu), med(cpu) / gb, med(rss), min(rss), max(rss), mb / med(wall)))
    o_cpu, p_cpu = [x[1] for x in got["gputui"]], [x[1] for x in got["scp -r"]]
    o_rss, p_rss = [x[2] for x in got["gputui"]], [x[2] for x in got["scp -r"]]
    cpu = dict(bench="transfer", figure="pull laptop CPU, %d MB tree" % mb, via=via, peer="scp -r",
               unit="laptop_cpu", ours_s=med(o_cpu), peer_s=med(p_cpu), ours_s_per_gb=med(o_cpu) / gb,
               peer_s_per_gb=med(p_cpu) / gb, ratio=med(o_cpu) / med(p_cpu), ratio_min=min(o_cpu) / max(p_cpu),
               ratio_max=max(o_cpu) / min(p_cpu), target=1.2, higher_is_better=False)
    rss = dict(bench="transfer", figure="pull laptop peak RSS, %d MB tree" % mb, via=via, peer="scp -r",
               unit="laptop_rss", ours_mb=med(o_rss), peer_mb=med(p_rss), ours_mb_per_gb=med(o_rss) / gb,
               peer_mb_per_gb=med(p_rss) / gb, ratio=med(o_rss) / med(p_rss), ratio_min=min(o_rss) / max(p_rss),
               ratio_max=max(o_rss) / min(p_rss), target_mb=40, higher_is_better=False)
    print("  ratio gputui/scp (laptop CPU) %.2f (%.2f-%.2f), target <= 1.2; peak RSS %.1f MB vs %.1f MB, "
          "target <= 40 MB" % (cpu["ratio"], cpu["ratio_min"], cpu["ratio_max"], rss["ours_mb"], rss["peer_mb"]))
    print("RESULT " + json.dumps(cpu), flush=True)
    print("RESULT " + json.dumps(rss), flush=True)


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
    ap.add_argument("--laptop-only", action="store_true",
                    help="only the laptop cost of a pull (CPU, peak RSS), direct, against scp")
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
        if args.laptop_only:
            laptop_cost(box, "testbox", "direct", data, args.mb, args.runs, work)
            return
        both_ways(box, "testbox", "direct", data, args.mb, args.runs, work)
        laptop_cost(box, "testbox", "direct", data, args.mb, args.runs, work)
        resume(box, "testbox", "direct", data, args.mb)
        if args.rtt_ms:
            via = "relay +%.0f ms RTT" % args.rtt_ms
            both_ways(box, "relaybox", via, data, args.mb, args.runs, work)
            resume(box, "relaybox", via, data, args.mb)


if __name__ == "__main__":
    main()
