"""The idle dashboard's own frame work, counted instead of timed (issue 25).

    python bench/frame_work.py [--samples 60] [--gpus 8] [--sizes 120x40,200x60] [--memory]

Wall-clock CPU % on a shared machine is noise; this counts the work. The real app (its
widgets, screens and Textual's compositor) runs headless at a fixed size and is fed a
deterministic box modelled on the simulator's h100x8 scenario (8 GPUs at a steady 88 %,
64 processes started with the daemon, host figures that move every second), one sample
at a time, with the clocks stepped one second per sample. For each sample it counts:

  calls      Python function calls (cProfile), minus those of an empty pause
  lines      widget lines composed again (StylesCache.render_line)
  filtered   strips passed through a line filter (ANSIToTruecolor & co)
  wraps      Content._wrap_and_format (a Static's text, or a panel line too long for
             one row, wrapped again)
  formatted  text lines turned into strips again (a Static: all its lines; a LinePanel:
             the changed ones, through Textual's Content or tui.ui.widgets.line_strips)
  bytes      what the frame would write to the terminal
  cpu ms     process CPU time under the profiler (noisy; for orientation only)

Beside it, in the same run, the peer: a bare Textual app (asyncssh imported) with one
screen-filling Static re-drawn per sample and a Footer, i.e. the floor bench/app_cost.py
runs, sized to fill the screen. The ratio app/peer is the figure to compare before/after.
--memory adds RSS and tracemalloc of each, after 120 samples, each in a fresh process."""

import argparse
import asyncio
import cProfile
import json
import math
import os
import pstats
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

T0 = 1_764_500_000.0  # the box's wall clock at the first sample (snapshot_app.NOW; not imported
# here: the memory child imports this module for the peer too)


# -- the box -------------------------------------------------------------------------
def scenario_box(gpus):
    """Inventory, process facts and a sample generator for `gpus` GPUs of h100x8's kind."""
    from remote_probe import wire as protocol
    from remote_probe.backends.sim import load_scenario, utilization
    sc = load_scenario("h100x8")
    spec = sc["gpus"][0]
    inventory = {"type": "inventory", "backend": "sim", "driver": sc["driver"],
                 "cuda_driver": sc["cuda_driver"],
                 "gpus": [{"index": i, "name": spec["name"], "mem_total": spec["mem_total"],
                           "power_limit": spec["power_limit"], "clock_sm_max": spec["clock_sm_max"],
                           "clock_mem_max": spec["clock_mem_max"], "mig_mode": 0, "virt_mode": "none",
                           "mig_devices": []} for i in range(gpus)],
                 "host": {"ncpu": 32, "boot_id": "bench", "instance_start": T0 - 3600,
                          "provider": {"env": {"AutoDLContainerUUID": "x"}}}}
    procs = [{"pid": 5000 + i, "gpu": i % gpus, "kind": "C", "gpu_mem": 9000, "cpu": 0.0,
              "rss": 11.5, "local": True} for i in range(gpus * 8)]
    metas = [{"pid": p["pid"], "user": "root", "start": T0 - 5,
              "cmd": "/usr/bin/python3 worker.py --rank %d" % p["gpu"]} for p in procs]

    def wave(seed, t):  # the simulator's smooth noise
        return math.sin(t * 0.37 + seed * 1.7) * 0.6 + math.sin(t * 1.3 + seed * 0.3) * 0.4

    def sample(seq):
        t = float(seq)
        rows = []
        for i in range(gpus):
            util = utilization(spec["load"], t, seed=i)
            busy = util / 100.0
            rows.append(protocol.gpu_row({
                "util": util, "mem_util": int(util * 0.45), "mem_used": 8 * 9000 + 500,
                "temp": int(34 + busy * 38 + wave(i + 7, t)),
                "power": int(spec["power_limit"] * (0.15 + 0.8 * busy)),
                "clock_sm": spec["clock_sm_max"], "clock_mem": spec["clock_mem_max"], "pstate": 0,
                "fan": None, "throttle": 0, "ecc_errors": 0}))
        host = {"cpu": round(4 + 3 * wave(1, t), 1), "iowait": round(abs(wave(2, t)), 1),
                "load": [round(1.2 + wave(3, t) / 4, 2), 1.1, 1.0],
                "mem_used": int(64000 + 200 * wave(4, t)), "mem_total": 257000,
                "swap_used": 0, "swap_total": 0,
                "cores": [max(0, int(5 + 4 * wave(10 + c, t))) for c in range(32)],
                "rx_bps": int(12000 + 3000 * wave(5, t)), "tx_bps": int(8000 + 2000 * wave(6, t))}
        if seq % 10 == 1:  # the daemon re-reads disks every few samples
            host["disks"] = [{"mount": "/", "free": 40960, "total": 102400, "used": 61440},
                             {"mount": "/root/autodl-tmp", "free": 500000, "total": 1000000,
                              "used": 500000}]
        return {"type": "sample", "seq": seq, "t": T0 + t, "gpus": rows,
                "procs": [protocol.proc_row(p) for p in procs], "host": host}

    return inventory, metas, sample


