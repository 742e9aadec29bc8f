"""GPU processes, sortable by any column, updated in place (only changed cells repaint)."""

from rich.text import Text
from textual.widgets import DataTable

from tui.core import format as fmt
from tui.core.layout import MAX_PROC_ROWS, clip, cmd_width, proc_columns
from tui.core.state import PROC_COLUMNS


def row_cells(r, columns=PROC_COLUMNS, cmd_cols=None):
    pid = Text(("⚠ " if r.unprotected else "") + str(r.pid),
               style="bold red" if r.unprotected else ("" if r.local else "yellow"))
    cmd = r.cmd if cmd_cols is None else clip(r.cmd, cmd_cols)
    cells = {
        "pid": pid,
        "user": r.user or ("host" if not r.local else "?"),
        "gpu": "?" if r.gpu is None else str(r.gpu),
        "gpu_mem": fmt.mib(r.gpu_mem) if r.gpu_mem is not None else ("n/a" if r.kind != "?" else "fd"),
        "cpu": fmt.na(r.cpu, "%.0f"),
        "rss": fmt.mib(r.rss),
        "elapsed": fmt.duration(r.elapsed),
        "cmd": Text(cmd, style="" if r.local else "dim italic"),
    }
    return tuple(cells[k] for k, _ in columns)


class ProcessTable(DataTable):
    DEFAULT_CSS = """
    ProcessTable { height: 1fr; border: round $primary-darken-1; }
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._columns = ()
        self._rows = {}     # row key -> cells as drawn
        self._order = []    # row keys top to bottom
        self._sort = None

    def on_mount(self):
        self.cursor_type = "row"
        self.zebra_stripes = True

    def _set_columns(self, columns):
        self.clear(columns=True)
        for key, title in columns:
            self.add_column(title, key=key)
        self._columns, self._rows, self._order, self._sort = columns, {}, [], None

    def show(self, rows, sort_key, reverse):
        width = self.size.width or 120
        columns = proc_columns(PROC_COLUMNS, width)
        if columns != self._columns:
            self._set_columns(columns)
        if self._sort != (sort_key, reverse):
            self._sort = (sort_key, reverse)
            for key, title in columns:
                arrow = (" ▼" if reverse else " ▲") if key == sort_key else ""
                self.columns[key].label = Text(title + arrow)
        cmd_cols = cmd_width(columns, width)
        drawn = rows[:MAX_PROC_ROWS]
        new = [("%d-%s" % (r.pid, r.gpu), row_cells(r, columns, cmd_cols)) for r in drawn]
        order = [key for key, _ in new]
        if order == self._order:
            for key, cells in new:  # same rows in the same order: repaint changed cells only
                old = self._rows[key]
                for (col, _), a, b in zip(columns, old, cells):
                    if a != b:
                        self.update_cell(key, col, b, update_width=True)
        else:
            self._rebuild(new)
        self._rows, self._order = dict(new), order
        if not rows:
            self.border_subtitle = "no GPU processes"
        elif len(rows) > len(drawn):
            self.border_subtitle = "%d processes, first %d shown" % (len(rows), len(drawn))
        else:
            self.border_subtitle = "%d processes" % len(rows)

    def _rebuild(self, new):
        selected = None
        if self.row_count and self.cursor_row is not None and self._order:
            if 0 <= self.cursor_row < len(self._order):
                selected = self._order[self.cursor_row]
        self.clear()
        for key, cells in new:
            self.add_row(*cells, key=key)
        keys = [k for k, _ in new]
        if selected in keys:
            self.move_cursor(row=keys.index(selected))
