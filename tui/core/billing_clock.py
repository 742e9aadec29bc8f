"""The live billing meter of one box: ties config, the probe's facts, the idle meter
and the ledger together. The figures come from the plain functions in billing.py; the
app only displays what `figures()` returns."""

import dataclasses
import time
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from remote_probe import wire
from tui.core import billing, providers
from tui.core.config import HostConfig
from tui.core.ledger import Ledger, LedgerError

PERSIST_EVERY = 10.0  # seconds between ledger writes while live
IDLE_RECENT = 2 * 3600  # "paid for idle GPUs in the last 2 h"


@dataclasses.dataclass
class Figures:
    start: Optional[float]
    elapsed: float
    cost: Optional[float]
    rate: Optional[float]
    currency: str
    granularity: str
    idle_seconds: float
    idle_cost: Optional[float]
    idle_recent_cost: Optional[float]
    budget: Optional[float]
    budget_fraction: Optional[float]
    budget_left_s: Optional[float]
    day_cost: Optional[float]
    budget_day: Optional[float]
    cost_in_8h: Optional[float]
    storage_per_day: Optional[float]
    provider: str
    release_command: Optional[str]
    idle_now: bool
    release_action: Optional[str] = None  # the chosen action's key (issue 22)
    after_release: str = ""  # what that action keeps billing, and its clock
    budget_runs_out_at: Optional[float] = None  # when the charge crossing the budget is made