class Clock:
    def __init__(self):
        self.now = T0

    def __call__(self):
        return self.now


def gputui_app(gpus):
    """The real app, built as the snapshot tests build it (tests/support/snapshot_app.py:
    a session that never connects, the same config) and fed through the listener a live
    session feeds, with this bench's moving box. Returns (app, feed(seq))."""
    from tests.support.snapshot_app import canned_app
    from tui.ui.app import _AppListener
    clock = Clock()
    app = canned_app(gpus, clock=clock)
    # The 1 s tick repaints nothing while samples arrive each second (it checks last_refresh
    # against the monotonic clock); off, so what is counted depends on the data alone.
    app.tick = lambda: None
    inventory, metas, sample = scenario_box(gpus)
    listener = _AppListener(app)
    listener.on_inventory(inventory)
    listener.on_proc_meta(metas)
    listener.on_jobs({"tmux": {"sessions": []}, "unprotected": []})
    listener.on_state("live")
    listener.on_latency(12.0)

    messages = {}  # samples built before they are measured: building them is the box's work

    def feed(seq):
        clock.now = T0 + seq + 0.3
        if seq % 5 == 0:
            listener.on_latency(12.0 + seq % 3)
        listener.on_sample(messages.pop(seq, None) or sample(seq))

    feed.prepare = lambda seqs: messages.update((seq, sample(seq)) for seq in seqs)
    return app, feed


def peer_app(size):
    """The floor: asyncssh imported, one Static filling the screen, re-drawn each sample."""
    import asyncssh  # noqa: F401 - the SSH library any such app carries
    from textual.app import App
    from textual.widgets import Footer, Static

    width, height = size

    class Floor(App):
        CSS = "#s { height: 1fr; }"

        def compose(self):
            yield Static(id="s")
            yield Footer()

    app = Floor()
    texts = {}

    def text(seq):
        line = ("%s  sample %d  " % (time.ctime(T0 + seq), seq)) * (width // 30 + 1)
        return "\n".join(line[i % 7:][:width] for i in range(height - 1))

    def feed(seq):
        app.query_one("#s", Static).update(texts.pop(seq, None) or text(seq))

    feed.prepare = lambda seqs: texts.update((seq, text(seq)) for seq in seqs)
    return app, feed


# -- counting ------------------------------------------------------------------------
class Counters:
    """Counts calls into the parts of Textual that do per-line work."""

    def __init__(self):
        self.n = {"lines": 0, "filtered": 0, "wraps": 0, "formatted": 0, "bytes": 0}
        self._undo = []

    def _wrap(self, owner, name, key):
        original = getattr(owner, name)
        counts = self.n

        def counted(*args, **kwargs):
            counts[key] += 1
            return original(*args, **kwargs)

        setattr(owner, name, counted)
        self._undo.append((owner, name, original))

    def install(self, app):
        from textual import filter as tfilter
        from textual._styles_cache import StylesCache
        from textual.content import Content
        self._wrap(StylesCache, "render_line", "lines")
        for cls in (tfilter.ANSIToTruecolor, tfilter.DimFilter, tfilter.Monochrome, tfilter.NoColor):
            self._wrap(cls, "apply", "filtered")
        self._wrap(Content, "_wrap_and_format", "wraps")
        from textual.content import _FormattedLine

        from tui.ui.widgets.line_strips import LineDrawer
        self._wrap(_FormattedLine, "to_strip", "formatted")
        self._wrap(LineDrawer, "draw", "formatted")  # the panels' lines that fit, drawn directly
        self.install_output(app, self.n)

    @staticmethod
    def install_output(app, counts):
        """Headless Textual skips turning the frame into terminal bytes: do it here, so the
        bench pays (and counts) what a terminal costs."""
        from textual._compositor import CompositorUpdate
        display = type(app)._display

        def _display(screen, renderable):
            display(app, screen, renderable)
            if isinstance(renderable, CompositorUpdate):
                out = renderable.render_segments(app.console)
                if counts is not None:
                    counts["bytes"] += len(out.encode("utf-8"))

        app._display = _display

    def uninstall(self):
        for owner, name, original in reversed(self._undo):
            setattr(owner, name, original)
        self._undo.clear()


async def drive(make, size, samples, warm=20, mode="count"):
    """Run one app at `size`: `warm` samples unmeasured, then `samples` measured ones."""
    app, feed = make()
    counters = Counters() if mode == "count" else None
    if mode != "count":
        Counters.install_output(app, None)
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.2)
        for seq in range(1, warm + 1):
            feed(seq)
            await pilot.pause()
        await pilot.pause(0.2)
        feed.prepare(range(warm + 1, warm + samples + 1))
        if mode == "count":
            counters.install(app)
            for seq in range(warm + 1, warm + samples + 1):
                feed(seq)
                await pilot.pause()
            counters.uninstall()
            out = {k: v / samples for k, v in counters.n.items()}
        elif mode == "phases":
            out = await phase_calls(app, feed, pilot, range(warm + 1, warm + samples + 1))
        else:
            prof = cProfile.Profile()
            idle = cProfile.Profile()
            idle.enable()  # what a pause costs with nothing to do (the pilot's own calls)
            for _ in range(samples):
                await pilot.pause()
            idle.disable()
            c0 = time.process_time()
            prof.enable()
            for seq in range(warm + 1, warm + samples + 1):
                feed(seq)
                await pilot.pause()
            prof.disable()
            cpu = time.process_time() - c0
            busy, empty = pstats.Stats(prof), pstats.Stats(idle)
            out = {"calls": (busy.total_calls - empty.total_calls) / samples,
                   "cpu_ms": 1000 * cpu / samples, "stats": busy}
        await app.action_quit()
    return out


