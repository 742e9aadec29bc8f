"""Billing math: plain functions (facts in, figures out), unit-tested table by table."""

import collections
import datetime
import time
from typing import Deque, Optional, Sequence, Tuple

from remote_probe.wire import all_idle, money
# The money math is the probe's, so the box's budget notifications (remote_probe/watch/budget_watch.py)
# and the app's figures and warnings come from the same functions.
from remote_probe.wire.money import (BUDGET_LEVELS, CURRENCY_SYMBOLS, GRANULARITY_SECONDS,  # noqa: F401
                                     NO_DECIMALS, billable_seconds, budget_levels_crossed,
                                     budget_levels_due, charged_at, cost_for, format_money)
from tui.core.i18n import _


def gpus_idle(utils: Sequence[Optional[float]], compute_procs: int, threshold: float = 5.0) -> bool:
    """All GPUs below the threshold and no compute process: money spent for nothing.

    The probe's autostop rule itself, so the idle cost shown and what autostop acts on can
    never disagree. A box without GPUs, or with unknown utilization, is never idle.
    """
    return all_idle(utils, compute_procs, threshold)


class IdleMeter:
    """Idle GPU seconds from a stream of samples, robust to reconnects and backfill.

    An interval between two consecutive samples counts as idle when both ends are idle.
    Samples at or before the last one counted are ignored (backfill overlap, app
    restarts resuming from the ledger's `idle_until`). Gaps longer than `max_gap`
    (the daemon was not running) count as unknown, not idle.
    """

    def __init__(self, idle_seconds: float = 0.0, idle_until: Optional[float] = None,
                 max_gap: float = 10.0, window: float = 24 * 3600) -> None:
        self.idle_seconds = idle_seconds
        self.last_t = idle_until
        self.last_idle: Optional[bool] = None
        self.max_gap = max_gap
        self.window = window
        self.recent: Deque[Tuple[float, float]] = collections.deque()  # (t_end, seconds) of recent idle intervals

    def add(self, t: float, idle: bool) -> None:
        if self.last_t is not None and t <= self.last_t:
            return
        if self.last_t is not None and self.last_idle and idle:
            dt = t - self.last_t
            if dt <= self.max_gap:
                self.idle_seconds += dt
                self.recent.append((t, dt))
                while self.recent and self.recent[0][0] < t - self.window:
                    self.recent.popleft()
        self.last_t, self.last_idle = t, idle

    def take(self, t: float, seconds: float) -> None:
        """The box's own count of idle seconds (its daemon sees every sample, whoever is
        connected): the figure to show. Never lower than what is known already (the ledger's
        merged figure), so several clients and reconnects never make it go backwards."""
        if seconds > self.idle_seconds:
            dt = seconds - self.idle_seconds
            self.idle_seconds = seconds
            self.recent.append((t, dt))
            while self.recent and self.recent[0][0] < t - self.window:
                self.recent.popleft()
        if self.last_t is None or t > self.last_t:
            self.last_t = t

    def idle_since(self, t0: float) -> float:
        """Idle seconds counted after time t0 (for "in the last 2 h")."""
        return sum(dt for t, dt in self.recent if t > t0)


def budget_runs_out_at(start: Optional[float], now: float, rate_per_hour: Optional[float],
                       budget: Optional[float], granularity: str = "second") -> Optional[float]:
    """When the charge that crosses the budget is made; None when no budget or rate, or
    when it has been made already."""
    if not budget:
        return None
    when = charged_at(start, budget, rate_per_hour, granularity)
    return when if when is not None and when > now else None


def runs_out_phrase(when: float, now: float, granularity: str = "second") -> str:
    """The end of the budget line: a clock time, read as one ("runs out at 23:24"); per hour,
    the start of the hour that crosses the budget (that is when the money is committed)."""
    same_day = time.localtime(when)[:3] == time.localtime(now)[:3]
    clock = time.strftime("%H:%M" if same_day else "%m-%d %H:%M", time.localtime(when))  # no English day names
    if granularity == "hour":
        return _(", crossed by the hour starting at %s") % clock
    return _(", runs out at %s") % clock


def collapse_levels(levels: Sequence[float]) -> Optional[float]:
    """Several levels crossed at one moment are one warning: the highest."""
    return max(levels) if levels else None


def seconds_until_budget(cost: Optional[float], rate_per_hour: Optional[float],
                         budget: Optional[float]) -> Optional[float]:
    """How long until the budget is spent at this rate; 0 if spent, None if never."""
    if not budget or cost is None or not rate_per_hour:
        return None
    if cost >= budget:
        return 0.0
    return (budget - cost) / rate_per_hour * 3600.0


def projected_cost(start: float, when: float, rate_per_hour: Optional[float],
                   granularity: str = "second") -> Optional[float]:
    """What the bill will be at time `when` if the box keeps running."""
    return cost_for(max(0.0, when - start), rate_per_hour, granularity)


def storage_cost_per_day(gb: Optional[float], price_per_gb_month: Optional[float]) -> Optional[float]:
    """What keeping the data disk costs per day after the GPU is stopped (30-day month)."""
    if gb is None or price_per_gb_month is None:
        return None
    return gb * price_per_gb_month / 30.0


def session_start(config_start: Optional[float], instance_start: Optional[float],
                  first_contact: Optional[float]) -> Optional[float]:
    """When the billing clock starts: the user's override, else the instance's start
    (container PID 1 / boot, reported by the probe), else the first contact."""
    for t in (config_start, instance_start, first_contact):
        if t:
            return t
    return None


def next_clock_time(hhmm: str, now: float) -> float:
    """Epoch of the next local HH:MM after `now` ("stop at 07:00"). ValueError if malformed."""
    hour_text, _, minute_text = hhmm.strip().partition(":")
    hour, minute = int(hour_text), int(minute_text or 0)
    if not (0 <= hour < 24 and 0 <= minute < 60):
        raise ValueError("not a time of day: %r" % hhmm)
    base = datetime.datetime.fromtimestamp(now)
    target = base.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if target.timestamp() <= now:
        target += datetime.timedelta(days=1)
    return target.timestamp()


def local_midnight(now: float) -> float:
    d = datetime.datetime.fromtimestamp(now)
    return d.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()


def cost_today(start: Optional[float], now: float, rate_per_hour: Optional[float],
               other_sessions_today: float = 0.0) -> Optional[float]:
    """Spend since local midnight: this session's share plus other sessions' costs today
    (the box's daily budget watch counts with the same function)."""
    return money.cost_today(start, now, rate_per_hour, local_midnight(now), other_sessions_today)


def cost_to_finish(eta_seconds: Optional[float], rate_per_hour: Optional[float],
                   granularity: str = "second", elapsed: Optional[float] = None) -> Optional[float]:
    """What finishing a job adds to the bill: the billable time at the job's end minus the
    billable time already charged now. Per started hour, a job that ends inside the hour
    already paid for costs nothing more, and one that crosses into the next hour costs that
    whole hour; without `elapsed` (session start unknown) the ETA alone is rounded up.
    None when the ETA or the rate is unknown."""
    if eta_seconds is None or rate_per_hour is None or eta_seconds != eta_seconds or eta_seconds < 0:
        return None
    if elapsed is None or elapsed < 0:
        return cost_for(eta_seconds, rate_per_hour, granularity)
    charged_then = billable_seconds(elapsed + eta_seconds, granularity)
    charged_now = billable_seconds(elapsed, granularity)
    return max(0, charged_then - charged_now) / 3600.0 * rate_per_hour
