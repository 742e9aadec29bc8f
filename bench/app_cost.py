"""The app's own cost while idle on the dashboard, against a bare Textual app drawing a full
screen in the same window (issues 12, 25, 26, 38).

    python bench/app_cost.py [--seconds 60] [--windows 1] [--box demo|sshd]
                             [--cases h100x8@120x40,h100x8@200x60,a100x2@120x40]
                             [--busy-box] [--repo PATH]

A box runs the simulator (each case's scenario): `--box demo` (the default) the demo box, an
embedded SSH server in a separate process; `--box sshd` a real sshd on 127.0.0.1, logged in to
as a throwaway box user with a plain login shell and an empty home (bench/bench_box.py; needs
root). `gputui connect` runs on a real pseudo-terminal of each case's size, like a user's, with
an empty config and state of its own, and its CPU and RSS are read from /proc while it sits on
the dashboard. In the same window, each on a pty of the same size:
  floor    THE FLOOR, the figure's peer: a bare Textual app (textual alone: no asyncssh, nothing
           of gputui, no bench driver) with one Static filling the screen above a Footer, the
           Static updated once a second with every one of its lines changed (the time is on
           each line): what any Textual app pays to show a changing screen each second. The
           ratio app/floor is the figure (target <= 1.3x at 120x40 and <= 1.2x at 200x60,
           issue 38; 1.5x at other sizes).
           RSS is shown over it and over floor+ssh+sqlite (target <= +8 MB over that connected
           floor, issue 38: the SSH library's and sqlite's own memory is no part of gputui's budget).
  floor+asyncssh  the floor with asyncssh imported (the floor until issue 38): context only,
           what carrying the SSH library costs an idle app.
  floor+ssh+sqlite  floor+asyncssh plus an SSH connection to the same box streaming a line a
           second and a sqlite database in WAL mode written each second: context only, what the
           libraries cost once used as gputui uses them (the connection's crypto, the ledger's
           sqlite).
  htop -d 10, bpytop (update 1 s), glances -t 1: the monitors people use, where installed;
           for context only (their cost depends on how many processes the machine has).
--windows N measures N consecutive windows of --seconds each (the same processes): the figure
is the median window's ratio, with the range. --busy-box adds a case with 2,000 more processes
on the box (the daemon scans them all). --repo measures another checkout (e.g. a worktree of
an older commit) the same way."""

import argparse
import json
import os
import pty
import select
import signal
import statistics
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

# THE FLOOR (the figure's peer): a bare Textual app, nothing else imported, one Static filling
# the screen above a Footer, updated each second with every line changed (the time is on each).
FLOOR_BASE = r"""
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
FLOOR_DEFINITION = ("bare Textual %s app (no asyncssh, nothing of gputui): a Static filling the screen "
                    "above a Footer, updated each second with every line changed")

# Context, not the figure's peer: the floor carrying the SSH library gputui must carry (the floor
# until issue 38) ...
SSH_IMPORT = "import asyncssh  # noqa: F401 - the SSH library the app must carry\n"
FLOOR_ASYNCSSH_APP = SSH_IMPORT + FLOOR_APP

# ... and the same doing the two things gputui does that the floor never does, so a reader can
# tell the libraries' share of the app's RSS from gputui's own: an SSH connection to the same box
# streaming a line a second (asyncssh's key exchange, ciphers and auth: cryptography's pages,
# saslprep's unicodedata), and a sqlite database in WAL mode written once a second with
# synchronous=FULL (the ledger's settings). argv: alias, ssh_config, a dir for the database.
FLOOR_CONNECTED_APP = SSH_IMPORT + FLOOR_BASE + r"""
import os, sqlite3, sys
class Connected(Floor):
    async def start(self):
        self.db = sqlite3.connect(os.path.join(sys.argv[3], "l.sqlite3"), isolation_level=None)
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute("PRAGMA synchronous = FULL")
        self.db.execute("CREATE TABLE s (id INTEGER PRIMARY KEY, t REAL, cost REAL)")
        self.db.execute("INSERT INTO s (t, cost) VALUES (0, 0)")
        self.conn = await asyncssh.connect(sys.argv[1], config=[sys.argv[2]])
        self.proc = await self.conn.create_process("while true; do date +%T; sleep 1; done")
        self.run_worker(self.stream())
    async def stream(self):
        async for line in self.proc.stdout:
            self.db.execute("UPDATE s SET t = ?, cost = ? WHERE id = 1", (time.time(), 1.0))
            self.tick(line.strip())
