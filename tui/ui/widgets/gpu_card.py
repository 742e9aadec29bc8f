"""One GPU: utilization and VRAM bars, temperature, power, clocks, history graph."""

from rich.text import Text
from textual.widgets import Static

from remote_probe.protocol import throttle_names
from tui.core import format as fmt
from tui.core.boxtext import visible

BAR = 24


def util_style(util):
    if util is None:
        return "dim"
    if util >= 70:
        return "green"
    if util >= 30:
        return "yellow"
    return "red"


def render_gpu(index, static, dyn, history, width=60):
    """The card's text. A plain function so snapshot-free tests can read it."""
    t = Text()
    name = visible(fmt.short_gpu_name(static.get("name")), limit=40)
    t.append("GPU %d " % index, style="bold")
    t.append(name, style="bold cyan")
    if static.get("mig_mode") == 1:
        t.append("  MIG", style="bold magenta")
    if static.get("virt_mode") not in (None, "none", "passthrough"):
        t.append("  %s" % visible(static["virt_mode"], limit=20), style="bold magenta")
    t.append("\n")
    util = dyn.get("util")
    t.append("util ", style="dim")
    t.append(fmt.bar(None if util is None else util / 100.0, BAR), style=util_style(util))
    t.append(" %4s" % fmt.pct(util))
    t.append("  mem-bw %s\n" % fmt.pct(dyn.get("mem_util")), style="dim")
    used, total = dyn.get("mem_used"), static.get("mem_total")
    frac = fmt.ratio(used, total)
    t.append("vram ", style="dim")
    t.append(fmt.bar(frac, BAR), style="magenta")
    t.append(" %s / %s\n" % (fmt.mib(used), fmt.mib(total)))
    temp = dyn.get("temp")
    t.append(fmt.na(temp, "%d°C"), style=fmt.level_style(temp, 80, 88))
    power, limit = dyn.get("power"), static.get("power_limit")
    t.append("  %s / %s" % (fmt.na(power, "%d W"), fmt.na(limit, "%d W")))
    t.append("  SM %s  MEM %s" % (fmt.na(dyn.get("clock_sm"), "%d MHz"),
                                  fmt.na(dyn.get("clock_mem"), "%d MHz")), style="dim")
    if dyn.get("pstate") is not None:
        t.append("  %s" % fmt.na(dyn["pstate"], "P%d"), style="dim")
    if dyn.get("fan") is not None:
        t.append("  fan %s" % fmt.na(dyn["fan"], "%d%%"), style="dim")
    reasons = [r for r in throttle_names(dyn.get("throttle")) if r != "idle"]
    if reasons:
        t.append("\nthrottled: " + ", ".join(reasons), style="bold yellow")
    if dyn.get("ecc_errors"):
        t.append("\nECC errors: %s uncorrected" % fmt.na(dyn["ecc_errors"], "%d"), style="bold red")
    for mig in static.get("mig_devices") or []:
        t.append("\n  slice %s %s" % (visible(mig.get("name") or "?", limit=30), fmt.mib(mig.get("mem_total"))),
                 style="magenta")
    t.append("\n")
    for line in fmt.graph(history, max(10, width), height=3):
        t.append(line + "\n", style=util_style(util))
    t.rstrip()
    return t


class GpuCard(Static):
    DEFAULT_CSS = """
    GpuCard { border: round $primary-darken-1; padding: 0 1; height: auto; width: 1fr; }
    """

    def __init__(self, index, **kwargs):
        super().__init__(**kwargs)
        self.index = index

    def show(self, static, dyn, history):
        width = max(10, self.size.width - 4) if self.size.width else 50
        self.update(render_gpu(self.index, static, dyn, history, width))
