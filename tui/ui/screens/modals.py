"""Modal screens: help, host-key trust, yes/no, and the OK/Cancel forms (rate, autostop,
login answers; the tmux job and release dialogs elsewhere share FormScreen)."""

import math
from typing import Any, ClassVar, Iterator

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Input, Label, Static
from textual.widgets.button import ButtonVariant

from tui.core.billing.rates import next_clock_time
from tui.core.text.boxtext import visible
from tui.core.i18n import N_, _
from tui.ui.boxtext_rich import box_text
from tui.ui.translate import Translated
from tui.ui.widgets.key_help import KeyHelp


class FormScreen(Translated, ModalScreen):
    """An OK/Cancel dialog: Enter in a field or the OK button submits, escape or Cancel
    dismisses with CANCELLED. Subclasses compose their fields, end with form_buttons(), and
    say in submit() what a valid form dismisses with (or show why not with error())."""

    OK_ID: ClassVar[str] = "ok"  # the OK button's id
    CANCELLED: ClassVar[Any] = None  # what cancelling dismisses with

    def form_buttons(self, ok: str, ok_variant: ButtonVariant = "primary",
                     cancel_variant: ButtonVariant = "default") -> Iterator[Widget]:
        with Horizontal():
            yield Button(ok, id=self.OK_ID, variant=ok_variant)
            yield Button(_("Cancel (esc)"), id="cancel", variant=cancel_variant)

    def submit(self) -> None:
        raise NotImplementedError

    def error(self, text: Any) -> None:
        self.query_one("#error", Static).update(text)

    # Textual calls a handler of every class along the MRO: the handlers live here only, and
    # subclasses override the plain methods they call.
    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.field_submitted(event.input)

    def field_submitted(self, _field: Input) -> None:
        """Enter in a field: submit the form (a subclass may move to the next field first)."""
        self.submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == self.OK_ID:
            self.submit()
        else:
            self.dismiss(self.CANCELLED)

    def action_cancel(self) -> None:
        self.dismiss(self.CANCELLED)


class HelpScreen(Translated, ModalScreen[None]):
    """Every key of the current screen, with what it does."""

    BINDINGS = [Binding("escape,question_mark,q", "dismiss", N_("Close"), id="help.close")]
    # The scrollbar (80x24 shows about half the keys) sits against the frame, 1 column wide:
    # inside the padding it stood in the text's right margin, its thumb's end a stray "▆▆".
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 76; max-width: 100%; max-height: 80%; border: thick $primary;
                                  background: $surface; padding: 0; height: auto;
                                  scrollbar-size-vertical: 1; }
    HelpScreen KeyHelp { padding: 1 1 1 2; }
    """

    def __init__(self, bindings, about):
        super().__init__()
        self.keys = bindings
        self.about = about

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield KeyHelp(self.keys, self.about, id="help-text")

    def action_dismiss(self):
        self.dismiss(None)


class HostKeyScreen(Translated, ModalScreen[bool]):
    """Unknown host key: show the fingerprint, trust only on an explicit yes.

    "Do not trust" has the focus, so Enter (or a stray key press) never trusts."""

    AUTO_FOCUS = "#no"

    BINDINGS = [
        Binding("y", "answer(True)", N_("Trust and connect"), id="hostkey.yes"),
        Binding("n,escape", "answer(False)", N_("Do not trust"), id="hostkey.no"),
    ]
    DEFAULT_CSS = """
    HostKeyScreen { align: center middle; }
    HostKeyScreen > Vertical { width: 84; max-width: 100%; height: auto; border: thick $warning;
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
            yield Label(Text(_("Unknown host key"), style="bold yellow"))
            yield Static(Text.assemble(
                _("gputui has never connected to "), (visible(self.host), "bold"), _(" before.\n\n"),
                _("%s key fingerprint:\n") % visible(self.algorithm),
                ("  %s\n\n" % visible(self.fingerprint), "bold cyan"),
                _("Compare it with the one your provider shows (or `ssh-keygen -lf` on the box).\n"
                  "Trusting adds it to %s.") % visible(self.known_hosts_file)))
            with Horizontal():
                yield Button(_("Do not trust (n)"), id="no", variant="primary")
                yield Button(_("Trust (y)"), id="yes", variant="warning")

    def on_button_pressed(self, event):
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes):
        self.dismiss(bool(yes))