Connected().run()
"""

TARGETS = {"120x40": 1.3, "200x60": 1.2}  # issue 38; other sizes keep issue 26's 1.5
DEFAULT_TARGET = 1.5


def target_for(size):
    return TARGETS.get(size, DEFAULT_TARGET)


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


def start_box(kind):
    """(alias, ssh_config, the app's extra options, the box in words) for a box of `kind`,
    stopped and removed by cleanup()."""
    if kind == "sshd":
        from bench_box import SHELL, start_bench_box
        box = start_bench_box()
        return ("testbox", box.ssh_config, ["--remote-dir", os.path.join(box.remote_dir, "app")],
                "sshd, box user with login shell %s and an empty home" % SHELL)
    info = start_demo()
    return "gputui-demo", info["config"], [], "demo box (loopback)"


def bare_env():
    """What the floors and the peers run with: the bench's environment less gputui's and the
    bench's own (the frame log's driver, PYTHONPATH): a bare Textual app's."""
    env = dict(os.environ, TERM="xterm-256color")
    for var in ("TMUX", "TEXTUAL_DRIVER", "PYTHONPATH", "GPUTUI_FRAME_LOG"):
        env.pop(var, None)
    return env


def parse_case(text):
    scenario, size = text.split("@")
    cols, rows = (int(x) for x in size.split("x"))
    return scenario, cols, rows


def measure(repo, scenario, size, extra, seconds, windows=1, box_kind="demo", compare=None):
    """CPU % and RSS of the app, the floors and the installed peers over `windows` windows."""
    from frame_log import frame_log_env
    cols, rows = size
    frames = temp_path("gputui-frames-", ".view")
    laptop = mkdtemp("gputui-bench-laptop-")  # the app's config and state: empty, its own
    dirs = {"GPUTUI_%s_DIR" % v: os.path.join(laptop, v.lower()) for v in ("CONFIG", "STATE", "DATA")}
    # the frame log (bench/frame_log.py) counts the samples that reached the screen
    env = frame_log_env(dict(bare_env(), PYTHONPATH=repo, **dirs), frames)
    floor_env = bare_env()
    peer_home = mkdtemp("gputui-bench-peers-")
    for _name, _argv, files in PEERS:
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(peer_home, rel)), exist_ok=True)
            with open(os.path.join(peer_home, rel), "w") as f:
                f.write(text)
    peer_env = dict(floor_env, HOME=peer_home, TMPDIR=peer_home)  # glances logs into TMPDIR
    alias, ssh_config, app_args, via = start_box(box_kind)
    sleepers = extra_processes(extra)
    pids = {}
    try:
        pids["app"], _ = spawn_pty([sys.executable, "-m", "tui", "connect", alias, "--ssh-config",
                                    ssh_config, "--simulate", scenario] + app_args, env, repo, (rows, cols))
        if compare:  # another checkout's app in the same windows: before -> after on one footing
            other = mkdtemp("gputui-bench-laptop-")
            other_env = frame_log_env(dict(bare_env(), PYTHONPATH=compare, **{
                k: v.replace(laptop, other) for k, v in dirs.items()}), temp_path("gputui-frames-", ".view"))
            other_args = [a.replace(os.sep + "app", os.sep + "compare") for a in app_args]
            pids["compare"], _ = spawn_pty([sys.executable, "-m", "tui", "connect", alias, "--ssh-config",
                                            ssh_config, "--simulate", scenario] + other_args, other_env, compare,
                                           (rows, cols))
        pids["floor"], _ = spawn_pty([sys.executable, "-c", FLOOR_APP], floor_env, HERE, (rows, cols))
        pids["floor+asyncssh"], _ = spawn_pty([sys.executable, "-c", FLOOR_ASYNCSSH_APP], floor_env, HERE,
                                              (rows, cols))
        pids["floor+ssh+sqlite"], _ = spawn_pty([sys.executable, "-c", FLOOR_CONNECTED_APP, alias, ssh_config,
                                                 mkdtemp("gputui-bench-ledger-")],
                                                floor_env, HERE, (rows, cols))
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
        out = []
        for _ in range(windows):  # one after another, every process measured in each
            before, t0 = {k: cpu_seconds(pid) for k, pid in pids.items()}, time.time()
            time.sleep(seconds)
            after, t1 = {k: cpu_seconds(pid) for k, pid in pids.items()}, time.time()
            wall = t1 - t0
            if b"util 88%" not in SCREENS.get(pids["floor+ssh+sqlite"], b""):  # it draws once lines come
                print("the connected floor never drew a line from the box: left out", flush=True)
                after.pop("floor+ssh+sqlite")
            drawn = [float(line.split()[0]) for line in open(frames)] if os.path.exists(frames) else []
            drawn = [t for t in drawn if t0 <= t <= t1]
            out.append({"scenario": scenario, "size": "%dx%d" % (cols, rows), "extra_processes": extra,
                        "via": via, "seconds": wall,
                        "cpu_pct": {k: 100 * (after[k] - before[k]) / wall for k in after},
                        "rss_mb": {k: rss_mb(pids[k]) for k in after},
                        "samples_drawn_per_s": len(drawn) / wall})
        return out
    finally:
        for pid in pids.values():
            kill_pid(pid)
        for p in sleepers:
            p.kill()
            p.wait()
        cleanup()  # the box, the frame log, the peers' home, the app's laptop dirs



