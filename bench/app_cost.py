"""The app's own cost while idle on the dashboard, against a bare Textual app drawing the same
screen in the same window (issues 12, 25, 26).

    python bench/app_cost.py [--seconds 60] [--cases h100x8@120x40,h100x8@200x60,a100x2@120x40]
                             [--busy-box] [--repo PATH]

A demo box (embedded SSH server + simulator) runs in a separate process; `gputui connect`
runs on a real pseudo-terminal of each case's size, like a user's, and its CPU and RSS are
read from /proc while it sits on the dashboard. In the same window, each on a pty of the same
size:
  floor    a Textual app with asyncssh imported and one screen-filling Static re-drawn once a
           second (every line changes), and a Footer: what any app built on gputui's libraries
           pays to show a screen a second. The ratio app/floor is the figure (target <= 1.5x;
           RSS <= floor + 8 MB).
  floor+ssh+sqlite  the floor plus an SSH connection to the demo box streaming a line a second
           and a sqlite database in WAL mode written each second: context only, what the libraries
           cost once used as gputui uses them (the connection's crypto, the ledger's sqlite).
  htop -d 10, bpytop (update 1 s), glances -t 1: the monitors people use, where installed;
           for context only (their cost depends on how many processes the machine has).
--busy-box adds a case with 2,000 more processes on the box (the daemon scans them all).
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
from bench_scope import cleanup, guarded, kill_pid, mkdtemp, on_exit, stop_group, temp_path  # noqa: E402
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
import asyncio, json, sys, warnings
warnings.filterwarnings("ignore", message="coroutine .Queue.join. was never awaited")  # asyncssh at a cut channel (tui/ui/demo.py)
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
# a Textual app with asyncssh imported, one Static filling the screen re-drawn each second
# (every line changes: the time is on each), and a Footer; nothing of gputui.
FLOOR_BASE = r"""
import asyncssh  # noqa: F401 - the SSH library the app must carry
from textual.app import App
from textual.widgets import Footer, Static
import time
class Floor(App):
    BINDINGS = [("q", "quit", "Quit")]
    def compose(self):
        yield Static(id="s")
        yield Footer()
    async def on_mount(self):  # Textual runs each class's own on_mount: subclasses change start()
        await self.start()
    async def start(self):
        self.set_interval(1.0, self.tick)
        self.tick()
    def tick(self, now=None):
        w, h = self.size
        now = now or time.strftime("%H:%M:%S")
        lines = ["%s %4d " % (now, i) + ("GPU %d  util 88%%  mem 61.2/80.0 GiB  62 C  350 W  " % (i % 8)) * 4
                 for i in range(h - 1)]
        self.query_one("#s", Static).update("\n".join(line[:w] for line in lines))
"""
FLOOR_APP = FLOOR_BASE + "Floor().run()\n"

# Context, not the target's floor: the same bare app doing the two things gputui does that the
# floor never does, so a reader can tell the libraries' share of the app's RSS from gputui's own:
# an SSH connection to the same demo box streaming a line a second (asyncssh's key exchange,
# ciphers and auth: cryptography's pages, saslprep's unicodedata), and a sqlite database in WAL
# mode written once a second with synchronous=FULL (the ledger's settings).
FLOOR_CONNECTED_APP = FLOOR_BASE + r"""
import os, sqlite3, sys
class Connected(Floor):
    async def start(self):
        self.db = sqlite3.connect(os.path.join(sys.argv[2], "l.sqlite3"), isolation_level=None)
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute("PRAGMA synchronous = FULL")
        self.db.execute("CREATE TABLE s (id INTEGER PRIMARY KEY, t REAL, cost REAL)")
        self.db.execute("INSERT INTO s (t, cost) VALUES (0, 0)")
        self.conn = await asyncssh.connect("gputui-demo", config=[sys.argv[1]])
        self.proc = await self.conn.create_process("while true; do date +%T; sleep 1; done")
        self.run_worker(self.stream())
    async def stream(self):
        async for line in self.proc.stdout:
            self.db.execute("UPDATE s SET t = ?, cost = ? WHERE id = 1", (time.time(), 1.0))
            self.tick(line.strip())
