"""Which hourly price the billing clock uses, where it came from, and when a prepaid balance runs
out (issue 22). Plain functions over the probe's `provider_price` answer (remote_probe/provider/api.py,
read on the box so the key never leaves it) and the rate the user typed with `b`."""

import dataclasses
import datetime
from typing import Any, Dict, Optional

from tui.core import providers
from tui.core.i18n import _

API, TYPED, NONE = "api", "typed", "none"  # where the price came from (data; shown through label())


@dataclasses.dataclass(frozen=True)
class PriceInUse:
    rate: Optional[float]
    currency: str
    source: str  # API / TYPED / NONE
    provider_source: Optional[str] = None  # "RunPod API" when source is API
    notice: Optional[str] = None  # why the provider's price is not used, to say once

    @property
    def label(self) -> str:
        """'price from RunPod API', 'typed rate' or 'no rate'."""
        if self.source == API:
            return _("price from %s") % (self.provider_source or _("provider API"))
        return _("typed rate") if self.source == TYPED else _("no rate")


def price_in_use(api_result: Optional[Dict[str, Any]], typed_rate: Optional[float],
                 typed_currency: str) -> PriceInUse:
    """The provider's own price when the box could read it, else the typed rate (with a notice
    when the provider was asked and could not answer), else none."""
    api = api_result or {}
    rate, source, notice = providers.price_source(api, typed_rate)
    if api.get("ok") and api.get("rate_per_hour") is not None:
        return PriceInUse(rate, api.get("currency") or typed_currency, API, api.get("source"))
    if rate is not None:
        return PriceInUse(rate, typed_currency, TYPED, notice=notice)
    return PriceInUse(None, typed_currency, NONE, notice=notice)


def runs_out(api_result: Optional[Dict[str, Any]], preset: Any, now: float,
             rate: Optional[float] = None) -> Optional[Dict[str, Any]]:
    """When the account's balance reaches zero at its current spend, as a clock time, where the
    provider stops or terminates at zero (preset.at_zero_balance). -> {"hhmm", "date", "balance",
    "then", "at"} or None.

    Counted from when the box read the balance (read_at), not from now: a cached answer is
    minutes old. The spend is the account's (all its pods), else this box's price (the
    provider's, else `rate`, the typed one: AutoDL's wallet API says no price)."""
    api = api_result or {}
    if not api.get("ok") or not getattr(preset, "at_zero_balance", ""):
        return None
    balance = api.get("balance")
    spend = api.get("spend_per_hour") or api.get("rate_per_hour") or rate
    read_at = api.get("read_at") or now
    out = providers.balance_runs_out(balance, spend, datetime.datetime.fromtimestamp(read_at),
                                     preset.at_zero_balance)
    if out is None:
        return None
    at = out["at"].timestamp()
    today = datetime.datetime.fromtimestamp(now).strftime("%Y-%m-%d")
    return {"hhmm": out["hhmm"], "date": out["date"] if out["date"] != today else None,
            "balance": balance, "then": _(preset.at_zero_balance), "at": at}


def runs_out_text(out: Optional[Dict[str, Any]], currency_fmt: Any) -> str:
    """'balance $12.00 runs out at 17:00 (RunPod stops all pods …)', or ''."""
    if not out:
        return ""
    when = out["hhmm"] if not out.get("date") else "%s %s" % (out["date"], out["hhmm"])
    text = _("balance %s runs out at %s") % (currency_fmt(out["balance"]), when)
    return text + (" (%s)" % out["then"] if out.get("then") else "")
