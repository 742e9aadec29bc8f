"""The top line: host, GPU model, connection state, round-trip latency, data age."""

from rich.text import Text
from textual.widgets import Static

from tui.core.boxtext import visible

STATE_STYLE = {
    "live": ("●", "bold green"),
    "connecting": ("◌", "yellow"),
    "starting probe": ("◌", "yellow"),
    "deploying probe": ("◌", "yellow"),
    "reconnecting": ("◌", "bold yellow"),
    "failed": ("✗", "bold red"),
    "closed": ("○", "dim"),
}


def render_status(host_label, model, state, rtt_ms, age, driver=None, cuda=None, provider=None,
                  reconnect=None):
    t = Text()
    t.append(" gputui ", style="bold reverse")
    t.append(" %s " % visible(host_label, limit=60), style="bold")
    if model:
        t.append(" %s " % visible(model, limit=40), style="cyan")
    if provider and provider != "unknown provider":
        t.append(" %s " % visible(provider, limit=30), style="magenta")
    if driver:
        t.append(visible(" driver %s%s " % (driver, (" · CUDA %s" % cuda) if cuda else ""), limit=50),
                 style="dim")
    dot, style = STATE_STYLE.get(state, ("?", ""))
    if state == "reconnecting" and reconnect:
        attempt, left = reconnect
        t.append(" %s reconnecting — attempt %d, next in %ds (r: now) " % (dot, attempt, max(0, round(left))),
                 style=style)
    else:
        t.append(" %s %s " % (dot, state), style=style)
    if rtt_ms is not None and state == "live":
        t.append(" rtt %.0f ms " % rtt_ms, style="dim")
    if age is not None and (state != "live" or age > 5):
        t.append(" data %.0fs old " % age, style="bold yellow")
    return t


class StatusBar(Static):
    DEFAULT_CSS = """
    StatusBar { dock: top; height: 1; background: $panel; }
    """
