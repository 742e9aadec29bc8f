"""The app's own cost while idle on the dashboard, against htop in the same window (issue 12).

    python bench/app_cost.py [--seconds 20] [--repo PATH]

A demo box (embedded SSH server + simulator) runs in a separate process; `gputui connect`
runs on a real pseudo-terminal (160x50) like a user's, and its CPU and RSS are read from
/proc while it sits on the dashboard. `htop -d 10` (1 s refresh) runs on another pty in the
same window as the peer. Cases: 2 and 8 GPUs, 64 and 2,064 processes on the box.
--repo measures another checkout (e.g. a worktree of an older commit) the same way."""

import argparse
import json
import os
import pty
import select
import signal
import subprocess
import sys
import shutil
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_scope import cleanup, guarded, kill_pid, on_exit, stop_group, temp_path  # noqa: E402
REPO = os.path.dirname(HERE)
CLK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def rss_mb(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return 0.0


SCREENS = {}  # pid -> the last bytes it wrote to its terminal


def spawn_pty(argv, env, cwd, size=(50, 160)):
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(cwd)
        os.execvpe(argv[0], argv, env)
    import fcntl
    import struct
    import termios
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", size[0], size[1], 0, 0))

    seen = SCREENS.setdefault(pid, bytearray())

    def drain():  # a terminal that reads what the program draws, as a real one does
        while True:
            try:
                r, _, _ = select.select([fd], [], [], 0.5)
                if r:
                    chunk = os.read(fd, 1 << 16)
                    if not chunk:
                        return
                    seen.extend(chunk)
                    del seen[:-200000]
            except OSError:
                return
    threading.Thread(target=drain, daemon=True).start()
    return pid, fd


DEMO_SERVER = r"""
import asyncio, json, sys
sys.path.insert(0, sys.argv[1])
from tui.remote.demo_box import DemoBox
async def main():
    box = await DemoBox().start()
    print(json.dumps({"config": box.ssh_config, "dir": box.dir}), flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await box.stop()
try:
    asyncio.run(main())
except KeyboardInterrupt:
    pass
"""

# The floor any app built on gputui's libraries (docs/architecture.md, "The rooms") must pay:
# a Textual app with one Static redrawn each second, asyncssh imported, nothing of gputui ("floor" in the output).
FLOOR_APP = r"""
import asyncssh  # noqa: F401 - the SSH library the app must carry
from textual.app import App
from textual.widgets import Footer, Static
import time
class Floor(App):
    def compose(self):
        yield Static(id="s")
        yield Footer()
    def on_mount(self):
        self.set_interval(1.0, lambda: self.query_one("#s", Static).update(time.ctime()))
Floor().run()
"""


def extra_processes(n):
    """n idle processes on the box (the daemon scans them all)."""
    procs = []
    on_exit(lambda: [(p.kill(), p.wait()) for p in procs])
    procs.extend(subprocess.Popen(["sleep", "600"]) for _ in range(n))
    return procs


def _stop_demo(server, info):
    sys.path.insert(0, REPO)
    from remote_probe.daemon import terminate
    if info:
        terminate(os.path.join(info["dir"], "home", ".cache", "gputui"))
    # SIGINT is the demo's own stop (box.stop: tmux, children, its dir); then its group goes
    stop_group(server, signal.SIGINT, 10)
    if info:
        shutil.rmtree(info["dir"], ignore_errors=True)


def start_demo():
    """The demo box in a session of its own, stopped (and its dir removed) by cleanup()."""
    server = subprocess.Popen([sys.executable, "-c", DEMO_SERVER, REPO], stdout=subprocess.PIPE,
                              text=True, env=dict(os.environ), start_new_session=True)
    info = {}
    on_exit(_stop_demo, server, info)
    info.update(json.loads(server.stdout.readline()))
    return info


def measure(repo, scenario, extra, seconds):
    from frame_log import frame_log_env
    frames = temp_path("gputui-frames-", ".view")
    # the frame log (bench/frame_log.py) counts the samples that reached the screen
    env = frame_log_env(dict(os.environ, TERM="xterm-256color", PYTHONPATH=repo), frames)
    env.pop("TMUX", None)
    info = start_demo()
    sleepers = extra_processes(extra)
    app_pid = htop_pid = floor_pid = None
    try:
        app_pid, _ = spawn_pty([sys.executable, "-m", "tui", "connect", "gputui-demo", "--ssh-config",
                                info["config"], "--simulate", scenario],
                               env, repo)
        htop_pid, _ = spawn_pty(["htop", "-d", "10"], env, repo)
        floor_pid, _ = spawn_pty([sys.executable, "-c", FLOOR_APP], env, repo)
        deadline = time.time() + 60  # connect, deploy, first samples, dashboard drawn
        while b"live" not in SCREENS.get(app_pid, b"") and time.time() < deadline:
            time.sleep(0.2)
        if b"live" not in SCREENS.get(app_pid, b""):
            import re
            text = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b" ", bytes(SCREENS.get(app_pid, b"")))
            raise SystemExit("the app never went live: %s" % text.decode("utf-8", "replace")[-3000:])
        time.sleep(3)
        a0, h0, f0, t0 = cpu_seconds(app_pid), cpu_seconds(htop_pid), cpu_seconds(floor_pid), time.time()
        time.sleep(seconds)
        a1, h1, f1, t1 = cpu_seconds(app_pid), cpu_seconds(htop_pid), cpu_seconds(floor_pid), time.time()
        wall = t1 - t0
        drawn = [float(line.split()[0]) for line in open(frames)] if os.path.exists(frames) else []
        drawn = [t for t in drawn if t0 <= t <= t1]
        return {"scenario": scenario, "extra_processes": extra,
                "app_cpu_pct": 100 * (a1 - a0) / wall, "htop_cpu_pct": 100 * (h1 - h0) / wall,
                "floor_cpu_pct": 100 * (f1 - f0) / wall,
                "app_rss_mb": rss_mb(app_pid), "htop_rss_mb": rss_mb(htop_pid),
                "floor_rss_mb": rss_mb(floor_pid),
                "samples_drawn_per_s": len(drawn) / wall}
    finally:
        for pid in (app_pid, htop_pid, floor_pid):
            if pid:
                kill_pid(pid)
        for p in sleepers:
            p.kill()
            p.wait()
        cleanup()  # the demo box, the frame log


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--repo", default=REPO, help="checkout whose app is measured")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    with guarded():
        run(args)


