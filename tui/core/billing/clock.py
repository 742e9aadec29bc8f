"""The live billing meter of one box: ties config, the probe's facts, the idle meter
and the ledger together. The figures come from the plain functions in billing.py; the
app only displays what `figures()` returns."""

import dataclasses
import time
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from remote_probe import wire
from tui.core import providers
from tui.core.billing import rates as billing, provider_price
from tui.core.config import HostConfig
from tui.core.i18n import _
from tui.core.billing.ledger import Ledger, LedgerError

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
    release_label: str = ""  # the chosen action's label (N_ text: shown with _())
    rate_source: str = provider_price.NONE  # where `rate` came from: api / typed / none (issue 22)
    rate_label: str = ""  # 'price from RunPod API', 'typed rate', 'no rate'
    balance_runs_out: Optional[Dict[str, Any]] = None  # provider_price.runs_out()
    budget_runs_out_at: Optional[float] = None  # when the charge crossing the budget is made


def released_by_autostop(event: Dict[str, Any], start: Optional[float]) -> bool:
    """An autostop event saying the release command ran and succeeded, in this session."""
    t = event.get("t")
    return (event.get("event") == "fired" and event.get("exit") == 0
            and isinstance(t, (int, float)) and (start is None or t >= start))


RELEASE_VERIFY_S = 90.0  # as the box's remote_probe/autostop/release_verify.py: still answering after
# this long on the boot a release command ran on, the box was not released
RELEASE_ENDINGS = ("released by autostop", "released (exit")  # a release command's endings


def release_unverified(event: Dict[str, Any], start: Optional[float]) -> bool:
    """The box's alarm, in this session: its release command ran and it is still up."""
    t = event.get("t")
    return (event.get("event") == "release_unverified" and isinstance(t, (int, float))
            and (start is None or t >= start))


def outlived_release(session: Optional[Dict[str, Any]], now: Optional[float],
                     verify_s: float = RELEASE_VERIFY_S) -> bool:
    """The ledger closed this (host, boot) session as released by a release command, and
    the box answers on that same boot verify_s or more after it: it was not released."""
    if not session or session.get("end") is None or now is None:
        return False
    return (str(session.get("ended_how") or "").startswith(RELEASE_ENDINGS)
            and now - session["end"] >= verify_s)