class RateScreen(FormScreen):
    """Enter what the box costs; remembered per host in the config."""

    OK_ID = "save"
    BINDINGS = [Binding("escape", "cancel", N_("Cancel"), id="rate.cancel")]
    DEFAULT_CSS = """
    RateScreen { align: center middle; }
    RateScreen > Vertical { width: 70; max-width: 100%; height: auto; border: thick $primary; background: $surface; padding: 1 2; }
    RateScreen Input, RateScreen Select { margin-bottom: 1; }
    RateScreen #error { color: $error; height: auto; }
    """

    def __init__(self, host, rate, currency, granularity):
        super().__init__()
        self.host, self.rate, self.currency, self.granularity = host, rate, currency, granularity

    def compose(self) -> ComposeResult:
        from textual.widgets import Select
        with Vertical():
            yield Label(Text(_("What does %s cost?") % self.host, style="bold"))
            yield Label(_("Price per hour for the whole box:"))
            yield Input(value="" if self.rate is None else str(self.rate), placeholder=_("e.g. 2.58"),
                        id="rate", type="number")
            yield Label(_("Currency (CNY, USD, EUR, …):"))
            yield Input(value=self.currency, id="currency", max_length=4)
            yield Label(_("The provider bills per:"))
            yield Select([(_("second"), "second"), (_("minute"), "minute"),
                          (_("started hour (rounded up)"), "hour")],
                         value=self.granularity, allow_blank=False, id="granularity")
            yield Static(id="error")
            yield from self.form_buttons(_("Save (enter)"))

    def submit(self) -> None:
        from textual.widgets import Select
        raw = self.query_one("#rate", Input).value.strip()
        try:
            rate = float(raw)
            if not math.isfinite(rate) or rate < 0:
                raise ValueError
        except ValueError:
            self.error(_("Enter a price like 2.58 (a number ≥ 0)."))
            return
        currency = self.query_one("#currency", Input).value.strip().upper() or "CNY"
        self.dismiss((rate, currency, self.query_one("#granularity", Select).value))


class AutostopScreen(FormScreen):
    """Arm autostop: the conditions, and exactly which command will run on the box."""

    OK_ID = "arm"
    BINDINGS = [Binding("escape", "cancel", N_("Cancel"), id="autostop.cancel")]
    DEFAULT_CSS = """
    AutostopScreen { align: center middle; }
    AutostopScreen > Vertical { width: 84; max-width: 100%; height: auto; border: thick $warning; background: $surface; padding: 1 2; }
    AutostopScreen Input { margin-bottom: 1; }
    AutostopScreen #error { color: $error; height: auto; }
    """

    def __init__(self, host, command, idle_minutes, max_hours, grace_seconds, stop_at=None,
                 cancel_command=None):
        super().__init__()
        self.host, self.command, self.stop_at = host, command, stop_at
        self.cancel_command = cancel_command  # the box's own: its probe's state dir
        self.idle_minutes, self.max_hours, self.grace = idle_minutes, max_hours, grace_seconds

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(_("Arm autostop on %s") % self.host, style="bold yellow"))
            yield Static(id="what", content=Text.assemble(
                _("The probe on the box will run, as you on the box:\n\n"),
                ("  %s\n\n" % visible(self.command), "bold"),
                _("when a condition below is met, after a %d s warning to every tmux client, "
                  "terminal and this app. It works with your laptop closed. Cancel any time "
                  "with a.") % self.grace,
                (" " + _("On the box: %s") % visible(self.cancel_command)) if self.cancel_command else ""))
            yield Label(_("All GPUs idle for (minutes, empty = no idle rule):"))
            yield Input(value="" if self.idle_minutes is None else "%g" % self.idle_minutes,
                        id="idle", type="number")
            yield Label(_("Stop after at most (hours from now, empty = no deadline):"))
            yield Input(value="" if self.max_hours is None else "%g" % self.max_hours,
                        id="hours", type="number")
            yield Label(_("Stop at (local time HH:MM, empty = none):"))
            yield Input(value=self.stop_at or "", id="stop_at", placeholder="07:00")
            yield Static(id="error")
            # Enter in any field arms, like every other form in gputui
            yield from self.form_buttons(_("Arm"), ok_variant="warning", cancel_variant="primary")

    def submit(self) -> None:
        def number(widget_id):
            raw = self.query_one(widget_id, Input).value.strip()
            return float(raw) if raw else None
        stop_at = self.query_one("#stop_at", Input).value.strip() or None
        try:
            idle, hours = number("#idle"), number("#hours")
        except ValueError:
            self.error(_("Enter numbers, or leave a field empty."))
            return
        if stop_at and not _is_clock_time(stop_at):
            self.error(_("Stop at: a time like 07:00."))
            return
        if idle is None and hours is None and not stop_at:
            self.error(_("Give an idle time, a deadline, or both."))
            return
        self.dismiss({"idle_minutes": idle, "max_hours": hours, "stop_at": stop_at})