def run(args):
    rows = []
    for scenario, extra in (("a100x2", 0), ("h100x8", 0), ("h100x8", 2000)):
        r = measure(os.path.abspath(args.repo), scenario, extra, args.seconds)
        rows.append(r)
        print("%-7s +%4d procs  app CPU %5.2f%% (htop %5.2f%%, floor %4.2f%%) = %4.1fx htop (target "
              "<= 2.5x)   app RSS %5.1f MB (htop %4.1f MB, floor %4.1f MB; target <= 45)   "
              "%.2f samples drawn/s" % (
                  r["scenario"], r["extra_processes"], r["app_cpu_pct"], r["htop_cpu_pct"],
                  r["floor_cpu_pct"], r["app_cpu_pct"] / max(0.01, r["htop_cpu_pct"]),
                  r["app_rss_mb"], r["htop_rss_mb"], r["floor_rss_mb"], r["samples_drawn_per_s"]),
              flush=True)
        # htop's own cost depends on the machine (how many processes it draws); the stable
        # reference is the floor: a bare Textual app redrawing in the same window (issue 26)
        case = "%s +%d procs" % (r["scenario"], r["extra_processes"])
        print("RESULT " + json.dumps(dict(
            bench="app_cost", figure="app CPU idle, " + case, via="demo box (loopback)",
            peer="bare Textual app (floor)", ours_s=r["app_cpu_pct"] / 100, peer_s=r["floor_cpu_pct"] / 100,
            ratio=r["app_cpu_pct"] / max(0.01, r["floor_cpu_pct"]),
            htop_ratio=r["app_cpu_pct"] / max(0.01, r["htop_cpu_pct"]), unit="cpu")), flush=True)
    if args.json:
        json.dump(rows, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
