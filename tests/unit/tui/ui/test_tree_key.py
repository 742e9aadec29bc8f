"""`T` on a box whose GPU processes have no parent among them (h100x8: each rank started by
its own shell): the tree looks like the list, so the dashboard says why, and the panel title
says the tree is on (before, `T` seemed to do nothing)."""

from tests.support import snapshot_app
from tests.support.snapshot_app import canned_app

FLAT = "the tree is flat"


def toasts(app):
    return [str(n.message) for n in app._notifications]


async def test_t_on_flat_ranks_says_why_and_the_title_says_tree(monkeypatch):
    monkeypatch.setattr(snapshot_app, "_canned_parent", lambda i: 1)  # every rank under PID 1
    app = canned_app(2)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        app.feed()
        await pilot.pause(0.3)
        table = app.query_one("#procs")
        assert "tree" not in str(table.border_title)
        await pilot.press("T")
        await pilot.pause(0.3)
        assert app.box.state.proc_tree
        assert any(FLAT in t for t in toasts(app)), toasts(app)
        assert "tree" in str(table.border_title)
        await pilot.press("T")  # back to the list: the title drops the word, no new toast
        await pilot.pause(0.3)
        assert "tree" not in str(table.border_title)
        assert sum(FLAT in t for t in toasts(app)) == 1


async def test_t_on_a_real_tree_draws_it_without_a_toast():
    app = canned_app(2)  # rank 0 spawned the others
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        app.feed()
        await pilot.pause(0.3)
        await pilot.press("T")
        await pilot.pause(0.3)
        assert not any(FLAT in t for t in toasts(app))
        assert "tree" in str(app.query_one("#procs").border_title)
