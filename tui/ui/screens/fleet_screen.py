"""The fleet screen: one row per box, the forgotten-box alarm in the header.

It is handed the fleet it shows, displays its rows (tui.core.fleet.rows.BoxRow) and hands the
selected box to the same flows the dashboard uses (tui.ui.flows); every cell is a rich Text
built here, so box text is never parsed as markup."""

from typing import TYPE_CHECKING, Dict, List, Optional

from rich.text import Text
from textual.app import ComposeResult
from textual.message import Message
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Static

from tui.core.fleet import rows as fleet
from tui.core.billing.rates import format_money
from tui.core.text.boxtext import visible
from tui.core.i18n import N_, _, ngettext
from tui.ui import flows
from tui.ui.background import background
from tui.ui.box_context import BoxContext
from tui.ui.widgets.footer import Footer
from tui.ui.boxtext_rich import box_text
from tui.ui.screens.release_screen import ReleaseScreen
from tui.ui.translate import Translated

if TYPE_CHECKING:
    from tui.remote.fleet_pool import Fleet

# Titles are translated when the table is built (the language may change after import).
COLUMNS = (("host", N_("HOST")), ("state", N_("STATE")), ("gpus", N_("GPUS util · VRAM")),
           ("jobs", N_("JOBS")), ("unprotected", N_("UNPR")), ("idle", N_("IDLE")),
           ("cost", N_("COST")), ("rate", N_("RATE")), ("idle_cost", N_("IDLE COST")),
           ("autostop", N_("AUTOSTOP")), ("checklist", N_("CHECK")), ("note", N_("NOTE")))
STATE_STYLE = {fleet.LIVE: "green", fleet.CONNECTING: "yellow", fleet.RECONNECTING: "yellow",
               fleet.UNREACHABLE: "red", fleet.RELEASED: "dim"}
LEVELS = " ▁▂▃▄▅▆▇█"


def idle_text(seconds):
    """Idle time in minutes at least: seconds do not matter next to a 30-minute alarm, and a
    cell that changes every second redraws the whole table every second."""
    if seconds is not None and seconds < 60:
        return _("<1m")
    return fleet.duration_text(seconds)


def util_blocks(gpus):
    """One block per GPU, its height the utilization: 8 GPUs fit in 8 cells."""
    return "".join(LEVELS[int(round((g.util or 0) / 100.0 * 8))] if g.util is not None else "?"
                   for g in gpus)


def gpu_cell(row: fleet.BoxRow):
    if not row.gpus:
        return Text(_("no GPU") if row.state == fleet.LIVE else "—", style="dim")
    utils = [g.util for g in row.gpus if g.util is not None]
    used = sum(g.mem_used or 0 for g in row.gpus) / 1024.0
    total = sum(g.mem_total or 0 for g in row.gpus) / 1024.0
    text = Text(util_blocks(row.gpus), style="cyan")
    text.append(" %3d%% · %.0f/%.0fG" % (sum(utils) / len(utils) if utils else 0, used, total))
    return text


def jobs_cell(row: fleet.BoxRow, live: bool):
    """The watched jobs' progress ('42% 1h56m') or a crashed/hung job where the box reports
    one, else the count of GPU jobs (the cell stays narrow enough for 80 columns)."""
    if not live:
        return Text("—", justify="right")
    if row.progress:
        return Text(visible(row.progress), justify="right",
                    style="bold red" if row.progress_alarm else "cyan")
    return Text(str(row.jobs), justify="right")


def row_cells(row: fleet.BoxRow):
    """The cells of one row, all Text."""
    live = row.state == fleet.LIVE
    host = box_text(row.host, style="bold red" if row.burning else "bold")
    if row.burning:
        host.append(" ⚠", style="bold red")
    money = lambda v: Text(format_money(v, row.currency), justify="right")  # noqa: E731
    note = _("idle and billing") if row.burning else (
        row.reason if not live else (_("%s to finish") % format_money(row.cost_to_finish, row.currency)
                                     if row.cost_to_finish is not None else fleet.no_proc_note(row)))
    return [
        host, Text(_(row.state), style=STATE_STYLE.get(row.state, "")), gpu_cell(row),
        jobs_cell(row, live),
        Text(str(row.unprotected) if live else "—", justify="right",
             style="bold red" if live and row.unprotected else ""),
        Text(idle_text(row.idle_for), justify="right",
             style="red" if row.burning else ""),
        money(row.cost),
        Text(("%s/h" % format_money(row.rate, row.currency)) if row.rate is not None else "—",
             justify="right"),
        money(row.idle_cost),
        Text(fleet.autostop_text(row.autostop) or "—", style="green" if row.autostop == "armed" else
             "bold red" if (row.autostop or "").startswith("countdown") else ""),
        Text(_(row.checklist) if row.checklist else "—", style={"pass": "green", "warn": "yellow",
                                          "fail": "red"}.get(row.checklist, "")),
        box_text(note, style="red" if row.burning else "dim", limit=40),
    ]


def _look(text):
    """What a cell looks like (Text equality ignores its base style)."""
    return text.plain, str(text.style), text.spans, text.justify


