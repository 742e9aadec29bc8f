"""Doctor's interconnect, slices and filesystems (issue 22): verdict math, simulator topologies,
and NVML topology answers replayed through the real backend code."""

import glob
import json
import os

import pytest

from remote_probe.backends import topology
from remote_probe.backends.nvml import NvmlBackend
from remote_probe.backends.sim import SimBackend
from tui.core.config import HostConfig
from tui.core.model import GpuLive
from tui.core.checks.preflight import (FAIL, PASS, WARN, allreduce_gbps, bandwidth_verdict, check_filesystems,
                                       check_gpus, check_interconnect, check_net, link_verdict, pair_gbps,
                                       pcie_gbps, slice_verdict)
from tui.core.providers import resolve

from tests.support.nvml_replay import ReplayNvml
from tests.support import TESTS

DATA = os.path.join(TESTS, "data")


@pytest.mark.parametrize("kind, names, expect, verdict", [
    ("mig", ["NVIDIA H200 MIG 3g.71gb"], None, WARN),  # nothing said: a warning, not a fail
    ("mig", ["NVIDIA H200 MIG 3g.71gb"], "mig", PASS),
    ("mig", ["NVIDIA H200 MIG 3g.71gb"], "mig 3g.71gb", PASS),
    ("mig", ["NVIDIA H200 MIG 1g.18gb"], "mig 3g.71gb", FAIL),  # another profile than ordered
    ("mig", ["NVIDIA H200 MIG 3g.71gb"], "whole", FAIL),
    ("vgpu", [], "vgpu", PASS),
    ("vgpu", [], None, WARN),
    ("vgpu", [], "mig", FAIL),
])
def test_slice_verdict(kind, names, expect, verdict):
    assert slice_verdict(kind, names, expect) == verdict


def test_check_gpus_follows_expect():
    inv = {"gpus": [{"index": 0, "name": "NVIDIA H200", "mem_total": 143771, "mig_mode": 1,
                     "mig_devices": [{"name": "NVIDIA H200 MIG 3g.71gb"}]}]}
    (c,) = check_gpus(inv, None, "mig 3g.71gb")
    assert c.verdict == PASS and "as ordered" in c.reason
    (c,) = check_gpus(inv, None, None)
    assert c.verdict == WARN and 'expect = "mig"' in c.reason


@pytest.mark.parametrize("gen, width, gbps", [(3, 16, 15.76), (4, 16, 31.5), (5, 16, 63.0), (3, 4, 3.94),
                                              (None, 16, None), (4, None, None)])
def test_pcie_gbps(gen, width, gbps):
    assert pcie_gbps(gen, width) == (pytest.approx(gbps, rel=0.01) if gbps else None)


LINKS = {0: {"pcie_gen_max": 4, "pcie_width": 16}, 1: {"pcie_gen_max": 4, "pcie_width": 4}}


@pytest.mark.parametrize("pair, gbps", [
    ({"a": 0, "b": 1, "nvlinks": 4, "p2p": "ok"}, 100.0),
    ({"a": 0, "b": 1, "nvlinks": 0, "p2p": "ok"}, 7.876),  # the x4 side limits it
    ({"a": 0, "b": 1, "nvlinks": 0, "p2p": "not supported"}, 3.938),  # through host memory
])
def test_pair_gbps(pair, gbps):
    assert pair_gbps(pair, LINKS) == pytest.approx(gbps, rel=0.01)


def test_allreduce_expectation_is_the_slowest_ring_hop():
    t = topology.from_scenario({"topology": {"kind": "nvlink-pairs", "nvlinks": 4, "path": "SYS"}}, 4)
    links = {g["index"]: g for g in t["gpus"]}
    # ring 0-1 (NV4) 1-2 (SYS, no P2P) 2-3 (NV4) 3-0 (SYS): the SYS hop through host memory decides
    assert allreduce_gbps(t["pairs"], links, 4) == pytest.approx(31.5 / 2, rel=0.01)
    t = topology.from_scenario({"topology": {"kind": "nvswitch", "nvlinks": 18}}, 8)
    assert allreduce_gbps(t["pairs"], {g["index"]: g for g in t["gpus"]}, 8) == 450.0


