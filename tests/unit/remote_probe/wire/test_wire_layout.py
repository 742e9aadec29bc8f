"""The wire package's own promises: named columns match the column tuples, every probe exit
code is defined once (in remote_probe.wire) and means one thing, the daemon answers every
request type the wire names, and its history hands back what a returning client missed."""

import os
import re
import zlib

import pytest

from remote_probe import handlers, history, wire

from tests.support.sshd import REPO


@pytest.mark.parametrize("fields, cols", [(wire.GPU_FIELDS, wire.GpuCol),
                                          (wire.PROC_FIELDS, wire.ProcCol)])
def test_each_named_column_is_the_position_of_its_field(fields, cols):
    named = {k: v for k, v in vars(cols).items() if k.isupper()}
    assert named == {f.upper(): i for i, f in enumerate(fields)}


def test_rows_read_by_name_round_trip():
    row = wire.proc_row({"pid": 7, "gpu": 1, "gpu_mem": 300, "cpu": 9.6, "rss": 40, "kind": "G",
                         "local": 0})
    assert (row[wire.ProcCol.PID], row[wire.ProcCol.GPU_MEM], row[wire.ProcCol.CPU]) == (7, 300, 10)
    assert wire.proc_flags(row) == wire.PROC_HOST_PID | wire.PROC_GRAPHICS
    sample = {"procs": [row, wire.proc_row({"pid": 8, "gpu": 0})]}
    assert wire.proc_pids(sample) == [7, 8] and wire.proc_pids(sample, local_only=True) == [8]


@pytest.mark.parametrize("flags, counted", [(0, 1), (wire.PROC_HOST_PID, 1), (wire.PROC_GRAPHICS, 0),
                                            (wire.PROC_FD_ONLY, 0), (None, 1), ("x", 1)])
def test_idle_counts_compute_processes_only(flags, counted):
    sample = {"gpus": [wire.gpu_row({"util": 0})], "procs": [[5, 0, 10, 0, 1, flags]]}
    assert wire.idle_inputs(sample) == ([0], counted)
    assert wire.all_idle(*wire.idle_inputs(sample), wire.DEFAULT_THRESHOLD) is (counted == 0)


def test_exit_codes_mean_one_thing_each():
    codes = {name: getattr(wire, name) for name in wire.__all__ if name.startswith("EXIT_")}
    by_value = {}
    for name, value in codes.items():
        by_value.setdefault(value, set()).add(name)
    shared = {v: names for v, names in by_value.items() if len(names) > 1}
    # argparse's code 2 and the daemon's "no backend" are both "fix how you started it"
    assert shared == {2: {"EXIT_BAD_COMMAND", "EXIT_CANNOT_START"}}


def test_probe_exit_codes_are_defined_in_the_wire_only():
    """No other module of the probe or of the laptop's remote room spells one out."""
    where = []
    for top in ("remote_probe", os.path.join("tui", "remote")):
        for dirpath, _dirs, files in os.walk(os.path.join(REPO, top)):
            for name in files:
                path = os.path.join(dirpath, name)
                if not name.endswith(".py") or os.sep + "wire" + os.sep in path:
                    continue
                with open(path, encoding="utf-8") as f:
                    for n, line in enumerate(f, 1):
                        if re.match(r"\s*EXIT_\w+\s*=\s*\d", line):
                            where.append("%s:%d" % (os.path.relpath(path, REPO), n))
    assert where == []


def test_every_request_the_wire_names_has_a_handler():
    assert set(handlers.HANDLERS) == set(wire.REQUEST_TYPES)


def line(seq):
    return wire.encode({"type": "sample", "seq": seq, "t": 1.0, "gpus": [], "procs": []})


@pytest.mark.parametrize("since, want", [
    (0, [8, 10, 11, 12]),  # the old ones kept (8; 10 and 12 are in the ring), then the ring
    (7, [8, 10, 11, 12]),
    (8, [10, 11, 12]),  # the old ones after `since` only
    (10, [11, 12]),  # inside the ring: what came after
    (12, []),  # up to date
])
def test_history_backlog_is_old_downsampled_then_the_full_ring(since, want):
    h = history.SampleHistory(ring_size=3, every=2, old_size=3)  # old: 8, 10, 12; ring: 10-12
    for seq in range(1, 13):
        h.append(seq, line(seq))
    assert h.first_seq() == 10
    assert [wire.decode(x)["seq"] for x in h.backlog(since, 12)] == want
    assert h.old[-1] == (12, zlib.compress(line(12), 6))  # compressed, one in `every`