def header_text(rows, sort_key):
    counts = {}
    for r in rows:
        counts[r.state] = counts.get(r.state, 0) + 1
    text = Text(_("gputui fleet") + " — " + ngettext("%d box: ", "%d boxes: ", len(rows)) % len(rows),
                style="bold")
    text.append(_(", ").join("%d %s" % (n, _(s)) for s, n in sorted(counts.items())))
    text.append(_("   sorted by %s") % _(sort_key), style="dim")
    if not rows:
        text.append("\n" + _("No boxes yet: `gputui connect HOST` once, or add a [hosts.NAME] table "
                               "to the config; every box gputui has met with an open billing "
                               "session shows here."))
    alarm = fleet.alarm_text(rows)
    if alarm:
        text.append("\n⚠ %s" % alarm, style="bold red")
    return text


class FleetScreen(Translated, Screen):
    class OpenBox(Message):
        """The user asked for this box's dashboard (the fleet app opens it)."""

        def __init__(self, box: BoxContext) -> None:
            super().__init__()
            self.box = box

    BINDINGS = [
        Binding("enter", "open", N_("Dashboard"), id="fleet.open", priority=True,  # over the table's
                tooltip=N_("Open this box's dashboard (escape comes back; the others stay connected)")),
        Binding("R", "release", N_("Release"), id="fleet.release",
                tooltip=N_("This box's shutdown checklist, then release it")),
        Binding("a", "autostop", N_("Autostop"), id="fleet.autostop",
                tooltip=N_("Arm or cancel this box's autostop")),
        Binding("N", "nvitop", "nvitop", id="fleet.nvitop",
                tooltip=N_("nvitop on this box in this terminal (offers to install it into gputui's folder)")),
        Binding("s", "sort", N_("Sort"), id="fleet.sort", tooltip=N_("Sort by cost, idle time or name")),
        Binding("r", "retry", N_("Reconnect"), id="fleet.retry", tooltip=N_("Reconnect this box now")),
    ]
    DEFAULT_CSS = """
    FleetScreen #fleet-header { height: auto; padding: 0 1; }
    FleetScreen DataTable { height: 1fr; }
    """

    def __init__(self, fleet: "Fleet") -> None:
        super().__init__(id="fleet")
        self.fleet = fleet
        self.sort_key = "cost"
        self.order: List[str] = []  # hosts in table order
        self._shown: Dict[str, list] = {}  # host -> cells on screen: only changed cells are redrawn

    def compose(self) -> ComposeResult:
        yield Static(id="fleet-header")
        yield DataTable(id="fleet-table", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self):
        table = self.query_one(DataTable)
        for key, title in COLUMNS:
            table.add_column(_(title), key=key)
        self.refresh_rows()

    def refresh_rows(self, rows=None):
        rows = fleet.sort_rows(self.fleet.rows() if rows is None else rows, self.sort_key)
        self.query_one("#fleet-header", Static).update(header_text(rows, self.sort_key))
        table = self.query_one(DataTable)
        order = [r.host for r in rows]
        if order != self.order:
            selected = self.selected_host()
            table.clear()
            self._shown = {}
            for r in rows:
                self._shown[r.host] = row_cells(r)
                table.add_row(*self._shown[r.host], key=r.host)
            self.order = order
            if selected in order:
                table.move_cursor(row=order.index(selected))
        else:
            for r in rows:
                cells, old = row_cells(r), self._shown.get(r.host, ())
                for i, ((key, _), cell) in enumerate(zip(COLUMNS, cells)):
                    if i >= len(old) or _look(cell) != _look(old[i]):
                        table.update_cell(r.host, key, cell, update_width=True)
                self._shown[r.host] = cells

    def selected_host(self):
        table = self.query_one(DataTable)
        if not self.order or table.cursor_row is None or table.cursor_row >= len(self.order):
            return None
        return self.order[table.cursor_row]

    def _box(self) -> Optional[BoxContext]:
        """The selected box, if it is connected (a released or unresolvable one says so)."""
        host = self.selected_host()
        if host is None:
            return None
        box = self.fleet.box(host)
        if not isinstance(box, BoxContext) or box.session is None:
            self.app.notify(_("%s is not connected (released or not reachable by name)") % host,
                            severity="warning", markup=False)
            return None
        return box

    def on_data_table_row_selected(self, _event: DataTable.RowSelected) -> None:
        self.action_open()

    def action_open(self) -> None:
        box = self._box()
        if box is not None:
            self.post_message(self.OpenBox(box))

    def action_release(self) -> None:
        box = self._box()
        if box is not None:
            self.app.push_screen(ReleaseScreen(box))

    @background("Autostop", group="dialog")
    async def action_autostop(self) -> None:
        box = self._box()
        if box is not None:
            await flows.arm_or_cancel_autostop(flows.cockpit(self), box)

    @background("nvitop", group="dialog")
    async def action_nvitop(self) -> None:
        box = self._box()
        if box is not None:
            await flows.open_nvitop(flows.cockpit(self), box)

    def action_sort(self) -> None:
        self.sort_key = fleet.next_sort(self.sort_key)
        self.refresh_rows()

    def action_retry(self) -> None:
        host = self.selected_host()
        if host:
            self.fleet.restart(host)
