"""What the process table re-draws per sample (issue 38): a row whose cells did not change keeps
its line, a changed one is drawn again; the line styles, kept between frames, follow a restyle
(focus, the stale dashboard's opacity); box text stays data, never markup, on every path."""

import dataclasses

from rich.segment import Segment
from rich.text import Text
from textual.app import App
from textual.containers import Vertical

from tests.unit.tui.ui.widgets.test_process_table_rows import row
from tui.ui.widgets.process_table import ProcessTable




class TableApp(App):
    CSS = """
    ProcessTable { height: 9; background: #203040; }
    #wrap.stale { opacity: 60%; }  /* fades the table's background into its rows' style */
    ProcessTable.hot > .process-table--even { background: red; }  /* a component's rule only */
    """

    def compose(self):
        with Vertical(id="wrap"):
            yield ProcessTable()


def frame(table, with_styles=False):
    """The table's lines as a frame renders them (render_lines: styles looked up once)."""
    region = table.scrollable_content_region
    styles = table._frame_styles = table._line_styles()
    table._frame_top = int(table.scroll_offset.y)
    try:
        lines = [table.render_line(y) for y in range(region.height)]
    finally:
        table._frame_styles = table._frame_top = None
    return (lines, styles) if with_styles else lines


def uncached_styles(table):
    """_line_styles as it was before it was kept: looked up afresh."""
    base = table.rich_style
    return (table.scrollable_content_region.width, base,
            table.get_component_rich_style("process-table--header"),
            base + table.get_component_rich_style("process-table--cursor"),
            base + table.get_component_rich_style("process-table--even"))


async def test_only_the_changed_row_is_drawn_again():
    app = TableApp()
    async with app.run_test(size=(120, 20)) as pilot:
        table = app.query_one(ProcessTable)
        rows = [row(i) for i in range(6)]
        table.show(rows, "pid", False)
        await pilot.pause()
        before = frame(table)
        table._styles_cache._dirty_lines.clear()
        rows[2] = dataclasses.replace(rows[2], elapsed=125.0)  # one row's age moves
        table.show(rows, "pid", False)
        dirty = set(table._styles_cache._dirty_lines)  # widget lines: border 0, header 1, rows 2..
        assert dirty == {1 + 1 + 2}
        await pilot.pause()
        after = frame(table)
        for y in range(1, len(before)):  # 0: the header, drawn only when its line is dirty
            if y == 3:  # header, rows 0, 1, then row 2
                assert after[y] is not before[y] and "2:05" in after[y].text
                assert after[y].cell_length == before[y].cell_length
            else:
                assert after[y] is before[y], y  # the very strip: not built again


async def test_a_row_draws_as_one_simplified_line_of_its_cells():
    """The row's segments are Segment.simplify over its cells' segments (adjacent cells in one
    style joined), styled cells included: an unprotected PID, a remote command, a tree branch."""
    app = TableApp()
    async with app.run_test(size=(120, 20)) as pilot:
        table = app.query_one(ProcessTable)
        rows = [row(0), row(1, unprotected=True), row(2, local=False, user=None),
                row(3, tree="├─ "), row(4, cmd="plain")]
        table.show(rows, "pid", False)
        await pilot.pause()
        styles = frame(table)  # draws every row once
        base = table._line_styles()[1]
        for index, r in enumerate(rows):
            key = (r.pid, r.gpu)
            style = table._line_styles()[4] if index % 2 else base
            cells = table._cells_for(key)
            segments = table._cell_segments(key, cells, style)
            parts = table._fit[key][2]
            assert segments == list(Segment.simplify(s for part in parts for s in part))
            assert "".join(s.text for s in segments) == "".join(s.text for part in parts for s in part)
        assert styles[0].text.startswith("PID")


async def test_box_text_stays_literal_when_another_cell_changes():
    app = TableApp()
    async with app.run_test(size=(120, 20)) as pilot:
        table = app.query_one(ProcessTable)
        hostile = row(0, cmd="x[/]y [bold]z\x1b[31mred\x07", user="[@click=app.quit]u")
        table.show([hostile], "pid", False)
        await pilot.pause()
        first = frame(table)[1]
        table.show([dataclasses.replace(hostile, elapsed=3725.0)], "pid", False)  # only the age
        await pilot.pause()
        second = frame(table)[1]
        for line in (first, second):
            text = line.text
            assert "x[/]y [bold]z" in text and "\x1b" not in text and "\x07" not in text
            assert "red" in text  # after the escape, shown as data
            assert all("@click" not in (s.style.meta if s.style else {}) for s in line)
        assert first.text != second.text


async def test_kept_line_styles_follow_focus_and_the_stale_fade():
    app = TableApp()
    async with app.run_test(size=(120, 20)) as pilot:
        table = app.query_one(ProcessTable)
        table.show([row(i) for i in range(4)], "pid", False)
        await pilot.pause()
        live = table._line_styles()
        assert live == uncached_styles(table)
        assert table._line_styles() is live  # kept while nothing changed
        table.refresh()  # what every sample does to Textual's own cache: the kept one stays
        assert table._line_styles() is live
        app.query_one("#wrap").add_class("stale")
        await pilot.pause()
        stale = table._line_styles()
        assert stale == uncached_styles(table) and stale[1] != live[1]
        lines, styles = frame(table, with_styles=True)
        assert styles == stale
        assert [lines[y]._segments[0].style for y in (2, 3)] == [stale[4], stale[1]]  # faded rows
        app.query_one("#wrap").remove_class("stale")
        table.blur()
        await pilot.pause()
        lines, styles = frame(table, with_styles=True)
        assert styles == uncached_styles(table) and lines[1]._segments[0].style == styles[1]
        table.add_class("hot")  # the table's own rules stay; its component styles are new
        await pilot.pause()
        lines, styles = frame(table, with_styles=True)
        assert styles == uncached_styles(table) and lines[2]._segments[0].style == styles[4]
        assert styles[4] != live[4]
        table.focus()
        await pilot.pause()
        # (focus animates the table's tint: the styles move from frame to frame, and follow)
        lines, styles = frame(table, with_styles=True)
        assert styles == uncached_styles(table)
        assert lines[1]._segments[0].style == styles[3] and styles[3].bold  # the cursor row


def test_text_cells_are_never_markup():
    """The cells themselves: box text as Text with its characters, not parsed."""
    from tui.ui.widgets.process_table import row_cells
    cells = row_cells(row(0, cmd="a[/]b", user="[red]x"))
    assert any(isinstance(c, Text) and c.plain == "a[/]b" for c in cells)
