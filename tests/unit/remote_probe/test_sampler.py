import os
import time

import pytest

from remote_probe import wire
from remote_probe.backends.sim import SimBackend, load_scenario
from remote_probe.sampler import Sampler, join_container_pids


def p(pid, gpu=0, mem=100):
    return {"pid": pid, "gpu": gpu, "gpu_mem": mem, "kind": "C"}


CASES = [
    # (driver-reported, pids visible here, fd holders {pid: minors}, expected (pid, local, host_pid, kind))
    ("bare metal", [p(1), p(2, 1)], {1, 2}, {}, [(1, 1, None, "C"), (2, 1, None, "C")]),
    ("container, unambiguous", [p(90001)], set(), {7: {0}}, [(7, 1, 90001, "C")]),
    # Two of each: no guessing. Host-pid rows keep the memory, and the local processes
    # that hold the GPU are listed too, so the user sees which commands are involved.
    ("container, ambiguous", [p(90001), p(90002)], set(), {7: {0}, 8: {0}},
     [(90001, 0, None, "C"), (90002, 0, None, "C"), (7, 1, None, "?"), (8, 1, None, "?")]),
    ("container, nothing local", [p(90001)], set(), {}, [(90001, 0, None, "C")]),
    ("driver hides processes", [], set(), {7: {0}}, [(7, 1, None, "?")]),
    ("mixed", [p(1), p(90001, 1)], {1}, {1: {0}, 5: {1}}, [(1, 1, None, "C"), (5, 1, 90001, "C")]),
]


@pytest.mark.parametrize("name, reported, local, holders, expected", CASES, ids=[c[0] for c in CASES])
def test_container_pid_join(name, reported, local, holders, expected):
    rows, _ = join_container_pids(reported, local, holders, {0: 0, 1: 1})
    assert [(r["pid"], r["local"], r["host_pid"], r["kind"]) for r in rows] == expected


def test_own_process_is_never_listed():
    rows, _ = join_container_pids([], set(), {42: {0}}, {0: 0}, own_pids={42})
    assert rows == []


def test_fd_holders_beyond_the_row_cap_are_counted_not_listed():
    # 3 processes hold /dev/nvidia0 open and the driver reported none: room for 2
    rows, left_out = join_container_pids([], set(), {7: {0}, 8: {0}, 9: {0}}, {0: 0}, room=2)
    assert [r["pid"] for r in rows] == [7, 8] and left_out == 1


def test_minor_numbers_map_to_nvml_indices():
    # A container given the host's GPU 3 sees it as NVML index 0 but opens /dev/nvidia3.
    rows, _ = join_container_pids([p(90001)], set(), {7: {3}}, {3: 0})
    assert rows[0]["pid"] == 7 and rows[0]["host_pid"] == 90001


def test_sampler_with_container_scenario_labels_host_pids(tmp_path):
    backend = SimBackend(dict(load_scenario("container"), name="container"), state_dir=str(tmp_path))
    try:
        s = Sampler(backend)
        s.tick()
        time.sleep(0.3)
        sample = s.tick()
        rows = [wire.proc_dict(r) for r in sample["procs"]]
        host = [r for r in rows if not r["local"]]
        assert [r["pid"] for r in host] == [3999999]  # kept and labelled, not dropped
        local = [r for r in rows if r["local"]]
        assert len(local) == 1 and os.path.exists("/proc/%d" % local[0]["pid"])
        assert "train.py" in s.procs.meta[local[0]["pid"]]["cmd"]
        wire.validate(sample | {"seq": 1})
    finally:
        backend.close()


def test_a_flood_of_gpu_processes_is_cut_before_the_proc_lookups(tmp_path):
    backend = SimBackend(dict(load_scenario("idle"), name="idle"), state_dir=str(tmp_path))
    flood = [p(5_000_000 + i, mem=i) for i in range(20000)]
    backend.sample = lambda: ([], flood)
    try:
        sample = Sampler(backend).tick()
        assert len(sample["procs"]) == wire.MAX_PROC_ROWS
        assert sample["procs_more"] == 20000 - wire.MAX_PROC_ROWS
        assert min(r[wire.ProcCol.GPU_MEM] for r in sample["procs"]) == 20000 - wire.MAX_PROC_ROWS  # biggest kept
        assert wire.idle_inputs(sample)[1] == 20000  # autostop still sees them all
    finally:
        backend.close()