class BillingClock:
    def __init__(self, host: str, host_cfg: HostConfig, ledger: Optional[Ledger] = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.host = host
        self.cfg = host_cfg
        self.ledger = ledger
        self.clock = clock
        self.session: Optional[Dict[str, Any]] = None  # the ledger row
        self.start: Optional[float] = None
        self.idle = billing.IdleMeter()
        self.idle_now = False
        self.warned: Set[Tuple[str, float]] = set()
        self.preset = providers.resolve({}, host_cfg)
        self.problem: Optional[str] = None  # a ledger problem to show once
        self._persisted_at = 0.0
        self.contact_at: Optional[float] = None  # when the box last answered: the ledger's figures stop there
        self._others: Tuple[float, Optional[float], float] = (0.0, None, 0.0)  # (read at, for which midnight, cost)

    # -- inputs ------------------------------------------------------------------
    def on_inventory(self, inventory: Dict[str, Any]) -> None:
        facts = inventory.get("host") or {}
        self.preset = providers.resolve(facts.get("provider") or {}, self.cfg)
        first = self.contact_at = self.clock()
        self.start = billing.session_start(self.cfg.start_epoch(), facts.get("instance_start"), first)
        gpus = inventory.get("gpus") or []
        model = gpus[0].get("name") if gpus else None
        if self.ledger is None:
            return
        try:
            self.session = self.ledger.open_session(
                self.host, facts.get("boot_id") or "unknown", self.start, gpu_model=model,
                gpu_count=len(gpus), provider=self.preset.name if self.preset.known else None,
                rate=self.cfg.rate,
                currency=self.cfg.currency, granularity=self.cfg.granularity, now=first)
        except LedgerError as exc:
            self.problem = str(exc)
            return
        # Continue the idle count where the last run of gputui left it.
        self.idle = billing.IdleMeter(self.session.get("idle_seconds") or 0.0,
                                      self.session.get("idle_until"))
        if self.session.get("rate") is not None and self.cfg.rate is None:
            self.cfg.rate = self.session["rate"]

    def on_sample(self, sample: Dict[str, Any]) -> None:
        self.contact_at = self.clock()
        if sample.get("gpu_error"):
            return  # unknown is not idle
        utils, compute = wire.idle_inputs(sample)
        self.idle_now = billing.gpus_idle(utils, compute, self.cfg.idle_threshold)
        self.idle.add(sample["t"], self.idle_now)

    def session_key(self, inventory: Dict[str, Any]) -> str:
        """Names this billing session's download folder: the ledger id, else the boot id."""
        key = (self.session or {}).get("id") or (inventory.get("host") or {}).get("boot_id")
        return "session-%s" % (key or "unknown")

    def set_rate(self, rate: Optional[float], currency: Optional[str] = None,
                 granularity: Optional[str] = None) -> None:
        self.cfg.rate = rate
        if currency:
            self.cfg.currency = currency
        if granularity:
            self.cfg.granularity = granularity
        self.persist(force=True)

    # -- outputs -----------------------------------------------------------------
    def figures(self, now: Optional[float] = None) -> Figures:
        now = self.clock() if now is None else now
        cfg = self.cfg
        elapsed = max(0.0, now - self.start) if self.start else 0.0
        cost = billing.cost_for(elapsed, cfg.rate, cfg.granularity) if self.start else None
        idle_cost = cfg.rate * self.idle.idle_seconds / 3600.0 if cfg.rate is not None else None
        recent = (cfg.rate * self.idle.idle_since(now - IDLE_RECENT) / 3600.0
                  if cfg.rate is not None else None)
        budget = cfg.budget_session
        day_cost = billing.cost_today(self.start, now, cfg.rate, self._other_sessions_today(now))
        return Figures(
            start=self.start, elapsed=elapsed, cost=cost, rate=cfg.rate, currency=cfg.currency,
            granularity=cfg.granularity, idle_seconds=self.idle.idle_seconds, idle_cost=idle_cost,
            idle_recent_cost=recent, budget=budget,
            budget_fraction=(cost / budget) if budget and cost is not None else None,
            budget_left_s=billing.seconds_until_budget(cost, cfg.rate, budget),  # rounded cost: see budget_runs_out_at
            day_cost=day_cost, budget_day=cfg.budget_day,
            cost_in_8h=(billing.projected_cost(self.start, now + 8 * 3600, cfg.rate, cfg.granularity)
                        if self.start else None),
            storage_per_day=billing.storage_cost_per_day(cfg.storage_gb, cfg.storage_price_gb_month),
            provider=self.preset.name, release_command=self.preset.release_command,
            idle_now=self.idle_now,
            release_action=self.preset.action, after_release=providers.after_release(self.preset),
            budget_runs_out_at=billing.budget_runs_out_at(self.start, now, cfg.rate, budget,
                                                          cfg.granularity),
        )

    def _other_sessions_today(self, now: float) -> float:
        """Today's cost of the ledger's other sessions; read at most every 30 s, since
        figures() runs on every redraw and the ledger changes slowly."""
        if self.ledger is None or self.session is None:
            return 0.0
        midnight = billing.local_midnight(now)
        cached_at, cached_midnight, value = self._others
        if cached_midnight == midnight and now - cached_at < 30:
            return value
        try:
            value = self.ledger.cost_since(midnight, self.session["id"])
        except Exception:  # noqa: BLE001 - a read problem only hides the daily figure
            value = 0.0
        self._others = (now, midnight, value)
        return value

    def new_budget_warnings(self, now: Optional[float] = None) -> List[Tuple[str, float, Optional[float]]]:
        """Budget levels newly charged, as (kind, level, budget); each warned once per run, and
        levels charged at the same moment as one warning (the highest)."""
        now = self.clock() if now is None else now
        f = self.figures(now)
        out: List[Tuple[str, float, Optional[float]]] = []
        done = {lvl for k, lvl in self.warned if k == "session"}
        if self.start is not None and f.budget:
            due, show = billing.budget_levels_due(self.start, now, f.rate, f.budget,
                                                  f.granularity, done)
        else:
            due, show = [], None
        for kind, levels, budget in (("session", due, f.budget),
                                     ("day", billing.budget_levels_crossed(
                                         f.day_cost, f.budget_day,
                                         {lvl for k, lvl in self.warned if k == "day"}),
                                      f.budget_day)):
            self.warned.update((kind, lvl) for lvl in levels)
            top = show if kind == "session" else billing.collapse_levels(levels)
            if top is not None:
                out.append((kind, top, budget))
        return out

    def persist(self, force: bool = False, ended_how: Optional[str] = None,
                checklist: Any = None) -> None:
        now = self.clock()
        if self.ledger is None or self.session is None:
            return
        if not force and now - self._persisted_at < PERSIST_EVERY:
            return
        # While the box is unreachable the row records what is known: cost up to the last
        # contact, not a clock that keeps running (an ended session ends now).
        at = now if ended_how or self.contact_at is None else min(now, self.contact_at)
        f = self.figures(at)
        values = dict(cost=f.cost, rate=f.rate, currency=f.currency,
                      granularity=f.granularity, idle_seconds=f.idle_seconds,
                      idle_until=self.idle.last_t, idle_cost=f.idle_cost, last_contact=at)
        if ended_how:  # the session is over (released, or the user said so)
            values["ended_how"] = ended_how
            values["end"] = now
        if checklist is not None:
            values["checklist"] = checklist
        try:
            self.ledger.update(self.session["id"], **values)
            self._persisted_at = now
        except LedgerError as exc:
            self.problem = str(exc)
