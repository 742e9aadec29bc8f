"""The `?` key: one spelling for the app's binding and the screens' copies of it (the dashboard
and the Release screen repeat it to place it early in their footers, where 80 columns still
show it: `?` is the way to every key the footer cannot fit)."""

from textual.binding import Binding

from tui.core.i18n import N_


def help_binding(binding_id: str, action: str = "app.help") -> Binding:
    return Binding("question_mark", action, N_("Help"), id=binding_id,
                   tooltip=N_("Show the keys of this screen"))
