"""The parent pid column (issue 23, the process tree): the probe reads it from the real /proc,
it travels as a column appended to the process row, and a row of the protocol-1 width (an
older probe's) or a wider one (a newer probe's) is still read, not dropped."""

import os
import subprocess
import sys
import time

import pytest

from remote_probe import wire
from remote_probe.backends.sim import SimBackend, load_scenario
from remote_probe.procfs.processes import ProcTable
from remote_probe.sampler import Sampler
from tui.core import from_wire


def sample(procs):
    return {"type": "sample", "seq": 1, "t": 1700000000.0, "gpus": [], "procs": procs, "host": {}}


def test_the_proc_table_reads_each_process_parent():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        stats = ProcTable().sample([child.pid, os.getpid()])
        assert stats[child.pid]["ppid"] == os.getpid()
        assert stats[os.getpid()]["ppid"] == os.getppid()
    finally:
        child.kill()
        child.wait()


def test_simulated_jobs_carry_their_parent_the_daemon(tmp_path):
    backend = SimBackend(dict(load_scenario("a100x2"), name="a100x2"), state_dir=str(tmp_path))
    try:
        sampler = Sampler(backend)
        sampler.tick()
        time.sleep(0.2)
        rows = sampler.tick()["procs"]
        assert rows and {r[wire.ProcCol.PPID] for r in rows} == {os.getpid()}  # real /proc
        assert all(len(r) == len(wire.PROC_FIELDS) for r in rows)
    finally:
        backend.close()


@pytest.mark.parametrize("row, kept, ppid", [
    ([100, 0, 512, 95, 2048, 0, 7], [100, 0, 512, 95, 2048, 0, 7], 7),
    ([100, 0, 512, 95, 2048, 0], [100, 0, 512, 95, 2048, 0, None], None),  # an older probe's
    ([100, 0, 512, 95, 2048, 0, 7, {"new": 1}], [100, 0, 512, 95, 2048, 0, 7], 7),  # a newer one's
    ([100, 0, 512, 95, 2048, 0, "x"], [100, 0, 512, 95, 2048, 0, None], None),  # a bad parent
    ([100, 0, 512, 95, 2048, 0, -1], [100, 0, 512, 95, 2048, 0, None], None),
])
def test_rows_of_other_widths_are_read(row, kept, ppid):
    msg = wire.validate(sample([row]))
    cleaned = wire.clean(msg, wire.Report())
    assert cleaned["procs"] == [kept]
    (usage,) = from_wire.proc_usages(cleaned["procs"])
    assert usage.pid == 100 and usage.ppid == ppid and usage.gpu_mem == 512


def test_a_row_narrower_than_protocol_one_is_refused():
    with pytest.raises(wire.ProtocolError):
        wire.validate(sample([[100, 0, 512, 95, 2048]]))
