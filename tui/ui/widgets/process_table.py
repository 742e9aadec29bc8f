"""GPU processes, sortable by any column."""

from rich.text import Text
from textual.widgets import DataTable

from tui.core import format as fmt
from tui.core.state import PROC_COLUMNS
from tui.ui.boxtext import box_text


def row_cells(r):
    pid = Text(("⚠ " if r.unprotected else "") + str(r.pid),
               style="bold red" if r.unprotected else ("" if r.local else "yellow"))
    return (
        pid,
        box_text(r.user or ("host" if not r.local else "?"), limit=16),
        "?" if r.gpu is None else str(r.gpu),
        fmt.mib(r.gpu_mem) if r.gpu_mem is not None else ("n/a" if r.kind != "?" else "fd"),
        fmt.na(r.cpu, "%.0f"),
        fmt.mib(r.rss),
        fmt.duration(r.elapsed),
        box_text(r.cmd, style="" if r.local else "dim italic", limit=400),
    )


class ProcessTable(DataTable):
    DEFAULT_CSS = """
    ProcessTable { height: 1fr; border: round $primary-darken-1; }
    """

    def on_mount(self):
        self.cursor_type = "row"
        self.zebra_stripes = True
        for key, title in PROC_COLUMNS:
            self.add_column(title, key=key)

    def show(self, rows, sort_key, reverse):
        for key, title in PROC_COLUMNS:
            col = self.columns.get(key)
            if col is not None:
                arrow = (" ▼" if reverse else " ▲") if key == sort_key else ""
                col.label = Text(title + arrow)
        selected = None
        if self.row_count and self.cursor_row is not None:
            try:
                selected = self.coordinate_to_cell_key((self.cursor_row, 0)).row_key.value
            except Exception:  # empty or shrinking table
                selected = None
        self.clear()
        for r in rows:
            self.add_row(*row_cells(r), key="%d-%s" % (r.pid, r.gpu))
        if selected is not None:
            try:
                self.move_cursor(row=self.get_row_index(selected))
            except Exception:  # the selected process is gone
                pass
        if not rows:
            self.border_subtitle = "no GPU processes"
        else:
            self.border_subtitle = "%d processes" % len(rows)
