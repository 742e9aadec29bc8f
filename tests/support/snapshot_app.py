"""A dashboard with canned, deterministic data for snapshot tests: the real app and widgets,
a frozen clock and a session that never connects (the data is handed to the same listener a
live session feeds)."""

import json
import math
import os

from remote_probe import wire
from tests.support import DATA
from tui.core.config import Config
from tui.remote import ssh
from tui.remote.probe.client import ProbeError
from tui.ui.app import GputuiApp, _AppListener

NOW = 1_764_500_000.0  # a fixed wall clock

CHECKLIST_FACTS = {
    "artifacts": {"files": [
        {"path": "/root/autodl-tmp/ckpt/epoch_089.pt", "size": 2 << 30, "mtime": NOW - 300},
        {"path": "/root/autodl-tmp/logs/train.log", "size": 5 << 20, "mtime": NOW - 60}]},
    "git": {"repos": [{"path": "/root/code/vit", "state": "ok", "dirty": 2, "unpushed": 1,
                       "dirty_files": ["train.py", "config.yaml"]}]},
    "temp": [{"path": "/root/.cache/pip", "size": 3 << 30, "on_disk": 3 << 30, "kind": "cache"}],
}
TMUX = {"sessions": [{"id": "$1", "name": "train vit-l16", "attached": False, "created": NOW - 900,
                      "windows": [{"id": "@1", "index": 0, "name": "python", "panes": [
                          {"id": "%1", "pid": 4100, "command": "python", "path": "/root/code/vit",
                           "dead": False, "running": True, "active": True,
                           "started": NOW - 900}]}]}]}


class FakeSession:
    state = "connecting"
    next_attempt_at = None
    attempt = 0
    transport_name = "exec"
    transport_label = "exec"
    notices = ()
    client = None

    def __init__(self, target):
        self.target = target

    async def run(self):
        return None

    async def close(self, stop_daemon=False):
        return None

    def retry_now(self):
        pass

    async def request(self, kind, **params):
        """Canned answers for the screens that ask the box."""
        if kind == wire.PREFLIGHT:
            with open(os.path.join(DATA, "preflight_h200.json")) as f:
                return {"facts": json.load(f)}
        if kind == wire.CHECKLIST:
            return {"facts": CHECKLIST_FACTS}
        if kind == wire.TMUX_CAPTURE:
            return {"text": "epoch 3/90  loss 0.61  lr 3e-4\nepoch 4/90  loss 0.52  lr 3e-4\n"}
        if kind == wire.TMUX_LIST:
            return {"tmux": TMUX}
        raise ProbeError("not connected to the box (snapshot)")


def canned_app(gpus=2, language=None, clock=None):
    """The real app on a session that never connects, with a frozen clock (or `clock`, the
    bench's stepped one); `app.feed()` hands it the canned box. bench/frame_work.py builds
    its app here too and feeds its own, moving box."""
    target = ssh.Target.parse("snapbox")
    config = Config({"hosts": {"snapbox": {"rate": 11.96, "currency": "CNY", "provider": "autodl",
                                           "budget_session": 50.0}}})
    app = GputuiApp(target, host_label="snapbox", config=config, ledger=None,
                    session=FakeSession(target))
    app._preflight_started = True  # no background preflight toast in the picture
    app.box.billing.clock = app.box.state.clock = clock or (lambda: NOW)
    app.feed = lambda: feed(app, gpus)
    return app


def _canned_parent(i):
    """The tree view's shape: rank 0 spawned the others, and rank 5 is a child of rank 1."""
    return 1 if i == 0 else (4101 if i == 5 else 4100)


def feed(app, gpus):
    listener = _AppListener(app)
    listener.on_inventory({"type": "inventory", "backend": "sim", "driver": "550.54.15",
                           "cuda_driver": "12.4",
                           "gpus": [{"index": i, "name": "NVIDIA A100-SXM4-80GB", "mem_total": 81920,
                                     "power_limit": 400} for i in range(gpus)],
                           "host": {"ncpu": 32, "boot_id": "snap", "instance_start": NOW - 3723,
                                    "provider": {"env": {"AutoDLContainerUUID": "x"}}}})
    procs = [{"pid": 4100 + i, "gpu": i % gpus, "kind": "C", "gpu_mem": 20000 + 1000 * i,
              "cpu": 95.0 - i, "rss": 4096 + i, "host_pid": None, "local": True,
              "ppid": _canned_parent(i)} for i in range(gpus * 3)]
    listener.on_proc_meta([{"pid": p["pid"], "user": "root", "start": NOW - 600 - 60 * i,
                            "cmd": "/opt/conda/bin/python train.py --model vit_l16 --bs 256 --rank %d" % i}
                           for i, p in enumerate(procs)])
    for seq in range(1, 121):
        util = [int(50 + 45 * math.sin(seq / 9.0 + g)) for g in range(gpus)]
        listener.on_sample({
            "type": "sample", "seq": seq, "t": NOW - 120 + seq,
            "gpus": [wire.gpu_row({"util": util[g], "mem_util": util[g] // 2, "mem_used": 61740,
                                   "temp": 60 + g, "power": 300, "clock_sm": 1410, "clock_mem": 1593,
                                   "pstate": 0, "throttle": 0, "ecc_errors": 0}) for g in range(gpus)],
            "procs": [wire.proc_row(p) for p in procs],
            "host": {"cpu": 35.0, "iowait": 1.0, "load": [2.0, 1.5, 1.0], "mem_used": 64000,
                     "mem_total": 257000, "cores": [35] * 8,
                     "disks": [{"mount": "/", "free": 40960, "total": 102400}]}})
    listener.on_jobs({"tmux": TMUX, "unprotected": []})
    listener.on_state("live")
    listener.on_latency(12.0)