async def phase_calls(app, feed, pilot, seqs):
    """Python calls per sample by phase: reading the sample into the model, the screen's
    refresh (widgets building what they show), Textual's frame (compositor, lines, filters,
    terminal bytes) and the rest (message pump, pilot)."""
    from textual.screen import Screen

    from tui.core.state import DashboardState
    from tui.ui.screens.dashboard import DashboardScreen
    counts = {"model": 0, "view": 0, "frame": 0, "other": 0}
    phase = ["other"]

    def counter(_frame, event, _arg):
        if event == "call" or event == "c_call":
            counts[phase[0]] += 1

    undo = []
    for owner, name, label in ((DashboardState, "add_sample", "model"), (DashboardScreen, "refresh_view", "view"),
                               (Screen, "_compositor_refresh", "frame")):
        original = getattr(owner, name)

        def wrapped(*args, _original=original, _label=label, **kwargs):
            outer, phase[0] = phase[0], _label
            try:
                return _original(*args, **kwargs)
            finally:
                phase[0] = outer

        setattr(owner, name, wrapped)
        undo.append((owner, name, original))
    n = 0
    try:
        sys.setprofile(counter)
        for seq in seqs:
            feed(seq)
            await pilot.pause()
            n += 1
    finally:
        sys.setprofile(None)
        for owner, name, original in undo:
            setattr(owner, name, original)
    return {k: v / n for k, v in counts.items()}


def top_functions(stats, samples, n=12):
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:n]  # by own time
    return ["    %8.0f calls %6.2f ms  %s:%d %s" % (v[1] / samples, 1000 * v[2] / samples,
                                                    os.path.relpath(k[0], REPO) if k[0].startswith(REPO)
                                                    else k[0].split("site-packages/")[-1], k[1], k[2])
            for k, v in rows]


def measure(gpus, size, samples, profile_top=0):
    counts_app = asyncio.run(drive(lambda: gputui_app(gpus), size, samples))
    counts_peer = asyncio.run(drive(lambda: peer_app(size), size, samples))
    prof_app = asyncio.run(drive(lambda: gputui_app(gpus), size, samples, mode="profile"))
    prof_peer = asyncio.run(drive(lambda: peer_app(size), size, samples, mode="profile"))
    prof_app["phases"] = asyncio.run(drive(lambda: gputui_app(gpus), size, samples, mode="phases"))
    return counts_app, counts_peer, prof_app, prof_peer


