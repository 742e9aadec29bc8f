"""The preflight screen: is this box what you paid for?"""

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, LoadingIndicator, Static

from tui.core.preflight import worst
from tui.ui.background import background
from tui.ui.boxtext import box_text

MARK = {"pass": ("✓", "green"), "warn": ("!", "yellow"), "fail": ("✗", "bold red")}


def summary(checks):
    fails = sum(c.verdict == "fail" for c in checks)
    warns = sum(c.verdict == "warn" for c in checks)
    if not fails and not warns:
        return "Preflight: all %d checks pass" % len(checks)
    return "Preflight: %d failed, %d warning%s — press d" % (fails, warns, "" if warns == 1 else "s")


class DoctorScreen(Screen):
    BINDINGS = [
        Binding("escape,d", "app.pop_screen", "Back", id="doctor.back", tooltip="Back to the dashboard"),
        Binding("r", "rerun", "Re-run", id="doctor.rerun", tooltip="Run the preflight again, with the GPU matmul"),
    ]
    DEFAULT_CSS = """
    DoctorScreen #checks { height: 1fr; border: round $primary-darken-1; }
    DoctorScreen #doctor-head { height: auto; padding: 0 1; }
    DoctorScreen LoadingIndicator { height: 3; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="doctor-head")
        yield LoadingIndicator(id="doctor-busy")
        yield DataTable(id="checks", cursor_type="row", zebra_stripes=True)
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self):
        table = self.query_one("#checks", DataTable)
        table.add_columns("", "CHECK", "RESULT")
        table.border_title = box_text("Preflight of %s" % self.app.state.host_label)
        if self.app.preflight_checks is not None:
            self.show(self.app.preflight_checks)
        else:
            self.action_rerun()

    def show(self, checks):
        self.query_one("#doctor-busy").display = False
        table = self.query_one("#checks", DataTable)
        table.clear()
        for c in checks:
            mark, style = MARK[c.verdict]
            table.add_row(Text(mark, style=style), box_text(c.name),
                          box_text(c.reason, style=style if c.verdict != "pass" else ""))
        verdict = worst(checks)
        self.query_one("#doctor-head", Static).update(Text(summary(checks).replace(" — press d", ""),
                                                           style=MARK[verdict][1]))

    @background("Preflight", group="doctor")
    async def action_rerun(self):
        self.query_one("#doctor-busy").display = True
        self.query_one("#doctor-head", Static).update(
            "Checking the box: driver, torch build, a matmul on each GPU, disks, network… (up to a minute)")
        try:
            checks = await self.app.run_preflight(smoke=True)
        finally:
            self.query_one("#doctor-busy").display = False
        self.show(checks)
