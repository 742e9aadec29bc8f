"""The NVML backend against recorded NVML answers (no GPU on the dev machines)."""

import glob
import os

import pynvml
import pytest

from remote_probe import wire
from remote_probe.backends import BackendError
from remote_probe.backends.nvml import NvmlBackend

from tests.support.nvml_replay import ReplayNvml
from tests.support import TESTS

DATA = os.path.join(TESTS, "data")


def backend(name="nvml_a100_mig_container.json", edit=None):
    nv = ReplayNvml.load(os.path.join(DATA, name))
    if edit:
        edit(nv.calls)
    return NvmlBackend(nv=nv), nv


def test_inventory_reads_static_facts_and_mig_slices():
    b, nv = backend()
    inv = b.inventory()
    assert inv["driver"] == "535.129.03"
    assert inv["cuda_driver"] == "12.2"
    g0, g1 = inv["gpus"]
    assert g0["name"] == "NVIDIA A100-SXM4-80GB"
    assert g0["mem_total"] == 81920
    assert g0["power_limit"] == 400
    assert g0["pci_bus_id"] == "00000000:07:00.0"
    assert g0["minor"] == 2
    assert g0["mig_mode"] == 0 and g0["mig_devices"] == []
    # MIG slices are first-class: the user sees what they really rented.
    assert g1["mig_mode"] == 1
    assert [m["name"] for m in g1["mig_devices"]] == ["NVIDIA A100-SXM4-80GB MIG 3g.40gb"] * 2
    assert g1["mig_devices"][0]["mem_total"] == 40960
    assert g0["virt_mode"] == "none"


def test_sample_maps_units_and_marks_unsupported_fields_na():
    b, nv = backend()
    gpus, procs = b.sample()
    g0 = gpus[0]
    assert set(g0) == set(wire.GPU_FIELDS)
    assert g0["util"] == 87 and g0["mem_util"] == 41
    assert g0["mem_used"] == 65333114880 // 1048576
    assert g0["power"] == 312  # mW -> W
    assert g0["fan"] is None  # NOT_SUPPORTED on SXM boards -> n/a, not a crash
    assert wire.throttle_names(g0["throttle"]) == ["power cap"]
    assert gpus[1]["clock_sm"] == 210


def test_processes_keep_hidden_memory_as_none_and_survive_no_permission():
    b, nv = backend()
    _, procs = b.sample()
    assert procs == [
        {"pid": 181234, "gpu": 0, "kind": "C", "gpu_mem": 60000},
        {"pid": 181299, "gpu": 0, "kind": "C", "gpu_mem": None},
    ]


def test_older_driver_without_v3_process_api_falls_back():
    def edit(calls):
        calls["nvmlDeviceGetComputeRunningProcesses_v3|gpu0"] = {"__nvml_error__": 13}
        calls["nvmlDeviceGetComputeRunningProcesses_v2|gpu0"] = [
            {"__struct__": {"pid": 7, "usedGpuMemory": 1048576 * 5}}]
    b, _ = backend(edit=edit)
    _, procs = b.sample()
    assert {"pid": 7, "gpu": 0, "kind": "C", "gpu_mem": 5} in procs


def test_gpu_lost_mid_run_becomes_a_backend_error_with_reason():
    b, nv = backend()
    b.sample()
    nv.calls["nvmlDeviceGetUtilizationRates|gpu1"] = {"__nvml_error__": pynvml.NVML_ERROR_GPU_IS_LOST}
    with pytest.raises(BackendError, match="NVML error"):
        b.sample()


@pytest.mark.parametrize("code, reason", [
    (pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, "libnvidia-ml.so.1 was not found"),
    (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "driver is not loaded"),
    (pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH, "version mismatch"),
])
def test_init_failures_explain_themselves(code, reason):
    def edit(calls):
        calls["nvmlInit"] = {"__nvml_error__": code}
    with pytest.raises(BackendError, match=reason):
        backend(edit=edit)


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(DATA, "nvml_*.json"))))
def test_every_recording_yields_the_full_schema(path):
    b, nv = backend(os.path.basename(path))
    inv = b.inventory()
    gpus, procs = b.sample()
    assert len(gpus) == len(inv["gpus"]) > 0
    for g in gpus:
        assert set(g) == set(wire.GPU_FIELDS)
        wire.validate({"type": "sample", "seq": 1, "t": 0.0,
                       "gpus": [wire.gpu_row(x) for x in gpus], "procs": []})
    for static in inv["gpus"]:
        assert static["name"] and static["mem_total"]


@pytest.mark.parametrize("name", ["nvml_h200_idle.json", "nvml_h200_busy.json"])
def test_replay_of_a_real_h200_gives_what_the_backend_gave_on_the_gpu(name):
    """Recorded on the H200 by bench/gpu_check.sh: same code, same answers."""
    with open(os.path.join(DATA, name)) as f:
        import json
        recorded = json.load(f)
    b, nv = backend(name)
    assert b.inventory() == recorded["inventory"]
    gpus, procs = b.sample()
    assert [gpus, procs] == recorded["sample"]
    assert nv.missing == []
    assert recorded["inventory"]["gpus"][0]["name"] == "NVIDIA H200"
    assert recorded["inventory"]["gpus"][0]["mem_total"] == 143771


def test_busy_h200_shows_the_load_and_the_power_cap():
    b, _ = backend("nvml_h200_busy.json")
    gpus, procs = b.sample()
    assert gpus[0]["util"] == 100
    assert wire.throttle_names(gpus[0]["throttle"]) == ["power cap"]
    assert procs[0]["gpu_mem"] > 20000  # the 20 GiB the load allocated