def release_alarm_text(ran_at: Optional[float]) -> str:
    import datetime
    try:
        at = datetime.datetime.fromtimestamp(ran_at or 0).strftime("%H:%M") if ran_at else "?"
    except (ValueError, OverflowError, OSError):
        at = "?"
    return _("release command ran at %s but the box is still up and billing") % at


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
        self.box_counts_idle = False  # the daemon counts idle seconds by our threshold
        self.warned: Set[Tuple[str, float]] = set()
        self.preset = providers.resolve({}, host_cfg)
        self.problem: Optional[str] = None  # a ledger problem to show once
        self._persisted_at = 0.0
        self.contact_at: Optional[float] = None  # when the box last answered: the ledger's figures stop there
        self._others: Tuple[float, Optional[float], float] = (0.0, None, 0.0)  # (read at, for which midnight, cost)
        # autostop events up to here were seen by some client already (the ledger's last
        # contact before this one): older ones are history, not news
        self.seen_until: Optional[float] = None
        self.provider_price: Optional[Dict[str, Any]] = None  # the probe's provider_price answer
        self.price_notice: Optional[str] = None  # why the provider's price is not used: said once
        self._price_notice_given = False
        # the release command ran and the box still answers on that boot: an alarm, and the
        # session is open again (release_unverified); releases up to `disproved` are not ends
        self.release_alarm: Optional[str] = None
        self.disproved: Optional[float] = None

    # -- inputs ------------------------------------------------------------------
    def on_inventory(self, inventory: Dict[str, Any]) -> None:
        facts = inventory.get("host") or {}
        self.box_counts_idle = inventory.get("idle_threshold") == self.cfg.idle_threshold
        self.preset = providers.resolve(facts.get("provider") or {}, self.cfg)
        first = self.contact_at = self.clock()
        self.start = billing.session_start(self.cfg.start_epoch(), facts.get("instance_start"), first)
        gpus = inventory.get("gpus") or []
        model = gpus[0].get("name") if gpus else None
        if self.ledger is None:
            return
        try:
            before = self.ledger.get(self.host, facts.get("boot_id") or "unknown")
            if self.seen_until is None:  # a reconnect of this run keeps what it saw
                self.seen_until = (before or {}).get("last_contact")
            self.session = self.ledger.open_session(
                self.host, facts.get("boot_id") or "unknown", self.start, gpu_model=model,
                gpu_count=len(gpus), provider=self.preset.name if self.preset.known else None,
                rate=self.cfg.rate,
                currency=self.cfg.currency, granularity=self.cfg.granularity, now=first)
        except LedgerError as exc:
            self.problem = str(exc)
            return
        # Continue the idle count where the last run of gputui left it (the daemon's own
        # count, in each sample, then takes over: it saw the samples this run did not).
        if outlived_release(self.session, first):  # it answers, on the boot it "released"
            self.reopen(self.session.get("end"))
        self.idle = billing.IdleMeter(self.session.get("idle_seconds") or 0.0,
                                      self.session.get("idle_until"))
        if self.session.get("rate") is not None and self.cfg.rate is None:
            self.cfg.rate = self.session["rate"]

    def on_sample(self, sample: Dict[str, Any]) -> None:
        self.contact_at = self.clock()
        if self.ended and outlived_release(self.session, self.contact_at):
            self.reopen((self.session or {}).get("end"))
        if sample.get("gpu_error"):
            return  # unknown is not idle
        utils, compute = wire.idle_inputs(sample)
        self.idle_now = billing.gpus_idle(utils, compute, self.cfg.idle_threshold)
        box_idle = sample.get("idle_s")
        if self.box_counts_idle and isinstance(box_idle, (int, float)):
            self.idle.take(sample["t"], float(box_idle))
        else:  # an older probe, or another threshold than the box's: count what we see
            self.idle.add(sample["t"], self.idle_now)

    def on_autostop(self, event: Optional[Dict[str, Any]],
                    events: List[Dict[str, Any]]) -> Tuple[Optional[Dict[str, Any]], List[Dict[str, Any]]]:
        """The box's autostop news: a live `event`, and `events` from its log (on connect).
        A release autostop ran (fired, exit 0) closes this billing session at that time,
        live or found in the log on the next contact. -> (the live event, the logged events
        no client saw yet, each marked "late": shown once, with their time)."""
        since = max(self.seen_until or 0.0, self.start or 0.0)
        late = [dict(e, late=True) for e in events
                if isinstance(e.get("t"), (int, float)) and e["t"] > since]
        news = ([event] if event else []) + list(events)
        for e in news:  # the box says its release did not happen: not an end (issue 36)
            if release_unverified(e, self.start):
                self.reopen(e.get("ran_at") if isinstance(e.get("ran_at"), (int, float)) else e["t"])
        for e in news:
            if released_by_autostop(e, self.start) and (
                    self.disproved is None or e["t"] > self.disproved + 5.0):
                self.close_at(e["t"], "released by autostop")
        return event, late

    def reopen(self, ran_at: Optional[float]) -> None:
        """The release at `ran_at` did not happen (the box is up on that boot): the session
        goes on, open in the ledger, with the alarm shown."""
        self.release_alarm = release_alarm_text(ran_at)
        self.disproved = max(self.disproved or 0.0, ran_at or 0.0)
        if self.session is None or self.session.get("end") is None:
            return
        self.session = dict(self.session, end=None, ended_how=None)
        if self.ledger is not None:
            try:
                self.ledger.update(self.session["id"], end=None, ended_how=None)
            except LedgerError as exc:
                self.problem = str(exc)

    def close_at(self, t: float, how: str) -> None:
        """The session ended at `t` (autostop's release): recorded once, then left alone."""
        if self.ledger is None or self.session is None or self.session.get("end") is not None:
            return
        self.persist(force=True, ended_how=how, end_at=t)
        self.session = dict(self.session, end=t, ended_how=how, last_contact=t)

    @property
    def ended(self) -> bool:
        return self.session is not None and self.session.get("end") is not None

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

    def set_provider_price(self, result: Optional[Dict[str, Any]]) -> None:
        """The price and balance the box read from its provider (issue 22). A failure is
        noted once per run (take_price_notice); the typed rate goes on being used."""
        self.provider_price = result
        notice = self.price().notice
        if notice and not self._price_notice_given:
            self._price_notice_given = True
            self.price_notice = notice

    def take_price_notice(self) -> Optional[str]:
        notice, self.price_notice = self.price_notice, None
        return notice

    def price(self) -> provider_price.PriceInUse:
        return provider_price.price_in_use(self.provider_price, self.cfg.rate, self.cfg.currency)

    # -- outputs -----------------------------------------------------------------
    def figures(self, now: Optional[float] = None) -> Figures:
        now = self.clock() if now is None else now
        price = self.price()
        cfg, rate = self.cfg, price.rate  # the provider's price when the box read it, else the typed rate
        elapsed = max(0.0, now - self.start) if self.start else 0.0
        cost = billing.cost_for(elapsed, rate, cfg.granularity) if self.start else None
        idle_cost = rate * self.idle.idle_seconds / 3600.0 if rate is not None else None
        recent = (rate * self.idle.idle_since(now - IDLE_RECENT) / 3600.0
                  if rate is not None else None)
        budget = cfg.budget_session
        day_cost = billing.cost_today(self.start, now, rate, self._other_sessions_today(now))
        return Figures(
            start=self.start, elapsed=elapsed, cost=cost, rate=rate, currency=price.currency,
            granularity=cfg.granularity, idle_seconds=self.idle.idle_seconds, idle_cost=idle_cost,
            idle_recent_cost=recent, budget=budget,
            budget_fraction=(cost / budget) if budget and cost is not None else None,
            budget_left_s=billing.seconds_until_budget(cost, rate, budget),
            day_cost=day_cost, budget_day=cfg.budget_day,
            cost_in_8h=(billing.projected_cost(self.start, now + 8 * 3600, rate, cfg.granularity)
                        if self.start else None),
            storage_per_day=billing.storage_cost_per_day(cfg.storage_gb, cfg.storage_price_gb_month),
            provider=self.preset.name, release_command=self.preset.release_command,
            idle_now=self.idle_now,
            release_action=self.preset.action, after_release=providers.after_release(self.preset),
            release_label=self.preset.chosen.label if self.preset.chosen else "",
            rate_source=price.source, rate_label=price.label,
            balance_runs_out=provider_price.runs_out(self.provider_price, self.preset, now, rate),
            budget_runs_out_at=billing.budget_runs_out_at(self.start, now, cfg.rate, budget,
                                                          cfg.granularity),
        )

    def day_facts(self, now: Optional[float] = None) -> Tuple[float, float]:
        """(local midnight, what the ledger's other sessions cost since): how the box's
        daemon counts the daily budget with the laptop closed, as figures() does."""
        now = self.clock() if now is None else now
        return billing.local_midnight(now), self._other_sessions_today(now)

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
                checklist: Any = None, end_at: Optional[float] = None) -> None:
        now = self.clock()
        if self.ledger is None or self.session is None:
            return
        if self.session.get("end") is not None and not ended_how and checklist is None:
            return  # released: the row's cost stops at its end, whoever is still connected
        if not force and now - self._persisted_at < PERSIST_EVERY:
            return
        # While the box is unreachable the row records what is known: cost up to the last
        # contact, not a clock that keeps running (an ended session ends now).
        at = now if ended_how or self.contact_at is None else min(now, self.contact_at)
        if end_at is not None:
            at = now = end_at
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
