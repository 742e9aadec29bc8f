"""What every box command does around its request, and says on stderr: the config read
(each problem printed once) and the contact recorded in the billing ledger. The CLI's part
of a report; `tui.core.report` only builds documents and text."""

import sys
from typing import Any, Dict, Optional, Tuple

from tui.core.text.boxtext import visible
from tui.core.config import Config, HostConfig
from tui.core.i18n import _

# What record_contact needs once the box has answered: loaded then, or meanwhile by
# tui.cli.shared.preload while the connection waits on the network (issue 26: start-up).
AFTER_REPLY = ("tui.core.billing.clock", "tui.core.billing.ledger", "tui.core.billing.provider_price")


def configured_python(host: str) -> Optional[str]:
    """The host's `python =` from the config (None when unset or the file is unreadable)."""
    try:
        return Config.load().host(host).python
    except Exception:  # noqa: BLE001 - config_for reports the file's problems
        return None


def config_for(host: str) -> Tuple[Config, HostConfig]:
    """(Config, HostConfig) for a command; every problem in the file is printed once, on
    stderr, whatever the command (after host(): some problems are found per host)."""
    cfg = Config.load()
    host_cfg = cfg.host(host)
    for problem in cfg.problems:
        print(_("gputui: config: %s") % visible(problem), file=sys.stderr)
    return cfg, host_cfg


def record_contact(host: str, inventory: Dict[str, Any], cfg: Optional[Config] = None,
                   sample: Optional[Dict[str, Any]] = None,
                   price: Optional[Dict[str, Any]] = None) -> Optional[Dict[str, Any]]:
    """Any contact with a box opens or continues its billing session in the ledger.
    cfg: the Config the command loaded (through config_for, problems already printed);
    sample: the box's latest, whose idle seconds (the daemon's count) go in the row too;
    price: the box's provider_price answer, used instead of a typed rate."""
    from tui.core.billing import provider_price
    from tui.core.billing.rates import format_money
    from tui.core.billing.clock import BillingClock
    from tui.core.billing.ledger import Ledger, LedgerError
    if cfg is None:
        cfg, _host_cfg = config_for(host)
    try:
        ledger = Ledger()
    except (LedgerError, OSError) as exc:
        print(_("gputui: ledger unavailable: %s") % visible(exc), file=sys.stderr)
        return None
    if ledger.notice:
        print("gputui: %s" % visible(ledger.notice), file=sys.stderr)
    clock = BillingClock(host, cfg.host(host), ledger)
    clock.on_inventory(inventory)
    if sample:
        clock.on_sample(sample)
    if clock.preset.key == "autodl":  # the wallet balance, with the token in this laptop's config
        from tui.remote.autodl_wallet import price_with_wallet
        price = price_with_wallet(price, cfg, cfg.host(host))
    if price is not None:
        clock.set_provider_price(price)
        notice = clock.take_price_notice()
        if notice:
            print("gputui: %s" % visible(notice), file=sys.stderr)
    clock.persist(force=True)
    if clock.problem:
        print("gputui: %s" % visible(clock.problem), file=sys.stderr)
    f = clock.figures()
    ledger.close()
    return {"start": f.start, "elapsed_s": round(f.elapsed), "rate": f.rate, "currency": f.currency,
            "granularity": f.granularity, "cost": f.cost, "provider": f.provider,
            "release_command": f.release_command, "release_action": f.release_action,
            "after_release": f.after_release, "rate_source": f.rate_source, "rate_label": f.rate_label,
            "price_source": (price or {}).get("source") if f.rate_source == "api" else None,
            "balance": (price or {}).get("balance"), "balance_runs_out": runs_out_json(f.balance_runs_out),
            "balance_text": provider_price.runs_out_text(
                f.balance_runs_out, lambda v: format_money(v, f.currency)) or None}


async def price_of(session: Any) -> Optional[Dict[str, Any]]:
    """The box's provider_price answer over an open session; None when it cannot say (the
    typed rate is used then)."""
    from remote_probe import wire
    try:
        reply: Dict[str, Any] = await session.request(wire.PROVIDER_PRICE, timeout=30)
    except Exception:  # noqa: BLE001 - the price is extra; the checklist goes on without it
        return None
    return reply.get("price")


def runs_out_json(out: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """balance_runs_out for JSON: the clock time, and the epoch it stands for."""
    if not out:
        return None
    return {"at": out["hhmm"], "date": out.get("date"), "epoch": round(out["at"]), "then": out.get("then")}


def host_settings(args, host_cfg: HostConfig):
    """`--simulate` / `--remote-dir`, else the host's `simulate` / `remote_dir` in the config:
    the same for every command (connect, status, doctor, checklist, fleet, exporter)."""
    if getattr(args, "simulate", None) is None and host_cfg.simulate:
        args.simulate = host_cfg.simulate
    if getattr(args, "remote_dir", None) is None and host_cfg.remote_dir:
        args.remote_dir = host_cfg.remote_dir
    return args