@pytest.mark.parametrize("measured, expected, verdict", [
    (25.0, 31.5, PASS), (12.0, 31.5, WARN), (5.0, 31.5, FAIL), (None, 31.5, PASS), (10.0, None, PASS)])
def test_bandwidth_verdict(measured, expected, verdict):
    assert bandwidth_verdict(measured, expected)[0] == verdict


@pytest.mark.parametrize("link, busy, verdict, text", [
    ({"pcie_gen": 4, "pcie_gen_max": 4, "pcie_width": 16, "pcie_width_max": 16}, False, None, None),
    ({"pcie_gen": 3, "pcie_gen_max": 4, "pcie_width": 4, "pcie_width_max": 16}, False, FAIL, "x4 of x16"),
    ({"pcie_gen": 4, "pcie_gen_max": 4, "pcie_width": 8, "pcie_width_max": 16}, False, FAIL, "x8 of x16"),
    ({"pcie_gen": 4, "pcie_gen_max": 4, "pcie_width": 12, "pcie_width_max": 16}, False, WARN, "x12 of x16"),
    ({"pcie_gen": 1, "pcie_gen_max": 4, "pcie_width": 16, "pcie_width_max": 16}, False, WARN, "check again under load"),
    ({"pcie_gen": 3, "pcie_gen_max": 4, "pcie_width": 16, "pcie_width_max": 16}, True, WARN, "under load"),
    ({"pcie_gen": None, "pcie_gen_max": None, "pcie_width": None, "pcie_width_max": None}, False, None, None),
])
def test_link_verdict(link, busy, verdict, text):
    v = link_verdict(link, busy)
    if verdict is None:
        assert v is None
    else:
        assert v[0] == verdict and text in v[1]


def by_name(checks):
    return {c.name: c for c in checks}


@pytest.mark.parametrize("scenario, expect", [
    ("h100x8", {"GPU-to-GPU": (PASS, "NVSWITCH")}),
    ("pcie-degraded", {"PCIe GPU 2": (FAIL, "x4 of x16"), "GPU-to-GPU": (WARN, "6 pairs without P2P")}),
    ("nvlink-pairs", {"GPU-to-GPU": (WARN, "4 pairs without P2P (NV4: 0-1 2-3; SYS:")}),
    ("a100x2", {"GPU-to-GPU": (PASS, "PHB: 0-1")}),
])
def test_interconnect_on_simulator_scenarios(scenario, expect):
    b = SimBackend.from_name(scenario)
    try:
        checks = by_name(check_interconnect(b.topology()))
    finally:
        b.close()
    for name, (verdict, text) in expect.items():
        assert checks[name].verdict == verdict and text in checks[name].reason, checks[name]
    if scenario == "h100x8":
        assert not any(n.startswith("PCIe") for n in checks)  # every link as it should be


def test_measured_copies_against_the_link():
    t = topology.from_scenario({"topology": {"kind": "pcie", "pcie": [4, 16], "path": "PHB"}}, 2)
    link = {"idle": True, "h2d": [{"gpu": 0, "gbps": 24.8}, {"gpu": 1, "gbps": 3.1}],
            "d2d": [{"a": 0, "b": 1, "gbps": 4.0}], "allreduce": {"gpus": 2, "bytes": 1, "busbw_gbps": 20.0}}
    checks = by_name(check_interconnect(t, {"link": link}))
    assert checks["host→GPU 0 copy"].verdict == PASS and "79% of PCIe Gen4 x16" in checks["host→GPU 0 copy"].reason
    assert checks["host→GPU 1 copy"].verdict == FAIL
    assert checks["GPU 0→1 copy"].verdict == FAIL and "13% of the 32 GB/s" in checks["GPU 0→1 copy"].reason
    assert checks["all-reduce"].verdict == PASS and "63%" in checks["all-reduce"].reason
    busy = by_name(check_interconnect(t, {"link": {"idle": False}}))
    assert busy["copy bandwidth"].reason == "not measured: the GPUs are in use"


def _with_topology():
    """Constructed topology answers, and every real recording made since nvml_record.py records them."""
    paths = sorted(glob.glob(os.path.join(DATA, "nvmltopo_*.json")))
    for p in sorted(glob.glob(os.path.join(DATA, "nvml_*.json"))):
        with open(p) as f:
            if "topology" in json.load(f):
                paths.append(p)
    return paths


