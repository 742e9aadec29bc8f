"""`gputui status` says the box's clocks loudly, `status --json` lists them (issue 36)."""

from tests.unit.tui.core.test_status_report import reply
from tui.core import report
from tui.core.jobs import clock_lines

AT = 1796585820.0  # 2026-12-06T19:37:00Z
SPOT = {"kind": "spot_notice", "source": "aws", "action": "terminate", "at": AT,
        "seconds_left": 552.4, "what": "AWS spot interruption (terminate)"}
BALANCE = {"kind": "balance_zero", "source": "provider", "action": "stop", "at": AT + 3600,
           "seconds_left": 4152.0, "what": "provider balance runs out (the box is stopped)"}


def test_json_lists_the_clocks_soonest_first():
    doc = report.status_json(dict(reply(), clocks=[BALANCE, SPOT, {"kind": "x", "at": None}]), "box")
    assert [c["kind"] for c in doc["clocks"]] == ["spot_notice", "balance_zero"]
    assert doc["clocks"][0] == SPOT
    assert report.status_json(reply(), "box")["clocks"] == []  # an older probe: no clocks


def test_text_prints_each_clock_loudly_and_box_text_inert():
    text = report.status_text(report.status_json(dict(reply(), clocks=[SPOT, BALANCE]), "box"))
    lines = text.splitlines()
    assert ("!! AWS spot interruption (terminate) in 9:12, at 19:37 UTC: save a checkpoint and "
            "copy it off now: the disk goes with the box") in lines
    assert any(ln.startswith("!! provider balance runs out") and "top up" in ln for ln in lines)
    assert lines.index(next(ln for ln in lines if ln.startswith("!! AWS"))) < 3  # near the top
    hostile = dict(SPOT, what="\x1b[31mred[/b]\x07")
    shown = report.status_text(report.status_json(dict(reply(), clocks=[hostile]), "box"))
    assert "\x1b" not in shown and "\x07" not in shown
    assert "!!" not in report.status_text(report.status_json(reply(), "box"))


DAY = 86400.0


def session(host, start, end, provider="AutoDL"):
    return {"host": host, "start": start, "end": end, "provider": provider}


def test_a_shut_down_autodl_box_is_released_15_days_after_its_last_session():
    now = 1_800_000_000.0
    rows = [session("a", now - 40 * DAY, now - 39 * DAY),      # an older session of a
            session("a", now - 3 * DAY, now - 2 * DAY),         # a shut down 2 days ago
            session("b", now - DAY, None),                      # b is running: no clock
            session("c", now - 5 * DAY, now - 4 * DAY, "RunPod"),  # a real release: no clock
            session("d", now - 20 * DAY, now - 16 * DAY)]       # d: its clock ran out
    clocks = clock_lines.shutdown_clocks(rows, now)
    assert [(c["host"], c["at"], c["seconds_left"]) for c in clocks] == [
        ("d", now - DAY, 0.0), ("a", now + 13 * DAY, 13 * DAY)]
    line = clock_lines.shutdown_line(clocks[1])
    assert line.startswith("!! a: an instance shut down for 15 days is released: everything but "
                           "autodl-fs is wiped — on ")
    assert line.endswith("(in 13d 00h)")


def test_host_names_from_the_ledger_are_inert():
    rows = [session("evil\x1b[2J", 0.0, 10.0)]
    assert "\x1b" not in clock_lines.shutdown_line(clock_lines.shutdown_clocks(rows, 20.0)[0])


def test_the_dashboard_counts_the_soonest_clock_down_and_keeps_box_text_inert():
    from tui.core import from_wire
    from tui.core.jobs.clock_lines import clock_notice
    rows = [{"kind": "balance_zero", "at": 5000.0, "what": "RunPod balance at zero", "action": "stop"},
            {"kind": "spot_notice", "at": 1120.0, "what": "AWS spot interruption [b]\x1b[31m", "action": "terminate"},
            {"kind": "", "at": 1.0}, {"kind": "spot_notice"}]
    clocks = from_wire.jobs({"clocks": rows}).clocks
    assert [c.kind for c in clocks] == ["spot_notice", "balance_zero"]  # soonest first, bad rows dropped
    line = clock_notice(clocks, now=1000.0)
    assert line.startswith("!! AWS spot interruption [b]") and "\x1b" not in line
    assert " in 2:00, at " in line and "(+1 more: gputui status)" in line
    from tui.core.text import format as fmt
    assert " in %s, at " % fmt.duration(0.0) in clock_notice(clocks, now=2000.0)  # struck: never negative
