"""The app on a hostile box (issue 10): a GPU job whose argv is markup and escapes, tmux
sessions and windows named like links, artifacts named to break the Release screen.
Every screen is walked; nothing may crash, act on a click-link, or paint a control code."""

import os
import sys

import pytest
import tomli_w

from tui.core.config import Config
from tui.core.billing.ledger import Ledger
from tui.remote import ssh
from tui.ui.app import GputuiApp
from tui.ui.screens.modals import ConfirmScreen
from tui.ui.screens.release_screen import ReleaseScreen
from tui.ui.screens.tmux_screen import TmuxScreen

from tests.support.hostile import ARGV0_SHOWN, assert_inert, make_artifacts
from tests.e2e.test_app import SIZE, wait_for
from tests.e2e.test_hostile import start_hostile_box

pytestmark = pytest.mark.timeout(300)


def painted(app):
    """Everything on the current screen as the terminal would get it (text of the SVG)."""
    svg = app.export_screenshot()
    assert_inert(svg)
    return svg


def notifications(app):
    return [n.message for n in app._notifications]


async def test_dashboard_tmux_and_release_screens_with_a_hostile_box(sshbox, tmp_path):
    work = tmp_path / "work"
    made = make_artifacts(work / "ckpt")
    cfg_path = tmp_path / "config.toml"
    cfg_path.write_text(tomli_w.dumps({"hosts": {"testbox": {
        "rate": 1.0, "provider": "runpod", "artifact_paths": [str(work)], "search_paths": [str(work)],
        "temp_dirs": [str(tmp_path / "none")], "cache_dirs": [], "python": sys.executable,
        "allow_kill": True}}}))
    conn = await start_hostile_box(sshbox)
    app = GputuiApp(ssh.Target.parse("testbox", ssh_config=sshbox.ssh_config), simulate="adopt",
                    remote_dir=sshbox.remote_dir, config=Config.load(str(cfg_path)),
                    ledger=Ledger(str(tmp_path / "l.db")))
    try:
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await wait_for(pilot, lambda: app.box.state.samples_seen >= 2 and app.box.state.unprotected()
                           and app.box.state.tmux_sessions(), timeout=30)
            await pilot.pause(0.5)
            # dashboard: the Hydra-style override and the click-link are text; escapes are shown
            screen = painted(app)
            notice = str(app.query_one("#notice").render())
            assert ARGV0_SHOWN in notice
            procs = app.query_one("#procs")
            cmd = procs.get_row_at(0)[-1]
            # (cut to the column's width: the start is what must read right)
            assert cmd.plain.startswith("\\x1b]52;c;aGk=\\x07[@click=app.quit]X[/]")
            assert [s.style for s in cmd.spans][:1] == ["reverse dim"]  # the escape, marked
            assert "\\x1b]52" in screen

            # the process filter is the user's text: "[/]" as a filter neither crashes the app
            # (it did: MarkupError in the table's title) nor vanishes from the title
            from textual.widgets import Input
            from tui.ui.screens.filter_dialog import FilterScreen
            for typed in ("[/]", "[bold red]x"):
                await pilot.press("slash")
                await wait_for(pilot, lambda: isinstance(app.screen, FilterScreen))
                app.screen.query_one(Input).value = typed
                await pilot.press("enter")
                await wait_for(pilot, lambda: typed in str(app.query_one("#procs").border_title))
                assert app.is_running and app.return_code is None
                painted(app)
            await pilot.press("slash")
            await wait_for(pilot, lambda: isinstance(app.screen, FilterScreen))
            app.screen.query_one(Input).value = ""
            await pilot.press("enter")
            await wait_for(pilot, lambda: "filter" not in str(app.query_one("#procs").border_title))

            # tmux panel: session and window names are text; clicking the link-name quits nothing
            await pilot.press("t")
            await wait_for(pilot, lambda: isinstance(app.screen, TmuxScreen))
            await pilot.pause(0.5)
            painted(app)
            table = app.screen.query_one("#panes")
            names = [table.get_row_at(i)[0].plain for i in range(table.row_count)]
            assert "[/]" in names and any("CLICKME" in n for n in names)
            for row in range(table.row_count):
                await pilot.click("#panes", offset=(3, row + 1))
                await pilot.click("#panes", offset=(24, row + 1))  # the window column
            await pilot.pause(0.3)
            assert app.is_running and app.return_code is None
            await pilot.press("k")  # kill confirmation shows the session name as text
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            painted(app)
            await pilot.press("n")
            await pilot.press("escape")

            # help and doctor: painted without a control code
            from tui.ui.screens.doctor import DoctorScreen
            from tui.ui.screens.modals import HelpScreen
            await pilot.press("question_mark")
            await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
            painted(app)
            await pilot.press("escape")
            await pilot.press("d")
            await wait_for(pilot, lambda: isinstance(app.screen, DoctorScreen)
                           and app.screen.query_one("#checks").row_count > 0, timeout=90)
            painted(app)
            await pilot.press("escape")

            # Release screen: hostile artifact names in the table, details, progress, notices
            await pilot.press("R")
            await wait_for(pilot, lambda: isinstance(app.screen, ReleaseScreen) and app.screen.items,
                           timeout=60)
            rel = app.screen
            rows = [i.key for i in rel.items]
            rel.query_one("#items").move_cursor(row=rows.index("artifacts"))
            await pilot.pause(0.3)
            details = str(rel.query_one("#details-text").render())
            assert "[@click=app.quit]CLICKME[/].pt" in details and "\\x1b[2J" in details
            painted(app)
            await pilot.press("k")  # kill confirmation: the hostile argv as text
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            assert "[@click=app.quit]" in app.screen.question
            painted(app)
            await pilot.press("n")
            await pilot.press("g")
            await wait_for(pilot, lambda: {i.key: i for i in rel.items}["artifacts"].verdict == "pass",
                           timeout=90)
            painted(app)
            for message in notifications(app):
                assert_inert(message)
            base = rel.release.base
            saved = [n for _, _, files in os.walk(base) for n in files]
            assert "plain.pt" in saved and "ckpt[" not in saved
            assert any(n.endswith(".pt") and "~" in n for n in saved)  # the long names, renamed
            if "bad_utf8" in made:  # not UTF-8 on the box: saved under a safe name that maps back
                assert any(n.startswith("bad__name~") and n.endswith(".pt") for n in saved), saved
            await pilot.press("escape")
            await pilot.press("q")
        assert app.return_code in (0, None)
    finally:
        conn.close()