@pytest.mark.parametrize("path", _with_topology())
def test_replayed_nvml_topology(path):
    nv = ReplayNvml.load(path)
    with open(path) as f:
        want = json.load(f)["topology"]
    assert NvmlBackend(nv=nv).topology() == want


def test_replayed_topology_verdicts():
    t = NvmlBackend(nv=ReplayNvml.load(os.path.join(DATA, "nvmltopo_pcie_sys_x8.json"))).topology()
    checks = by_name(check_interconnect(t))
    assert checks["PCIe GPU 1"].verdict == FAIL and checks["GPU-to-GPU"].verdict == WARN
    t = NvmlBackend(nv=ReplayNvml.load(os.path.join(DATA, "nvmltopo_nvlink_bridge.json"))).topology()
    checks = by_name(check_interconnect(t, sample_gpus={0: GpuLive(util=0)}))
    assert checks["GPU-to-GPU"].verdict == PASS and "NV4: 0-1" in checks["GPU-to-GPU"].reason
    assert checks["PCIe GPU 0"].verdict == WARN and "check again under load" in checks["PCIe GPU 0"].reason


def test_single_gpu_recordings_have_no_pairs():
    t = NvmlBackend(nv=ReplayNvml.load(os.path.join(DATA, "nvml_h200_idle.json"))).topology()
    assert t["pairs"] == [] and t["gpus"][0]["nvlinks"] == 0


FS = [
    {"role": "home", "path": "/root", "mount": "/root", "fstype": "tmpfs", "total": 32768, "free": 30000},
    {"role": "cwd", "path": "/root/work", "mount": "/root", "fstype": "tmpfs", "total": 32768, "free": 30000},
    {"role": "data", "path": "/root/autodl-tmp", "mount": "/root/autodl-tmp", "fstype": "xfs",
     "total": 51200, "free": 2048},
    {"role": "data", "path": "/dev/shm", "mount": "/dev/shm", "fstype": "tmpfs", "total": 65536, "free": 65536},
]


def test_filesystems_of_home_cwd_and_data_dirs():
    checks = by_name(check_filesystems({"filesystems": FS}))
    assert checks["disk /root"].verdict == WARN and "in memory" in checks["disk /root"].reason
    assert "home (/root), working directory (/root/work)" in checks["disk /root"].reason
    assert checks["disk /root/autodl-tmp"].verdict == WARN and "2 GB free of 50" in checks["disk /root/autodl-tmp"].reason
    assert checks["disk /dev/shm"].verdict == PASS  # a data tmpfs is what /dev/shm is for


@pytest.mark.parametrize("provider, files, pip_index, host, hint", [
    ("autodl", ["/etc/network_turbo"], None, "huggingface.co", "source /etc/network_turbo"),
    ("autodl", ["/etc/network_turbo"], None, "pypi.org", "mirrors.aliyun.com"),
    ("runpod", [], None, "huggingface.co", "hf-mirror.com"),
    ("runpod", [], "https://mirrors.example/simple", "pypi.org", "already uses https://mirrors.example"),
    ("runpod", [], None, "pypi.org", "configure a pip mirror"),
])
def test_network_hints_per_provider(provider, files, pip_index, host, hint):
    facts = {"net": [{"url": "https://%s/x" % host, "ok": False, "error": "timed out"}],
             "network_files": files, "pip_index": pip_index}
    (c,) = check_net(facts, resolve({}, HostConfig(provider=provider)))
    assert c.verdict == WARN and hint in c.reason


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish", "dash"])
def test_the_hf_mirror_hint_pastes_into_each_shell(shell):
    """The hint's command, pasted as printed, reaches python's environment (a bare
    `HF_ENDPOINT=...` line set an unexported variable in bash and was an error in fish)."""
    import re
    import shutil
    import subprocess
    import sys
    from tui.core.checks.preflight import net_hint
    if shutil.which(shell) is None:
        pytest.skip("%s not installed" % shell)
    command = re.search(r"`([^`]+)`", net_hint("huggingface.co", {}, None)).group(1)
    out = subprocess.run([shell, "-c", "%s\n%s -c 'import os; print(os.environ[\"HF_ENDPOINT\"])'"
                          % (command, sys.executable)], capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "https://hf-mirror.com", out.stderr
