"""Preflight verdicts from recorded facts (table-driven)."""

import copy
import json
import os

import pytest

from tui.core.config import HostConfig
from tui.core.checks.preflight import FAIL, PASS, WARN, exit_code, run_checks, spec_for, worst
from tui.core.providers import PRESETS
from tests.support import TESTS

DATA = os.path.join(TESTS, "data")


def h200_inventory():
    with open(os.path.join(DATA, "nvml_h200_idle.json")) as f:
        inv = json.load(f)["inventory"]
    return inv


GOOD = {
    "inventory": None,  # filled below
    "torch": {"python_path": "/opt/conda/bin/python", "torch": "2.5.1+cu124", "torch_cuda": "12.4",
              "cuda_available": True, "device_count": 1, "cuda_visible_devices": None,
              "smoke": [{"index": 0, "name": "NVIDIA H200", "dtype": "bfloat16", "n": 8192, "tflops": 760.0}]},
    "ncpu": 16, "cpu_limit": None, "mem_total": 128 * 1024,
    "disks": [{"mount": "/", "free": 200 * 1024, "total": 500 * 1024, "used": 0}],
    "net": [{"url": "https://pypi.org/simple/pip/", "ok": True, "ms": 80},
            {"url": "https://huggingface.co/api/models?limit=1", "ok": True, "ms": 120}],
    "tmux": True, "conda_pythons": [],
}


def facts(**changes):
    f = copy.deepcopy(GOOD)
    f["inventory"] = h200_inventory()
    for path, value in changes.items():
        target = f
        keys = path.split("__")
        for k in keys[:-1]:
            target = target[k]
        target[keys[-1]] = value
    return f


def verdict_of(checks, name):
    return [(c.verdict, c.reason) for c in checks if c.name.startswith(name)]


def test_a_good_h200_box_passes():
    checks = run_checks(facts(), HostConfig(gpus=1))
    assert worst(checks) == PASS, [(c.name, c.verdict, c.reason) for c in checks]
    assert exit_code(checks) == 0
    assert "a whole card" in verdict_of(checks, "GPU 0")[0][1]
    assert "77% of the NVIDIA H200 spec" in verdict_of(checks, "matmul GPU 0")[0][1]


CASES = [
    ("slice card: MIG", dict(inventory__gpus=[dict(h200_inventory()["gpus"][0], mig_mode=1,
                                                   mig_devices=[{"name": "NVIDIA H200 MIG 3g.71gb"}])]),
     "GPU 0", WARN, "set expect = \"mig\""),  # issue 22: nothing says what was ordered -> warn
    ("slice card: VRAM", dict(inventory__gpus=[dict(h200_inventory()["gpus"][0], mem_total=71000)]),
     "GPU 0", FAIL, "a slice or a smaller variant"),
    ("vGPU", dict(inventory__gpus=[dict(h200_inventory()["gpus"][0], virt_mode="vgpu")]),
     "GPU 0", WARN, "vGPU"),
    ("+cpu torch", dict(torch__torch="2.5.1+cpu", torch__torch_cuda=None, torch__cuda_available=False),
     "torch build", FAIL, "CPU-only build"),
    ("CUDA newer than driver (major)", dict(torch__torch_cuda="14.0"), "CUDA vs driver", FAIL,
     "get a newer driver"),
    ("CUDA newer than driver (minor)", dict(torch__torch_cuda="13.2"), "CUDA vs driver", WARN,
     "minor-version compatibility"),
    ("empty CUDA_VISIBLE_DEVICES", dict(torch__cuda_visible_devices=""), "CUDA_VISIBLE_DEVICES", FAIL,
     "CUDA sees no GPU"),
    ("missing device in CUDA_VISIBLE_DEVICES", dict(torch__cuda_visible_devices="0,3"),
     "CUDA_VISIBLE_DEVICES", FAIL, "do not exist here (3)"),
    ("starved CPU", dict(ncpu=4), "CPU cores per GPU", WARN, "4.0 cores per GPU"),
    ("little RAM", dict(mem_total=32 * 1024), "RAM per GPU", WARN, "32 GB per GPU"),
    ("slow card", dict(torch__smoke=[{"index": 0, "name": "NVIDIA H200", "dtype": "bfloat16", "n": 8192,
                                      "tflops": 150.0}]), "matmul GPU 0", FAIL, "power-capped"),
    ("no internet to HF", dict(net=[{"url": "https://huggingface.co/api", "ok": False,
                                     "error": "timed out"}]), "reach huggingface.co", WARN, "hf-mirror"),
    ("no torch", dict(torch={"python_path": "/usr/bin/python3", "torch": None,
                             "torch_error": "ModuleNotFoundError"}), "torch", WARN, "no torch"),
    ("full system disk", dict(disks=[{"mount": "/", "free": 2048, "total": 50000, "used": 0}]),
     "system disk", WARN, "2 GB free"),
    ("no tmux", dict(tmux=False), "tmux", WARN, "missing"),
]


