"""The top line: host, GPU model, connection state, round-trip latency, data age."""

from typing import Optional, Tuple, Union

from rich.text import Text

from tui.core.text.boxtext import visible
from tui.core.i18n import _
from tui.core.layout import fit
from tui.core.model import ConnState, conn_state
from tui.ui.widgets.live import LinePanel

# Priorities when the terminal is narrow: the state and the money meter always stay.
KEEP = 10


def render_status(host_label: str, model: Optional[str], state: Union[ConnState, str],
                  rtt_ms: Optional[float], age: Optional[float], driver: Optional[str] = None,
                  cuda: Optional[str] = None, provider: Optional[str] = None,
                  reconnect: Optional[Tuple[int, float]] = None, clock: Optional[Text] = None,
                  transport: Optional[str] = None, width: Optional[int] = None) -> Text:
    """The header line; parts drop lowest priority first so it fits `width` (issue 11).
    Host label, model, provider and driver can come from the box: visible()."""
    parts = [(Text(" gputui ", style="bold reverse"), 1),
             (Text(" %s " % visible(host_label, limit=60), style="bold"), 9)]
    if model:
        parts.append((Text(" %s " % visible(model, limit=40), style="cyan"), 4))
    if provider and provider != "unknown provider":
        parts.append((Text(" %s " % visible(provider, limit=30), style="magenta"), 2))
    if driver:
        parts.append((Text(visible(_(" driver %s%s ") % (driver, (" · CUDA %s" % cuda) if cuda else ""),
                                   limit=50), style="dim"), 3))
    known = conn_state(state)
    dot, style = (known.dot, known.style) if known else ("?", "")
    if known is ConnState.RECONNECTING and reconnect:
        attempt, left = reconnect
        parts.append((Text(_(" %s reconnecting — attempt %d, next in %ds (r: now) ") % (
            dot, attempt, max(0, round(left))), style=style), KEEP))
    else:
        parts.append((Text(" %s %s " % (dot, known.label if known else visible(state, limit=20)),
                            style=style), KEEP))
    if transport and transport != "exec":
        parts.append((Text(_(" via %s ") % _(transport), style="yellow"), 6))
    if rtt_ms is not None and known is ConnState.LIVE:
        parts.append((Text(_(" rtt %.0f ms ") % rtt_ms, style="dim"), 5))
    if age is not None and (known is not ConnState.LIVE or age > 5):
        parts.append((Text(_(" data %.0fs old ") % age, style="bold yellow"), 8))
    if clock is not None:
        parts.append((clock, KEEP))
    if width:
        kept = fit(parts, width, keep=(KEEP, 9), length=lambda t: t.cell_len)
        if sum(t.cell_len for t in kept) > width:  # still too long: shorten the host name
            host = kept[1] if len(kept) > 1 and kept[0].plain == " gputui " else kept[0]
            over = sum(t.cell_len for t in kept) - width
            host.truncate(max(4, host.cell_len - over - 1), overflow="ellipsis")
    else:
        kept = [t for t, _ in parts]
    t = Text()
    for part in kept:
        t.append_text(part)
    return t


class StatusBar(LinePanel):
    DEFAULT_CSS = """
    StatusBar { dock: top; height: 1; background: $panel; }
    """