# -- memory --------------------------------------------------------------------------
MEMORY_CHILD = r"""
import asyncio, gc, json, sys, tracemalloc
sys.path.insert(0, sys.argv[1])
which, gpus, width, height = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
trace = sys.argv[7] == "trace"
if trace:
    tracemalloc.start(1)
import frame_work
def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
async def main():
    if which == "app":
        app, feed = frame_work.gputui_app(gpus)
    else:
        app, feed = frame_work.peer_app((width, height))
    frame_work.Counters.install_output(app, None)
    async with app.run_test(size=(width, height)) as pilot:
        for seq in range(1, 121):
            feed(seq)
            await pilot.pause()
        gc.collect()
        top = {}
        for stat in (tracemalloc.take_snapshot().statistics("filename") if trace else ()):
            name = stat.traceback[0].filename
            name = name.split("site-packages/")[-1] if "site-packages/" in name else name.replace(sys.argv[6], "")
            top[name] = stat.size
        mods = sorted(m for m in sys.modules if m.split(".")[0] in ("tui", "remote_probe"))
        print(json.dumps({"rss_mb": rss_mb(), "traced_mb": sum(top.values()) / 2**20,
                          "top": sorted(top.items(), key=lambda kv: -kv[1])[:15],
                          "modules": len(sys.modules), "own_modules": mods}))
        await app.action_quit()
asyncio.run(main())
"""


def memory(gpus, size):
    out = {}
    for which in ("app", "peer"):
        runs = []
        for mode in ("rss", "trace"):  # RSS without tracemalloc's own overhead
            r = subprocess.run([sys.executable, "-c", MEMORY_CHILD, HERE, which, str(gpus), str(size[0]),
                                str(size[1]), REPO + "/", mode], stdout=subprocess.PIPE, text=True,
                               check=True, env=dict(os.environ, PYTHONPATH=REPO))
            runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
        out[which] = dict(runs[1], rss_mb=runs[0]["rss_mb"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=60)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--sizes", default="120x40,200x60")
    ap.add_argument("--top", type=int, default=0, help="show the N functions with most own time")
    ap.add_argument("--memory", action="store_true", help="also RSS/tracemalloc after 120 samples")
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args()
    sizes = [tuple(int(x) for x in s.split("x")) for s in args.sizes.split(",")]
    report = {}
    for size in sizes:
        ca, cp, pa, pp = measure(args.gpus, size, args.samples)
        label = "%d GPUs %dx%d" % (args.gpus, size[0], size[1])
        print("%s, per sample (app | peer | app/peer):" % label)
        for key, a, p in (("calls", pa["calls"], pp["calls"]), ("lines", ca["lines"], cp["lines"]),
                          ("filtered", ca["filtered"], cp["filtered"]), ("wraps", ca["wraps"], cp["wraps"]),
                          ("formatted", ca["formatted"], cp["formatted"]),
                          ("bytes", ca["bytes"], cp["bytes"]), ("cpu ms", pa["cpu_ms"], pp["cpu_ms"])):
            print("  %-9s %10.1f | %10.1f | %5.2fx" % (key, a, p, a / p if p else float("nan")))
        print("  app calls by phase: " + ", ".join("%s %.0f" % kv for kv in pa["phases"].items()))
        if args.top:
            print("  app, most own time per sample:")
            print("\n".join(top_functions(pa["stats"], args.samples, args.top)))
        report[label] = {"app": dict(ca, calls=pa["calls"], cpu_ms=pa["cpu_ms"], phases=pa["phases"]),
                         "peer": dict(cp, calls=pp["calls"], cpu_ms=pp["cpu_ms"])}
        sys.stdout.flush()
    if args.memory:
        m = memory(args.gpus, sizes[0])
        print("memory after 120 samples at %dx%d: app RSS %.1f MB, peer RSS %.1f MB (+%.1f MB); "
              "traced app %.1f MB, peer %.1f MB" % (
                  sizes[0] + (m["app"]["rss_mb"], m["peer"]["rss_mb"],
                              m["app"]["rss_mb"] - m["peer"]["rss_mb"],
                              m["app"]["traced_mb"], m["peer"]["traced_mb"])))
        peer_top = dict(m["peer"]["top"])
        for name, size_b in m["app"]["top"]:
            print("    %7.0f kB (peer %7.0f kB)  %s" % (size_b / 1024, peer_top.get(name, 0) / 1024, name))
        print("  modules loaded: app %d, peer %d; own: %s" % (
            m["app"]["modules"], m["peer"]["modules"], " ".join(m["app"]["own_modules"])))
        report["memory"] = m
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
