"""Modal screens: help, host-key trust."""

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static


class HelpScreen(ModalScreen[None]):
    """Every key of the current screen, with what it does."""

    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close", id="help.close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 76; max-height: 80%; border: thick $primary;
                                  background: $surface; padding: 1 2; height: auto; }
    """

    def __init__(self, bindings, about):
        super().__init__()
        self.keys = bindings
        self.about = about

    def compose(self) -> ComposeResult:
        t = Text()
        t.append("gputui — keys\n\n", style="bold")
        for key, description, tooltip in self.keys:
            t.append(" %-10s" % key, style="bold cyan")
            t.append(" %s" % description)
            if tooltip:
                t.append("  — %s" % tooltip, style="dim")
            t.append("\n")
        t.append("\n ctrl+p     ", style="bold cyan")
        t.append("command palette: every action by name\n")
        t.append("\n" + self.about, style="dim")
        with VerticalScroll():
            yield Static(t, id="help-text")

    def action_dismiss(self):
        self.dismiss(None)


class HostKeyScreen(ModalScreen[bool]):
    """Unknown host key: show the fingerprint, trust only on an explicit yes."""

    BINDINGS = [
        Binding("y", "answer(True)", "Trust and connect", id="hostkey.yes"),
        Binding("n,escape", "answer(False)", "Do not trust", id="hostkey.no"),
    ]
    DEFAULT_CSS = """
    HostKeyScreen { align: center middle; }
    HostKeyScreen > Vertical { width: 84; height: auto; border: thick $warning;
                               background: $surface; padding: 1 2; }
    HostKeyScreen Horizontal { height: auto; margin-top: 1; }
    HostKeyScreen Button { margin-right: 2; }
    """

    def __init__(self, host, algorithm, fingerprint, known_hosts_file):
        super().__init__()
        self.host, self.algorithm = host, algorithm
        self.fingerprint, self.known_hosts_file = fingerprint, known_hosts_file

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text("Unknown host key", style="bold yellow"))
            yield Static(Text.assemble(
                "gputui has never connected to ", (self.host, "bold"), " before.\n\n",
                "%s key fingerprint:\n" % self.algorithm,
                ("  %s\n\n" % self.fingerprint, "bold cyan"),
                "Compare it with the one your provider shows (or `ssh-keygen -lf` on the box).\n"
                "Trusting adds it to %s." % self.known_hosts_file))
            with Horizontal():
                yield Button("Trust (y)", id="yes", variant="warning")
                yield Button("Cancel (n)", id="no", variant="primary")

    def on_button_pressed(self, event):
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes):
        self.dismiss(bool(yes))
