"""Which of the provider's release actions to take (issue 22): RunPod stop or terminate, Vast
stop or destroy, Azure deallocate or an OS shutdown. Each shows what it runs, keeps, wipes and
bills afterwards, any clock it starts, and its warning. Dismisses with the action's key, or None."""

from typing import List, Optional

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from tui.core.i18n import N_, _
from tui.core.checks.release_actions import ActionChoice
from tui.ui.boxtext_rich import box_text
from tui.ui.translate import Translated


def choice_text(c: ActionChoice) -> Text:
    t = box_text(c.label + (_("  (chosen)") if c.chosen else ""), style="bold")
    t.append("\n")
    for line in c.lines:
        t.append_text(box_text("  " + line))
        t.append("\n")
    if c.warning:
        t.append_text(box_text("  ⚠ " + c.warning, style="bold red"))
        t.append("\n")
    return t


class ActionChoiceScreen(Translated, ModalScreen[Optional[str]]):
    BINDINGS = [Binding("escape", "cancel", N_("Cancel"), id="choice.cancel")]
    DEFAULT_CSS = """
    ActionChoiceScreen { align: center middle; }
    ActionChoiceScreen > Vertical { width: 100; max-width: 100%; height: auto; max-height: 90%;
                                    border: thick $warning; background: $surface; padding: 1 2; }
    ActionChoiceScreen OptionList { height: auto; max-height: 30; }
    """

    def __init__(self, provider: str, choices: List[ActionChoice]) -> None:
        super().__init__()
        self.provider, self.choices = provider, choices

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(box_text(_("How should %s release this box?") % self.provider, style="bold yellow"))
            options = OptionList(*[Option(choice_text(c), id=c.key) for c in self.choices], id="choices")
            yield options

    def on_mount(self) -> None:
        options = self.query_one("#choices", OptionList)
        options.highlighted = next((i for i, c in enumerate(self.choices) if c.chosen), 0)
        options.focus()

    @on(OptionList.OptionSelected)
    def picked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
