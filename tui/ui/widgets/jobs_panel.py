"""The watched jobs on the dashboard (issue 21): state with its evidence for crashed and hung
jobs, progress bar, ETA as a clock time and a duration, cost to finish, checkpoint warnings.
Displays tui.core.jobs.lines.JobLine objects; computes nothing."""

import datetime
from typing import List, Optional, Sequence

from rich.text import Text
from textual.widgets import Static

from tui.core.text import format as fmt
from tui.core.billing.rates import format_money
from tui.core.text.boxtext import finite, visible
from tui.core.i18n import _
from tui.core.jobs.lines import JobLine, cause_text
from tui.ui.widgets.live import update_text

BAR = 12


def clock_at(t: Optional[float], now: float) -> str:
    """'14:05' today, '12-03 14:05' later; '?' for a time that is not a usable number."""
    t = finite(t)
    if t is None:
        return "?"
    try:
        when = datetime.datetime.fromtimestamp(t)
        same_day = when.date() == datetime.datetime.fromtimestamp(now).date()
        return when.strftime("%H:%M" if same_day else "%m-%d %H:%M")
    except (ValueError, OverflowError, OSError):
        return "?"


def job_head(ln: JobLine, width: int, now: float, currency: str, compact: bool = False) -> List[Text]:
    """The first line of a job: state, name, progress, ETA, cost to finish (compact: a
    crashed/hung job's cause, a checkpoint warning's mark, on the same line). Where the
    figures leave the name too little room, they go on a line of their own."""
    j = ln.job
    t = Text()
    state = j.state
    t.append((state.label if state else "?") + " ", style=state.style if state else "dim")
    tail = Text()
    if compact and state is not None and state.alarming and j.cause:
        tail.append("  " + visible(cause_text(j.cause), limit=40), style=state.style)
    p = j.progress
    if p is not None and p.fraction is not None:
        tail.append(" " + fmt.bar(p.fraction, BAR if width >= 100 else 6), style="cyan")
        tail.append(" %3d%%" % int(100 * p.fraction))
        if p.done is not None and p.total is not None and width >= 100:
            tail.append(" %s/%s%s" % (fmt.na(p.done, "%g"), fmt.na(p.total, "%g"),
                                      (" " + visible(p.unit, limit=8)) if p.unit else ""), style="dim")
    if ln.eta is not None:
        tail.append(_("  ETA %s") % clock_at(ln.finish_at, now), style="bold")
        tail.append(" (%s)" % fmt.duration(ln.eta), style="dim")
    if ln.cost_to_finish is not None:
        tail.append(_("  %s to finish") % format_money(ln.cost_to_finish, currency), style="yellow")
    cp = j.checkpoint
    if cp is not None and ln.checkpoint_warning is None and width >= 120:
        tail.append(_("  ckpt %s ago") % fmt.duration(cp.age_s), style="dim")
    if compact and ln.checkpoint_warning:
        tail.append(_("  ⚠ ckpt"), style="yellow")
    room = width - t.cell_len - tail.cell_len
    name = j.name or j.id
    if room < min(16, len(name)) and tail.cell_len:
        t.append(visible(name, limit=max(8, width - t.cell_len)), style="bold")
        return [t, Text("  ") + _lstrip(tail)]
    t.append(visible(name, limit=max(8, room)), style="bold")
    t.append_text(tail)
    return [t]


def _lstrip(t: Text) -> Text:
    """`t` without its leading spaces, styles kept."""
    n = len(t.plain) - len(t.plain.lstrip(" "))
    return t[n:]


def render_jobs(lines: Sequence[JobLine], width: int, now: float, currency: str,
                max_lines: int = 8, compact: bool = False) -> Text:
    """One line per job; a crashed/hung job's cause and last line, and a stale or wiped
    checkpoint, on a line under it (compact: one line per job). At most `max_lines` lines
    (the rest counted)."""
    out = []
    for ln in lines:
        out.extend(job_head(ln, width, now, currency, compact))
        j = ln.job
        if compact:
            continue
        if j.state is not None and j.state.alarming:
            why = ", ".join(x for x in (cause_text(j.cause), j.evidence[-1] if j.evidence else None) if x)
            if why:
                out.append(Text("  ↳ " + visible(why, limit=max(8, width - 4)), style=j.state.style))
        if ln.checkpoint_warning:
            cp = j.checkpoint
            age = fmt.duration(cp.age_s) if cp is not None else "?"
            path = visible(cp.path if cp else "", limit=max(8, width - 40))
            out.append(Text("  ⚠ %s: %s (%s)" % (ln.checkpoint_warning, path, age), style="yellow"))
    if len(out) > max_lines == 1:  # the first job, and how many lines are left out
        more = Text(_("  … %d more lines") % (len(out) - 1), style="dim")
        out[0].truncate(max(10, width - more.cell_len), overflow="ellipsis")
        out = [out[0] + more]
    elif len(out) > max_lines:
        hidden = len(out) - (max_lines - 1)
        out = out[:max_lines - 1] + [Text(_("  … %d more lines") % hidden, style="dim")]
    t = Text()
    for i, line in enumerate(out):
        if i:
            t.append("\n")
        line.truncate(width, overflow="ellipsis")
        t.append_text(line)
    return t


def pane_job_cell(ln: Optional[JobLine], now: float, currency: str) -> Text:
    """The tmux panel's JOB cell: state, percent, ETA clock time and duration, cost to finish."""
    if ln is None:
        return Text("—", style="dim")
    j = ln.job
    t = Text(j.state.label if j.state else "?", style=j.state.style if j.state else "dim")
    if j.state is not None and j.state.alarming and j.cause:
        t.append(" " + visible(cause_text(j.cause), limit=30), style=j.state.style)
    if ln.fraction is not None:
        t.append(" %d%%" % int(100 * ln.fraction))
    if ln.eta is not None:
        t.append(_(" ETA %s (%s)") % (clock_at(ln.finish_at, now), fmt.duration(ln.eta)))
    if ln.cost_to_finish is not None:
        t.append(" " + format_money(ln.cost_to_finish, currency), style="yellow")
    if ln.checkpoint_warning:
        t.append(" ⚠", style="yellow")
    return t


class JobsPanel(Static):
    rows_needed = 0  # rows it takes once laid out (the dashboard plans the GPU panel with it)
    DEFAULT_CSS = """
    JobsPanel { border: round $primary-darken-1; padding: 0 1; height: auto; max-height: 7; display: none; }
    JobsPanel.shown { display: block; }
    """

    def show(self, lines: Sequence[JobLine], now: float, currency: str, width: int,
             compact: bool = False, max_lines: int = 5) -> None:
        """width: text columns inside the panel (the screen knows them before the panel does)."""
        self.set_class(bool(lines), "shown")
        self.rows_needed = 0
        if lines:
            text = render_jobs(lines, max(30, width), now, currency,
                               max_lines=max_lines, compact=compact)
            self.rows_needed = len(text.plain.split("\n")) + 2  # + border: known before layout
            update_text(self, text)
