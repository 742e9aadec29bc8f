"""The box itself: CPU total and per core, iowait, load, RAM, disks, network."""

from rich.text import Text
from textual.widgets import Static

from tui.core import format as fmt
from tui.core.boxtext import visible
from tui.ui.widgets.live import update_text


def render_host(host, facts, cpu_history, width=36):
    t = Text()
    if not host:
        t.append("waiting for host data…", style="dim")
        return t
    ncpu = facts.get("ncpu") or len(host.get("cores") or [])
    limit = facts.get("cpu_limit")
    t.append("CPU ", style="bold")
    t.append("%s" % fmt.pct(host.get("cpu")))
    t.append("  %s cores%s" % (fmt.na(ncpu, "%d"), fmt.na(limit, " (limit %.1f)") if limit else ""),
             style="dim")
    t.append("\n")
    cores = host.get("cores") or []
    per_line = max(4, (width - 2) // 5)
    for i in range(0, len(cores), per_line):
        for c in cores[i:i + per_line]:
            level = " ▁▂▃▄▅▆▇█"[max(0, min(8, int(round(fmt.finite_or_zero(c) / 12.5))))]
            t.append(level, style=fmt.level_style(c, 60, 90))
        t.append("\n")
    for line in fmt.graph(cpu_history, max(10, width - 2), height=1):
        t.append(line + "\n", style="cyan")
    t.append("iowait %s  load %s\n" % (
        fmt.pct(host.get("iowait")),
        " ".join(fmt.na(x, "%.2f") for x in (host.get("load") or [None] * 3))), style="dim")
    used, total = host.get("mem_used"), host.get("mem_total")
    t.append("RAM  ", style="bold")
    t.append(fmt.bar(fmt.ratio(used, total), 12), style="magenta")
    t.append(" %s / %s\n" % (fmt.mib(used), fmt.mib(total)))
    if host.get("swap_total"):
        t.append("swap %s / %s\n" % (fmt.mib(host.get("swap_used")), fmt.mib(host["swap_total"])),
                 style="dim")
    t.append("Disks\n", style="bold")
    for d in host.get("disks") or []:
        frac = fmt.ratio(d.get("used"), d.get("total"))
        style = fmt.level_style(frac * 100 if frac is not None else None, 85, 95)
        t.append(" %-14s " % visible(d.get("mount"))[-14:])
        t.append(fmt.bar(frac, 8), style=style)
        t.append(" %s free\n" % fmt.mib(d.get("free")), style="dim")
    t.append("Net  ", style="bold")
    t.append("↓ %s  ↑ %s" % (fmt.bytes_rate(host.get("rx_bps")), fmt.bytes_rate(host.get("tx_bps"))))
    return t


class HostPanel(Static):
    DEFAULT_CSS = """
    HostPanel { border: round $primary-darken-1; padding: 0 1; height: auto; }
    """

    def show(self, host, facts, cpu_history):
        width = max(20, self.size.width - 4) if self.size.width else 36
        update_text(self, render_host(host, facts, cpu_history, width))
