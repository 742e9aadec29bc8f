"""What every box command does around its request, and says on stderr: the config read
(each problem printed once) and the contact recorded in the billing ledger. The CLI's part
of a report; `tui.core.report` only builds documents and text."""

import sys
from typing import Any, Dict, Optional, Tuple

from tui.core.billing_clock import BillingClock
from tui.core.boxtext import visible
from tui.core.config import Config, HostConfig
from tui.core.i18n import _
from tui.core.ledger import Ledger, LedgerError


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


def record_contact(host: str, inventory: Dict[str, Any],
                   cfg: Optional[Config] = None) -> Optional[Dict[str, Any]]:
    """Any contact with a box opens or continues its billing session in the ledger.
    cfg: the Config the command loaded (through config_for, problems already printed)."""
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
    clock.persist(force=True)
    if clock.problem:
        print("gputui: %s" % visible(clock.problem), file=sys.stderr)
    f = clock.figures()
    ledger.close()
    return {"start": f.start, "elapsed_s": round(f.elapsed), "rate": f.rate, "currency": f.currency,
            "granularity": f.granularity, "cost": f.cost, "provider": f.provider,
            "release_command": f.release_command, "release_action": f.release_action,
            "after_release": f.after_release}
