"""The fleet's decisions: which hosts, idle streak, row state, verdict, sort, alarm, --check."""

import pytest

from remote_probe import wire
from tui.core.fleet import rows as fleet
from tui.core.config import Config, HostConfig
from tui.core.fleet.rows import BoxRow, FleetBox, FleetHost, IdleStreak


def test_fleet_hosts_open_ledger_then_config_released_marked():
    ledger = [
        {"id": 1, "host": "old", "start": 10, "end": 50, "ended_how": "released"},
        {"id": 2, "host": "a", "start": 20, "end": None},
        {"id": 3, "host": "b", "start": 5, "end": 9},  # ended, but reopened below
        {"id": 4, "host": "b", "start": 30, "end": None},
    ]
    hosts = fleet.fleet_hosts(ledger, ["c", "a", "old"])
    assert [(h.host, h.released) for h in hosts] == [("a", False), ("b", False), ("c", False),
                                                     ("old", True)]
    assert hosts[1].ledger_row["id"] == 4 and hosts[2].ledger_row is None
    explicit = fleet.fleet_hosts(ledger, ["c"], explicit=["old", "z", "old"])
    assert [(h.host, h.released) for h in explicit] == [("old", True), ("z", False)]


@pytest.mark.parametrize("events,expected", [
    ([(1, True), (2, True), (5, True)], 4),
    ([(1, True), (2, False), (3, True), (10, True)], 7),
    ([(1, True), (2, True), (3, False)], None),
    ([(1, True), (100, True), (101, True)], 1),  # a gap past max_gap starts a new run
    ([(1, True), (31, True), (61, True)], 60),  # downsampled history (1 in 30 s) keeps it
    ([(5, True), (3, False), (9, True)], 4),  # backlog overlap: older samples ignored
    ([], None),
])
def test_idle_streak(events, expected):
    s = IdleStreak()
    for t, idle in events:
        s.add(t, idle)
    assert s.seconds() == expected


@pytest.mark.parametrize("session_state,connects,failed,expected", [
    ("live", 1, False, "live"),
    ("connecting", 0, False, "connecting"),
    ("starting probe", 0, False, "connecting"),
    ("reconnecting", 0, True, "unreachable"),
    ("connecting", 0, True, "unreachable"),  # the next attempt of a box never reached
    ("reconnecting", 2, True, "reconnecting"),
    ("deploying probe", 1, False, "reconnecting"),
    ("failed", 0, True, "unreachable"),
])
def test_row_state(session_state, connects, failed, expected):
    assert fleet.row_state(session_state, connects, failed) == expected


@pytest.mark.parametrize("state,idle_for,threshold,expected", [
    ("live", 1800, 1800, True),
    ("live", 1799, 1800, False),
    ("live", None, 1800, False),
    ("reconnecting", 99999, 1800, False),  # data we cannot see now is not judged
    ("unreachable", 99999, 1800, False),
])
def test_idle_burning(state, idle_for, threshold, expected):
    assert fleet.idle_burning(state, idle_for, threshold) is expected


def rows():
    return [
        BoxRow("b", "live", cost=5.0, idle_for=None, rate=2.0),
        BoxRow("a", "live", cost=9.0, idle_for=100, rate=8.4, burning=True),
        BoxRow("c", "unreachable", cost=None, idle_for=None),
        BoxRow("d", "live", cost=1.0, idle_for=4000, rate=10.0, burning=True),
    ]


def test_sort_rows():
    assert [r.host for r in fleet.sort_rows(rows(), "cost")] == ["a", "b", "d", "c"]
    assert [r.host for r in fleet.sort_rows(rows(), "idle")] == ["d", "a", "b", "c"]
    assert [r.host for r in fleet.sort_rows(rows(), "name")] == ["a", "b", "c", "d"]
    with_gone = rows() + [BoxRow("0-gone", "released", cost=999.0)]
    for key in fleet.SORT_KEYS:  # history sinks below the boxes that spend now
        assert fleet.sort_rows(with_gone, key)[-1].host == "0-gone"
    assert fleet.next_sort("name") == "cost"


def test_alarm_text_and_exit_code():
    assert fleet.alarm_text(rows()) == "2 boxes idle, ¥18.40/h burning"
    assert fleet.check_exit_code(rows()) == 1
    calm = [r for r in rows() if not r.burning]
    assert fleet.alarm_text(calm) is None and fleet.check_exit_code(calm) == 0
    mixed = [BoxRow("x", "live", rate=1.5, currency="USD", burning=True),
             BoxRow("y", "live", rate=3.0, burning=True), BoxRow("z", "live", burning=True)]
    assert fleet.alarm_text(mixed) == "3 boxes idle, ¥3.00/h + $1.50/h burning (1 with no rate set)"
    assert fleet.alarm_text(mixed[:1]) == "1 box idle, $1.50/h burning"


def test_bell_once_per_box():
    rung = set()
    assert fleet.new_alarms(rows(), rung) == ["a", "d"]
    assert fleet.new_alarms(rows(), rung) == []
    calmer = rows()
    calmer[1].burning = False
    assert fleet.new_alarms(calmer, rung) == []
    assert fleet.new_alarms(rows(), rung) == ["a"]  # burning again after a busy spell


