"""The idle rule per sample: utilization where reported, compute processes where not
(MIG), hung jobs only by opt-in."""

import pytest

from remote_probe.autostop.policy import all_idle
from remote_probe.autostop.idle_rules import idle_verdict, rule_text


@pytest.mark.parametrize("name,gpus,kw,expect", [
    ("no-gpu", [], {}, (False, "no_gpu")),
    ("all-idle", [(0, 0), (2, 0)], {}, (True, "utilization")),
    ("one-busy", [(0, 0), (80, 0)], {}, (False, "utilization")),
    ("proc-at-zero-util", [(0, 1)], {}, (False, "utilization")),
    ("at-threshold-is-busy", [(5, 0)], {}, (False, "utilization")),
    ("mig-no-proc", [(None, 0)], {}, (True, "no_compute")),
    ("mig-proc", [(None, 1)], {}, (False, "no_compute")),
    ("mixed-known-busy-ignored", [(None, 0), (90, 0)], {}, (True, "no_compute")),
    ("hung-not-opted-in", [(100, 2)], {"hung_gpus": {0}}, (False, "utilization")),
    ("hung-opted-in", [(100, 2)], {"hung_gpus": {0}, "hung_is_idle": True}, (True, "utilization")),
    ("hung-one-of-two", [(100, 1), (97, 1)], {"hung_gpus": {0}, "hung_is_idle": True}, (False, "utilization")),
])
def test_idle_verdict(name, gpus, kw, expect):
    assert idle_verdict(gpus, **kw) == expect


@pytest.mark.parametrize("gpus", [[(0, 0)], [(3, 0), (4, 0)], [(50, 0)], [(0, 1)], [(1, 0), (9, 0)]])
def test_same_as_autostop_where_utilization_is_reported(gpus):
    utils = [u for u, _ in gpus]
    procs = sum(p for _, p in gpus)
    assert idle_verdict(gpus)[0] == all_idle(utils, procs, 5.0)


def test_rule_text_names_the_rule():
    assert "MIG" in rule_text("no_compute") and "threshold" in rule_text("utilization")