def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=60, help="length of one window")
    ap.add_argument("--windows", type=int, default=1, help="consecutive windows per case")
    ap.add_argument("--cases", default="h100x8@120x40,h100x8@200x60,a100x2@120x40",
                    help="scenario@COLSxROWS, comma-separated")
    ap.add_argument("--box", choices=("demo", "sshd"), default="demo",
                    help="the demo box, or a real sshd with a plain-shell box user (needs root)")
    ap.add_argument("--busy-box", action="store_true", help="also h100x8@160x50 with 2,000 more processes")
    ap.add_argument("--repo", default=REPO, help="checkout whose app is measured")
    ap.add_argument("--compare", help="another checkout (e.g. a worktree of the commit before) whose app "
                    "runs in the same windows, shown as `compare`")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    with guarded():
        run(args)


def textual_version():
    from importlib.metadata import version
    return version("textual")


def ratio_of(r):
    return r["cpu_pct"]["app"] / max(0.01, r["cpu_pct"]["floor"])


def spread(values, fmt="%.2f"):
    return (fmt + " (" + fmt + "-" + fmt + ")") % (statistics.median(values), min(values), max(values))


def run(args):
    cases = [parse_case(c) + (0,) for c in args.cases.split(",") if c]
    if args.busy_box:
        cases.append(("h100x8", 160, 50, 2000))
    floor = FLOOR_DEFINITION % textual_version()
    print("floor: " + floor, flush=True)
    rows = []
    for scenario, cols, nrows, extra in cases:
        windows = measure(os.path.abspath(args.repo), scenario, (cols, nrows), extra, args.seconds,
                          args.windows, args.box, args.compare and os.path.abspath(args.compare))
        rows.extend(windows)
        case = "%s %s%s" % (scenario, windows[0]["size"], " +%d procs" % extra if extra else "")
        target = target_for(windows[0]["size"])
        for r in windows:
            cpu, rss = r["cpu_pct"], r["rss_mb"]
            others = "".join(", %s %.2f%% %.1f MB" % (k, cpu[k], rss[k])
                             for k in cpu if k not in ("app", "floor"))
            connected = rss.get("floor+ssh+sqlite")
            print("%-26s app %5.2f%% = %4.2fx floor %4.2f%% (target <= %.1fx); RSS app %5.1f MB = floor "
                  "%4.1f MB %+5.1f, floor+ssh+sqlite %s (target <= +8)%s; %.2f samples drawn/s" % (
                      case, cpu["app"], ratio_of(r), cpu["floor"], target, rss["app"], rss["floor"],
                      rss["app"] - rss["floor"], "%+5.1f" % (rss["app"] - connected) if connected else "n/a",
                      others, r["samples_drawn_per_s"]), flush=True)
        ratios = [ratio_of(r) for r in windows]
        if args.compare:
            print("%-26s compare (%s): ratio %sx" % (case, args.compare, spread(
                [r["cpu_pct"]["compare"] / max(0.01, r["cpu_pct"]["floor"]) for r in windows])), flush=True)
        if len(windows) > 1:
            print("%-26s %d windows of %.0f s, median (range): ratio %sx, app %s%%, floor %s%%" % (
                case, len(windows), args.seconds, spread(ratios),
                spread([r["cpu_pct"]["app"] for r in windows]),
                spread([r["cpu_pct"]["floor"] for r in windows])),
                flush=True)
        mid = sorted(windows, key=ratio_of)[(len(windows) - 1) // 2]  # the median window (lower middle)
        cpu = mid["cpu_pct"]
        # RSS: each process's median over the windows, not the median CPU window's reading (the
        # connected floor's RSS still grows in the first window, as its connection pages code in)
        rss = {k: statistics.median(w["rss_mb"][k] for w in windows) for k in mid["rss_mb"]}
        print("RESULT " + json.dumps(dict(
            bench="app_cost", figure="app CPU idle, " + case, via=mid["via"],
            peer="bare Textual app (floor)", floor=floor, ours_s=cpu["app"] / 100, peer_s=cpu["floor"] / 100,
            ratio=statistics.median(ratios), ratio_min=min(ratios), ratio_max=max(ratios),
            windows=len(windows), window_s=args.seconds, target=target, unit="cpu",
            rss_mb=rss["app"], floor_rss_mb=rss["floor"], rss_over_floor_mb=rss["app"] - rss["floor"],
            rss_over_asyncssh_floor_mb=rss["app"] - rss["floor+asyncssh"],
            # issue 38: the +8 MB target is over the connected floor (SSH connection + sqlite ledger)
            rss_over_connected_floor_mb=(rss["app"] - rss["floor+ssh+sqlite"]) if "floor+ssh+sqlite" in rss else None,
            others={k: {"cpu_pct": cpu[k], "rss_mb": rss[k]} for k in cpu if k not in ("app", "floor")})),
            flush=True)
    if args.json:
        json.dump(rows, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