@pytest.mark.parametrize("name, changes, check, verdict, text", CASES, ids=[c[0] for c in CASES])
def test_hazards_are_named(name, changes, check, verdict, text):
    checks = run_checks(facts(**changes), HostConfig(gpus=1))
    found = verdict_of(checks, check)
    assert found, [(c.name, c.verdict) for c in checks]
    assert found[0][0] == verdict and text in found[0][1], found


def test_gpu_count_against_the_rental():
    checks = run_checks(facts(), HostConfig(gpus=2))
    assert verdict_of(checks, "GPU count") == [(FAIL, "1 GPU visible but 2 were rented")]
    assert exit_code(checks) == 2


def test_cpu_only_box_says_no_gpu_clearly():
    f = facts(inventory={"gpus": [], "reason": "no NVIDIA GPU found (no NVIDIA driver)"},
              torch={"python_path": "/usr/bin/python3", "torch": "2.5.1+cpu", "torch_cuda": None,
                     "cuda_available": False, "device_count": 0, "smoke": []})
    checks = run_checks(f, HostConfig())
    assert checks[0].name == "GPU" and checks[0].verdict == FAIL
    assert "no NVIDIA GPU" in checks[0].reason


def test_persistent_data_disk_of_the_provider_is_checked():
    checks = run_checks(facts(), HostConfig(gpus=1), PRESETS["autodl"])
    assert verdict_of(checks, "data disk /root/autodl-fs")[0][0] == WARN


@pytest.mark.parametrize("name, mem", [("NVIDIA A100-SXM4-80GB", 81920), ("NVIDIA A100-PCIE-40GB", 40960),
                                       ("NVIDIA H100 80GB HBM3", 81559), ("NVIDIA GeForce RTX 4090", 24564),
                                       ("Tesla V100-SXM2-32GB", 32768), ("Tesla T4", 15360),
                                       ("NVIDIA L40S", 46068), ("NVIDIA A10", 23028)])
def test_spec_table(name, mem):
    assert spec_for(name)["mem_total"] == mem


def test_facts_recorded_on_the_real_h200_pass():
    """bench/gpu_check2.sh on the lent H200: torch 2.11+cu130, a bf16 matmul at 792 TFLOPS."""
    with open(os.path.join(DATA, "preflight_h200.json")) as f:
        real = json.load(f)
    checks = run_checks(real, HostConfig(gpus=1))
    assert worst(checks) == PASS, [(c.name, c.verdict, c.reason) for c in checks]
    assert "80% of the NVIDIA H200 spec" in verdict_of(checks, "matmul GPU 0")[0][1]


