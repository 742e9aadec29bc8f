"""Every GPU of the box in one panel, in nvitop's density (see tui.core.layout for the modes).

One widget, one Text per sample: repainted only when what it shows changed."""

from typing import Dict, List, Optional, Sequence, Tuple

from rich.text import Text

from tui.core.text import format as fmt
from tui.core.text.boxtext import visible
from tui.core.i18n import _, ngettext
from tui.core.layout import GRID_CELL, GpuPlan, cell_len, pad
from tui.core.model import Gpu
from tui.ui.widgets.graph import ScrollingGraph
from tui.ui.widgets.live import NEWLINE, LinePanel, rstripped, styled

HISTORY_SECONDS_PER_COLUMN = 1  # the probe samples at 1 Hz


def util_style(util: Optional[float]) -> str:
    if util is None:
        return "dim"
    if util >= 70:
        return "green"
    if util >= 30:
        return "yellow"
    return "red"


def _frac(used: Optional[float], total: Optional[float]) -> Optional[float]:
    return fmt.ratio(used, total)


def _short_mib(used: Optional[float], total: Optional[float]) -> str:
    """'60.3/80.0G' — the VRAM figure that fits one line."""
    used, total = fmt.finite(used), fmt.finite(total)
    if used is None or not total:
        return "%s/%s" % ("n/a" if used is None else "%.1f" % (used / 1024.0),
                          "n/a" if not total else "%.1fG" % (total / 1024.0))
    return "%.1f/%.1fG" % (used / 1024.0, total / 1024.0)


