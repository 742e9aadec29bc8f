"""Snapshots of the real screens with canned data (pytest-textual-snapshot): the dashboard and
help at 80x24, 120x40 and 200x60 with 1, 2 and 8 GPUs. Regenerate after an intended change:
`pytest tests/unit/tui/ui/test_snapshots.py --snapshot-update`, then look at the report."""

import time

import pytest

from tests.support.snapshot_app import canned_app

SIZES = [(80, 24), (120, 40), (200, 60)]


@pytest.fixture(autouse=True)
def utc(monkeypatch):
    """The billing panel prints local clock times: the same picture in every time zone."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


async def _fed(pilot):
    pilot.app.feed()
    await pilot.pause(0.3)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: "%dx%d" % s)
@pytest.mark.parametrize("gpus", [1, 2, 8])
def test_dashboard(snap_compare, gpus, size):
    assert snap_compare(canned_app(gpus), terminal_size=size, run_before=_fed)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=lambda s: "%dx%d" % s)
def test_dashboard_tree(snap_compare, size):
    """`T`: processes under their parents, drawn with box characters before the command."""
    async def tree(pilot):
        await _fed(pilot)
        await pilot.press("T")
        await pilot.pause(0.2)
    assert snap_compare(canned_app(2), terminal_size=size, run_before=tree)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: "%dx%d" % s)
def test_help(snap_compare, size):
    async def help_open(pilot):
        await _fed(pilot)
        await pilot.press("question_mark")
        await pilot.pause(0.2)
    assert snap_compare(canned_app(2), terminal_size=size, run_before=help_open)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: "%dx%d" % s)
@pytest.mark.parametrize("key", ["R", "d", "t"], ids=["release", "doctor", "tmux"])
def test_screens(snap_compare, key, size):
    async def opened(pilot):
        await _fed(pilot)
        await pilot.press(key)
        await pilot.pause(1.0)
        refresh = getattr(pilot.app.screen, "refresh_items", None)
        if refresh is not None:
            # what its 2 s timer does: taken either way, the picture does not depend on whether
            # the timer fired before the snapshot (it does on a loaded machine, under xdist)
            refresh()
            await pilot.pause()
    assert snap_compare(canned_app(2), terminal_size=size, run_before=opened)


@pytest.mark.parametrize("size", [(80, 24), (160, 50)], ids=lambda s: "%dx%d" % s)
def test_fleet_zh(snap_compare, size):
    """The fleet screen in Chinese (issue 14): double-width titles, states and the alarm."""
    from tui.core.i18n import set_language

    from tests.support.fleet_canned import canned_fleet_app

    async def fed(pilot):
        pilot.app.feed()
        await pilot.pause(1.0)

    set_language("zh")  # before the app is built: bindings and titles are translated then
    try:
        assert snap_compare(canned_fleet_app(), terminal_size=size, run_before=fed)
    finally:
        set_language("en")


def _modal(name):
    """The dialog `name` over the fed dashboard, built as the app builds it."""
    from tui.ui.screens.modals import (AutostopScreen, ConfirmScreen, PasswordScreen,
                                       RateScreen)
    return {
        "rate": lambda: RateScreen("snapbox", 11.96, "CNY", "hour"),
        "autostop": lambda: AutostopScreen("snapbox", "shutdown -h now", 30, 8, 60,
                                           cancel_command="sh /root/.cache/gputui/cancel-autostop"),
        "password": lambda: PasswordScreen("root@snapbox's password", [("Password:", False)]),
        "confirm": lambda: ConfirmScreen("Kill tmux session 'train vit-l16' and everything running in it?"),
    }[name]()


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=lambda s: "%dx%d" % s)
@pytest.mark.parametrize("name", ["rate", "autostop", "password", "confirm"])
def test_dialogs(snap_compare, name, size):
    """The modal dialogs (issue 23): their text, fields and buttons at small and common sizes."""
    async def opened(pilot):
        await _fed(pilot)
        pilot.app.push_screen(_modal(name))
        await pilot.pause(0.5)
        from textual.widgets import Input
        for field in pilot.app.screen.query(Input):
            # the cursor blinks every 0.5 s: on a loaded box the picture caught either phase
            field.cursor_blink = False
        await pilot.pause()
    assert snap_compare(canned_app(2), terminal_size=size, run_before=opened)
