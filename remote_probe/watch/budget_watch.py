"""The box's own budget and balance watch: "80 % of the budget spent", "the whole budget
spent" and "the provider balance is running low", told with the laptop closed.

The daemon cannot know what the box costs; the laptop does (its config, the rate typed with
`b`, the price and balance the provider's API gave). It pushes those facts with the
"notify_billing" request (tui/core/notify_wire.billing_params) after every connect and
whenever they change; they are kept 0600 in ``<state dir>/notify/billing.json`` with what
was already told, so a daemon restart neither forgets the budget nor tells it twice. From
its own clock the daemon then decides, each tick:

- budget_80 / budget_100: the charge that takes this session's bill to 80 % / 100 % of the
  budget has been made (wire.money.budget_levels_due, the laptop's own function); each once
  per session (its start) and budget; both due at one moment are one message, the highest.
- the same kinds for the daily budget (``budget_day``): today's spend, counted from the
  laptop's local midnight (``day_start``) with the laptop's function (wire.money.cost_today),
  plus what the ledger's other sessions cost since (``day_other_cost``), reaches 80 % / 100 %
  of it; each once per day and budget, whatever the session. Past that day the box counts
  on from its own clock, whole days after the laptop's midnight (a DST change shifts it by
  an hour), with only this session's spend.
- balance_low: the balance, counted down from when it was read at the spend per hour, covers
  less than ``balance_low_hours`` (default BALANCE_LOW_HOURS) of spend, or is gone. Once per
  session, again only after a fresh reading showed it topped up.

Events go to the Notifier (watch_notify), whose outbox dedups, rate-limits and holds them
in quiet hours (budget_100 and balance_low are urgent: they go out anyway). Stdlib only.
"""

import logging
import os
import threading

from remote_probe.notify import queue as notify_queue
from remote_probe.wire import money

log = logging.getLogger("gputui.probe")

BILLING = "billing.json"
NOTIFY_LEVELS = (0.8, 1.0)
LEVEL_KINDS = {0.8: "budget_80", 1.0: "budget_100"}
BALANCE_LOW_HOURS = 2.0  # a night's warning: time to top up before the provider stops the box
FIELDS = ("rate_per_hour", "currency", "granularity", "start", "budget", "balance",
          "balance_read_at", "spend_per_hour", "balance_low_hours",
          "budget_day", "day_start", "day_other_cost")
DAY = 86400.0


# ---- decisions: plain functions of (facts, now, what was told) ----------------------------

def facts_of(msg):
    """The pushed request -> the facts kept (known fields only; a granularity the math does
    not know is refused)."""
    facts = {k: msg.get(k) for k in FIELDS}
    if facts["granularity"] is None:
        facts["granularity"] = "second"
    if facts["granularity"] not in money.GRANULARITY_SECONDS:
        raise ValueError("granularity: %r is not one of %s"
                         % (facts["granularity"], ", ".join(money.GRANULARITY_SECONDS)))
    return facts


def session_key(facts):
    """One billing session per start time (the laptop's ledger: per host and boot)."""
    start = (facts or {}).get("start")
    return None if start is None else "%d" % int(start)


def cost_now(facts, now):
    start, rate = facts.get("start"), facts.get("rate_per_hour")
    if start is None or rate is None:
        return None
    return money.cost_for(max(0.0, now - start), rate, facts.get("granularity") or "second")


def levels_due(facts, now, told_levels):
    """-> (levels now charged and not told, the one to tell: the highest, or None)."""
    return money.budget_levels_due(facts.get("start"), now, facts.get("rate_per_hour"),
                                   facts.get("budget"), facts.get("granularity") or "second",
                                   told_levels, NOTIFY_LEVELS)


def spend_of(facts):
    """Money per hour the balance pays for: the account's spend, else this box's rate."""
    return facts.get("spend_per_hour") or facts.get("rate_per_hour")


