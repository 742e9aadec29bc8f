"""GPU processes, sortable by any column.

A Line-API widget rather than a DataTable: each sample changes CPU% and age in most rows, and
DataTable re-measures and re-renders every row on any cell update (200 ms sample->frame with
64 processes). Here a row is re-rendered only when its own cells change, and only the rows on
screen are rendered at all (issue 12)."""

from typing import List, Optional

from rich.cells import cell_len
from rich.segment import Segment
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tui.core.text import format as fmt
from tui.core.i18n import _, ngettext
from tui.core.layout import MAX_PROC_ROWS, PROC_WIDTHS, clip, cmd_width, proc_columns
from tui.core.model import ProcRow
from tui.core.state import PROC_COLUMNS
from tui.ui.boxtext_rich import box_text
from tui.ui.widgets.live import runs


def _box_cell(cache: Optional[dict], value, style, limit) -> Text:
    """box_text, memoized: user and command cells repeat from sample to sample."""
    if cache is None:
        return box_text(value, style=style, limit=limit)
    key = (value, style, limit)
    cell = cache.get(key)
    if cell is None:
        if len(cache) > 4096:  # a long session's ended commands
            cache.clear()
        cell = cache[key] = box_text(value, style=style, limit=limit)
    return cell


def _own_cell(cache: Optional[dict], key: tuple, make) -> Text:
    """One of our own cells (PID, a tree branch), memoized like _box_cell: a cell that did not
    change is the same object, which is how the table knows not to cut and render it again."""
    if cache is None:
        return make()
    cell = cache.get(key)
    if cell is None:
        if len(cache) > 4096:
            cache.clear()
        cell = cache[key] = make()
    return cell


def row_cells(r: ProcRow, columns=PROC_COLUMNS, cmd_cols: Optional[int] = None,
              texts: Optional[dict] = None) -> tuple:
    pid_text = ("⚠ " if r.unprotected else "") + str(r.pid)
    pid_style = "bold red" if r.unprotected else ("" if r.local else "yellow")
    pid = _own_cell(texts, ("pid", pid_text, pid_style), lambda: Text(pid_text, style=pid_style))
    # user and command come from the box: text with control characters shown, never markup
    cells = {
        "pid": pid,
        "user": _box_cell(texts, r.user or ("host" if not r.local else "?"), "", 16),
        "gpu": "?" if r.gpu is None else str(r.gpu),
        "gpu_mem": fmt.mib(r.gpu_mem) if r.gpu_mem is not None else ("n/a" if r.kind != "?" else "fd"),
        "cpu": fmt.na(r.cpu, "%.0f"),
        "rss": fmt.mib(r.rss),
        "elapsed": fmt.age(r.elapsed),
        "cmd": _box_cell(texts, r.cmd, "" if r.local else "dim italic",
                         400 if cmd_cols is None else cmd_cols),
    }
    if r.tree:  # the tree view's branch (our own characters), then the box's text as data
        cmd = cells["cmd"]
        cells["cmd"] = _own_cell(texts, ("tree", r.tree, r.cmd, r.local, cmd_cols),
                                 lambda: Text.assemble((r.tree, "dim"), cmd))
    return tuple(cells[k] for k, _ in columns)


def shown_key(r: ProcRow) -> tuple:
    """What a row shows: two rows with the same key draw the same cells (elapsed and CPU%
    as displayed, so 0.2 -> 0.4 % or a second inside '3h05m' changes nothing)."""
    return (r.pid, r.unprotected, r.local, r.user, r.gpu, r.gpu_mem, r.kind,
            fmt.na(r.cpu, "%.0f"), r.rss, fmt.age(r.elapsed), r.cmd, r.tree)


def sorted_title(title: str, width: int, reverse: bool) -> str:
    """The sorting column's header with its arrow, which must fit: the title is cut, not
    the arrow ("GPU ▼" in 3 columns showed "GPU", no sign of the sort)."""
    arrow = "▼" if reverse else "▲"
    for candidate in (title + " " + arrow, title + arrow):
        if cell_len(candidate) <= width:
            return candidate
    return clip(title, max(1, width - 1)) + arrow


_LINE_COMPONENTS = ("process-table--header", "process-table--cursor", "process-table--even")


