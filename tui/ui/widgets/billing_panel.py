"""The billing meter: time, cost, idle cost, budget, storage after release, autostop."""

import datetime

from rich.text import Text
from textual.widgets import Static

from tui.core import format as fmt
from tui.core.billing import format_money
from tui.core.boxtext import finite, visible


def local_time(t, pattern):
    """An epoch (from the box or the ledger) as local time; '?' when it is not a usable
    number (NaN, inf, out of range) instead of a ValueError in the middle of a refresh."""
    t = finite(t)
    if t is None:
        return "?"
    try:
        return datetime.datetime.fromtimestamp(t).strftime(pattern)
    except (ValueError, OverflowError, OSError):
        return "?"


def clock_text(f):
    """The compact meter for the status bar: '⏱ 3:12:05 ¥8.27'."""
    t = Text()
    t.append(" ⏱ %s " % fmt.duration(f.elapsed), style="bold")
    if f.cost is not None:
        t.append("%s " % format_money(f.cost, f.currency), style="bold yellow")
    else:
        t.append("rate? (b) ", style="dim")
    return t


def render_summary(f, autostop, host, width):
    """One line for narrow terminals, where the billing and host panels are hidden: what
    the box costs while idle, autostop, and the host's CPU and RAM."""
    money = lambda v: format_money(v, f.currency)  # noqa: E731
    parts = []
    if f.rate is None:
        parts.append(Text("no rate: b", style="yellow"))
    else:
        parts.append(Text("%s/h" % money(f.rate), style="dim"))
        idle = Text("idle %s" % money(f.idle_cost), style="bold red" if f.idle_now else "dim")
        parts.append(idle)
    armed = (autostop or {}).get("armed")
    parts.append(Text("autostop on" if armed else "autostop off (a)",
                      style="bold yellow" if armed else "dim"))
    if host:
        parts.append(Text("CPU %s  RAM %s/%s" % (fmt.pct(host.get("cpu")), fmt.mib(host.get("mem_used")),
                                                 fmt.mib(host.get("mem_total"))), style="dim"))
    t = Text(" ")
    for i, part in enumerate(parts):
        if i:
            t.append(" │ ", style="dim")
        t.append_text(part)
    t.truncate(max(10, width - 1), overflow="ellipsis")
    return t


def render_billing(f, autostop=None, now=None):
    t = Text()
    money = lambda v: format_money(v, f.currency)  # noqa: E731
    if f.start:
        started = local_time(f.start, "%m-%d %H:%M")
        t.append("since %s  " % started, style="dim")
    t.append(fmt.duration(f.elapsed) + "\n", style="bold")
    if f.rate is None:
        t.append("No rate set: press ", style="yellow")
        t.append("b", style="bold")
        t.append(" to enter what this box costs per hour.\n", style="yellow")
    else:
        t.append("cost ", style="dim")
        t.append(money(f.cost), style="bold yellow")
        t.append("  at %s/h, per %s\n" % (money(f.rate), f.granularity), style="dim")
        t.append("idle GPUs ", style="dim")
        t.append(money(f.idle_cost), style="bold red" if f.idle_cost else "")
        t.append(" (%s)" % fmt.duration(f.idle_seconds), style="dim")
        if f.idle_recent_cost:
            t.append("  %s in the last 2 h" % money(f.idle_recent_cost), style="red")
        t.append("\n")
        if f.idle_now:
            t.append("all GPUs idle right now — you are paying for nothing\n", style="bold red")
    if f.budget:
        frac = f.budget_fraction or 0.0
        t.append("budget ", style="dim")
        t.append(fmt.bar(min(1.0, frac), 10), style=fmt.level_style(frac * 100, 50, 80))
        t.append(" %d%% of %s" % (round(frac * 100), money(f.budget)))
        if f.budget_left_s is not None and f.budget_left_s > 0 and now:
            when = local_time(now + f.budget_left_s, "%H:%M")
            t.append(", runs out %s" % when, style="dim")
        t.append("\n")
    if f.budget_day:
        frac = (f.day_cost or 0.0) / f.budget_day
        t.append("today  ", style="dim")
        t.append(fmt.bar(min(1.0, frac), 10), style=fmt.level_style(frac * 100, 50, 80))
        t.append(" %d%% of %s/day\n" % (round(frac * 100), money(f.budget_day)))
    if f.rate is not None and f.cost_in_8h is not None:
        t.append("if left running 8 h more: %s\n" % money(f.cost_in_8h), style="dim")
    if f.storage_per_day is not None:
        t.append("disk after release %s/day\n" % money(f.storage_per_day), style="dim")
    t.append("provider ", style="dim")
    t.append(visible(f.provider))
    if f.release_command:
        t.append("  release: ", style="dim")
        t.append(visible(f.release_command), style="italic")
    t.append("\n")
    t.append_text(autostop_text(autostop))
    t.rstrip()
    return t


def autostop_text(status):
    t = Text()
    armed = (status or {}).get("armed")
    if not armed:
        t.append("autostop off", style="dim")
        t.append("  (a: arm)", style="dim")
        return t
    if status.get("grace_left") is not None:
        t.append("AUTOSTOP in %ss" % fmt.na(status["grace_left"], "%d"), style="bold reverse red")
        t.append("  a: cancel", style="bold")
        return t
    parts = []
    if armed.get("idle_seconds") is not None:
        parts.append("idle %s (now %s)" % (fmt.duration(armed["idle_seconds"]),
                                          fmt.duration(status.get("idle_for") or 0)))
    if armed.get("deadline"):
        parts.append("at %s" % local_time(armed["deadline"], "%m-%d %H:%M"))
    t.append("autostop armed: ", style="bold green")
    t.append(", ".join(parts))
    return t


class BillingPanel(Static):
    DEFAULT_CSS = """
    BillingPanel { border: round $primary-darken-1; padding: 0 1; height: auto; }
    """
