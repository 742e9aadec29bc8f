"""How the dashboard spends the terminal: a plain function of size and GPU count, so every
layout decision is unit-tested without a terminal (issue 11: 80×24 to 300×80, 1 to 16 GPUs).

GPU rows come in nvitop's density. Modes, richest first:
  5 lines  summary, a 3-row utilization graph with scale and time labels, details
  3 lines  summary, a 1-row graph with labels, details (clocks, throttle, ECC, MIG)
  2 lines  summary, a 1-row graph with labels
  1 line   summary: index, name, util bar, VRAM bar, temperature, power
  grid     several GPUs per line: index, util and VRAM mini-bars (many GPUs, small terminals)
The process table always keeps at least MIN_PROC_ROWS rows; the GPU panel never takes more
than GPU_SHARE of the screen unless one line per GPU needs it."""

import dataclasses
import math
from typing import Callable, Collection, List, Sequence, Tuple

from tui.core.text.cells import cell_len, pad  # noqa: F401 - pad: re-exported for the widgets

MIN_PROC_ROWS = 5
PROC_CHROME = 3       # the process table's border (2) and header (1)
PANEL_CHROME = 2      # the GPU panel's border
GPU_SHARE = 0.45
GPU_MAX_SHARE = 0.6  # the panel's max-height in app.tcss
MAX_GRAPH_ROWS = 12  # taller says nothing more
GRID_CELL = 24        # "15 ▕████▏ 63% ▕██▏ 75%" plus a gap
WIDE = 120            # from this width the billing/host column sits on the right
# Graphs taller than 3 rows only from this height: on a short terminal (80x24, one GPU,
# `--simulate adopt`) the GPU panel grew to 12 of 21 rows, mostly an empty graph, and the
# table under the jobs panel and a toast showed 2 rows; there it takes the rows its GPUs need
# (summary, 3-row graph, details) and the table the rest
GROW_FROM_HEIGHT = 40


@dataclasses.dataclass(frozen=True)
class GpuPlan:
    lines: int          # the mode: lines per GPU at least (0 in grid mode)
    per_line: int       # GPUs per line (1 except grid mode)
    rows: int           # content rows of the GPU panel
    graph_rows: int = -1  # rows of each GPU's graph; -1: the mode's (3, 1 or none)

    @property
    def graph_height(self) -> int:
        if self.graph_rows >= 0:
            return self.graph_rows
        return 3 if self.lines >= 5 else 1 if self.lines >= 2 else 0

    @property
    def grid(self) -> bool:
        return self.lines == 0


def gpu_plan(n_gpus: int, width: int, height: int, fixed_rows: int = 2,
             procs: int = -1) -> GpuPlan:
    """The densest GPU presentation that still leaves the process table MIN_PROC_ROWS rows.

    fixed_rows: rows taken by everything else outside the body (header, footer, notice,
    dataloader panel). procs: process rows to show (-1: unknown). From GROW_FROM_HEIGHT rows
    the graphs grow with the window as btop's do, into the rows the table would leave empty
    too (at 200×60 ~30 rows stayed empty under 3-row graphs)."""
    if n_gpus <= 0:
        return GpuPlan(1, 1, 0)
    free = height - fixed_rows - PANEL_CHROME - PROC_CHROME - MIN_PROC_ROWS
    share = max(n_gpus, int(height * GPU_SHARE) - PANEL_CHROME)
    budget = min(free, share)
    if procs >= 0 and height >= GROW_FROM_HEIGHT:  # what the table does not fill, the graphs may use
        room = free + MIN_PROC_ROWS - max(MIN_PROC_ROWS, procs + 1)
        budget = max(budget, min(room, int((height - fixed_rows) * GPU_MAX_SHARE) - PANEL_CHROME))
    for lines in (5, 3, 2, 1):
        if n_gpus * lines <= budget:
            if lines == 5:
                graph = min(MAX_GRAPH_ROWS, budget // n_gpus - 2) if height >= GROW_FROM_HEIGHT else 3
                return GpuPlan(lines, 1, n_gpus * (graph + 2), graph)
            return GpuPlan(lines, 1, n_gpus * lines)
    per_line = max(1, (panel_width(width) + 2) // GRID_CELL)
    return GpuPlan(0, per_line, math.ceil(n_gpus / per_line))


def panel_width(width: int) -> int:
    """Text columns inside the GPU panel at this terminal width."""
    left = width - (RIGHT_WIDTH if right_column(width) else 0)
    return max(20, left - 4)  # border and padding


RIGHT_WIDTH = 42


def right_column(width: int) -> bool:
    """Billing and host panels beside the GPUs, or (narrow) one summary line instead."""
    return width >= WIDE


def fit(parts: Sequence[Tuple[str, int]], width: int, keep: Collection[int] = (),
        length: Callable[[str], int] = cell_len) -> List[str]:
    """Drop optional header parts, lowest priority first, until the line fits `width`.

    parts: [(text, priority)], higher priority kept longer; priorities in `keep` are never
    dropped. Returns the texts kept, in their original order."""
    kept = list(parts)
    while sum(length(t) for t, _ in kept) > width:
        optional = [p for p in kept if p[1] not in keep]
        if not optional:
            break
        kept.remove(min(optional, key=lambda p: p[1]))
    return [t for t, _ in kept]


def clip(text: str, width: int) -> str:
    """Cut text to `width` terminal columns with a visible '…' (never silently: '--bs 25' for
    '--bs 256'); a double-width character that would straddle the edge is left out."""
    if width <= 0:
        return ""
    if cell_len(text) <= width:
        return text
    out, used = [], 0
    for ch in text:
        w = cell_len(ch)
        if used + w > width - 1:
            break
        out.append(ch)
        used += w
    return "".join(out) + "…"


# Process table columns by terminal width: the command is what tells jobs apart, so narrow
# terminals drop USER and RSS before the command gets squeezed.
NARROW_DROP = ("user", "rss")
PROC_WIDTHS = {"pid": 8, "user": 10, "gpu": 3, "gpu_mem": 9, "cpu": 5, "rss": 9, "elapsed": 7}
MAX_PROC_ROWS = 1000  # rows drawn; the subtitle says how many more there are


def proc_columns(all_columns: Sequence[Tuple[str, str]], width: int) -> Tuple[Tuple[str, str], ...]:
    """The (key, title) columns that fit a process table `width` columns wide."""
    if width >= 100:
        return tuple(all_columns)
    return tuple(c for c in all_columns if c[0] not in NARROW_DROP)


def cmd_width(columns: Sequence[Tuple[str, str]], width: int) -> int:
    """Columns left for COMMAND: the table's width minus the other columns and their padding."""
    others = sum(PROC_WIDTHS.get(k, 8) + 1 for k, _ in columns if k != "cmd")
    return max(12, width - 1 - others)


def jobs_lines(n_gpus: int, width: int, height: int, fixed_rows: int, wanted: int) -> int:
    """Lines the jobs panel may show: what is left once the GPU panel at its densest and the
    process table's MIN_PROC_ROWS are placed, at most `wanted`, at least 1 (a job's state is
    never hidden). fixed_rows: header, footer, notice, summary, dataloader panel."""
    gpus = gpu_plan(n_gpus, width, height, height).rows + PANEL_CHROME if n_gpus > 0 else 0
    room = height - fixed_rows - gpus - PROC_CHROME - MIN_PROC_ROWS - 2  # 2: the panel's border
    return max(1, min(wanted, room))


def compact_loaders(height: int) -> bool:
    """Dataloader panel: two lines per training process below this terminal height."""
    return height < 40