def test_autostop_and_checklist_labels():
    assert fleet.autostop_label(None) is None
    assert fleet.autostop_label({"armed": None}) == "off"
    assert fleet.autostop_label({"armed": {"idle_seconds": 60}}) == "armed"
    assert fleet.autostop_label({"armed": {}, "grace_left": 81.5}) == "countdown 1:21"
    assert fleet.checklist_verdict({"checklist": '{"verdict": "warn"}'}) == "warn"
    assert fleet.checklist_verdict({"checklist": "not json"}) is None
    assert fleet.checklist_verdict(None) is None


def test_duration_and_gpu_text():
    assert [fleet.duration_text(s) for s in (None, 5, 125, 7260, 90000)] == [
        "—", "5s", "2m", "2h01m", "1d01h"]
    assert fleet.gpu_text([fleet.GpuBar(93, 62464, 81920), fleet.GpuBar(None, None, None)]) == \
        " 93% 61/80G    ?% ?G"


def sample(t, seq, util, procs=()):
    gpu = dict.fromkeys(wire.GPU_FIELDS)
    gpu["util"], gpu["mem_used"] = util, 100
    return {"type": "sample", "seq": seq, "t": t, "gpus": [wire.gpu_row(gpu)],
            "procs": [list(p) for p in procs], "host": {"cpu": 1.0}}


def test_fleet_box_rows_from_listener_calls():
    now = [1000.0]
    cfg = HostConfig(rate=6.0, idle_alarm_minutes=1)
    box = FleetBox(FleetHost("gpu1"), cfg, ledger=None, clock=lambda: now[0])
    assert box.row().state == "connecting"
    box.on_state("connecting")
    box.on_state("reconnecting", "Connection refused - attempt 1, next in 1s")
    box.on_state("connecting", "attempt 1")
    r = box.row()
    assert r.state == "unreachable" and "Connection refused" in r.reason
    box.on_state("live")
    box.on_inventory({"gpus": [{"name": "NVIDIA A100", "mem_total": 81920}],
                      "host": {"instance_start": 400.0, "boot_id": "b1"}})
    for i in range(70):
        box.on_sample(sample(900.0 + i, i + 1, 0))
    box.on_proc_meta([])
    r = box.row()
    assert r.state == "live" and r.idle_for == 69 and r.burning
    assert r.cost == pytest.approx(1.0)  # 600 s at 6/h
    assert r.gpus[0].mem_total == 81920 and r.jobs == 0
    box.on_sample(sample(970.0, 71, 80, procs=[(123, 0, 500, 90, 10, 0), (123, 1, 500, 90, 10, 0),
                                               (124, 1, 9, 0, 1, wire.PROC_GRAPHICS)]))
    r = box.row()
    assert r.idle_for is None and not r.burning and r.jobs == 1  # one DDP process, no graphics
    released = FleetBox(FleetHost("gone", True, {"cost": 12.5, "rate": 2.5, "ended_how": "released",
                                                 "currency": "USD"}), HostConfig())
    r = released.row()
    assert (r.state, r.cost, r.currency, r.burning) == ("released", 12.5, "USD", False)
    assert r.reason == "ended ? (released)"


def test_config_keys_for_the_fleet(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[defaults]\nidle_alarm_minutes = 10\n'
                    '[hosts.sim1]\nsimulate = "idle"\nremote_dir = "/tmp/x"\n')
    cfg = Config.load(str(path))
    h = cfg.host("sim1")
    assert (h.idle_alarm_minutes, h.simulate, h.remote_dir) == (10, "idle", "/tmp/x")
    assert cfg.host("other").idle_alarm_minutes == 10
    assert cfg.problems == []


def test_bare_gputui_opens_the_fleet():
    from tui.cli import build_parser, with_default_command
    assert with_default_command([]) == ["fleet"]
    assert with_default_command(["--log", "x.log"]) == ["--log", "x.log", "fleet"]
    assert with_default_command(["--log=x.log"]) == ["--log=x.log", "fleet"]
    assert with_default_command(["status", "h"]) == ["status", "h"]
    args = build_parser().parse_args(with_default_command([]))
    assert args.cmd == "fleet" and args.hosts == [] and not args.check


def test_fleet_app_with_no_boxes_says_what_to_do(tmp_path):
    import asyncio

    from tui.core.config import Config
    from tui.core.billing.ledger import Ledger
    from tui.ui.fleet_app import FleetApp

    async def run():
        app = FleetApp(config=Config.load(str(tmp_path / "none.toml")),
                       ledger=Ledger(str(tmp_path / "l.sqlite3")))
        async with app.run_test(size=(120, 20)) as pilot:
            await pilot.press("enter", "R", "a", "s")
            assert "No boxes yet" in str(app.screen.query_one("#fleet-header").render())
            await app.action_quit()
    asyncio.run(run())


def test_fleet_table_shows_control_characters_visibly():
    out = fleet.fleet_table([BoxRow("a\x1b[2Jb", "unreachable",
                                    reason="refused \x1b]52;c;Zm9v\x07 \u202egnp.exe")])
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "\\x1b[2J" in out and "\\x1b]52;c;Zm9v\\x07" in out
