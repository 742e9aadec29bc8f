"""A fleet with canned, deterministic data for the zh layout test and snapshots: the real
FleetApp, FleetScreen, Fleet and FleetBox with a frozen clock; sessions never connect (the
data is handed to the same FleetBox listener calls a live session makes)."""

from remote_probe import wire
from tui.core.config import Config
from tui.core.fleet.rows import FleetHost
from tui.remote.fleet_pool import Fleet
from tui.ui.box_context import BoxContext
from tui.ui.fleet_app import FleetApp

from tests.support.snapshot_app import NOW, FakeSession

HOSTS = {"a100-train": ("a100", 2, 9.8), "h100-sweep": ("h100", 8, 62.0),
         "4090-forgot": ("idle", 1, 1.98), "cpu-prep": ("cpu", 0, 0.6), "deadbox": (None, 0, 4.5)}
RELEASED = {"host": "l40s-last-week", "start": NOW - 6 * 86400, "end": NOW - 6 * 86400 + 12 * 3600,
            "cost": 86.4, "rate": 7.2, "currency": "CNY", "ended_how": "released in the provider console",
            "checklist": '{"verdict": "warn"}', "gpu_model": "NVIDIA L40S"}
REFUSED = "Connection refused by %s: is sshd running and is the port right?"


def canned_fleet_app():
    hosts = {name: {"rate": rate, "currency": "CNY"} for name, (_k, _n, rate) in HOSTS.items()}
    hosts["l40s-last-week"] = {"rate": 7.2}
    config = Config({"defaults": {"idle_alarm_minutes": 1}, "hosts": hosts})
    fleet_hosts = [FleetHost(h) for h in HOSTS] + [FleetHost("l40s-last-week", True, RELEASED)]
    fleet = Fleet(fleet_hosts, config, ledger=None, clock=lambda: NOW, make_box=BoxContext)
    for host, session in fleet.sessions.items():
        fleet.sessions[host] = FakeSession(session.target)
    app = FleetApp(config=config, fleet=fleet)
    app.feed = lambda: feed(fleet)
    return app


def feed(fleet):
    from tui.core.i18n import _
    for box in fleet.boxes:
        kind, n, _rate = HOSTS.get(box.host, (None, 0, None))
        if box.fleet_host.released:
            continue
        if kind is None:
            box.on_state("failed", _(REFUSED) % box.host)
            continue
        name = {"a100": "NVIDIA A100-SXM4-80GB", "h100": "NVIDIA H100 80GB HBM3",
                "idle": "NVIDIA GeForce RTX 4090"}.get(kind)
        total = 24564 if kind == "idle" else 81920
        box.on_inventory({"type": "inventory", "backend": "sim", "driver": "550.54.15",
                          "gpus": [{"index": i, "name": name, "mem_total": total} for i in range(n)],
                          "host": {"ncpu": 32, "boot_id": "b-" + box.host,
                                   "instance_start": NOW - 3 * 3600 - 17 * 60}})
        procs = [] if kind in ("idle", "cpu") else [
            {"pid": 4100 + i, "gpu": i, "kind": "C", "gpu_mem": 61000, "cpu": 97.0, "rss": 4096,
             "host_pid": None, "local": True} for i in range(n)]
        for seq in range(1, 121):
            util = [0 if kind == "idle" else 60 + (7 * g + seq) % 38 for g in range(n)]
            box.on_sample({
                "type": "sample", "seq": seq, "t": NOW - 120 + seq,
                "gpus": [wire.gpu_row({"util": util[g], "mem_used": 300 if kind == "idle" else 61740})
                         for g in range(n)],
                "procs": [wire.proc_row(p) for p in procs],
                "host": {"cpu": 35.0, "mem_used": 64000, "mem_total": 257000}})
        box.on_autostop({"armed": kind == "h100"} if kind != "a100" else {"armed": True, "grace_left": 80})
        box.on_state("live")