class ConfirmScreen(Translated, ModalScreen[bool]):
    """A yes/no question. A str question is box text (a session name, an argv, paths):
    shown through box_text, never as markup; our own styling comes as a Text."""

    BINDINGS = [Binding("y", "answer(True)", N_("Yes"), id="confirm.yes"),
                Binding("n,escape", "answer(False)", N_("No"), id="confirm.no")]
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical { width: 70; max-width: 100%; height: auto; border: thick $warning; background: $surface; padding: 1 2; }
    """

    def __init__(self, question):
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.question if isinstance(self.question, Text)
                         else box_text(self.question, keep_newlines=True))
            yield Static(Text(_("y: yes    n: no"), style="bold"))

    def action_answer(self, yes):
        self.dismiss(bool(yes))


def _is_clock_time(text):
    try:
        next_clock_time(text, 0)
        return True
    except ValueError:
        return False


# -- logins (issue 9): password, keyboard-interactive, key passphrase -----------------------
class PasswordScreen(FormScreen):
    """Masked answers to a login prompt, worded as the server words it.

    Dismisses with the list of answers, or None on cancel. Server text is data: shown as
    Text with control characters made visible, never as markup.
    """

    BINDINGS = [Binding("escape", "cancel", N_("Cancel"), id="password.cancel")]
    DEFAULT_CSS = """
    PasswordScreen { align: center middle; }
    PasswordScreen > Vertical { width: 76; height: auto; border: thick $warning;
                                background: $surface; padding: 1 2; }
    PasswordScreen Input { margin-bottom: 1; }
    PasswordScreen Horizontal { height: auto; }
    PasswordScreen Button { margin-right: 2; }
    """

    def __init__(self, title, prompts, instructions=""):
        super().__init__()
        self.title_text, self.instructions = title, instructions
        self.prompts = list(prompts)  # [(text, echo)]

    def compose(self) -> ComposeResult:
        from tui.remote.asker import ssh_text
        with Vertical():
            yield Label(Text(ssh_text(self.title_text), style="bold yellow"))
            if self.instructions:
                yield Static(Text(ssh_text(self.instructions)))
            for i, (prompt, echo) in enumerate(self.prompts):
                yield Label(Text(ssh_text(prompt.strip())))
                yield Input(password=not echo, id="answer-%d" % i)
            yield Static(Text(_("Kept in memory for reconnects of this run only; written nowhere."),
                              style="dim"))
            yield from self.form_buttons(_("Log in (enter)"))

    def field_submitted(self, field: Input) -> None:
        """Enter moves to the next answer; on the last one it logs in."""
        inputs = list(self.query(Input))
        i = inputs.index(field)
        if i + 1 < len(inputs):
            inputs[i + 1].focus()
        else:
            self.submit()

    def submit(self) -> None:
        self.dismiss([w.value for w in self.query(Input)])


from tui.remote.asker import PromptAsker  # noqa: E402 - kept with the login dialogs


class DialogAsker(PromptAsker):
    """The app's answers to ssh's questions: masked dialogs over the dashboard."""

    def __init__(self, app, host_key):
        super().__init__(host_key)
        self.app = app

    async def ask_password(self, prompt):
        answers = await self.app.push_screen_wait(
            PasswordScreen(_("Password login: %s") % self.host_key, [(prompt, False)]))
        return answers[0] if answers else None

    async def ask_passphrase(self, keyfile):
        answers = await self.app.push_screen_wait(PasswordScreen(
            _("Your key %s is encrypted") % keyfile, [(_("Passphrase for %s:") % keyfile, False)]))
        return answers[0] if answers else None

    async def ask_kbdint(self, name, instructions, prompts):
        return await self.app.push_screen_wait(PasswordScreen(
            name or _("Login: %s") % self.host_key, prompts, instructions))

    async def confirm(self, question):
        return await self.app.push_screen_wait(ConfirmScreen(Text(question)))

    def tell(self, message):
        self.app.notify(message, timeout=15, markup=False)  # paths are data, not markup
