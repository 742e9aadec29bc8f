"""Text cut where it matters (issue 23): the dataloader fix stays visible at 120×40, a panel
whose line wraps grows (the "autostop armed" line fell out of the billing panel), and the GPU
graphs grow with the window instead of leaving ~30 empty rows at 200×60."""

import pytest

from tui.core.checks.diagnosis import fit_diagnosis
from tui.core.layout import MAX_GRAPH_ROWS, gpu_plan
from tui.ui.app import _AppListener
from tui.ui.widgets.live import wrapped_rows

from tests.support.snapshot_app import NOW, TMUX, canned_app
from tests.support.watch_canned import jobs_block

LINE = ("GPU starved by data loading: 62% of step time waiting for batches; num_workers=0 loads "
        "every batch in the training process → set num_workers=7 and pin_memory=True")


@pytest.mark.parametrize("width", [200, 120, 74, 60, 40, 20])
def test_the_fix_survives_any_width(width):
    out = fit_diagnosis(LINE, width)
    assert "set num_workers=7 and pin_memory=True" in out
    if width >= 60:
        assert len(out) <= width
    assert fit_diagnosis("short → fix", 40) == "short → fix"
    assert fit_diagnosis("no arrow " * 10, 20).endswith("…")


def test_graphs_grow_with_the_window():
    small = gpu_plan(2, 120, 40, procs=6)
    big = gpu_plan(2, 200, 60, procs=6)
    assert big.graph_height > small.graph_height >= 3
    assert big.graph_height <= MAX_GRAPH_ROWS
    # the process table keeps a row per process (and the minimum)
    assert big.rows + 2 + 2 + 3 + 7 <= 60
    many = gpu_plan(2, 200, 60, procs=200)  # a full table keeps its share
    assert many.rows <= int(60 * 0.45)
    assert gpu_plan(8, 300, 80, procs=0).rows + 2 <= int(80 * 0.6)


def test_wrapped_rows():
    assert wrapped_rows("a\nb", 0) == 2  # unknown width: one row per line
    assert wrapped_rows("autostop armed: idle 30:00 (now 5:00), at 11-30 12:53", 38) == 2
    assert wrapped_rows("x" * 10, 38) == 1



async def test_a_static_shown_late_takes_the_rows_of_its_text():
    """A Static given text while hidden (no width yet) and then a one-row text of the same
    newline count: it must shrink to one row (the dashboard's notice stayed two rows tall while
    the GPU panel was planned with one: CI saw the plan a row off)."""
    from textual.app import App
    from textual.widgets import Static

    from tui.ui.widgets.live import update_text

    class Box(App):
        CSS = "Static { height: auto; display: none; } Static.shown { display: block; }"

        def compose(self):
            yield Static(id="note")

    app = Box()
    async with app.run_test(size=(60, 10)) as pilot:
        note = app.query_one("#note", Static)
        update_text(note, "first\nsecond")  # hidden: no width
        note.add_class("shown")
        await pilot.pause(0.1)
        assert note.region.height == 2
        update_text(note, "one line, no newline, fits in sixty columns")
        await pilot.pause(0.1)
        assert note.region.height == 1
        update_text(note, "word " * 20)  # wraps at 60 columns
        await pilot.pause(0.1)
        assert note.region.height == 2


async def test_autostop_line_stays_in_the_billing_panel():
    app = canned_app(2)
    async with app.run_test(size=(120, 40)) as pilot:
        app.feed()
        await pilot.pause(0.3)
        app.box.autostop = {"armed": {"idle_seconds": 1800, "deadline": NOW + 7200}, "idle_for": 300}
        app.dashboard.refresh_view()
        await pilot.pause(0.3)
        panel = app.query_one("#billing")
        rows = wrapped_rows(panel.render().plain, panel.content_region.width)
        assert panel.content_region.height >= rows
        shot = app.export_screenshot()
        assert "12:53" in shot  # the armed deadline, last on the panel, is on screen


async def test_graphs_fill_a_big_window():
    app = canned_app(2)
    async with app.run_test(size=(200, 60)) as pilot:
        app.feed()
        await pilot.pause(0.5)
        gpus, procs = app.query_one("#gpus"), app.query_one("#procs")
        assert gpus.region.height >= 20  # was 12: two 3-row graphs
        assert procs.region.height >= 6 + 3  # every process still shown


@pytest.mark.parametrize("procs", [-1, 0, 1, 3])
def test_a_short_terminal_gives_one_gpu_only_the_rows_it_needs(procs):
    """80x24, one GPU (`--simulate adopt`): summary, a 3-row graph and details, whatever the
    table holds; the graph had grown to 8 rows and the GPU panel to 12 of 21."""
    plan = gpu_plan(1, 80, 24, fixed_rows=3, procs=procs)
    assert (plan.lines, plan.graph_height, plan.rows) == (5, 3, 5)


@pytest.mark.parametrize("size", [(80, 39), (120, 30)])
def test_graphs_grow_only_on_a_tall_terminal(size):
    assert gpu_plan(1, size[0], size[1], procs=1).graph_height == 3
    assert gpu_plan(1, size[0], 40, procs=1).graph_height > 3


async def test_one_gpu_at_80x24_leaves_the_table_the_rest():
    app = canned_app(1)
    async with app.run_test(size=(80, 24)) as pilot:
        app.feed()
        _AppListener(app).on_jobs(jobs_block(NOW, tmux=TMUX))  # a jobs panel too
        await pilot.pause(0.5)
        gpus, jobs, procs = (app.query_one(q) for q in ("#gpus", "#jobs", "#procs"))
        assert jobs.display and jobs.region.height >= 3
        assert gpus.region.height == 5 + 2  # summary, 3-row graph, details; the border
        assert procs.region.bottom <= 23 and procs.region.height >= 3 + 3  # its border shown
