import os
import time

import pytest

from remote_probe.backends import BackendError, select_backend
from remote_probe.backends.sim import (
    SimBackend,
    load_scenario,
    scenario_names,
    utilization,
)


def test_shipped_scenarios_all_load():
    names = scenario_names()
    assert {"a100x2", "h100x8", "idle", "cpu-only", "container", "nvml-error"} <= set(names)
    for name in names:
        assert load_scenario(name)["description"]


def test_unknown_and_broken_scenarios_say_why(tmp_path):
    with pytest.raises(BackendError, match="unknown scenario 'nope'.*a100x2"):
        load_scenario("nope")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(BackendError, match="not valid JSON"):
        load_scenario(str(bad))


@pytest.mark.parametrize("pattern, lo, hi", [
    ({"kind": "idle"}, 0, 0),
    ({"kind": "steady", "level": 90}, 80, 100),
    ({"kind": "starved", "period": 4, "duty": 0.3}, 0, 100),
])
def test_load_patterns_stay_in_range(pattern, lo, hi):
    values = [utilization(pattern, t / 4.0) for t in range(400)]
    assert min(values) >= lo and max(values) <= hi


def test_starved_pattern_is_mostly_idle():
    values = [utilization({"kind": "starved", "period": 4, "duty": 0.3}, t / 10.0) for t in range(400)]
    busy = sum(v > 50 for v in values) / len(values)
    assert 0.2 < busy < 0.4


def test_simulated_processes_are_real_and_end_with_the_backend(tmp_path):
    backend, _ = select_backend("a100x2", state_dir=str(tmp_path))
    gpus, procs = backend.sample()
    assert len(gpus) == 2 and len(procs) == 2
    for p in procs:
        assert os.path.exists("/proc/%d" % p["pid"])
    backend.close()
    time.sleep(0.2)
    for p in procs:
        assert not os.path.exists("/proc/%d" % p["pid"]) or \
            open("/proc/%d/stat" % p["pid"]).read().split()[2] == "Z"


def test_nvml_error_scenario_fails_then_recovers(tmp_path):
    clock = [0.0]
    backend = SimBackend(load_scenario("nvml-error"), clock=lambda: clock[0])
    assert backend.sample()[0]
    clock[0] = 4.0
    with pytest.raises(BackendError, match="GPU is lost"):
        backend.sample()
    clock[0] = 7.0
    assert backend.sample()[0]


def test_cpu_only_is_a_normal_state_with_a_reason():
    backend, _ = select_backend("cpu-only")
    inv = backend.inventory()
    assert inv["gpus"] == [] and "CPU-only" in inv["reason"]
    assert backend.sample() == ([], [])


def test_adopt_sees_only_its_own_scope(monkeypatch):
    """A simulated box adopts the marked jobs of its own scope, never a neighbour's (another
    test, another demo, another user on a shared machine)."""
    import subprocess
    import sys

    from remote_probe.backends.sim import _pids_matching
    from remote_probe.watch.scope import SCOPE_VAR
    marker = "GPUTUI_SIM_GPU_JOB_scope_test_%d" % os.getpid()
    job = [sys.executable, "-c", "import time; time.sleep(30)", marker]
    mine = subprocess.Popen(job, env=dict(os.environ, **{SCOPE_VAR: "/box/mine"}))
    theirs = subprocess.Popen(job, env=dict(os.environ, **{SCOPE_VAR: "/box/theirs"}))
    try:
        import time
        time.sleep(0.2)  # let exec() replace the command lines
        assert _pids_matching(marker, "/box/mine") == [mine.pid]
        assert _pids_matching(marker, "/box/theirs") == [theirs.pid]
        assert sorted(_pids_matching(marker)) == sorted([mine.pid, theirs.pid])  # unscoped: both
        assert _pids_matching(marker, uid=os.getuid() + 12345) == []  # another user's: never
    finally:
        mine.kill()
        theirs.kill()
        mine.wait()
        theirs.wait()
