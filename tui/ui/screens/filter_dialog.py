"""`/` on the dashboard: show only the processes whose command, user or pid match."""

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, Label, Static

from tui.core.i18n import N_, _
from tui.ui.screens.modals import FormScreen


class FilterScreen(FormScreen):
    """Dismisses with the filter text ("" shows every process again), or None on cancel."""

    BINDINGS = [Binding("escape", "cancel", N_("Cancel"), id="filter.cancel")]
    DEFAULT_CSS = """
    FilterScreen { align: center middle; }
    FilterScreen > Vertical { width: 70; max-width: 100%; height: auto; border: thick $primary;
                              background: $surface; padding: 1 2; }
    FilterScreen #error { height: auto; }
    """

    def __init__(self, current: str = "") -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(_("Filter processes"), style="bold"))
            yield Label(_("Words to find in the command, user or pid, each at the start of a word "
                      "(empty: show all):"))
            yield Input(value=self.current, placeholder="train.py", id="filter")
            yield Static(id="error")
            yield from self.form_buttons(_("Filter (enter)"))

    def submit(self) -> None:
        self.dismiss(self.query_one("#filter", Input).value.strip())
