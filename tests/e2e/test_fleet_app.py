"""The fleet screen in the real app over a real sshd: rows for every box, the alarm header and
one bell per idle box, sorting, enter opens the box's dashboard and escape returns without
reconnecting anything."""

from tui.ui.fleet_app import FleetApp
from tui.ui.screens.dashboard import DashboardScreen
from tui.ui.screens.fleet_screen import FleetScreen

from tests.support.fleet_fixtures import simfleet  # noqa: F401 - the fixture


async def wait_for(pilot, cond, seconds=60):
    for _ in range(int(seconds * 10)):
        if cond():
            return True
        await pilot.pause(0.1)
    return cond()


async def test_fleet_screen_alarm_dashboard_and_back(simfleet):  # noqa: F811
    import os
    path = os.path.join(simfleet.config_dir, "config.toml")
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:  # a spent budget on "busy": its warning reaches the fleet
        f.write(text.replace("rate = 10.0\n", "rate = 10.0\nbudget_session = 1\n", 1))
    app = FleetApp(ssh_config=simfleet.ssh_config)
    bells = []
    app.bell = lambda: bells.append(1)
    async with app.run_test(size=(170, 30)) as pilot:
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        assert await wait_for(pilot, lambda: sum(b.session_state == "live" for b in app.fleet.boxes) == 3)
        header = lambda: str(screen.query_one("#fleet-header").render())  # noqa: E731
        assert await wait_for(pilot, lambda: "1 box idle, ¥8.40/h burning" in header(), 30), header()
        await pilot.pause(1.2)
        said = [n.message for n in app._notifications]
        assert len([m for m in said if m.startswith("idle1: every GPU idle")]) == 1, said
        assert "Budget: 100% of ¥1.00 spent (this session) on busy" in said
        # the idle box once (not once per second) + busy's budget: its 3 levels crossed at one
        # moment are one warning (issue 23)
        assert len(bells) == 2
        assert "3 live" in header() and "1 released" in header() and "1 unreachable" in header()
        table = screen.query_one("#fleet-table")
        cells = {r: [str(c) for c in table.get_row(r)] for r in screen.order}
        assert cells["idle1"][0].startswith("idle1 ⚠") and "idle and billing" in cells["idle1"][-1]
        assert cells["busy"][1] == "live" and cells["busy"][3] == "2"
        assert "/160G" in cells["busy"][2]
        assert cells["deadbox"][1] == "unreachable" and "refused" in cells["deadbox"][-1].lower()
        assert cells["gone"][1] == "released" and cells["gone"][6] == "¥12.50"
        # sort: cost -> idle -> name
        await pilot.press("s")
        assert screen.sort_key == "idle" and screen.order[0] == "idle1"
        await pilot.press("s")
        assert screen.order == ["busy", "cpubox", "deadbox", "idle1", "gone"]  # released last
        # enter on "busy" opens its dashboard; escape returns; nothing reconnected
        connects = {b.host: b.connects for b in app.fleet.boxes}
        table.move_cursor(row=screen.order.index("busy"))
        await pilot.press("enter")
        assert await wait_for(pilot, lambda: isinstance(app.screen, DashboardScreen), 5)
        assert app.screen.box.label == "busy" and app.screen.box.session.target.host == "busy"
        panel = lambda: str(app.screen.query_one("#gpus").render())  # noqa: E731
        assert await wait_for(pilot, lambda: panel().count("A100") >= 2, 10), panel()
        await pilot.press("escape")
        assert app.screen is screen
        assert {b.host: b.connects for b in app.fleet.boxes} == connects
        # a: the dashboard's autostop flow for the selected box (opt-in: off in this config)
        await pilot.press("a")
        assert await wait_for(pilot, lambda: any(
            "Autostop is off for busy" in n.message for n in app._notifications), 5)
        # N: nvitop for that box; not installed there, so the exact install command is asked
        from tui.ui.screens.modals import ConfirmScreen
        await pilot.press("N")
        assert await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 15)
        assert "pip install" in app.screen.question.plain and "remote-busy/nvitop" in app.screen.question.plain
        await pilot.press("n")
        assert await wait_for(pilot, lambda: app.screen is screen, 5)
        # R: the release screen of that box, escape back to the fleet
        from tui.ui.screens.release_screen import ReleaseScreen
        await pilot.press("R")
        assert await wait_for(pilot, lambda: isinstance(app.screen, ReleaseScreen), 5)
        assert app.screen.box.host == "busy"
        await pilot.press("escape")
        assert await wait_for(pilot, lambda: app.screen is screen, 5)
        # the released box has no dashboard: a notice, not a crash
        table.move_cursor(row=screen.order.index("gone"))
        await pilot.press("enter")
        assert app.screen is screen
        await app.action_quit()


async def test_unknown_host_key_is_asked_in_the_fleet(untrusted_sshbox, tmp_path):
    """A fleet box with an unknown key: the dialog shows the fingerprint; y trusts it and the
    box goes live (the sessions are plain tasks, not workers)."""
    from tui.core.config import Config
    from tui.core.billing.ledger import Ledger
    from tui.ui.screens.modals import HostKeyScreen
    cfg = tmp_path / "config.toml"
    cfg.write_text('[hosts.testbox]\nsimulate = "idle"\nremote_dir = "%s"\n' % untrusted_sshbox.remote_dir)
    app = FleetApp(ssh_config=untrusted_sshbox.ssh_config, config=Config.load(str(cfg)),
                   ledger=Ledger(str(tmp_path / "l.sqlite3")))
    async with app.run_test(size=(160, 30)) as pilot:
        assert await wait_for(pilot, lambda: isinstance(app.screen, HostKeyScreen), 30)
        await pilot.press("y")
        assert await wait_for(pilot, lambda: app.fleet.boxes[0].session_state == "live", 30)
        assert "127.0.0.1" in untrusted_sshbox.known_hosts.read_text()
        await app.action_quit()