def summary_line(gpu: Gpu, width: int) -> Text:
    """Index, name, util bar, VRAM bar, temperature, power: one line of `width` columns."""
    static, dyn = gpu.facts, gpu.live
    util = dyn.util
    used, total = dyn.mem_used, static.mem_total
    temp, power, limit = dyn.temp, dyn.power, static.power_limit
    mem = " " + _short_mib(used, total)
    temp_text = " %5s" % fmt.na(temp, "%d°C")
    power_text = " %s/%s" % (fmt.na(power, "%dW"), fmt.na(limit, "%dW")) if width >= 64 else ""
    name_w = 0 if width < 50 else min(16, max(6, width // 6))
    fixed = 3 + (name_w + 1 if name_w else 0) + 6 + len(mem) + len(temp_text) + len(power_text)
    bars = max(2, width - fixed)
    util_w, mem_w = bars - bars // 2, bars // 2
    parts = [("%2d " % gpu.index, "bold")]
    if name_w:
        parts.append((_name_cell(static, name_w), "bold cyan"))
    parts += [(fmt.bar(None if util is None else util / 100.0, util_w), util_style(util)),
              ("%5s " % fmt.pct(util), ""), (fmt.bar(_frac(used, total), mem_w), "magenta"), (mem, ""),
              (temp_text, fmt.level_style(temp, 80, 88)), (power_text, "dim")]
    return styled(parts)


_NAMES: Dict[tuple, str] = {}


def _name_cell(static, name_w: int) -> str:
    """The GPU's name cut to its column, once per GPU rather than once per sample."""
    key = (static.name, static.mig_mode, static.virt_mode, name_w)
    cell = _NAMES.get(key)
    if cell is None:
        name = fmt.short_gpu_name(static.name)
        if static.mig_mode == 1:
            name = "MIG " + name
        elif static.virt_mode not in (None, "none", "passthrough"):
            name = "%s %s" % (static.virt_mode, name)
        if len(_NAMES) > 256:
            _NAMES.clear()
        # the name comes from the box (NVML, or whatever answers as nvidia-smi)
        cell = _NAMES[key] = pad(visible(name, limit=name_w), name_w) + " "
    return cell


def graph_lines(history: Sequence[float], width: int, height: int,
                graph: Optional[ScrollingGraph] = None) -> Tuple[List[Tuple[str, str]], str]:
    """The utilization history with its scale (0–100 %) and time span labelled; `graph`
    keeps the rows between samples (they shift one column per sample)."""
    util_label = _("util")
    # "100% " on the left, "  last 12:03:04" on the right; labels measured in columns (CJK)
    label_w, time_w = max(5, cell_len(util_label) + 1), 15
    span = max(4, width - label_w - time_w)
    rows = graph.rows(history, span, height) if graph is not None else fmt.graph(history, span, height=height)
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


def detail_line(gpu: Gpu) -> Text:
    """Secondary facts: memory bandwidth, clocks, P-state, fan, throttling, ECC, MIG slices."""
    dyn = gpu.live
    t = Text("   ")
    t.append(_("mem-bw %s  SM %s  MEM %s") % (
        fmt.pct(dyn.mem_util), fmt.na(dyn.clock_sm, "%d MHz"),
        fmt.na(dyn.clock_mem, "%d MHz")), style="dim")
    if dyn.pstate is not None:
        t.append("  %s" % fmt.na(dyn.pstate, "P%d"), style="dim")
    if dyn.fan is not None:
        t.append(_("  fan %s") % fmt.na(dyn.fan, "%d%%"), style="dim")
    reasons = [r for r in dyn.throttle_reasons if r != "idle"]
    if reasons:
        t.append(_("  throttled: ") + ", ".join(reasons), style="bold yellow")
    if dyn.ecc_errors:
        t.append(_("  ECC errors: %s uncorrected") % fmt.na(dyn.ecc_errors, "%d"), style="bold red")
    slices = gpu.facts.mig_devices
    if slices:
        t.append(_("  slices: ") + ", ".join("%s %s" % (visible(m.name or "?", limit=30),
                                                    fmt.mib(m.mem_total))
                                          for m in slices), style="magenta")
    return t


def grid_cell(gpu: Gpu) -> Text:
    util = gpu.live.util
    frac = _frac(gpu.live.mem_used, gpu.facts.mem_total)
    return styled((("%2d " % gpu.index, "bold"), (fmt.bar(None if util is None else util / 100.0, 5), util_style(util)),
                   ("%5s " % fmt.pct(util), ""), (fmt.bar(frac, 4), "magenta"),
                   ("%5s" % fmt.pct(None if frac is None else frac * 100), "")))  # a huge ratio: n/a, not inf


def gpu_lines(gpus: Sequence[Gpu], histories: Sequence[Sequence[float]], width: int,
              plan: GpuPlan, graphs: Optional[Dict[int, ScrollingGraph]] = None) -> List[Text]:
    """The panel's lines for all GPUs (the panel compares them line by line)."""
    lines: List[Text] = []
    if plan.grid:
        cells = [grid_cell(g) for g in gpus]
        for start in range(0, len(cells), plan.per_line):
            t = Text()
            for j, cell in enumerate(cells[start:start + plan.per_line]):
                if j:
                    t.append(" " * max(1, GRID_CELL - cell.cell_len - 0))
                t.append_text(cell)
            lines.append(t)
        return rstripped(lines)
    for gpu, history in zip(gpus, histories):
        lines.append(summary_line(gpu, width))
        if plan.lines >= 2:
            height = plan.graph_height
            graph = None if graphs is None else graphs.setdefault(gpu.index, ScrollingGraph())
            rows, last = graph_lines(history, width - 2, height, graph)
            style = util_style(gpu.live.util)
            for k, (label, row) in enumerate(rows):
                lines.append(styled(((label, "dim"), (row, style), (last if k == len(rows) - 1 else "", "dim"))))
        if plan.lines == 3 or plan.lines >= 5:
            lines.append(detail_line(gpu))
    return rstripped(lines)


def render_gpus(gpus: Sequence[Gpu], histories: Sequence[Sequence[float]], width: int,
                plan: GpuPlan, graphs: Optional[Dict[int, ScrollingGraph]] = None) -> Text:
    """The panel's text for all GPUs: a plain function, so tests read it without a terminal."""
    return NEWLINE.join(gpu_lines(gpus, histories, width, plan, graphs))


class GpuPanel(LinePanel):
    DEFAULT_CSS = """
    GpuPanel { border: round $primary-darken-1; padding: 0 1; height: auto; }
    """
    _subtitle = None

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._graphs: Dict[int, ScrollingGraph] = {}  # by GPU index

    def show(self, gpus: Sequence[Gpu], histories: Sequence[Sequence[float]], plan: GpuPlan) -> None:
        width = max(20, self.size.width - 4) if self.size.width else 76
        lines = gpu_lines(gpus, histories, width, plan, self._graphs)
        n = len(gpus)
        subtitle = (ngettext("%d GPU", "%d GPUs", n) % n) if n > 1 else ""
        if subtitle != self._subtitle:  # setting it repaints the whole panel, even unchanged
            self._subtitle = self.border_subtitle = subtitle
        self.show_lines(lines)  # only the lines that changed are repainted