def _same(a: tuple, b: tuple) -> bool:
    """Two _line_styles keys name the same inputs: the same width, the same styles objects
    (by identity: a node's styles are compared, not their rules) at the same update counts."""
    return (a[0] == b[0] and len(a[1]) == len(b[1]) and all(x is y for x, y in zip(a[1], b[1]))
            and a[2] == b[2] and len(a[3]) == len(b[3]) and all(x is y for x, y in zip(a[3], b[3])))


class Column:
    def __init__(self, key, title, width):
        self.key, self.width = key, width
        self.label = Text(title)


class ProcessTable(ScrollView, can_focus=True):
    BINDINGS = [
        Binding("up", "cursor(-1)", show=False), Binding("down", "cursor(1)", show=False),
        Binding("pageup", "page(-1)", show=False), Binding("pagedown", "page(1)", show=False),
        Binding("home", "cursor(-1000000)", show=False), Binding("end", "cursor(1000000)", show=False),
    ]
    COMPONENT_CLASSES = {"process-table--header", "process-table--cursor", "process-table--even"}
    DEFAULT_CSS = """
    ProcessTable { height: 1fr; border: round $primary-darken-1; overflow-x: hidden; }
    ProcessTable > .process-table--header { text-style: bold; background: $panel; }
    ProcessTable > .process-table--cursor { background: $accent 60%; text-style: bold; }
    ProcessTable > .process-table--even { background: $surface-lighten-1 30%; }
    """

    class SortRequested(Message):
        """A column header was clicked."""

        def __init__(self, key):
            super().__init__()
            self.key = key

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.columns = {}
        self._order = []       # row keys, top to bottom
        self._rows = {}        # row key -> ProcRow of the latest sample
        self._cells = {}       # row key -> cells, built only for rows that were on screen
        self._shown = {}       # row key -> shown_key of its cells
        self._built = {}       # row key -> the ProcRow its cells were checked against
        self._texts = {}       # box_text cells by (text, style, limit)
        self._strips = {}      # row key -> (cells, line style, Strip): rendered once per change
        self._subtitle = None
        self._fit = {}         # row key -> (line style, cells, each cell's segments)
        self._layout = None    # (columns, width) the rows were rendered for
        self._length = 0       # cells a row's columns take, each with its space
        self._cell_args = (PROC_COLUMNS, None)  # (columns, command width) of row_cells
        self._sort = None
        self._frame_styles = None  # _line_styles() while a frame renders
        self._frame_top = None     # the scroll offset's row while a frame renders
        self._styles_memo = None   # (inputs, _line_styles()) of the last look-up
        self.cursor_row = 0

    # -- the table's surface, as tests and screens read it --------------------------
    @property
    def row_count(self):
        return len(self._order)

    def get_row_at(self, index):
        return self._cells_for(self._order[index])

    # -- data ------------------------------------------------------------------------
    def show(self, rows: List[ProcRow], sort_key: str, reverse: bool, more: int = 0) -> None:
        width = self.scrollable_content_region.width or self.size.width or 120
        columns = proc_columns(PROC_COLUMNS, width)
        cmd_cols = cmd_width(columns, width)
        layout = (columns, width)
        if layout != self._layout:
            self._layout = layout
            self._cell_args = (columns, cmd_cols)
            self.columns = {k: Column(k, _(t), PROC_WIDTHS.get(k, cmd_cols)) for k, t in columns}
            self._length = sum(col.width + 1 for col in self.columns.values())  # a row's cells
            self._strips.clear()
            self._fit.clear()
            self._cells, self._shown, self._built = {}, {}, {}  # cells are cut to the columns: all built again
            self._order = []  # ... and all lines repainted
            self._sort = None
        if self._sort != (sort_key, reverse):
            self._sort = (sort_key, reverse)
            for key, col in self.columns.items():
                title = _(dict(PROC_COLUMNS)[key])
                if key == sort_key:
                    title = sorted_title(title, col.width, reverse)
                col.label = Text(title)
            self.refresh(Region(0, 0, width, 1))  # the header, which does not scroll
        selected = self._order[self.cursor_row] if 0 <= self.cursor_row < len(self._order) else None
        drawn = rows[:MAX_PROC_ROWS]
        order = [(r.pid, r.gpu) for r in drawn]
        self._rows = dict(zip(order, drawn))
        # Only the rows on screen are checked and built now (a quarter of 64, typically); the
        # others are built from their latest ProcRow when they scroll into view.
        top = int(self.scroll_offset.y)
        visible = max(0, self.scrollable_content_region.height - 1)  # less the header
        changed = []  # row keys on screen whose cells changed (the same order: only their lines repaint)
        for key, r in zip(order[top:top + visible], drawn[top:top + visible]):
            seen = shown_key(r)
            if self._shown.get(key) != seen or key not in self._cells:
                self._cells[key] = row_cells(r, *self._cell_args, self._texts)
                self._shown[key] = seen
                changed.append(key)
            self._built[key] = r
        if order != self._order:
            if set(order) != set(self._order):
                for cache in (self._cells, self._shown, self._built, self._strips, self._fit):
                    for gone in set(cache) - self._rows.keys():  # rows of ended processes
                        del cache[gone]
            self._order = order
            self.virtual_size = Size(width, len(order) + 1)
            if selected in self._rows:
                self.cursor_row = order.index(selected)
            self.cursor_row = max(0, min(self.cursor_row, len(order) - 1))
            self.refresh()
        elif changed:
            self._refresh_rows(changed)
        total = len(rows) + (more or 0)
        if not total:
            subtitle = _("no GPU processes")
        elif total > len(drawn):
            # the probe sends the 500 biggest; the rest are counted, not listed
            subtitle = _("%d processes, and %d more not shown") % (len(drawn), total - len(drawn))
        else:
            subtitle = ngettext("%d process", "%d processes", total) % total
        if subtitle != self._subtitle:  # setting it repaints the whole table, even unchanged
            self._subtitle = self.border_subtitle = subtitle

    def _cells_for(self, key) -> tuple:
        """The row's cells for its latest ProcRow: built when it first shows, kept while it
        shows the same."""
        r = self._rows[key]
        if self._built.get(key) is not r:
            seen = shown_key(r)
            if self._shown.get(key) != seen or key not in self._cells:
                self._cells[key] = row_cells(r, *self._cell_args, self._texts)
                self._shown[key] = seen
            self._built[key] = r
        return self._cells[key]

    def _refresh_rows(self, keys) -> None:
        """Repaint the lines of these rows that are on screen, nothing else."""
        top = int(self.scroll_offset.y)
        height = self.scrollable_content_region.height
        width = self.scrollable_content_region.width
        index = {k: i for i, k in enumerate(self._order)}
        lines = sorted(y for y in (index[key] - top + 1 for key in keys) if 1 <= y < height)  # 0: header
        for y, rows in runs((y, 1) for y in lines):  # adjacent rows: one region
            self.refresh(Region(0, y, width, rows))

    # -- rendering -------------------------------------------------------------------
    def _cell_segments(self, key, cells, style) -> list:
        """The row's segments: each cell cut or padded to its column, a space after it, in
        the line's style (base, even or cursor). A cell that did not change since the row was
        last drawn (seven of eight, when a second passes) is reused as it was rendered; kept
        per row, so this holds no more than the table shows."""
        prev = self._fit.get(key)
        same_style = prev is not None and (prev[0] is style or prev[0] == style)
        console = None
        parts = []
        for i, (col, cell) in enumerate(zip(self.columns.values(), cells)):
            if same_style and (prev[1][i] is cell or (isinstance(cell, str) and prev[1][i] == cell)):
                parts.append(prev[2][i])
                continue
            if type(cell) is str and len(cell) <= col.width and cell.isascii() and cell.isprintable():
                # a figure of ours (pid, GPU, MiB, %): what the Text below renders to, one segment
                parts.append([Segment(cell.ljust(col.width) + " ", style)])
                continue
            text = cell.copy() if isinstance(cell, Text) else Text(cell)
            text.truncate(col.width, overflow="ellipsis", pad=True)
            text.append(" ")
            console = console or self.app.console
            parts.append(list(Segment.simplify(Segment.apply_style(text.render(console), style))))
        self._fit[key] = (style, cells, parts)
        # adjacent cells in one style make one segment, as one Text would: fewer escape codes
        # (what Segment.simplify over the row gives). A run's texts are joined once, and a
        # style is mostly the very object of the one before (the line's, or rich's cached sum).
        out: list = []
        run: list = []
        last = None
        for part in parts:
            for text, seg_style, _control in part:
                if run and (seg_style is last or seg_style == last):
                    run.append(text)
                else:
                    if run:
                        out.append(Segment("".join(run), last))
                    run, last = [text], seg_style
        if run:
            out.append(Segment("".join(run), last))
        return out

    def _row_strip(self, key, width, base, style):
        """The row's line, styled: what Strip(row).crop_extend(0, width, base).apply_style(style)
        gives, built from the cached cells' segments."""
        cells = self._cells_for(key)
        cached = self._strips.get(key)
        if (cached and cached[0] is cells and (cached[1] is style or cached[1] == style)
                and cached[2].cell_length == width):
            return cached[2]
        segments = self._cell_segments(key, cells, style)
        length = self._length
        if length < width:  # padded as crop_extend pads, then styled as apply_style styles
            segments.append(Segment(" " * (width - length), style + base if style else base))
            strip = Strip(segments, width)
        else:
            strip = Strip(segments, length).crop(0, width)
        self._strips[key] = (cells, style, strip)
        return strip

    def _line_styles(self):
        """(width, base, header, cursor, even): what every line of one frame looks up. The
        base style walks the ancestors (opacity: the dimmed, stale dashboard).

        Kept while its inputs stay: every node's styles up to the app (a restyle, a class,
        :focus or a theme bumps their _cache_key) and the component styles (replaced when the
        table is restyled). Textual's own cache of component styles is emptied by every
        refresh(), i.e. every sample: looking them up again was 1,400 calls a sample (issue 38)."""
        width = self.scrollable_content_region.width
        nodes = self.ancestors_with_self
        key = (width, tuple(node.styles for node in nodes),
               tuple(node.styles._cache_key for node in nodes),
               tuple(self._component_styles.get(name) for name in _LINE_COMPONENTS))
        cached = self._styles_memo
        if cached is not None and _same(cached[0], key):
            return cached[1]
        base = self.rich_style
        styles = (width, base,
                  self.get_component_rich_style("process-table--header"),
                  base + self.get_component_rich_style("process-table--cursor"),
                  base + self.get_component_rich_style("process-table--even"))
        self._styles_memo = (key, styles)
        return styles

    def render_lines(self, crop):
        # once per frame, not once per line: the styles and the scroll offset (two reactives)
        self._frame_styles = self._line_styles()
        self._frame_top = int(self.scroll_offset.y)
        try:
            return super().render_lines(crop)
        finally:
            self._frame_styles = self._frame_top = None

    def render_line(self, y):
        width, base, header_style, cursor_style, even_style = self._frame_styles or self._line_styles()
        if y == 0:  # the header stays put while the rows scroll
            header = Text(no_wrap=True)
            for col in self.columns.values():
                label = col.label.copy()
                label.truncate(col.width, pad=True)
                header.append_text(label)
                header.append(" ")
            style = header_style
            return Strip(header.render(self.app.console)).crop_extend(0, width, style).apply_style(style)
        top = self._frame_top
        index = (int(self.scroll_offset.y) if top is None else top) + y - 1
        if index >= len(self._order):
            return Strip.blank(width, base)
        # every segment gets a real style: opacity (the dimmed, stale dashboard) needs one
        if index == self.cursor_row and self.has_focus:
            style = cursor_style
        else:
            style = even_style if index % 2 else base
        return self._row_strip(self._order[index], width, base, style)

    # -- input -----------------------------------------------------------------------
    def on_click(self, event):
        if event.y == 0:
            x = 0
            for col in self.columns.values():
                if x <= event.x < x + col.width + 1:
                    self.post_message(self.SortRequested(col.key))
                    return
                x += col.width + 1
        else:
            self._move_to(int(self.scroll_offset.y) + event.y - 1)

    def action_cursor(self, delta):
        self._move_to(self.cursor_row + int(delta))

    def action_page(self, direction):
        self._move_to(self.cursor_row + int(direction) * max(1, self.scrollable_content_region.height - 1))

    def _move_to(self, row):
        if not self._order:
            return
        self.cursor_row = max(0, min(row, len(self._order) - 1))
        visible = self.scrollable_content_region.height - 1
        top = int(self.scroll_offset.y)
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False)
        elif self.cursor_row >= top + visible:
            self.scroll_to(y=self.cursor_row - visible + 1, animate=False)
        self.refresh()
