"""The "notify_config" request the laptop sends the box's daemon after every connect: the
user's channels (tui.core.notify.settings), quiet hours, and the message templates and cause
names in the user's language (tui.core.notify.messages), so the box can say it with the
laptop closed. The params hold secrets (webhook keys): never log them, show them, or put them
in a report; `redacted()` is what may be shown."""

import collections.abc
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Tuple

from remote_probe.wire import channel_urls
from tui.core.notify import messages as notify_messages
from tui.core.notify.settings import NotifySettings, notify_settings

if TYPE_CHECKING:
    from tui.core.billing.clock import BillingClock


class NotifyParams(collections.abc.Mapping):  # type: ignore[type-arg]
    """The request's parameters, readable as a mapping (`**params`), whose repr names no
    secret: a traceback that shows locals, a debug log or a crash report prints the
    redacted channels only."""

    def __init__(self, data: Dict[str, Any]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return "NotifyParams(channels=%r, box=%r)" % (redacted(self), self._data.get("box"))


def config_params(settings: NotifySettings, box: str) -> "NotifyParams":
    """The request's parameters (the wire contract's notify_config)."""
    templates = {kind: {"title": pair[0], "body": pair[1]}
                 for kind, pair in notify_messages.templates().items()}
    return NotifyParams({"channels": list(settings.urls) if settings.enabled else [],
                         "quiet": settings.quiet.wire() if settings.quiet else None,
                         "templates": templates, "causes": notify_messages.causes(),
                         "box": box, "enabled": bool(settings.enabled and settings.urls),
                         # [notify] events: the kinds the box may send (None: every kind)
                         "events": None if settings.events is None else list(settings.events),
                         # the box's watch: a spot notice sends this signal to each job (clocks)
                         "watch": {"save_signal": settings.save_signal} if settings.save_signal else None})


def notify_config(data: Optional[Mapping[str, Any]], host: str,
                  box: Optional[str] = None) -> Tuple[Optional["NotifyParams"], List[str]]:
    """(params, problems) for `host` from the loaded config dict; problems name no secret.
    params is None when this config says nothing about notifications ([notify] nor
    [hosts.HOST.notify]): a laptop (or a cron job) without them leaves the box's channels as
    another laptop set them, instead of erasing them."""
    settings, problems = notify_settings(data, host)
    host_table = ((data or {}).get("hosts") or {}).get(host)
    if "notify" not in (data or {}) and not (isinstance(host_table, dict) and "notify" in host_table):
        return None, problems
    return config_params(settings, box or host), problems


def redacted(params: Mapping[str, Any]) -> List[str]:
    """The channels of a notify_config as they may be shown or logged."""
    return [channel_urls.redact_url(u) for u in params.get("channels") or ()]


def billing_params(clock: "BillingClock") -> Optional[Dict[str, Any]]:
    """The "notify_billing" request: what the box costs, so its daemon can tell budget 80 % /
    100 % and a low provider balance with the laptop closed (remote_probe/watch/budget_watch.py,
    with the same money math as `clock`). The price in use (the provider's, else the typed
    rate), the session's start and budget, the daily budget with the laptop's local midnight
    and what the ledger's other sessions cost since, the provider balance with when it was
    read, and how many hours of spend count as a low balance.
    None until the session's start is known. No secret in it."""
    if clock.start is None:
        return None
    price = clock.price()
    day_start, day_other_cost = clock.day_facts()
    api = clock.provider_price or {}
    balance = api.get("balance") if api.get("ok") else None
    return {"rate_per_hour": price.rate, "currency": price.currency,
            "granularity": clock.cfg.granularity, "start": clock.start,
            "budget": clock.cfg.budget_session, "balance": balance,
            "budget_day": clock.cfg.budget_day, "day_start": day_start,
            "day_other_cost": round(day_other_cost, 2),
            "balance_low_hours": clock.cfg.balance_low_hours,
            "balance_read_at": api.get("read_at") if balance is not None else None,
            # the account's spend (all its pods) when the provider said it; else the box's rate
            "spend_per_hour": api.get("spend_per_hour") if balance is not None else None}
