"""The billing meter: time, cost, idle cost, budget, storage after release, autostop."""

import datetime
from typing import Optional

from rich.text import Text

from tui.core.text import format as fmt
from tui.core.billing import provider_price
from tui.core.billing.rates import format_money, runs_out_phrase
from tui.core.text.boxtext import finite, visible
from tui.core.i18n import N_, _
from tui.core.jobs.lines import autostop_rule
from tui.core.model import Host
from tui.ui.widgets.live import LinePanel

# Billing granularities and the preset name shown in the panel, for the catalog.
SHOWN_NAMES = (N_("second"), N_("minute"), N_("hour"), N_("unknown provider"))


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
        if f.rate_source == "api":  # where the price came from (issue 22)
            t.append("(%s) " % f.rate_label, style="dim")
    else:
        t.append(_("rate? (b) "), style="dim")
    return t


def render_summary(f, autostop, host: Optional[Host], width: int) -> Text:
    """One line for narrow terminals, where the billing and host panels are hidden: what
    the box costs while idle, autostop, and the host's CPU and RAM."""
    money = lambda v: format_money(v, f.currency)  # noqa: E731
    parts = []
    if f.rate is None:
        parts.append(Text(_("no rate: b"), style="yellow"))
    else:
        parts.append(Text(_("%s/h") % money(f.rate), style="dim"))
        idle = Text(_("idle %s") % money(f.idle_cost), style="bold red" if f.idle_now else "dim")
        parts.append(idle)
    armed = (autostop or {}).get("armed")
    parts.append(Text(_("autostop on") if armed else _("autostop off (a)"),
                      style="bold yellow" if armed else "dim"))
    if host is not None:
        parts.append(Text(_("CPU %s  RAM %s/%s") % (fmt.pct(host.cpu), fmt.mib(host.mem_used),
                                                 fmt.mib(host.mem_total)), style="dim"))
    t = Text(" ")
    for i, part in enumerate(parts):
        if i:
            t.append(" │ ", style="dim")
        t.append_text(part)
    t.truncate(max(10, width - 1), overflow="ellipsis")
    return t


def render_billing(f, autostop=None, now=None, jobs=()):
    t = Text()
    money = lambda v: format_money(v, f.currency)  # noqa: E731
    if f.start:
        started = local_time(f.start, "%m-%d %H:%M")
        t.append(_("since %s  ") % started, style="dim")
    t.append(fmt.duration(f.elapsed) + "\n", style="bold")
    if f.rate is None:
        t.append(_("No rate set: press "), style="yellow")
        t.append("b", style="bold")
        t.append(_(" to enter what this box costs per hour.\n"), style="yellow")
    else:
        t.append(_("cost "), style="dim")
        t.append(money(f.cost), style="bold yellow")
        t.append(_("  at %s/h, per %s\n") % (money(f.rate), _(f.granularity)), style="dim")
        t.append(_("idle GPUs "), style="dim")
        t.append(money(f.idle_cost), style="bold red" if f.idle_cost else "")
        t.append(" (%s)" % fmt.duration(f.idle_seconds), style="dim")
        if f.idle_recent_cost:
            t.append(_("  %s in the last 2 h") % money(f.idle_recent_cost), style="red")
        t.append("\n")
        if f.idle_now:
            t.append(_("all GPUs idle right now — you are paying for nothing\n"), style="bold red")
    t.append_text(price_text(f))
    if f.budget:
        frac = f.budget_fraction or 0.0
        t.append(_("budget "), style="dim")
        t.append(fmt.bar(min(1.0, frac), 10), style=fmt.level_style(frac * 100, 50, 80))
        t.append(_(" %d%% of %s") % (round(frac * 100), money(f.budget)))
        if f.budget_runs_out_at is not None and now:
            t.append(runs_out_phrase(f.budget_runs_out_at, now, f.granularity), style="dim")
        t.append("\n")
    if f.budget_day:
        frac = (f.day_cost or 0.0) / f.budget_day
        t.append(_("today  "), style="dim")
        t.append(fmt.bar(min(1.0, frac), 10), style=fmt.level_style(frac * 100, 50, 80))
        t.append(_(" %d%% of %s/day\n") % (round(frac * 100), money(f.budget_day)))
    if f.rate is not None and f.cost_in_8h is not None:
        t.append(_("if left running 8 h more: %s\n") % money(f.cost_in_8h), style="dim")
    if f.storage_per_day is not None:
        t.append(_("disk after release %s/day\n") % money(f.storage_per_day), style="dim")
    if f.provider == "unknown provider":  # the same words as `gputui status`
        t.append(_("provider not detected (set provider in the config)"), style="dim")
    else:
        t.append(_("provider "), style="dim")
        t.append(visible(f.provider))
    if f.release_command:
        t.append("\n")  # its own line: a command wrapped after the provider's name misread
        t.append(_("release: "), style="dim")
        t.append(visible(f.release_command), style="italic")
    t.append_text(after_release_text(f))
    t.append("\n")
    t.append_text(autostop_text(autostop, jobs))
    t.rstrip()
    return t


def price_text(f):
    """Where the rate came from and when the provider's balance runs out (issue 22)."""
    t = Text()
    if f.rate is not None:
        t.append(f.rate_label + "\n", style="dim")
    out = provider_price.runs_out_text(f.balance_runs_out, lambda v: format_money(v, f.currency))
    if out:
        t.append(visible(out) + "\n", style="yellow")
    return t


def after_release_text(f):
    """What the chosen release action keeps billing afterwards, and any clock it starts."""
    t = Text()
    if f.after_release:
        t.append("\n")
        t.append(_("after %s: ") % (_(f.release_label) if f.release_label else _("release")), style="dim")
        t.append(visible(f.after_release))
    return t


def autostop_text(status, jobs=()):
    t = Text()
    armed = (status or {}).get("armed")
    if not armed:
        t.append(_("autostop off"), style="dim")
        t.append(_("  (a: arm)"), style="dim")
        return t
    if status.get("grace_left") is not None:
        t.append(_("AUTOSTOP in %ss") % fmt.na(status["grace_left"], "%d"), style="bold reverse red")
        t.append(_("  a: cancel"), style="bold")
        return t
    parts = []
    if armed.get("idle_seconds") is not None:
        parts.append(_("idle %s (now %s)") % (fmt.duration(armed["idle_seconds"]),
                                          fmt.duration(status.get("idle_for") or 0)))
    if armed.get("deadline"):
        parts.append(_("at %s") % local_time(armed["deadline"], "%m-%d %H:%M"))
    if armed.get("action"):  # the provider action it runs (issue 22)
        t.append(_("autostop armed (%s): ") % visible(_(armed["action"]), limit=60), style="bold green")
    else:
        t.append(_("autostop armed: "), style="bold green")
    t.append(", ".join(parts))
    rule = autostop_rule(status, jobs)
    if rule:
        t.append("\n" + visible(rule), style="dim")
    return t


class BillingPanel(LinePanel):
    DEFAULT_CSS = """
    BillingPanel { border: round $primary-darken-1; padding: 0 1; height: auto; }
    """