def balance_left(facts, now):
    """The balance now: the reading, less what was spent since it was taken; None unknown."""
    balance = facts.get("balance")
    if balance is None:
        return None
    spend = spend_of(facts) or 0.0
    read_at = facts.get("balance_read_at") or now
    return balance - spend * max(0.0, now - read_at) / 3600.0


def balance_is_low(facts, now):
    """Gone, or covering less than balance_low_hours of spend. Unknown is not low."""
    left = balance_left(facts, now)
    if left is None:
        return False
    if left <= 0:
        return True
    spend = spend_of(facts)
    hours = facts.get("balance_low_hours")
    hours = BALANCE_LOW_HOURS if hours is None else hours
    return bool(spend) and left < spend * hours


def day_of(facts, now):
    """-> (the midnight today's spend counts from, what other sessions cost since), or None
    without a daily budget or the laptop's midnight. After the laptop's day, whole days on."""
    start = facts.get("day_start")
    if not facts.get("budget_day") or start is None:
        return None
    if now < start + DAY:
        return start, facts.get("day_other_cost") or 0.0
    return start + (now - start) // DAY * DAY, 0.0


def day_cost(facts, now):
    """Today's spend as the laptop counts it (wire.money.cost_today); None unknown."""
    day = day_of(facts, now)
    if day is None:
        return None
    return money.cost_today(facts.get("start"), now, facts.get("rate_per_hour"), day[0], day[1])


def spent(facts, now):
    """The session's budget or today's is spent at the box's rate (autostop's at_budget)."""
    if not facts:
        return False
    cost, budget = cost_now(facts, now), facts.get("budget")
    if cost is not None and budget is not None and cost >= budget:
        return True
    today, budget_day = day_cost(facts, now), facts.get("budget_day")
    return today is not None and bool(budget_day) and today >= budget_day


def short_of_money(facts, now, jobs):
    """[(job id, run, reason)] for each running job whose ETA outlasts the money: what is left
    of the session's budget does not pay for the rest of it, or the provider's balance runs out
    before it finishes. Plain function of the facts and the watch's job rows."""
    if not facts or facts.get("rate_per_hour") is None:
        return []
    rate, gran = facts["rate_per_hour"], facts.get("granularity") or "second"
    cost, budget = cost_now(facts, now), facts.get("budget")
    left = balance_left(facts, now)
    spend = spend_of(facts)
    out = []
    for job in jobs or ():
        eta = (job.get("progress") or {}).get("eta_seconds")
        if job.get("state") != "running" or not isinstance(eta, (int, float)) or eta <= 0:
            continue
        to_finish = money.cost_for(eta, rate, gran)
        currency = facts.get("currency")
        run = "%s@%s" % (job.get("pid"), int(job.get("since") or 0))
        if budget is not None and cost is not None and cost + to_finish > budget:
            out.append((job["id"], run, "It needs %s more to finish; %s of the budget is left."
                        % (money.format_money(to_finish, currency),
                           money.format_money(max(0.0, budget - cost), currency))))
        elif left is not None and spend and left / spend * 3600.0 < eta:
            out.append((job["id"], run, "The provider balance (%s) runs out in %d min; the job needs %d min."
                        % (money.format_money(max(0.0, left), currency),
                           max(0, left) / spend * 60.0, eta / 60.0)))
    return out


def told_for(told, facts):
    """What was told of this session and budget (a new session or budget starts afresh;
    the daily budget's levels are the day's, kept across sessions)."""
    told = dict(told or {})
    key = session_key(facts)
    if "session" not in told or told["session"] != key:
        return {"session": key, "budget": facts.get("budget"), "levels": [], "balance_low": None,
                "day": told.get("day"), "day_levels": list(told.get("day_levels") or [])}
    if told.get("budget") != facts.get("budget"):
        told.update(budget=facts.get("budget"), levels=[])
    return told


