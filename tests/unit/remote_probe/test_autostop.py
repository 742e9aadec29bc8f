"""Autostop decisions (table) and the daemon-side state machine with a fake clock."""

import os

import pytest

from remote_probe.autostop.policy import Autostop, decide
from remote_probe.wire import all_idle

ARMED = {"idle_seconds": 60, "deadline": None, "grace": 30}
DEADLINE = {"idle_seconds": None, "deadline": 1000, "grace": 30}


@pytest.mark.parametrize("armed, t, idle_since, grace_until, reason, expected", [
    (None, 100, 0, None, None, (None, None)),
    (ARMED, 100, None, None, None, (None, None)),  # busy
    (ARMED, 100, 50, None, None, (None, None)),  # idle 50 s < 60
    (ARMED, 110, 50, None, None, ("start_grace", "idle")),  # idle 60 s
    (ARMED, 120, 50, 140, "idle", (None, None)),  # counting down
    (ARMED, 140, 50, 140, "idle", ("fire", "idle")),  # grace over
    (ARMED, 120, None, 140, "idle", ("cancel_grace", "GPU busy again")),  # busy again
    (DEADLINE, 999, None, None, None, (None, None)),
    (DEADLINE, 1000, None, None, None, ("start_grace", "deadline")),
    (DEADLINE, 1010, None, 1030, "deadline", (None, None)),  # busy does not cancel a deadline
    (DEADLINE, 1030, None, 1030, "deadline", ("fire", "deadline")),
])
def test_decide(armed, t, idle_since, grace_until, reason, expected):
    assert decide(armed, t, idle_since, grace_until, reason) == expected


def test_unknown_utilization_is_not_idle():
    assert not all_idle([None], 0, 5)
    assert not all_idle([], 0, 5)
    assert all_idle([0, 2], 0, 5)


class Box:
    def __init__(self, tmp_path):
        self.t = 1000.0
        self.messages = []
        self.auto = Autostop(str(tmp_path), probe_command=["python3", "probe.pyz"],
                             clock=lambda: self.t, notify=self.messages.append)

    def run(self, seconds, utils):
        events = []
        for _ in range(seconds):
            self.t += 1
            e = self.auto.observe(utils, 0, t=self.t)
            if e:
                events.append(e["event"])
        return events


def test_idle_window_warns_then_fires(tmp_path):
    box = Box(tmp_path)
    marker = tmp_path / "released"
    box.auto.arm("touch %s" % marker, idle_seconds=10, grace=5)
    assert box.run(9, [0]) == []
    assert box.run(3, [0]) == ["grace"]
    assert "touch" in box.messages[-1] and "cancel-autostop" in box.messages[-1]
    assert box.run(6, [0]) == ["fired"]
    assert marker.exists()
    assert box.auto.armed is None  # fires once
    events = [e["event"] for e in box.auto.events()]
    assert events == ["armed", "grace", "fired"]


def test_busy_gpu_resets_the_window_and_stops_the_countdown(tmp_path):
    box = Box(tmp_path)
    box.auto.arm("true", idle_seconds=10, grace=5)
    box.run(8, [0])
    box.run(1, [80])  # a burst: the window starts over
    assert box.run(9, [0]) == []
    assert box.run(2, [0]) == ["grace"]
    assert box.run(1, [80]) == ["grace_cancelled"]
    assert box.auto.armed is not None


def test_armed_state_survives_a_restart(tmp_path):
    box = Box(tmp_path)
    box.auto.arm("shutdown -h now", idle_seconds=1800, grace=120)
    again = Autostop(str(tmp_path))
    assert again.armed["command"] == "shutdown -h now" and again.armed["idle_seconds"] == 1800
    again.disarm("cancelled on the box")
    assert Autostop(str(tmp_path)).armed is None


def test_cancel_script_is_written_and_quoted(tmp_path):
    Box(tmp_path)
    script = (tmp_path / "cancel-autostop").read_text()
    assert "autostop-cancel --state-dir %s" % tmp_path in script
    assert os.access(tmp_path / "cancel-autostop", os.X_OK)


def test_arming_needs_a_command_and_a_condition(tmp_path):
    box = Box(tmp_path)
    with pytest.raises(ValueError, match="release command"):
        box.auto.arm("", idle_seconds=10)
    with pytest.raises(ValueError, match="idle window, a deadline, a budget or a job"):
        box.auto.arm("true")


def test_a_spent_budget_releases_only_when_armed_for_it_and_a_busy_gpu_does_not_cancel():
    armed = {"command": "true", "idle_seconds": None, "deadline": None, "grace": 60, "at_budget": True}
    assert decide(armed, 100, None, None, None, budget_spent=True) == ("start_grace", "budget")
    assert decide(armed, 100, None, None, None, budget_spent=False) == (None, None)
    assert decide(dict(armed, at_budget=False), 100, None, None, None, budget_spent=True) == (None, None)
    # the countdown runs on while the GPU is busy: money spent stays spent
    assert decide(armed, 130, None, 160, "budget", budget_spent=True) == (None, None)
    assert decide(armed, 161, None, 160, "budget", budget_spent=True) == ("fire", "budget")


def test_arming_at_budget_alone_is_enough(tmp_path):
    box = Box(tmp_path)
    status = box.auto.arm("true", at_budget=True)
    assert status["armed"]["at_budget"] is True
