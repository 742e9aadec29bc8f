"""nvidia-smi CSV backend against output captured on a real H200 (bench/gpu_check.sh)."""

import os

import pytest

from remote_probe.backends import BackendError
from remote_probe.backends.smi import STATIC, SmiBackend, na
from tests.support import TESTS

CAPTURE = os.path.join(TESTS, "data", "smi", "h200_busy.txt")


def sections():
    out, name = {}, None
    for line in open(CAPTURE).read().splitlines():
        if line.startswith("# "):
            name = line[2:]
            out[name] = []
        elif name:
            out[name].append(line)
    return {k: "\n".join(v) + "\n" for k, v in out.items()}


def fake_smi(old_driver=False):
    s = sections()
    calls = []

    def run(args):
        calls.append(args)
        q = args[0]
        if q.startswith("--query-compute-apps"):
            return s["apps"]
        if q == "--query-gpu=driver_version":
            return s["driver"]
        if q == "--query-gpu=" + ",".join(STATIC):
            return s["static"]
        if old_driver and "clocks_event_reasons" in q:
            raise BackendError('nvidia-smi failed: Field "clocks_event_reasons.active" is not a valid field')
        return s["dynamic"]
    return run, calls


def test_parses_real_h200_output():
    run, _ = fake_smi()
    b = SmiBackend(run=run)
    inv = b.inventory()
    assert inv["driver"] == "580.159.04"
    g = inv["gpus"][0]
    assert (g["name"], g["mem_total"], g["power_limit"], g["mig_mode"]) == ("NVIDIA H200", 143771, 700, 0)
    gpus, procs = b.sample()
    assert gpus[0]["util"] == 100
    assert gpus[0]["fan"] is None  # "[N/A]"
    assert gpus[0]["pstate"] == 0
    assert gpus[0]["throttle"] == 4
    assert procs == [{"pid": 452, "gpu": 0, "kind": "C", "gpu_mem": 21482}]


def test_old_driver_field_name_is_retried_once():
    run, calls = fake_smi(old_driver=True)
    b = SmiBackend(run=run)
    b.sample()
    assert any("clocks_throttle_reasons.active" in c[0] for c in calls)


@pytest.mark.parametrize("raw", ["[N/A]", "[Not Supported]", "N/A", "", "[Unknown Error]"])
def test_not_available_markers(raw):
    assert na(raw) is None
