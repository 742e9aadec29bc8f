"""The footer keeps only the keys it shows (issue 25): Textual's Footer rebuilds its keys whenever
the screen's bindings change, and each old key stayed alive through a watcher on the Footer (26
dead keys on the dashboard at start, 13 more after every modal or focus change)."""

import gc

from textual.widgets._footer import FooterKey

from tests.support.snapshot_app import canned_app
from tui.ui.widgets.footer import Footer, drop_closed_watchers


def live_keys():
    gc.collect()
    return [o for o in gc.get_objects() if isinstance(o, FooterKey)]


async def settled_keys(pilot, footer, good, seconds=10.0):
    """The footer's key count once `good(count)` holds (the footer recomposes after a pause
    that a loaded machine stretches; a fixed 0.3 s read 0 keys once under load), or the last
    count after `seconds`."""
    for _ in range(int(seconds / 0.1)):
        n = len(footer.query(FooterKey))
        if good(n):
            return n
        await pilot.pause(0.1)
    return len(footer.query(FooterKey))


async def test_the_dashboard_footer_forgets_the_keys_it_replaced():
    before = {id(k) for k in live_keys()}  # another test's, not this app's
    app = canned_app(2)
    async with app.run_test(size=(120, 40)) as pilot:
        app.feed()
        footer = app.screen.query_one(Footer)
        shown = await settled_keys(pilot, footer, lambda n: n >= 10)
        assert shown >= 10  # the dashboard's keys are all there
        for _ in range(4):  # what a modal closing or a focus change does
            app.screen.refresh_bindings()
            await pilot.pause(0.2)
        assert await settled_keys(pilot, footer, lambda n: n == shown) == shown
        alive = [k for k in live_keys() if id(k) not in before]
        assert len(alive) == shown, "%d keys alive for %d shown" % (len(alive), shown)
        assert all(k.parent is footer for k in alive)


class _Closing:
    def __init__(self, closing):
        self._closing = closing


def test_drop_closed_watchers_keeps_the_live_ones_in_order():
    node = type("Node", (), {})()
    a, b, c = _Closing(False), _Closing(True), _Closing(False)
    setattr(node, "__watchers", {"compact": [(a, 1), (b, 2), (c, 3)], "other": [(b, 4)]})
    assert drop_closed_watchers(node) == 2
    assert getattr(node, "__watchers") == {"compact": [(a, 1), (c, 3)], "other": []}
    assert drop_closed_watchers(object()) == 0  # a node nothing watches
