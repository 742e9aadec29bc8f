"""`r` says "Reconnecting…" and then, when it is, "Reconnected" (issue 23); a drop that heals
by itself says so too; the first connect does not."""

import pytest

from tui.ui.app import _AppListener
from tui.ui.flows import reconnected

from tests.support.snapshot_app import canned_app


@pytest.mark.parametrize("pending,old,new,said", [
    (True, "reconnecting", "live", True),
    (True, "starting_probe", "live", True),    # after r, or a drop, through the deploy steps
    (False, "connecting", "live", False),      # the first connect
    (False, "starting_probe", "live", False),
    (True, "live", "live", False),
    (True, "reconnecting", "failed", False),
])
def test_when_reconnected_is_said(pending, old, new, said):
    assert reconnected(pending, old, new) is said


async def test_a_drop_that_heals_says_reconnected():
    app = canned_app(2)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        app.feed()
        await pilot.pause(0.2)
        listener = _AppListener(app)
        for state in ("reconnecting", "connecting", "starting_probe", "live"):
            listener.on_state(state)
        await pilot.pause(0.1)
        assert [n.message for n in app._notifications][-1] == "Reconnected to snapbox"


async def test_r_then_reconnected_toast():
    app = canned_app(2)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        app.feed()
        await pilot.pause(0.2)
        listener = _AppListener(app)
        await pilot.press("r")
        await pilot.pause(0.1)
        listener.on_state("reconnecting")
        listener.on_state("starting_probe")
        await pilot.pause(0.1)
        assert not any("Reconnected" in n.message for n in app._notifications)
        listener.on_state("live")
        await pilot.pause(0.1)
        said = [n.message for n in app._notifications]
        assert any("Reconnecting to snapbox" in m for m in said)
        assert said[-1] == "Reconnected to snapbox"
        assert not app.box.reconnect_asked
