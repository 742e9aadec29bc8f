"""The box itself: CPU total and per core, iowait, load, RAM, disks, network."""

import functools
from typing import Any, List, Optional, Sequence, Tuple

from rich.text import Text

from tui.core.text import format as fmt
from tui.core.text.boxtext import visible
from tui.core.i18n import _
from tui.core.model import Host, HostFacts
from tui.ui.widgets.graph import ScrollingGraph
from tui.ui.widgets.live import NEWLINE, LinePanel, styled


def _line(text: str, style: str) -> Text:
    """One line in one style, as a span (what the joined text split into lines held)."""
    t = Text()
    t.append(text.rstrip("\n"), style=style)
    return t


@functools.lru_cache(maxsize=4096, typed=True)  # typed: 1, 1.0 and True are three keys
def _core_cell(value: Any) -> Tuple[str, str]:
    """One core's block and style; looked up by value (a box's cores repeat the same few
    dozen figures: 32 cores a second were 400 calls)."""
    return (" ▁▂▃▄▅▆▇█"[max(0, min(8, int(round(fmt.finite_or_zero(value) / 12.5))))],
            fmt.level_style(value, 60, 90))


def host_lines(host: Optional[Host], facts: HostFacts, cpu_history: Sequence[float],
               width: int = 36, graph: Optional[ScrollingGraph] = None) -> List[Text]:
    """The panel's lines (the panel compares them line by line)."""
    if host is None:
        return [Text(_("waiting for host data…"), style="dim")]
    lines = []
    ncpu = facts.ncpu or len(host.cores)
    limit = facts.cpu_limit
    t = Text()
    t.append("CPU ", style="bold")
    t.append("%s" % fmt.pct(host.cpu))
    t.append(_("  %s cores%s") % (fmt.na(ncpu, "%d"), fmt.na(limit, _(" (limit %.1f)")) if limit else ""),
             style="dim")
    lines.append(t)
    cores = host.cores
    per_line = max(4, (width - 2) // 5)
    for i in range(0, len(cores), per_line):
        lines.append(styled([_core_cell(c) for c in cores[i:i + per_line]]))
    span = max(10, width - 2)
    for row in graph.rows(cpu_history, span, 1) if graph is not None else fmt.graph(cpu_history, span, height=1):
        lines.append(_line(row, "cyan"))
    lines.append(_line(_("iowait %s  load %s\n") % (
        fmt.pct(host.iowait),
        " ".join(fmt.na(x, "%.2f") for x in (host.load or (None,) * 3))), style="dim"))
    used, total = host.mem_used, host.mem_total
    t = Text()
    t.append(_("RAM  "), style="bold")
    t.append(fmt.bar(fmt.ratio(used, total), 12), style="magenta")
    t.append(" %s / %s" % (fmt.mib(used), fmt.mib(total)))
    lines.append(t)
    if host.swap_total:
        lines.append(_line(_("swap %s / %s\n") % (fmt.mib(host.swap_used), fmt.mib(host.swap_total)),
                           style="dim"))
    lines.append(_line(_("Disks\n"), style="bold"))
    for d in host.disks:
        frac = fmt.ratio(d.used, d.total)
        style = fmt.level_style(frac * 100 if frac is not None else None, 85, 95)
        t = Text()
        t.append(" %-14s " % visible(d.mount)[-14:])
        t.append(fmt.bar(frac, 8), style=style)
        t.append(_(" %s free\n").rstrip("\n") % fmt.mib(d.free), style="dim")
        lines.append(t)
    t = Text()
    t.append(_("Net  "), style="bold")
    t.append("↓ %s  ↑ %s" % (fmt.bytes_rate(host.rx_bps), fmt.bytes_rate(host.tx_bps)))
    lines.append(t)
    return lines


def render_host(host: Optional[Host], facts: HostFacts, cpu_history: Sequence[float],
                width: int = 36, graph: Optional[ScrollingGraph] = None) -> Text:
    """The panel's text: a plain function, so tests read it without a terminal."""
    return NEWLINE.join(host_lines(host, facts, cpu_history, width, graph))


class HostPanel(LinePanel):
    DEFAULT_CSS = """
    HostPanel { border: round $primary-darken-1; padding: 0 1; height: auto; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._graph = ScrollingGraph()  # the CPU history, shifted one column per sample

    def show(self, host: Optional[Host], facts: HostFacts, cpu_history: Sequence[float]) -> None:
        width = max(20, self.size.width - 4) if self.size.width else 36
        self.show_lines(host_lines(host, facts, cpu_history, width, self._graph))