Connected().run()
"""

# Monitors people use, measured beside when installed: (name, argv, files its HOME needs)
PEERS = (
    ("htop", ["htop", "-d", "10"], {}),
    ("bpytop", ["bpytop"], {".config/bpytop/bpytop.conf": "update_ms=1000\n"}),
    ("glances", ["glances", "-t", "1"], {}),
)


def peer_argv(argv):
    """argv with its program found on PATH or beside this python (a venv's), or None."""
    found = shutil.which(argv[0]) or shutil.which(argv[0], path=os.path.dirname(sys.executable))
    return [found] + argv[1:] if found else None


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


def parse_case(text):
    scenario, size = text.split("@")
    cols, rows = (int(x) for x in size.split("x"))
    return scenario, cols, rows


def measure(repo, scenario, size, extra, seconds):
    """CPU % and RSS of the app, the floor and the installed peers over one window."""
    from frame_log import frame_log_env
    cols, rows = size
    frames = temp_path("gputui-frames-", ".view")
    # the frame log (bench/frame_log.py) counts the samples that reached the screen
    env = frame_log_env(dict(os.environ, TERM="xterm-256color", PYTHONPATH=repo), frames)
    env.pop("TMUX", None)
    peer_home = mkdtemp("gputui-bench-peers-")
    for _name, _argv, files in PEERS:
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(peer_home, rel)), exist_ok=True)
            with open(os.path.join(peer_home, rel), "w") as f:
                f.write(text)
    peer_env = dict(env, HOME=peer_home, TMPDIR=peer_home)  # glances logs into TMPDIR
    info = start_demo()
    sleepers = extra_processes(extra)
    pids = {}
    try:
        pids["app"], _ = spawn_pty([sys.executable, "-m", "tui", "connect", "gputui-demo", "--ssh-config",
                                    info["config"], "--simulate", scenario], env, repo, (rows, cols))
        pids["floor"], _ = spawn_pty([sys.executable, "-c", FLOOR_APP], env, repo, (rows, cols))
        pids["floor+ssh+sqlite"], _ = spawn_pty([sys.executable, "-c", FLOOR_CONNECTED_APP, info["config"],
                                                 mkdtemp("gputui-bench-ledger-")],
                                                env, repo, (rows, cols))
        for name, argv, _files in PEERS:
            found = peer_argv(argv)
            if found:
                pids[name], _ = spawn_pty(found, peer_env, peer_home, (rows, cols))
        deadline = time.time() + 60  # connect, deploy, first samples, dashboard drawn
        while b"live" not in SCREENS.get(pids["app"], b"") and time.time() < deadline:
            time.sleep(0.2)
        if b"live" not in SCREENS.get(pids["app"], b""):
            import re
            text = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b" ", bytes(SCREENS.get(pids["app"], b"")))
            raise SystemExit("the app never went live: %s" % text.decode("utf-8", "replace")[-3000:])
        time.sleep(3)
        before, t0 = {k: cpu_seconds(pid) for k, pid in pids.items()}, time.time()
        time.sleep(seconds)
        after, t1 = {k: cpu_seconds(pid) for k, pid in pids.items()}, time.time()
        wall = t1 - t0
        if b"util 88%" not in SCREENS.get(pids["floor+ssh+sqlite"], b""):  # it draws once lines come
            print("the connected floor never drew a line from the box: left out", flush=True)
            after.pop("floor+ssh+sqlite")
        drawn = [float(line.split()[0]) for line in open(frames)] if os.path.exists(frames) else []
        drawn = [t for t in drawn if t0 <= t <= t1]
        return {"scenario": scenario, "size": "%dx%d" % (cols, rows), "extra_processes": extra,
                "cpu_pct": {k: 100 * (after[k] - before[k]) / wall for k in after},
                "rss_mb": {k: rss_mb(pids[k]) for k in after},
                "samples_drawn_per_s": len(drawn) / wall}
    finally:
        for pid in pids.values():
            kill_pid(pid)
        for p in sleepers:
            p.kill()
            p.wait()
        cleanup()  # the demo box, the frame log, the peers' home


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--cases", default="h100x8@120x40,h100x8@200x60,a100x2@120x40",
                    help="scenario@COLSxROWS, comma-separated")
    ap.add_argument("--busy-box", action="store_true", help="also h100x8@160x50 with 2,000 more processes")
    ap.add_argument("--repo", default=REPO, help="checkout whose app is measured")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    with guarded():
        run(args)


def run(args):
    cases = [parse_case(c) + (0,) for c in args.cases.split(",") if c]
    if args.busy_box:
        cases.append(("h100x8", 160, 50, 2000))
    rows = []
    for scenario, cols, nrows, extra in cases:
        r = measure(os.path.abspath(args.repo), scenario, (cols, nrows), extra, args.seconds)
        rows.append(r)
        cpu, rss = r["cpu_pct"], r["rss_mb"]
        ratio = cpu["app"] / max(0.01, cpu["floor"])
        case = "%s %s%s" % (scenario, r["size"], " +%d procs" % extra if extra else "")
        others = "".join(", %s %.2f%% %.1f MB" % (k, cpu[k], rss[k]) for k in cpu if k not in ("app", "floor"))
        print("%-26s app %5.2f%% = %4.2fx floor %4.2f%% (target <= 1.5x); RSS app %5.1f MB = floor %4.1f "
              "MB %+5.1f (target <= +8)%s; %.2f samples drawn/s" % (
                  case, cpu["app"], ratio, cpu["floor"], rss["app"], rss["floor"], rss["app"] - rss["floor"],
                  others, r["samples_drawn_per_s"]), flush=True)
        print("RESULT " + json.dumps(dict(
            bench="app_cost", figure="app CPU idle, " + case, via="demo box (loopback)",
            peer="bare Textual app (floor)", ours_s=cpu["app"] / 100, peer_s=cpu["floor"] / 100,
            ratio=ratio, target=1.5, unit="cpu", rss_mb=rss["app"], floor_rss_mb=rss["floor"],
            rss_over_floor_mb=rss["app"] - rss["floor"],
            others={k: {"cpu_pct": cpu[k], "rss_mb": rss[k]} for k in cpu if k not in ("app", "floor")})),
            flush=True)
    if args.json:
        json.dump(rows, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
