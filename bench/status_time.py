"""`gputui status` wall time against plain `ssh` to the same box (issues 12, 26).

    python bench/status_time.py [--runs 5] [--rtt-ms 200]

The box: a real sshd on 127.0.0.1 letting in a throwaway user whose login shell is /bin/bash
with an empty home (bench/bench_box.py): what `ssh box true` costs there is the login itself,
not the developer's ~/.bashrc. Both gputui and the peers log in as that user. Timed: the whole
command, from a plain process start to its exit. Peers, interleaved run by run with gputui's
so a loaded machine hits both alike: `ssh box true` (the floor of any remote command) and
`ssh box cat /proc/stat` (the smallest real look at a box). Cached: the probe is already on the
box and its daemon running. First time: an empty remote dir, so the probe is deployed
(targets: cached <= 1.3x ssh true, first <= 4x ssh cat /proc/stat).

gputui runs as an installed copy does: a copy of the package in a virtual environment of its own
(its dependencies those of this interpreter), bytecode compiled as pip compiles it at install. Not
this checkout's editable install: its import hook (pathlib, importlib.util, fnmatch, ~10 ms at
every start) is a developer's cost no user pays, and neither is compiling from source where the
developer's environment sets PYTHONDONTWRITEBYTECODE.

With --rtt-ms the same is measured again through bench/relay.py adding that round trip; both
are printed. Figures are "median (min-max)"; RESULT lines feed bench/readme_table.py."""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

from bench_box import SHELL, start_bench_box  # noqa: E402
from bench_scope import guarded, mkdtemp  # noqa: E402
from remote_probe.daemon import terminate  # noqa: E402


def installed_copy(where):
    """A python that runs gputui as `pip install gputui` leaves it: the packages copied into a
    new venv's site-packages and compiled, the dependencies reached through a .pth line to
    this interpreter's site-packages (where the editable install's hook is not activated:
    only a site directory's own .pth files run)."""
    import compileall
    import shutil
    import sysconfig
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", where], check=True)
    python = os.path.join(where, "bin", "python")
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
    for package in ("tui", "remote_probe"):
        shutil.copytree(os.path.join(REPO, package), os.path.join(site, package),
                        ignore=shutil.ignore_patterns("__pycache__"))
        compileall.compile_dir(os.path.join(site, package), quiet=1)
    with open(os.path.join(site, "gputui-deps.pth"), "w") as f:
        f.write(sysconfig.get_paths()["purelib"] + "\n")
    return python


def timed(argv, env=None):
    t0 = time.perf_counter()
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    if r.returncode:
        raise SystemExit("%s failed: %s" % (" ".join(argv), r.stderr))
    return time.perf_counter() - t0


def spread(xs):
    return "%4.0f ms (%.0f-%.0f)" % (statistics.median(xs) * 1e3, min(xs) * 1e3, max(xs) * 1e3)


def result(figure, ours, peer, peer_name, via, **extra):
    rec = dict(bench="status_time", figure=figure, via=via, peer=peer_name,
               ours_s=statistics.median(ours), peer_s=statistics.median(peer),
               ratio=statistics.median(ours) / statistics.median(peer),
               ratio_min=min(ours) / max(peer), ratio_max=max(ours) / min(peer), **extra)
    print("RESULT " + json.dumps(rec))
    return rec


def measure(box, alias, runs, via, env, python):
    ssh = box.ssh(alias)
    gputui = [python, "-m", "tui", "status", alias, "--ssh-config", box.ssh_config,
              "--simulate", "idle"]
    cached_dir = os.path.join(box.remote_dir, "cached-" + alias)
    timed(gputui + ["--remote-dir", cached_dir], env)  # deploy, start the daemon
    true_s, cat_s, cached, firsts = [], [], [], []
    for i in range(runs):  # interleaved: each round has one of each
        true_s.append(timed(ssh + ["true"]))
        cached.append(timed(gputui + ["--remote-dir", cached_dir], env))
        cat_s.append(timed(ssh + ["cat", "/proc/stat"]))
        remote = os.path.join(box.remote_dir, "fresh-%s-%d" % (alias, i))
        firsts.append(timed(gputui + ["--remote-dir", remote], env))
        terminate(remote)
    terminate(cached_dir)
    print("%s (box user %s, login shell %s, empty home), %d interleaved runs, median (min-max):"
          % (via, box.user, SHELL, runs))
    print("  ssh box true            %s" % spread(true_s))
    print("  ssh box cat /proc/stat  %s" % spread(cat_s))
    a = result("status, cached", cached, true_s, "ssh box true", via, target=1.3)
    print("  gputui status, cached   %s = %.2fx ssh true (%.2f-%.2f; target <= 1.3x)"
          % (spread(cached), a["ratio"], a["ratio_min"], a["ratio_max"]))
    b = result("status, deploy", firsts, cat_s, "ssh box cat /proc/stat", via, target=4)
    print("  gputui status, deploy   %s = %.2fx ssh cat /proc/stat (%.2f-%.2f; target <= 4x)"
          % (spread(firsts), b["ratio"], b["ratio_min"], b["ratio_max"]), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rtt-ms", type=float, default=0,
                    help="also measure through a loopback relay adding this round trip")
    args = ap.parse_args()
    with guarded():
        laptop = mkdtemp("gputui-bench-status-")
        env = dict(os.environ, **{"GPUTUI_%s_DIR" % v: os.path.join(laptop, v.lower())
                                  for v in ("CONFIG", "STATE", "DATA")})
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # the first (deploy) run writes the caches
        python = installed_copy(os.path.join(laptop, "venv"))
        box = start_bench_box(rtt_ms=args.rtt_ms)
        measure(box, "testbox", args.runs, "direct", env, python)
        if args.rtt_ms:
            measure(box, "relaybox", args.runs, "relay +%.0f ms RTT" % args.rtt_ms, env, python)


if __name__ == "__main__":
    main()
