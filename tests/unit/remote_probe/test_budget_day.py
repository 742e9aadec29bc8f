"""The box tells the daily budget (budget_day) 80 % / 100 % with the laptop closed (issue 21):
today's spend counted from the laptop's local midnight with the laptop's own function, plus
what the ledger's other sessions cost since; once per day and budget, whatever the session;
the next day counted afresh; worded as today's budget, in the user's language."""

import pytest

from remote_probe.watch import budget_watch as bw
from remote_probe.notify import events as ne
from tui.core import i18n
from tui.core.notify import messages as notify_messages
from tui.core.billing.clock import BillingClock
from tui.core.config import HostConfig

MIDNIGHT = 1_700_000_000.0
START = MIDNIGHT - 3600.0  # the session began an hour before midnight
# 36/h: 0.01 a second; a 10.00 daily budget with 2.00 already spent today elsewhere
DAY = {"rate_per_hour": 36.0, "currency": "USD", "granularity": "second", "start": START,
       "budget": None, "budget_day": 10.0, "day_start": MIDNIGHT, "day_other_cost": 2.0}


def facts(**kw):
    return bw.facts_of(dict(DAY, **kw))


def told_day(*levels, day=MIDNIGHT, budget=10.0):
    return {"session": "%d" % START, "budget": None, "levels": [], "balance_low": None,
            "day": "%d@%s" % (day, budget), "day_levels": list(levels)}


@pytest.mark.parametrize("name, f, now, told, expected", [
    # 2.00 + 0.01/s since midnight: 8.00 (80 %) at 600 s, 10.00 at 800 s
    ("before-80", facts(), MIDNIGHT + 599, {}, []),
    ("at-80", facts(), MIDNIGHT + 600, {}, ["budget_80"]),
    ("80-told", facts(), MIDNIGHT + 700, told_day(0.8), []),
    ("at-100", facts(), MIDNIGHT + 800, told_day(0.8), ["budget_100"]),
    ("late-both", facts(), MIDNIGHT + 5000, {}, ["budget_100"]),
    # yesterday's hour of this session does not count today
    ("only-since-midnight", facts(day_other_cost=0.0), MIDNIGHT + 800, {}, ["budget_80"]),
    ("no-daily-budget", facts(budget_day=None), MIDNIGHT + 5000, {}, []),
    ("an-older-laptop", facts(day_start=None), MIDNIGHT + 5000, {}, []),
    ("no-rate", facts(rate_per_hour=None), MIDNIGHT + 5000, {}, []),
    # the next day (laptop still closed): counted afresh, other sessions' spend was yesterday's
    ("next-day-before", facts(), MIDNIGHT + 86400 + 799, told_day(0.8, 1.0), []),
    ("next-day-80", facts(), MIDNIGHT + 86400 + 800, told_day(0.8, 1.0), ["budget_80"]),
    # a raised daily budget is a new threshold
    ("raised", facts(budget_day=20.0), MIDNIGHT + 1600, told_day(0.8, 1.0), ["budget_80"]),
    # a new session the same day (the laptop came back): the day's levels stay told
    ("new-session-same-day", facts(start=MIDNIGHT + 300), MIDNIGHT + 900, told_day(0.8, 1.0), []),
    # both budgets at once: one message each
    ("session-and-day", facts(budget=1.0), MIDNIGHT + 5000, {}, ["budget_100", "budget_100"]),
])
def test_daily_budget_levels(name, f, now, told, expected):
    events, new_told = bw.decide(f, now, told)
    assert [k for k, _f, _r in events] == expected
    if expected:  # told once: a second later, not again
        again, _t = bw.decide(f, now + 1, new_told)
        assert not [k for k, fields, _r in again if fields.get("variant") == "day"]


def test_daily_message_fields_and_dedup_key():
    (kind, fields, run), = bw.decide(facts(), MIDNIGHT + 600, {})[0]
    assert kind == "budget_80" and fields == {"cost": "$8.00", "budget": "$10.00", "variant": "day"}
    assert run == "day:%d@10.0" % MIDNIGHT  # one outbox key per day and daily budget
    title, body = ne.render(kind, dict(fields, box="gpu1"))
    assert title == "gpu1 has used 80% of today's budget" and body == "Spent $8.00 of $10.00 today."
    # the session budget keeps its own wording
    assert ne.render("budget_80", {"box": "gpu1", "cost": "$8.00", "budget": "$10.00"})[0] == \
        "gpu1 has used 80% of its budget"


def test_daily_message_in_chinese():
    i18n.set_language("zh")
    try:
        templates, causes = notify_messages.templates(), notify_messages.causes()
    finally:
        i18n.set_language("en")
    title, body = ne.render("budget_100", {"box": "gpu1", "cost": "¥10.00", "budget": "¥10.00",
                                           "variant": "day"}, templates, causes)
    assert title == "gpu1 的今日预算已用完" and "机器仍在计费" in body


def test_the_watch_keeps_the_days_levels_across_a_restart(tmp_path):
    watch = bw.BudgetWatch(str(tmp_path))
    watch.set_facts(DAY, MIDNIGHT)
    seen = [k for t in range(0, 900, 50) for k, _f, _r in watch.check(MIDNIGHT + t)]
    assert seen == ["budget_80", "budget_100"]
    again = bw.BudgetWatch(str(tmp_path))  # the daemon restarted; the laptop pushes again
    again.set_facts(DAY, MIDNIGHT + 900)
    assert again.check(MIDNIGHT + 950) == []
    status = again.status(MIDNIGHT + 1000)
    assert status["told"] == ["budget_80_day", "budget_100_day"]
    assert status["day_cost"] == pytest.approx(12.0) and status["budget_day"] == 10.0


@pytest.mark.parametrize("other", [0.0, 3.5])
def test_box_and_laptop_tell_the_daily_levels_at_the_same_second(other):
    """The laptop's meter (its figures' day_cost) and the box cross 80 % / 100 % together."""
    class Ledger:
        def cost_since(self, t0, exclude_id=None):
            return other
    t = [0.0]
    clock = BillingClock("box", HostConfig(rate=36.0, budget_day=10.0), Ledger(),
                         clock=lambda: t[0])
    t[0] = clock.day_facts(1_700_050_000.0)[0]  # a local midnight
    clock.start, clock.session = t[0] - 600, {"id": 1}
    day_start, others = clock.day_facts(t[0])
    f = bw.facts_of(dict(DAY, start=t[0] - 600, day_start=day_start, day_other_cost=others))
    told, box, laptop = {}, [], []
    end = t[0] + 1200
    while t[0] <= end:
        for kind, level, _b in clock.new_budget_warnings(t[0]):
            if kind == "day" and level >= 0.8:
                laptop.append((t[0], {0.8: "budget_80", 1.0: "budget_100"}[level]))
        events, told = bw.decide(f, t[0], told)
        box += [(t[0], k) for k, _f, _r in events]
        t[0] += 1
    assert box == laptop and len(box) == 2
