"""The suite starts its longest tests first (tests/support/durations.py): the record is read
from pytest's own --durations report, and a missing or broken record leaves the default order."""

import json

from tests.support import durations

REPORT = """
============================= slowest durations =============================
41.71s call     tests/e2e/test_watch.py::test_tqdm_job
3.10s setup    tests/e2e/test_watch.py::test_tqdm_job
34.55s setup    tests/e2e/test_install_wheel.py::test_pipx[a b]
1.00s call     tests/unit/test_quick.py::test_fast
(12 durations < 0.005s hidden.)
"""


def test_phases_are_summed_and_quick_tests_left_out():
    assert durations.parse(REPORT) == {"tests/e2e/test_watch.py::test_tqdm_job": 44.8,
                                       "tests/e2e/test_install_wheel.py::test_pipx[a b]": 34.5}
    assert list(durations.parse(REPORT))[0] == "tests/e2e/test_watch.py::test_tqdm_job"  # longest first


def test_a_broken_record_is_no_record(tmp_path, monkeypatch):
    bad = tmp_path / "durations.json"
    bad.write_text("{not json")
    monkeypatch.setattr(durations, "RECORD", str(bad))
    assert durations.recorded_durations() == {}
    bad.write_text(json.dumps(["a list"]))
    assert durations.recorded_durations() == {}
    bad.write_text(json.dumps({"t::a": 3}))
    assert durations.recorded_durations() == {"t::a": 3.0}
