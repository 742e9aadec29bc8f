"""The process table builds only the rows on screen (issue 25): a row that changed while it was
scrolled out of view must show its latest figures when it scrolls in, and a new order (sort,
tree, filter) must show at once, every row in its place."""

import dataclasses

from textual.app import App

from tui.core.text import format as fmt
from tui.core.model import ProcRow
from tui.ui.widgets.process_table import ProcessTable


def row(i, elapsed=5.0, **changes):
    """A worker's process row; `changes` replace any of its fields (test_process_table_paint too)."""
    r = ProcRow(pid=5000 + i, gpu=i % 2, gpu_mem=1000.0 + i, kind="C", cpu=10.0, rss=100.0,
                local=True, host_pid=None, unprotected=False, user="root",
                cmd="python worker.py --rank %d" % i, elapsed=elapsed)
    return dataclasses.replace(r, **changes)


class TableApp(App):
    CSS = "ProcessTable { height: 9; }"  # border, header and 6 rows on screen

    def compose(self):
        yield ProcessTable()


def lines(table):
    region = table.scrollable_content_region
    return [table.render_line(y).text for y in range(region.height)]


async def test_rows_scrolled_into_view_show_their_latest_figures():
    app = TableApp()
    async with app.run_test(size=(120, 20)) as pilot:
        table = app.query_one(ProcessTable)
        rows = [row(i) for i in range(30)]
        table.show(rows, "pid", False)
        await pilot.pause()
        assert "5000" in lines(table)[1] and not any("5029" in line for line in lines(table))
        # the last row changes while off screen: 93 % CPU, running 2 minutes
        rows = rows[:29] + [dataclasses.replace(rows[29], cpu=93.0, elapsed=125.0)]
        table.show(rows, "pid", False)
        await pilot.pause()
        table.focus()
        await pilot.press("end")
        await pilot.pause()
        last = [line for line in lines(table) if "5029" in line]
        assert len(last) == 1 and " 93 " in last[0] and " %s " % fmt.age(125.0) in last[0]
        assert [str(c) for c in table.get_row_at(29)][4] == "93"
        # and the first row, drawn before, changes while scrolled away
        rows = [dataclasses.replace(rows[0], cpu=71.0)] + rows[1:]
        table.show(rows, "pid", False)
        await pilot.pause()
        await pilot.press("home")
        await pilot.pause()
        assert lines(table)[1].startswith("5000 ") and " 71 " in lines(table)[1]


async def test_a_new_order_shows_every_row_in_its_place():
    app = TableApp()
    async with app.run_test(size=(120, 20)) as pilot:
        table = app.query_one(ProcessTable)
        rows = [row(i, elapsed=5.0 + i) for i in range(12)]
        table.show(rows, "pid", False)
        await pilot.pause()
        table.show(list(reversed(rows)), "pid", True)
        await pilot.pause()
        shown = lines(table)[1:7]
        assert [line.split()[0] for line in shown] == [str(5000 + i) for i in range(11, 5, -1)]
        assert "PID ▼" in lines(table)[0]
        assert [str(table.get_row_at(i)[0]) for i in range(12)] == [str(5000 + i) for i in range(11, -1, -1)]