def test_dataloader_report_from_the_real_h200_is_diagnosed_as_starved():
    """bench/dl_gpu.py on the H200: num_workers=0 waited 95% of the time at ~5% GPU util."""
    from tui.core.checks.diagnosis import LoaderFacts, diagnose
    with open(os.path.join(DATA, "dl_gpu_h200.json")) as f:
        report = json.load(f)
    s = report["starved"]["last_stats"]
    d = diagnose(LoaderFacts(s["wait_fraction"], s["num_workers"], report["starved"]["gpu_util"][-10:],
                             ncpu=16, pin_memory=s["pin_memory"]))
    assert (d.verdict, d.cause) == ("starved", "no_workers")
    fed = report["fed"]
    assert fed["last_stats"]["batches"] > 10 * s["batches"]  # workers fed the GPU 12x faster


def test_the_real_h200_fed_run_is_not_called_slow_workers_when_their_cpu_is_unknown():
    """The H200 run with 12 CPU-bound workers (each at its limit: ~85 of ~94 batches/s they can
    make) still waited 42%: without the workers' CPU the old line said "workers not at their
    limit → raise prefetch_factor", a wrong fix. It also records that the job took ~61 s to exit
    after its loop with the hook and without it: torch's worker shutdown, not the hook."""
    from tui.core.checks.diagnosis import LoaderFacts, diagnose
    with open(os.path.join(DATA, "dl_gpu_h200.json")) as f:
        report = json.load(f)
    fed = report["fed"]
    s = fed["last_stats"]
    assert s["num_workers"] == 12 and s["batches_per_s"] > 50
    d = diagnose(LoaderFacts(s["wait_fraction"], s["num_workers"], fed["gpu_util"][-10:], ncpu=16,
                             pin_memory=s["pin_memory"]))
    assert d.cause == "workers_unknown" and "not at their limit" not in d.line, d.line
    hooked, plain = fed["exit_after_loop_s"], report["fed_unhooked"]["exit_after_loop_s"]
    assert abs(hooked - plain) < 5, (hooked, plain)  # the hook adds nothing to the exit


@pytest.mark.parametrize("home, want", [
    # ~ on its own full disk while / has room: doctor says so (issue 23)
    ({"role": "home", "path": "/home/ann", "mount": "/home", "fstype": "ext4", "total": 50000,
      "free": 12}, (WARN, "full")),
    ({"role": "home", "path": "/home/ann", "mount": "/home", "fstype": "ext4", "total": 50000,
      "free": 40000}, (PASS, "GB free on /home")),
    # ~ on / is the system disk's check
    ({"role": "home", "path": "/root", "mount": "/", "fstype": "overlay", "total": 50000,
      "free": 12}, None),
])
def test_home_disk_is_checked_when_it_is_not_the_system_disk(home, want):
    checks = run_checks(facts(filesystems=[home]), HostConfig(gpus=1))
    got = verdict_of(checks, "home disk")
    if want is None:
        assert got == []
    else:
        assert got[0][0] == want[0] and want[1] in got[0][1], got
    assert verdict_of(checks, "system disk")[0][0] == PASS  # / has 200 GB either way


def test_an_asked_for_matmul_that_did_not_run_says_why():
    """Doctor's r ("again, with the GPU matmul") showed no matmul row and said nothing when torch
    or CUDA was missing or a GPU was busy."""
    from tui.core.checks.preflight import check_smoke
    inv = {"gpus": [{"index": 0, "name": "NVIDIA A100-SXM4-40GB"}]}
    def why(torch, busy=False, inv=inv):
        rows = check_smoke(inv, torch, asked=True, gpus_busy=busy)
        return [(c.name, c.verdict, c.reason) for c in rows]
    assert why({"torch": None, "torch_error": "ModuleNotFoundError"})[0][2].startswith("not run: no torch")
    assert "cannot use the GPU" in why({"torch": "2.13.0+cpu", "cuda_available": False, "smoke": []})[0][2]
    assert "compute process" in why({"torch": "2.4.0", "cuda_available": True}, busy=True)[0][2]
    assert "no GPU" in why({"torch": "2.4.0"}, inv={"gpus": []})[0][2]
    assert why({"torch": "2.4.0"})[0][1] == "warn"
    # not asked (the quick preflight after connect): no row at all
    assert check_smoke(inv, {"torch": None}) == []