def decide(facts, now, told):
    """-> (events [(kind, fields, run)], the new told). `run` names the event for the
    outbox's dedup: the session and budget, or the moment the balance was found low."""
    told = told_for(told, facts)
    events = []
    key = told["session"]
    currency = facts.get("currency")
    if key is not None:
        due, show = levels_due(facts, now, told["levels"])
        if show is not None:
            told["levels"] = sorted(set(told["levels"]) | set(due))
            events.append((LEVEL_KINDS[show], {
                "cost": money.format_money(cost_now(facts, now), currency),
                "budget": money.format_money(facts.get("budget"), currency)},
                "%s@%s" % (key, facts.get("budget"))))
    day = day_of(facts, now)
    if day is not None:
        day_key = "%d@%s" % (day[0], facts.get("budget_day"))
        if told.get("day") != day_key:  # a new day, or a new daily budget
            told["day"], told["day_levels"] = day_key, []
        cost = day_cost(facts, now)
        due = money.budget_levels_crossed(cost, facts.get("budget_day"),
                                          told.get("day_levels") or [], NOTIFY_LEVELS)
        if due:
            told["day_levels"] = sorted(set(told.get("day_levels") or []) | set(due))
            events.append((LEVEL_KINDS[max(due)], {
                "cost": money.format_money(cost, currency),
                "budget": money.format_money(facts.get("budget_day"), currency),
                "variant": "day"}, "day:" + day_key))
    if told.get("balance_low") is None and balance_is_low(facts, now):
        told["balance_low"] = now
        events.append(("balance_low",
                       {"balance": money.format_money(balance_left(facts, now), currency)},
                       "%s@%d" % (key or "-", int(now))))
    return events, told


# ---- the watch: the facts and what was told, on disk -----------------------------------

class BudgetWatch:
    def __init__(self, directory):
        self.path = os.path.join(directory, BILLING)
        self.lock = threading.Lock()  # the request's thread and the daemon's tick
        state = notify_queue._load_json(self.path, {})
        state = state if isinstance(state, dict) else {}
        facts = state.get("facts")
        self.facts = facts if isinstance(facts, dict) else None
        told = state.get("told")
        self.told = told if isinstance(told, dict) else {}

    def _save(self):
        notify_queue._dump(self.path, {"facts": self.facts, "told": self.told})

    def set_facts(self, msg, now):
        """A notify_billing request -> its reply (what the box now makes of the bill)."""
        facts = facts_of(msg)
        with self.lock:
            told = told_for(self.told, facts)
            # a fresh reading that shows the balance topped up: a later low is news again
            if told.get("balance_low") is not None and not balance_is_low(facts, now):
                told["balance_low"] = None
            self.facts, self.told = facts, told
            self._save()
        log.info("billing facts: rate %s, budget %s, balance %s",
                 "set" if facts["rate_per_hour"] is not None else "none",
                 "set" if facts["budget"] is not None else "none",
                 "set" if facts["balance"] is not None else "none")
        return self.status(now)

    def check(self, now):
        """Each tick: the events now due, each once (their being told is saved first)."""
        with self.lock:
            if self.facts is None:
                return []
            events, told = decide(self.facts, now, self.told)
            if told != self.told:
                self.told = told
                self._save()
        return events

    def status(self, now):
        with self.lock:
            facts = self.facts or {}
            told = told_for(self.told, facts) if self.facts else {}
            left = balance_left(facts, now)
            return {"cost": cost_now(facts, now), "budget": facts.get("budget"),
                    "told": [LEVEL_KINDS[lvl] for lvl in told.get("levels") or ()
                             if lvl in LEVEL_KINDS]
                    + (["balance_low"] if told.get("balance_low") is not None else [])
                    + [LEVEL_KINDS[lvl] + "_day" for lvl in told.get("day_levels") or ()
                       if lvl in LEVEL_KINDS],
                    "day_cost": day_cost(facts, now), "budget_day": facts.get("budget_day"),
                    "balance_left": None if left is None else round(left, 4),
                    "balance_low": balance_is_low(facts, now)}
