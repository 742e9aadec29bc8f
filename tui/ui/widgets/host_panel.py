"""The box itself: CPU total and per core, iowait, load, RAM, disks, network."""

from typing import Optional, Sequence

from rich.text import Text

from tui.core import format as fmt
from tui.core.boxtext import visible
from tui.core.i18n import _
from tui.core.model import Host, HostFacts
from tui.ui.widgets.graph import ScrollingGraph
from tui.ui.widgets.live import LinePanel, update_text


def render_host(host: Optional[Host], facts: HostFacts, cpu_history: Sequence[float],
                width: int = 36, graph: Optional[ScrollingGraph] = None) -> Text:
    t = Text()
    if host is None:
        t.append(_("waiting for host data…"), style="dim")
        return t
    ncpu = facts.ncpu or len(host.cores)
    limit = facts.cpu_limit
    t.append("CPU ", style="bold")
    t.append("%s" % fmt.pct(host.cpu))
    t.append(_("  %s cores%s") % (fmt.na(ncpu, "%d"), fmt.na(limit, _(" (limit %.1f)")) if limit else ""),
             style="dim")
    t.append("\n")
    cores = host.cores
    per_line = max(4, (width - 2) // 5)
    for i in range(0, len(cores), per_line):
        for c in cores[i:i + per_line]:
            level = " ▁▂▃▄▅▆▇█"[max(0, min(8, int(round(fmt.finite_or_zero(c) / 12.5))))]
            t.append(level, style=fmt.level_style(c, 60, 90))
        t.append("\n")
    span = max(10, width - 2)
    for line in graph.rows(cpu_history, span, 1) if graph is not None else fmt.graph(cpu_history, span, height=1):
        t.append(line + "\n", style="cyan")
    t.append(_("iowait %s  load %s\n") % (
        fmt.pct(host.iowait),
        " ".join(fmt.na(x, "%.2f") for x in (host.load or (None,) * 3))), style="dim")
    used, total = host.mem_used, host.mem_total
    t.append(_("RAM  "), style="bold")
    t.append(fmt.bar(fmt.ratio(used, total), 12), style="magenta")
    t.append(" %s / %s\n" % (fmt.mib(used), fmt.mib(total)))
    if host.swap_total:
        t.append(_("swap %s / %s\n") % (fmt.mib(host.swap_used), fmt.mib(host.swap_total)),
                 style="dim")
    t.append(_("Disks\n"), style="bold")
    for d in host.disks:
        frac = fmt.ratio(d.used, d.total)
        style = fmt.level_style(frac * 100 if frac is not None else None, 85, 95)
        t.append(" %-14s " % visible(d.mount)[-14:])
        t.append(fmt.bar(frac, 8), style=style)
        t.append(_(" %s free\n") % fmt.mib(d.free), style="dim")
    t.append(_("Net  "), style="bold")
    t.append("↓ %s  ↑ %s" % (fmt.bytes_rate(host.rx_bps), fmt.bytes_rate(host.tx_bps)))
    return t


class HostPanel(LinePanel):
    DEFAULT_CSS = """
    HostPanel { border: round $primary-darken-1; padding: 0 1; height: auto; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._graph = ScrollingGraph()  # the CPU history, shifted one column per sample

    def show(self, host: Optional[Host], facts: HostFacts, cpu_history: Sequence[float]) -> None:
        width = max(20, self.size.width - 4) if self.size.width else 36
        update_text(self, render_host(host, facts, cpu_history, width, self._graph))
