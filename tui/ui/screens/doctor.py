"""The preflight screen of one box: is this box what you paid for?"""

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, LoadingIndicator, Static

from tui.core.i18n import N_, _
from tui.core.layout import clip
from tui.core.checks.preflight import PRESS_D, summary, worst
from tui.ui import flows
from tui.ui.background import background
from tui.ui.box_context import BoxContext
from tui.ui.widgets.footer import Footer
from tui.ui.translate import Translated
from tui.ui.boxtext_rich import box_text, join

MARK = {"pass": ("✓", "green"), "warn": ("!", "yellow"), "fail": ("✗", "bold red")}


class DoctorScreen(Translated, Screen):
    BINDINGS = [
        Binding("escape,d", "app.pop_screen", N_("Back"), id="doctor.back", tooltip=N_("Back to the dashboard")),
        Binding("r", "rerun", N_("Re-run"), id="doctor.rerun", tooltip=N_("Run the preflight again, with the GPU matmul")),
    ]
    DEFAULT_CSS = """
    DoctorScreen #checks { height: 1fr; border: round $primary-darken-1; }
    DoctorScreen #doctor-head { height: auto; padding: 0 1; }
    DoctorScreen LoadingIndicator { height: 3; }
    DoctorScreen #doctor-detail { height: auto; max-height: 6; padding: 0 1; }
    """

    def __init__(self, box: BoxContext) -> None:
        super().__init__()
        self.box = box
        self.checks: list = []

    def compose(self) -> ComposeResult:
        yield Static(id="doctor-head")
        yield LoadingIndicator(id="doctor-busy")
        yield DataTable(id="checks", cursor_type="row", zebra_stripes=True)
        yield Static(id="doctor-detail")  # the selected check in full (the table cuts with …)
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self):
        table = self.query_one("#checks", DataTable)
        table.add_columns("", _("CHECK"), _("RESULT"))
        table.border_title = box_text(_("Preflight of %s") % self.box.label)
        if self.box.preflight_checks is not None:
            self.show(self.box.preflight_checks)
        else:
            self.action_rerun()

    def show(self, checks):
        self.query_one("#doctor-busy").display = False
        self.checks = list(checks)
        table = self.query_one("#checks", DataTable)
        table.clear()
        name_w = max([len(c.name) for c in checks] or [10])
        result_w = max(16, (table.size.width or self.size.width or 80) - name_w - 10)
        for c in checks:
            mark, style = MARK[c.verdict]
            table.add_row(Text(mark, style=style), box_text(c.name),
                          box_text(clip(c.reason, result_w), style=style if c.verdict != "pass" else ""))
        self.show_detail()
        verdict = worst(checks)
        self.query_one("#doctor-head", Static).update(Text(summary(checks).replace(_(PRESS_D), ""),
                                                           style=MARK[verdict][1]))

    def show_detail(self):
        table = self.query_one("#checks", DataTable)
        checks = self.checks
        if checks and table.cursor_row is not None and table.cursor_row < len(checks):
            c = checks[table.cursor_row]
            self.query_one("#doctor-detail", Static).update(
                join((c.name + ": ", "bold"), box_text(c.reason)))

    @on(DataTable.RowHighlighted)
    def highlighted(self, _event):
        self.show_detail()

    @background("Preflight", group="doctor")
    async def action_rerun(self):
        self.query_one("#doctor-busy").display = True
        self.query_one("#doctor-head", Static).update(
            _("Checking the box: driver, torch build, a matmul on each GPU, disks, network… (up to a minute)"))
        try:
            checks = await flows.run_preflight(self.box, smoke=True)
        finally:
            self.query_one("#doctor-busy").display = False
        self.show(checks)
