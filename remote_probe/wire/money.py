"""Billing math both sides use: what `elapsed` seconds cost at a rate and granularity, when
the bill first reaches an amount, which budget levels have been charged, and money as text.

The laptop's billing meter (tui/core/billing/rates.py re-exports these) and the daemon's budget
watch (remote_probe/watch/budget_watch.py, which tells the user with the laptop closed) compute
with the same functions, so the box never says "80 % spent" at another moment than the
app would. Plain functions, stdlib only, Python 3.8.
"""

from __future__ import annotations

import math

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing stays off the box's import path
    from typing import Collection, List, Optional, Sequence, Tuple

GRANULARITY_SECONDS = {"second": 1, "minute": 60, "hour": 3600}
BUDGET_LEVELS = (0.5, 0.8, 1.0)  # the app warns at each; the box notifies at 0.8 and 1.0

CURRENCY_SYMBOLS = {
    "CNY": "¥", "RMB": "¥", "JPY": "¥", "USD": "$", "EUR": "€", "GBP": "£", "KRW": "₩",
    "INR": "₹", "HKD": "HK$", "SGD": "S$", "AUD": "A$", "CAD": "C$",
}
NO_DECIMALS = {"JPY", "KRW"}


def billable_seconds(elapsed: Optional[float], granularity: str = "second") -> int:
    """Seconds the provider bills for `elapsed` seconds: rounded up to the unit.

    "hour" is per *started* hour: 61 minutes bill as 2 hours.
    """
    unit = GRANULARITY_SECONDS[granularity]
    if elapsed is None or elapsed <= 0:
        return 0
    # the epsilon keeps exact multiples (3600.0000001 from float math) in their unit
    return int(math.ceil(elapsed / unit - 1e-9)) * unit


def cost_for(elapsed: Optional[float], rate_per_hour: Optional[float],
             granularity: str = "second") -> Optional[float]:
    """Money for `elapsed` seconds at `rate_per_hour`; None when no rate is known."""
    if rate_per_hour is None:
        return None
    return billable_seconds(elapsed, granularity) / 3600.0 * rate_per_hour


def charged_at(start: Optional[float], amount: Optional[float], rate_per_hour: Optional[float],
               granularity: str = "second") -> Optional[float]:
    """The moment the bill first reaches `amount`: the start of the billing unit whose charge
    takes it there (per started hour, the money is committed when that hour starts). It does
    not depend on the time now, so a line built from it does not drift. None without a rate."""
    if start is None or amount is None or not rate_per_hour or rate_per_hour <= 0:
        return None
    unit = GRANULARITY_SECONDS[granularity]
    units = math.ceil(amount * 3600.0 / rate_per_hour / unit - 1e-9)
    return start + max(0, units - 1) * unit


def budget_levels_due(start: Optional[float], now: float, rate_per_hour: Optional[float],
                      budget: Optional[float], granularity: str = "second",
                      already: Collection[float] = (),
                      levels: Sequence[float] = BUDGET_LEVELS) -> Tuple[List[float], Optional[float]]:
    """-> (levels whose charge has been made and not yet warned about, the one to show).
    Levels charged together (one hour's charge crossing 80 % and 100 %, or a watcher started
    late) are one warning: the highest."""
    if not budget:
        return [], None
    due = []
    for lvl in levels:
        if lvl in already:
            continue
        when = charged_at(start, lvl * budget, rate_per_hour, granularity)
        if when is not None and when <= now:
            due.append(lvl)
    return due, (max(due) if due else None)


def budget_levels_crossed(cost: Optional[float], budget: Optional[float],
                          already: Collection[float] = (),
                          levels: Sequence[float] = BUDGET_LEVELS) -> List[float]:
    """Budget levels reached by `cost` and not yet warned about (the daily budget)."""
    if not budget or cost is None:
        return []
    return [lvl for lvl in levels if cost >= lvl * budget and lvl not in already]


def cost_today(start: Optional[float], now: float, rate_per_hour: Optional[float],
               day_start: float, other_sessions_today: float = 0.0) -> Optional[float]:
    """Spend since `day_start` (the local midnight the daily budget counts from): this
    session's share plus other sessions' costs since then."""
    if rate_per_hour is None or start is None:
        return None
    since = max(start, day_start)
    return other_sessions_today + max(0.0, now - since) / 3600.0 * rate_per_hour


def format_money(amount: Optional[float], currency: Optional[str] = "CNY") -> str:
    """'¥12.40', '$3.20', '€0.05', '¥1,234' for JPY, '12.40 XYZ' for unknown codes."""
    if amount is None:
        return "—"
    code = (currency or "").upper()
    digits = 0 if code in NO_DECIMALS else 2
    text = "{:,.{}f}".format(abs(amount), digits)
    sign = "-" if amount < 0 and float(text.replace(",", "")) != 0 else ""
    if code in CURRENCY_SYMBOLS:
        return sign + CURRENCY_SYMBOLS[code] + text
    return "%s%s %s" % (sign, text, code or "")
