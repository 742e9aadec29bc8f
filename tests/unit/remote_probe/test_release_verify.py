"""Issue 36: a release that is verified. The decisions (plain functions, a table) and the
autostop side with a fake clock: a release command that exits 0 and leaves the box up on
the same boot raises one alarm after the verify window; a box that rebooted says nothing."""

import json
import os

import pytest

from remote_probe.autostop import release_verify as rv
from remote_probe.autostop.policy import Autostop
from remote_probe.notify.notifier import Notifier

REC = rv.new_record("true", 0, 1000.0, "boot-a", 90.0, "autostop")


@pytest.mark.parametrize("record, now, boot, present, verified, due", [
    (None, 2000, "boot-a", False, None, False),  # no release ran
    (REC, 1010, "boot-a", True, None, False),  # the window runs: not judged yet
    (REC, 1089.9, "boot-a", True, None, False),
    (REC, 1090, "boot-a", True, False, True),  # still up past the window: the alarm
    (dict(REC, told=True), 1500, "boot-a", True, False, False),  # told once already
    (REC, 1500, "boot-b", False, None, False),  # another boot: the box did go down
    (REC, 1500, None, False, None, False),  # no boot id: nothing can be said
])
def test_the_decisions(record, now, boot, present, verified, due):
    assert rv.verified(record, now, boot) == (present, verified)
    assert rv.alarm_due(record, now, boot) is due
    block = rv.status_of(record, now, boot)
    assert (block is not None) is present
    if block:
        assert block["verified"] is verified and block["command"] == "true" and block["exit"] == 0


def test_the_window_comes_from_the_request_then_the_settings_then_the_env(monkeypatch):
    monkeypatch.delenv(rv.ENV_VERIFY_S, raising=False)
    assert rv.verify_window(None, None) == 90.0
    assert rv.verify_window(None, 5) == 5.0
    assert rv.verify_window(3, 5) == 3.0
    monkeypatch.setenv(rv.ENV_VERIFY_S, "7")
    assert rv.verify_window(None, None) == 7.0
    assert rv.verify_window("junk", -1) == 7.0


def test_the_evidence_says_what_ran_and_that_the_box_is_up():
    assert rv.evidence(REC, 4000) == "`true` exited 0; same boot, uptime 1h 06m"
    assert rv.evidence(dict(REC, exit=None), None) == "`true` did not finish; same boot"


class Box:
    def __init__(self, tmp_path, boot="boot-a"):
        self.t = 1000.0
        self.sent = []
        self.auto = Autostop(str(tmp_path), clock=lambda: self.t, notify=lambda m: None,
                             boot_id=boot)
        self.auto.listeners.append(lambda e: self.sent.append(e))

    def tick(self, seconds):
        out = []
        for _ in range(seconds):
            self.t += 1
            e = self.auto.check_release(self.t)
            if e:
                out.append(e)
        return out


def test_autostop_that_releases_nothing_raises_one_alarm(tmp_path):
    box = Box(tmp_path)
    box.auto.arm("true", idle_seconds=2, grace=1, verify_s=5)
    for _ in range(6):
        box.t += 1
        box.auto.observe([0], 0, t=box.t)
    assert [e["event"] for e in box.auto.events()][-1] == "fired"
    box.t = box.auto.release["ran_at"]
    assert box.auto.status()["release"]["verified"] is None  # window not over
    assert box.tick(4) == []
    alarms = box.tick(10)
    assert len(alarms) == 1  # one alarm, not one per tick
    assert alarms[0]["event"] == "release_unverified"
    assert alarms[0]["evidence"].startswith("`true` exited 0; same boot")
    assert box.auto.status()["release"]["verified"] is False
    assert box.auto.status()["armed"] is None
    # the record survives a daemon restart, and the alarm is not raised twice
    again = Box(tmp_path)
    again.t = box.t + 100
    assert again.tick(5) == []
    assert again.auto.status()["release"]["verified"] is False
    assert json.load(open(os.path.join(str(tmp_path), rv.RELEASE_FILE)))["told"] is True
    # autostop can be armed again
    assert again.auto.arm("true", idle_seconds=60)["armed"]["command"] == "true"


def test_a_box_that_came_back_on_another_boot_says_nothing(tmp_path):
    box = Box(tmp_path)
    box.auto.record_release("stop-it", 0, "release", verify_s=5)
    after = Box(tmp_path, boot="boot-b")  # the release worked; the box was started again
    after.t = box.t + 600
    assert after.tick(10) == []
    assert after.auto.status()["release"] is None


def test_the_notifier_turns_the_alarm_into_one_release_unverified_message(tmp_path):
    n = Notifier(str(tmp_path))
    n.on_autostop({"event": "release_unverified", "at": "19:36", "ran_at": 1000.0,
                   "evidence": "`true` exited 0; same boot, uptime 3m 02s"})
    (kind, fields, _job, run, _t), = n.pending
    assert kind == "release_unverified" and run == 1000
    title, body = n.render(kind, fields)
    assert "still up after its release" in title
    assert "ran at 19:36 but the box is still up and billing" in body and "`true` exited 0" in body


def test_a_container_started_again_on_the_same_host_is_another_boot():
    # the host's kernel (boot id) is the same, PID 1 is not: the release worked
    stopped = rv.new_record("stop", 0, 1000.0, rv.boot_key("host-boot", 500.0), 90.0, "release")
    assert rv.alarm_due(stopped, 2000, rv.boot_key("host-boot", 500.0))
    assert not rv.alarm_due(stopped, 2000, rv.boot_key("host-boot", 1900.0))
    assert rv.boot_key(None, 500.0) is None and rv.boot_key("b", None) == "b"
