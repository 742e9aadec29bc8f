"""The top line: host, GPU model, connection state, round-trip latency, data age."""

import functools
from typing import Optional, Tuple, Union

from rich.text import Text

from tui.core.text.boxtext import visible
from tui.core.i18n import _, language
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
    known = conn_state(state)
    # what the parts show, as shown (a second more of reconnect wait, an rtt a tenth of a ms
    # off: the same words): the parts are built again only when these change (issue 38)
    wait = ((reconnect[0], max(0, round(reconnect[1])))
            if known is ConnState.RECONNECTING and reconnect else None)
    shown_rtt = "%.0f" % rtt_ms if rtt_ms is not None and known is ConnState.LIVE else None
    shown_age = "%.0f" % age if age is not None and (known is not ConnState.LIVE or age > 5) else None
    parts = list(_parts(language(), host_label, model, state if known is None else known, wait,
                        shown_rtt, shown_age, driver, cuda, provider, transport))
    if clock is not None:
        parts.append((clock, KEEP))
    if width:
        kept = fit(parts, width, keep=(KEEP, 9), length=lambda t: t.cell_len)
        if sum(t.cell_len for t in kept) > width:  # still too long: shorten the host name
            at = 1 if len(kept) > 1 and kept[0].plain == " gputui " else 0
            host = kept[at] = kept[at].copy()  # the parts are kept for the next second
            over = sum(t.cell_len for t in kept) - width
            host.truncate(max(4, host.cell_len - over - 1), overflow="ellipsis")
    else:
        kept = [t for t, _ in parts]
    t = Text()
    for part in kept:
        t.append_text(part)
    return t


@functools.lru_cache(maxsize=8)
def _parts(lang: str, host_label: str, model: Optional[str], state: Union[ConnState, str],
           wait: Optional[Tuple[int, int]], rtt: Optional[str], age: Optional[str],
           driver: Optional[str], cuda: Optional[str], provider: Optional[str],
           transport: Optional[str]) -> Tuple[Tuple[Text, int], ...]:
    """The header's parts but the clock, with their priorities (`lang`: the words' language;
    callers copy a part before changing it)."""
    parts = [(Text(" gputui ", style="bold reverse"), 1),
             (Text(" %s " % visible(host_label, limit=60), style="bold"), 9)]
    if model:
        parts.append((Text(" %s " % visible(model, limit=40), style="cyan"), 4))
    if provider and provider != "unknown provider":
        parts.append((Text(" %s " % visible(provider, limit=30), style="magenta"), 2))
    if driver:
        parts.append((Text(visible(_(" driver %s%s ") % (driver, (" · CUDA %s" % cuda) if cuda else ""),
                                   limit=50), style="dim"), 3))
    known = state if isinstance(state, ConnState) else None
    dot, style = (known.dot, known.style) if known else ("?", "")
    if wait is not None:
        parts.append((Text(_(" %s reconnecting — attempt %d, next in %ds (r: now) ") % (
            dot, wait[0], wait[1]), style=style), KEEP))
    else:
        parts.append((Text(" %s %s " % (dot, known.label if known else visible(state, limit=20)),
                            style=style), KEEP))
    if transport and transport != "exec":
        parts.append((Text(_(" via %s ") % _(transport), style="yellow"), 6))
    if rtt is not None:
        parts.append((Text(_(" rtt %.0f ms ") % float(rtt), style="dim"), 5))  # rtt: "%.0f" of it
    if age is not None:
        parts.append((Text(_(" data %.0fs old ") % float(age), style="bold yellow"), 8))
    return tuple(parts)


class StatusBar(LinePanel):
    DEFAULT_CSS = """
    StatusBar { dock: top; height: 1; background: $panel; }
    """
