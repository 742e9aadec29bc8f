"""The demo's probe on a laptop without /proc (macOS, issue 23): with the proc root pointed at
an empty directory the simulator's box still samples, host figures read "not available"
(None, never a made-up 0 % or 0 MiB), and its jobs keep the command line and start the
simulator itself knows, instead of "host pid, not visible in this container"."""

import json
import os
import subprocess
import sys

from remote_probe import wire

from tests.support.sshd import REPO

PROGRAM = r"""
import json, sys, tempfile, time
from remote_probe import procfs, wire
from remote_probe.backends.sim import SimBackend, load_scenario
from remote_probe.sampler import Sampler
backend = SimBackend(dict(load_scenario("a100x2"), name="a100x2"), state_dir=tempfile.mkdtemp())
try:
    sampler = Sampler(backend)
    inventory = sampler.inventory()
    sampler.tick()
    time.sleep(0.3)
    sample = sampler.tick()
    meta = sampler.proc_meta(wire.proc_pids(sample))
finally:
    backend.close()
print(json.dumps({"available": procfs.proc_available(), "inventory": inventory,
                  "sample": sample, "meta": meta}))
"""


def run_probe(proc_root=None):
    env = dict(os.environ)
    env.pop("GPUTUI_PROC_ROOT", None)
    if proc_root is not None:
        env["GPUTUI_PROC_ROOT"] = str(proc_root)
    done = subprocess.run([sys.executable, "-c", PROGRAM], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_without_proc_the_sim_box_samples_with_clear_values(tmp_path):
    empty = tmp_path / "no-proc"
    empty.mkdir()
    out = run_probe(empty)
    assert out["available"] is False
    host = out["sample"]["host"]
    for key in ("cpu", "iowait", "mem_total", "mem_used", "swap_total", "rx_bps", "tx_bps"):
        assert host[key] is None, key
    assert host["load"] == [None, None, None] and host["cores"] == []
    facts = out["inventory"]["host"]
    assert facts["boot_id"] is None and facts["instance_start"] is None and facts["ncpu"]
    assert len(out["sample"]["gpus"]) == 2  # the simulated GPUs play on
    rows = [wire.proc_dict(r) for r in out["sample"]["procs"]]
    assert len(rows) == 2 and all(r["local"] == 1 for r in rows)  # not "host pids"
    assert all(r["cpu"] is None and r["rss"] is None for r in rows)
    cmds = sorted(m["cmd"] for m in out["meta"])
    assert cmds[0].startswith("python finetune.py") and cmds[1].startswith("python train.py")
    assert all(m["start"] and m["user"] for m in out["meta"])
    # the laptop's reading of it: not available, never a crash
    cleaned = wire.clean(wire.validate(dict(out["sample"], seq=1)), wire.Report())
    assert cleaned["host"]["mem_total"] is None


def test_with_proc_the_same_program_reads_real_figures():
    out = run_probe()
    assert out["available"] is True
    host = out["sample"]["host"]
    assert host["mem_total"] > 0 and host["cpu"] is not None and host["cores"]
    assert all(r[wire.ProcCol.RSS] is not None for r in out["sample"]["procs"])
