"""End to end through a real OpenSSH sshd: deploy, daemon, snapshot."""

import asyncio
import json
import os
import subprocess
import sys

import pytest

from remote_probe import protocol
from tui import session as session_mod, ssh
from tui.probe_bundle import build_probe, probe_filename

from .conftest import stop_daemon


def target(box):
    return ssh.Target.parse("testbox", ssh_config=box.ssh_config)


async def test_snapshot_deploys_probe_and_reads_simulated_gpus(sshbox):
    reply = await session_mod.snapshot(target(sshbox), simulate="a100x2",
                                       remote_dir=sshbox.remote_dir)
    inv = reply["inventory"]
    assert [g["name"] for g in inv["gpus"]] == ["NVIDIA A100-SXM4-80GB"] * 2
    assert inv["backend"] == "sim"
    sample = reply["sample"]
    assert len(sample["gpus"]) == 2
    # The simulated processes are real: their rows join with real /proc facts.
    meta = {m["pid"]: m for m in reply["proc_meta"]}
    procs = [protocol.proc_dict(r) for r in sample["procs"]]
    assert len(procs) == 2
    for p in procs:
        assert p["local"] == 1
        assert os.path.exists("/proc/%d" % p["pid"])
        assert "train.py" in meta[p["pid"]]["cmd"] or "finetune.py" in meta[p["pid"]]["cmd"]
        assert meta[p["pid"]]["user"]
    _, sha = build_probe()
    assert os.path.exists(os.path.join(sshbox.remote_dir, probe_filename(sha)))
