"""Every GPU of the box in one panel, in nvitop's density (see tui.core.layout for the modes).

One widget, one Text per sample: repainted only when what it shows changed."""

from rich.text import Text
from textual.widgets import Static

from remote_probe.wire import throttle_names
from tui.core import format as fmt
from tui.core.boxtext import visible
from tui.core.i18n import _, ngettext
from tui.core.layout import GRID_CELL, GpuPlan, cell_len, pad
from tui.ui.widgets.live import update_text

HISTORY_SECONDS_PER_COLUMN = 1  # the probe samples at 1 Hz


def util_style(util):
    if util is None:
        return "dim"
    if util >= 70:
        return "green"
    if util >= 30:
        return "yellow"
    return "red"


def _frac(used, total):
    return fmt.ratio(used, total)


def _short_mib(used, total):
    """'60.3/80.0G' — the VRAM figure that fits one line."""
    used, total = fmt.finite(used), fmt.finite(total)
    if used is None or not total:
        return "%s/%s" % ("n/a" if used is None else "%.1f" % (used / 1024.0),
                          "n/a" if not total else "%.1fG" % (total / 1024.0))
    return "%.1f/%.1fG" % (used / 1024.0, total / 1024.0)


def summary_line(index, static, dyn, width):
    """Index, name, util bar, VRAM bar, temperature, power: one line of `width` columns."""
    util = dyn.get("util")
    used, total = dyn.get("mem_used"), static.get("mem_total")
    temp, power, limit = dyn.get("temp"), dyn.get("power"), static.get("power_limit")
    mem = " " + _short_mib(used, total)
    temp_text = " %5s" % fmt.na(temp, "%d°C")
    power_text = " %s/%s" % (fmt.na(power, "%dW"), fmt.na(limit, "%dW")) if width >= 64 else ""
    name_w = 0 if width < 50 else min(16, max(6, width // 6))
    fixed = 3 + (name_w + 1 if name_w else 0) + 6 + len(mem) + len(temp_text) + len(power_text)
    bars = max(2, width - fixed)
    util_w, mem_w = bars - bars // 2, bars // 2
    t = Text()
    t.append("%2d " % index, style="bold")
    if name_w:
        name = fmt.short_gpu_name(static.get("name"))
        if static.get("mig_mode") == 1:
            name = "MIG " + name
        elif static.get("virt_mode") not in (None, "none", "passthrough"):
            name = "%s %s" % (static["virt_mode"], name)
        # the name comes from the box (NVML, or whatever answers as nvidia-smi)
        t.append(pad(visible(name, limit=name_w), name_w) + " ", style="bold cyan")
    t.append(fmt.bar(None if util is None else util / 100.0, util_w), style=util_style(util))
    t.append("%5s " % fmt.pct(util))
    t.append(fmt.bar(_frac(used, total), mem_w), style="magenta")
    t.append(mem)
    t.append(temp_text, style=fmt.level_style(temp, 80, 88))
    t.append(power_text, style="dim")
    return t


def graph_lines(history, width, height):
    """The utilization history with its scale (0–100 %) and time span labelled."""
    util_label = _("util")
    # "100% " on the left, "  last 12:03:04" on the right; labels measured in columns (CJK)
    label_w, time_w = max(5, cell_len(util_label) + 1), 15
    span = max(4, width - label_w - time_w)
    rows = fmt.graph(history, span, height=height)
    seconds = min(len(history), span) * HISTORY_SECONDS_PER_COLUMN
    out = []
    for i, row in enumerate(rows):
        if height == 1:
            label = util_label
        else:
            label = "100%" if i == 0 else ("  0%" if i == height - 1 else "")
        out.append((" " * (label_w - 1 - cell_len(label)) + label + " ", row))
    last = _("  last %s") % fmt.duration(seconds) if seconds else _("  no history yet")
    return out, last


def detail_line(static, dyn):
    """Secondary facts: memory bandwidth, clocks, P-state, fan, throttling, ECC, MIG slices."""
    t = Text("   ")
    t.append(_("mem-bw %s  SM %s  MEM %s") % (
        fmt.pct(dyn.get("mem_util")), fmt.na(dyn.get("clock_sm"), "%d MHz"),
        fmt.na(dyn.get("clock_mem"), "%d MHz")), style="dim")
    if dyn.get("pstate") is not None:
        t.append("  %s" % fmt.na(dyn["pstate"], "P%d"), style="dim")
    if dyn.get("fan") is not None:
        t.append(_("  fan %s") % fmt.na(dyn["fan"], "%d%%"), style="dim")
    reasons = [r for r in throttle_names(dyn.get("throttle")) if r != "idle"]
    if reasons:
        t.append(_("  throttled: ") + ", ".join(reasons), style="bold yellow")
    if dyn.get("ecc_errors"):
        t.append(_("  ECC errors: %s uncorrected") % fmt.na(dyn["ecc_errors"], "%d"), style="bold red")
    slices = static.get("mig_devices") or []
    if slices:
        t.append(_("  slices: ") + ", ".join("%s %s" % (visible(m.get("name") or "?", limit=30),
                                                    fmt.mib(m.get("mem_total")))
                                          for m in slices), style="magenta")
    return t


def grid_cell(index, static, dyn):
    util = dyn.get("util")
    frac = _frac(dyn.get("mem_used"), static.get("mem_total"))
    t = Text()
    t.append("%2d " % index, style="bold")
    t.append(fmt.bar(None if util is None else util / 100.0, 5), style=util_style(util))
    t.append("%5s " % fmt.pct(util))
    t.append(fmt.bar(frac, 4), style="magenta")
    t.append("%5s" % ("n/a" if frac is None else "%d%%" % round(frac * 100)))
    return t


def render_gpus(statics, dyns, histories, width, plan: GpuPlan):
    """The panel's text for all GPUs: a plain function, so tests read it without a terminal."""
    t = Text()
    if plan.grid:
        cells = [grid_cell(i, statics[i], dyns[i]) for i in range(len(dyns))]
        for start in range(0, len(cells), plan.per_line):
            for j, cell in enumerate(cells[start:start + plan.per_line]):
                if j:
                    t.append(" " * max(1, GRID_CELL - cell.cell_len - 0))
                t.append_text(cell)
            t.append("\n")
        t.rstrip()
        return t
    for i, dyn in enumerate(dyns):
        static, history = statics[i], histories[i]
        t.append_text(summary_line(i, static, dyn, width))
        t.append("\n")
        if plan.lines >= 2:
            height = 3 if plan.lines >= 5 else 1
            rows, last = graph_lines(history, width - 2, height)
            for k, (label, row) in enumerate(rows):
                t.append(label, style="dim")
                t.append(row, style=util_style(dyn.get("util")))
                if k == len(rows) - 1:
                    t.append(last, style="dim")
                t.append("\n")
        if plan.lines == 3 or plan.lines >= 5:
            t.append_text(detail_line(static, dyn))
            t.append("\n")
    t.rstrip()
    return t


class GpuPanel(Static):
    DEFAULT_CSS = """
    GpuPanel { border: round $primary-darken-1; padding: 0 1; height: auto; }
    """

    def show(self, statics, dyns, histories, plan):
        width = max(20, self.size.width - 4) if self.size.width else 76
        text = render_gpus(statics, dyns, histories, width, plan)
        self.border_subtitle = (ngettext("%d GPU", "%d GPUs", len(dyns)) % len(dyns)) if len(dyns) > 1 else ""
        update_text(self, text)  # an unchanged sample costs no repaint
