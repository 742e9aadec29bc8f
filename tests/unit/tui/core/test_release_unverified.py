"""A release that is verified, on the laptop (issue 36): the ledger closes a session as
"released by autostop"; when the box then answers on the same boot past the verify window,
or says itself that its release did not happen, the session is open again, the fleet row
shows the alarm and `fleet --check` fails; `status` says it loudly."""

import pytest

from tui.core.billing import clock as bc
from tui.core import report
from tui.core.fleet import rows as fleet_rows
from tui.core.config import HostConfig
from tui.core.billing.ledger import Ledger

BOOT = "boot-1"
FIRED = {"event": "fired", "t": 1500.0, "reason": "deadline", "command": "true", "exit": 0}
UNVERIFIED = {"event": "release_unverified", "t": 1590.0, "ran_at": 1500.0, "command": "true",
              "exit": 0, "at": "19:36", "evidence": "`true` exited 0; same boot, uptime 25m 00s"}


def inventory(boot=BOOT):
    return {"gpus": [{"index": 0, "name": "A100"}],
            "host": {"boot_id": boot, "instance_start": 1000.0}, "idle_threshold": 5.0}


def sample(t):
    return {"t": t, "seq": int(t), "gpus": [[0, 0.0] + [None] * 9], "procs": [], "idle_s": 0.0}


def box(ledger, now, host=None):
    b = fleet_rows.FleetBox(host or fleet_rows.FleetHost("gpu1"), HostConfig(rate=3.6), ledger,
                            clock=lambda: now[0])
    b.on_state(fleet_rows.ConnState.LIVE)
    b.on_inventory(inventory())
    return b


@pytest.mark.parametrize("session, now, outlived", [
    (None, 2000, False),
    ({"end": None}, 2000, False),  # open
    ({"end": 1500.0, "ended_how": "released by autostop"}, 1560.0, False),  # going down
    ({"end": 1500.0, "ended_how": "released by autostop"}, 1590.0, True),  # still up
    ({"end": 1500.0, "ended_how": "released (exit 0)"}, 5000.0, True),  # the app's R
    ({"end": 1500.0, "ended_how": "released in the provider console"}, 5000.0, False),  # the user said so
])
def test_outlived_release(session, now, outlived):
    assert bc.outlived_release(session, now) is outlived


def test_the_box_answering_on_the_same_boot_after_its_release_reopens_the_session(tmp_path):
    ledger = Ledger(str(tmp_path / "l.db"))
    now = [1200.0]
    b = box(ledger, now)
    now[0] = 1501.0
    b.on_autostop({"armed": None}, event=FIRED)
    assert ledger.get("gpu1", BOOT)["ended_how"] == "released by autostop"
    assert b.row().state == fleet_rows.RELEASED
    # the laptop comes back later; the box answers on the boot it "released"
    now[0] = 3000.0
    later = box(ledger, now)
    later.on_autostop({"armed": None}, events=[FIRED, UNVERIFIED])
    row = ledger.get("gpu1", BOOT)
    assert row["end"] is None and row["ended_how"] is None  # billing goes on in the ledger
    later.on_sample(sample(3000.0))
    shown = later.row()
    assert shown.state == fleet_rows.LIVE
    assert shown.release_alarm.endswith("but the box is still up and billing")
    assert fleet_rows.check_exit_code([shown]) == fleet_rows.EXIT_BURNING
    assert fleet_rows.alarm_text([shown]) == "1 box still up after its release"
    assert "still up and billing" in fleet_rows.fleet_table([shown])
    later.billing.persist(force=True)
    assert ledger.get("gpu1", BOOT)["cost"] == pytest.approx(2.0)  # 1000 -> 3000 s at 3.6/h


def test_the_box_alarm_pushed_live_reopens_the_session(tmp_path):
    ledger = Ledger(str(tmp_path / "l.db"))
    now = [1501.0]
    b = box(ledger, now)
    b.on_autostop({"armed": None}, event=FIRED)
    assert b.billing.ended
    now[0] = 1591.0
    b.on_autostop({"armed": None}, event=UNVERIFIED)
    assert not b.billing.ended and ledger.get("gpu1", BOOT)["end"] is None
    assert b.row().release_alarm


def test_a_box_that_came_back_on_a_new_boot_is_a_new_session_without_alarm(tmp_path):
    ledger = Ledger(str(tmp_path / "l.db"))
    now = [1501.0]
    b = box(ledger, now)
    b.on_autostop({"armed": None}, event=FIRED)
    now[0] = 9000.0
    again = fleet_rows.FleetBox(fleet_rows.FleetHost("gpu1"), HostConfig(rate=3.6), ledger,
                                clock=lambda: now[0])
    again.on_inventory(inventory("boot-2"))
    assert ledger.get("gpu1", BOOT)["ended_how"] == "released by autostop"
    assert again.billing.release_alarm is None


def test_the_fleet_keeps_looking_at_a_box_a_release_command_ended_lately():
    rows = [{"id": 1, "host": "a", "start": 1000.0, "end": 1500.0, "ended_how": "released by autostop"},
            {"id": 2, "host": "b", "start": 1000.0, "end": 1500.0,
             "ended_how": "released in the provider console"}]
    soon = {h.host: h for h in fleet_rows.fleet_hosts(rows, ["a", "b"], now=2000.0)}
    assert soon["a"].verify and not soon["a"].released  # connected, to check it went down
    assert soon["b"].released and not soon["b"].verify
    # in the fleet even when the config does not name it (a `gputui connect user@host` box)
    assert [h.host for h in fleet_rows.fleet_hosts(rows, [], now=2000.0)] == ["a"]
    late = {h.host: h for h in fleet_rows.fleet_hosts(rows, ["a", "b"], now=1500.0 + 2 * 86400)}
    assert late["a"].released and not late["a"].verify
    # while it is being checked (not reached yet) it shows released, not "connecting"
    b = fleet_rows.FleetBox(soon["a"], HostConfig())
    assert b.row().state == fleet_rows.RELEASED


def test_status_says_it_loudly():
    reply = {"inventory": {"gpus": [], "host": {}},
             "autostop": {"armed": None, "release": {"ran_at": 1500.0, "command": "true", "exit": 0,
                                                     "verified": False}}}
    doc = report.status_json(reply, "gpu1")
    assert doc["release"]["verified"] is False
    line = report.release_line(doc["release"])
    assert line.startswith("⚠ release command ran at ")
    assert "but the box is still up and billing (`true`, exit 0)" in line
    pending = report.release_line(dict(doc["release"], verified=None))
    assert "still up" not in pending and "checking that the box goes down" in pending
    assert report.release_line(None) is None


def test_the_exporter_says_release_unverified(tmp_path):
    from tui.core.fleet.metrics import export_view, metric_families
    ledger = Ledger(str(tmp_path / "l.db"))
    now = [1501.0]
    b = box(ledger, now)
    b.on_autostop({"armed": None}, event=FIRED)

    def gauge(v):
        fam = next(f for f in metric_families([v]) if f.name == "gputui_release_unverified")
        return [(s.labels["Hostname"], s.value) for s in fam.samples]

    assert gauge(export_view(b, now[0])) == [("gpu1", 0.0)]
    now[0] = 1591.0
    b.on_autostop({"armed": None}, event=UNVERIFIED)
    assert gauge(export_view(b, now[0])) == [("gpu1", 1.0)]
