"""Every key a screen has is in its footer and in `?` (issue 23: N, e/v/t/m on Release, enter
on the fleet, esc back from a box were missing), help lists gputui's keys only (not Textual's
"Scroll Left"/"Cursor up", `q` rather than ^q), and the palette finds actions by what they do."""

import asyncio

import pytest
from textual.widgets._footer import FooterKey

from tui.ui.palette import description_matches, palette_score

from tests.support.fleet_canned import canned_fleet_app
from tests.support.snapshot_app import canned_app

WIDTH = 120  # the common terminal: the footer must fit every key there


def own_bindings(app, screen):
    """The bindings of the screen and the app that a user can press here."""
    out = {}
    for _key, active in screen.active_bindings.items():
        b = active.binding
        if b.description and b.id and not b.system and active.node in (screen, app):
            out.setdefault(b.action, b)
    return out


def check_screen(app, where):
    screen = app.screen
    bindings = own_bindings(app, screen)
    assert bindings, where
    footer = {k.action: k for k in screen.query(FooterKey)}
    help_actions = {desc for _k, desc, _t in app.screen_keys()}
    shared = {k.key_display: k for k in footer.values()}  # "s/S Sort": S shares s's slot
    for action, b in bindings.items():
        slot = footer.get(action) or next((k for d, k in shared.items() if d and b.key in d.split("/")), None)
        assert slot is not None, "%s: %r (%s) not in the footer" % (where, b.key, action)
        region = slot.region
        assert region.width > 0 and region.right <= WIDTH, "%s: %r cut off the footer" % (where, b.key)
        if slot.key_display and b.key in slot.key_display.split("/") and footer.get(action) is None:
            # S shares s's slot: help tells it in that row, once ("s/S Sort ... (S: reverse)")
            row = [t for k, _d, t in app.screen_keys() if k == slot.key_display]
            assert row and b.key + ":" in (row[0] or ""), "%s: %r not in help" % (where, b.key)
        else:
            assert b.description in help_actions, "%s: %r not in help" % (where, b.key)
    keys = [k for k, _d, _t in app.screen_keys()]
    assert "q" in keys and "^q" not in keys, where
    generic = {"Scroll Left", "Scroll Right", "Cursor up", "Cursor down", "Page up", "Top"}
    assert not generic & help_actions, where
    return bindings


async def settled(pilot, app, where, timeout=10.0):
    """check_screen once the footer has caught up: on a loaded box the footer recomposes a
    few frames after the screen's bindings change, so a fixed pause is not enough."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        try:
            return check_screen(app, where)
        except AssertionError:
            if loop.time() > end:
                raise
            await pilot.pause(0.1)


async def test_every_screen_shows_every_key():
    app = canned_app(2)
    async with app.run_test(size=(WIDTH, 40)) as pilot:
        app.feed()
        await pilot.pause(0.3)
        seen = await settled(pilot, app, "dashboard")
        assert "nvitop" in seen
        for key, name, must in (("t", "tmux", "attach"), ("d", "doctor", "rerun"),
                                ("R", "release", "manual")):
            await pilot.press(key)
            await pilot.pause(0.8)
            seen = await settled(pilot, app, name)
            assert must in seen, name
            if name == "release":
                assert {"capture_env", "verify", "tmux", "manual"} <= set(seen)
            await pilot.press("escape")
            await pilot.pause(0.3)


async def test_the_fleet_shows_enter_and_escape_back():
    app = canned_fleet_app()
    async with app.run_test(size=(WIDTH, 40)) as pilot:
        app.feed()
        await pilot.pause(0.8)
        seen = await settled(pilot, app, "fleet")
        assert "open" in seen and "back_to_fleet" not in seen  # nothing to go back to here
        await pilot.press("enter")
        await pilot.pause(0.8)
        seen = await settled(pilot, app, "fleet dashboard")
        assert "back_to_fleet" in seen


async def test_help_lists_gputui_keys_only():
    app = canned_app(2)
    async with app.run_test(size=(WIDTH, 40)) as pilot:
        app.feed()
        await pilot.pause(0.3)
        await pilot.press("question_mark")
        await pilot.pause(0.3)
        text = str(app.screen.query_one("#help-text").render())
        assert " q " in text and "^q" not in text and "Scroll Left" not in text
        assert "nvitop" in text


async def test_help_lists_each_key_once():
    """`S` was listed twice: in "s/S Sort ... (S: reverse)" and again as "S Reverse"."""
    app = canned_app(2)
    async with app.run_test(size=(WIDTH, 40)) as pilot:
        app.feed()
        await pilot.pause(0.3)
        keys = [k for k, _d, _t in app.screen_keys()]
        singles = [part for k in keys for part in (k.split("/") if len(k) > 1 else [k])]
        assert len(singles) == len(set(singles)), keys
        assert "s/S" in keys and "S" not in keys
        await pilot.press("question_mark")
        await pilot.pause(0.3)
        text = str(app.screen.query_one("#help-text").render())
        assert "Reverse the process order" not in text and "(S: reverse)" in text


@pytest.mark.parametrize("query,name,help_text,found", [
    ("price", "Rate", "Enter the price this box bills per hour  [b]", True),
    ("bill", "Rate", "Enter the price this box bills per hour  [b]", True),
    ("shutdown", "Release", "Shutdown checklist: jobs, VRAM, downloads  [R]", True),
    ("kill", "tmux", "tmux sessions on the box: new job, attach, Ctrl-C, kill, rename  [t]", True),
    ("prc", "Rate", "Enter the price this box bills per hour", False),  # no fuzzy in sentences
    ("kill box", "tmux", "kill, rename", False),  # every word must be there
    ("", "Rate", "price", False),
])
def test_palette_matches_descriptions(query, name, help_text, found):
    assert description_matches(query, help_text) is found
    assert (palette_score(query, name, help_text, 0.0) > 0) is found
    assert palette_score(query, name, help_text, 0.9) == 0.9  # a name match keeps its score


async def test_palette_finds_the_rate_by_price():
    from textual.command import CommandPalette
    app = canned_app(2)
    async with app.run_test(size=(WIDTH, 40)) as pilot:
        app.feed()
        await pilot.pause(0.3)
        await pilot.press("ctrl+p")
        await pilot.pause(0.3)
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"price")
        await pilot.pause(0.8)
        from textual.command import CommandList
        options = app.screen.query_one(CommandList)
        shown = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert any("Rate" in s for s in shown), shown
