"""The simulator scenarios for issue 21: a DDP job hung in NCCL (util pinned, power near
idle) and MIG slices that report no utilization; read through the job verdicts."""

import os
import subprocess
import sys
import time

from remote_probe.watch import jobwatch
from remote_probe.backends.sim import SimBackend, load_scenario


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_nccl_hung_scenario_reads_as_hung_after_the_threshold(tmp_path):
    clock = FakeClock()
    sim = SimBackend(load_scenario("nccl-hung"), state_dir=str(tmp_path), clock=clock)
    try:
        inv = sim.inventory()
        samples = []
        verdicts = []
        for step in range(0, int(jobwatch.HUNG_AFTER_S) + 60, 5):
            clock.t = float(step)
            gpus, procs = sim.sample()
            g = gpus[0]
            samples.append((clock.t, g["util"], g["power"]))
            facts = jobwatch.JobFacts(now=clock.t, alive=True, samples=samples,
                                      power_limit=inv["gpus"][0]["power_limit"],
                                      vram_mib=sum(p["gpu_mem"] for p in procs if p["gpu"] == 0),
                                      last_output_t=0.0, started_t=0.0, uses_gpu=True)
            verdicts.append((clock.t, jobwatch.classify(facts).state))
        assert all(s[1] >= jobwatch.HUNG_UTIL_PINNED for s in samples)
        assert all(s[2] <= jobwatch.HUNG_POWER_FRACTION * 400 for s in samples)
        assert len(procs) == 2 and {p["gpu"] for p in procs} == {0, 1}
        # Busy-looking until the signature has held for HUNG_AFTER_S, hung from then on.
        assert {s for t, s in verdicts if t < jobwatch.HUNG_AFTER_S} == {"running"}
        assert {s for t, s in verdicts if t >= jobwatch.HUNG_AFTER_S} == {"hung"}
    finally:
        sim.close()


def test_mig_scenario_reports_slices_without_utilization(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUTUI_SIM_SCOPE", "mig-test-%d" % os.getpid())
    sim = SimBackend(load_scenario("mig-noutil"), state_dir=str(tmp_path))
    try:
        inv = sim.inventory()
        g = inv["gpus"][0]
        assert g["mig_mode"] == 1 and len(g["mig_devices"]) == 3
        gpus, procs = sim.sample()
        assert gpus[0]["util"] is None and gpus[0]["mem_util"] is None
        assert gpus[0]["power"] is not None and procs == []
        # A job started elsewhere with the marker shows up as a compute process.
        env = dict(os.environ, GPUTUI_SIM_SCOPE="mig-test-%d" % os.getpid())
        job = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "gputui-mig-job"],
                               env=env)
        try:
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                _, procs = sim.sample()
                if procs:
                    break
                time.sleep(0.05)
            assert [p["pid"] for p in procs] == [job.pid]
            verdict = jobwatch.classify(jobwatch.JobFacts(
                now=100.0, alive=True, samples=[(t, None, 60) for t in range(0, 101, 5)],
                vram_mib=9000, last_output_t=0.0, uses_gpu=True))
            assert (verdict.state, verdict.cause) == ("running", "util_unknown")
        finally:
            job.kill()
            job.wait()
    finally:
        sim.close()
