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

gputui runs as a user's install does (issue 38): a wheel built from this checkout, installed with
`pipx install` into a fresh PIPX_HOME (its dependencies from the package index; a venv with pip
where pipx cannot), and timed as the console script pipx puts on PATH, `gputui status HOST --json`.
Not this checkout's editable install: its import hook is a developer's cost no user pays.

The peer, exactly: `ssh -F <the bench's ssh_config> testbox true` (relaybox through the relay),
the system's OpenSSH client with the same config file, key, known_hosts, sshd and box user as
gputui; its first line names the ssh version. The peer runs right before gputui in every round.

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
from bench_scope import guarded, mkdtemp, popen_group  # noqa: E402
from remote_probe.daemon import terminate  # noqa: E402


def grouped(argv, **kw):
    """subprocess.run in a process group of its own: an interrupted bench stops pip's children too."""
    proc = popen_group(argv, grace=2, **kw)
    out, _err = proc.communicate()
    return subprocess.CompletedProcess(argv, proc.returncode, out)


def installed_copy(where):
    """(the `gputui` a user runs, how it got there): a wheel built from this checkout, installed
    with pipx as the README says (`pipx install gputui`), its dependencies resolved from the
    package index. Where pipx cannot install (no index), a venv with pip and the wheel, the
    dependencies reached through a .pth line to this interpreter's site-packages (where the
    editable install's hook is not activated: only a site directory's own .pth files run).
    Either way the console script pip writes is what runs, bytecode compiled at install: not
    this checkout's editable install, whose import hook is a developer's cost no user pays."""
    import glob
    import shutil
    import sysconfig
    tree = os.path.join(where, "tree")
    shutil.copytree(REPO, tree, ignore=shutil.ignore_patterns(
        ".*", "build", "dist", "*.egg-info", "__pycache__", "snapshot_report.html", "results"))
    quiet = dict(stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=where)
    scratch = os.path.join(where, "tmp")  # pip's temporary files go with `where`, interrupted or not
    os.makedirs(scratch)
    env = dict(os.environ, PIPX_HOME=os.path.join(where, "pipx"), PIPX_BIN_DIR=os.path.join(where, "bin"),
               PIPX_MAN_DIR=os.path.join(where, "man"), PIP_DISABLE_PIP_VERSION_CHECK="1", TMPDIR=scratch)
    env.pop("PYTHONPATH", None)
    built = grouped([sys.executable, "-m", "pip", "wheel", tree, "--no-deps",
                     "--no-build-isolation", "-w", os.path.join(where, "dist")], env=env, **quiet)
    if built.returncode:
        raise SystemExit("building the wheel failed:\n" + built.stdout)
    (wheel,) = glob.glob(os.path.join(where, "dist", "gputui-*.whl"))
    done = grouped([sys.executable, "-m", "pipx", "install", wheel], env=env, **quiet)
    if done.returncode == 0:
        return os.path.join(where, "bin", "gputui"), "pipx install (dependencies from the index)"
    venv = os.path.join(where, "venv")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    got = grouped([os.path.join(venv, "bin", "python"), "-m", "pip", "install", "--no-deps",
                          wheel], env=env, **quiet)
    if got.returncode:
        raise SystemExit("installing the wheel failed:\n" + got.stdout)
    (site,) = glob.glob(os.path.join(venv, "lib", "python*", "site-packages"))
    with open(os.path.join(site, "zz_bench_deps.pth"), "w") as f:
        f.write(sysconfig.get_paths()["purelib"] + "\n")
    return os.path.join(venv, "bin", "gputui"), "venv + pip install of the wheel (pipx failed)"


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


def measure(box, alias, runs, via, env, gputui_bin):
    ssh = box.ssh(alias)
    gputui = [gputui_bin, "status", alias, "--json", "--ssh-config", box.ssh_config,
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
    print("  peer: `%s true`" % " ".join(ssh))
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
        gputui_bin, how = installed_copy(os.path.join(laptop, "install"))
        print("gputui: %s, run as `%s status HOST --json`" % (how, gputui_bin))
        version = subprocess.run(["ssh", "-V"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print("peer: %s" % version.stdout.strip())
        box = start_bench_box(rtt_ms=args.rtt_ms)
        measure(box, "testbox", args.runs, "direct", env, gputui_bin)
        if args.rtt_ms:
            measure(box, "relaybox", args.runs, "relay +%.0f ms RTT" % args.rtt_ms, env, gputui_bin)


if __name__ == "__main__":
    main()
