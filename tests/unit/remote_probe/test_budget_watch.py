"""The box's budget and balance watch (issue 21): 80 % / 100 % of the budget and a low
provider balance, decided from the laptop's billing facts and the box's own clock; each
told once per session and threshold, across daemon restarts; the laptop's meter and the
box agree on the moment; the `[notify] events` filter keeps unwanted kinds off the wire."""

import os
import stat

import pytest

from remote_probe.watch import budget_watch as bw
from remote_probe.notify.notifier import Notifier
from remote_probe.wire import check_request
from tui.core.billing.clock import BillingClock
from tui.core.config import HostConfig

START = 1_000_000.0
# 360/h: a 1.00 budget is spent in 10 s, its 80 % in 8 s (per second: the 8th second's
# charge is made when that second starts, 7 s in; the laptop's own rule, money.charged_at)
FAST = {"rate_per_hour": 360.0, "currency": "USD", "granularity": "second", "start": START,
        "budget": 1.0}


def facts(**kw):
    return bw.facts_of(dict(FAST, **kw))


def kinds(events):
    return [k for k, _f, _r in events]


@pytest.mark.parametrize("name, f, now, told, expected", [
    ("before-80", facts(), START + 6.5, {}, []),
    ("at-80", facts(), START + 7, {}, ["budget_80"]),
    ("80-told", facts(), START + 8.5, {"session": "1000000", "budget": 1.0, "levels": [0.8]}, []),
    ("at-100", facts(), START + 9, {"session": "1000000", "budget": 1.0, "levels": [0.8]},
     ["budget_100"]),
    # the watch started late (facts pushed after both were charged): one message, the highest
    ("late-both", facts(), START + 60, {}, ["budget_100"]),
    ("no-rate", facts(rate_per_hour=None), START + 60, {}, []),
    ("no-budget", facts(budget=None), START + 60, {}, []),
    ("no-start", facts(start=None), START + 60, {}, []),
    # a new session (another start) is told afresh
    ("new-session", facts(start=START + 100), START + 108,
     {"session": "1000000", "budget": 1.0, "levels": [0.8, 1.0]}, ["budget_80"]),
    # a raised budget is a new threshold; its 80 % is not charged yet
    ("budget-raised", facts(budget=2.0), START + 12,
     {"session": "1000000", "budget": 1.0, "levels": [0.8, 1.0]}, []),
    ("budget-raised-later", facts(budget=2.0), START + 16,
     {"session": "1000000", "budget": 1.0, "levels": [0.8, 1.0]}, ["budget_80"]),
    # per started hour, the money is committed when the hour starts: 10/h, budget 12 ->
    # 80 % with the first hour's charge, 100 % when the second hour starts
    ("hour-first", facts(rate_per_hour=10.0, budget=12.0, granularity="hour"), START, {},
     ["budget_80"]),
    ("hour-second", facts(rate_per_hour=10.0, budget=12.0, granularity="hour"), START + 3600,
     {"session": "1000000", "budget": 12.0, "levels": [0.8]}, ["budget_100"]),
    ("hour-not-yet", facts(rate_per_hour=10.0, budget=12.0, granularity="hour"), START + 3599,
     {"session": "1000000", "budget": 12.0, "levels": [0.8]}, []),
])
def test_budget_levels(name, f, now, told, expected):
    events, _told = bw.decide(f, now, told)
    assert kinds(events) == expected


def test_budget_message_fields_are_money_in_the_sessions_currency():
    (kind, fields, run), = bw.decide(facts(currency="CNY"), START + 7.2, {})[0]
    assert kind == "budget_80" and fields == {"cost": "¥0.80", "budget": "¥1.00"}
    assert run == "1000000@1.0"  # one outbox key per session and budget


@pytest.mark.parametrize("name, extra, now, low", [
    ("plenty", {"balance": 10.0, "spend_per_hour": 2.0, "balance_read_at": START}, START, False),
    ("under-2h", {"balance": 3.0, "spend_per_hour": 2.0, "balance_read_at": START}, START, True),
    # counted down from the reading: 10 read 4 h ago at 2/h leaves 2, one hour
    ("counted-down", {"balance": 10.0, "spend_per_hour": 2.0, "balance_read_at": START},
     START + 4 * 3600, True),
    ("just-over", {"balance": 4.01, "spend_per_hour": 2.0, "balance_read_at": START}, START, False),
    ("gone", {"balance": 0.0, "balance_read_at": START}, START, True),
    ("negative", {"balance": -1.0, "balance_read_at": START}, START, True),
    ("unknown", {"balance": None}, START, False),
    # no spend said: the box's own rate is what the balance pays
    ("rate-as-spend", {"balance": 300.0, "rate_per_hour": 360.0, "balance_read_at": START}, START, True),
    ("nothing-spent", {"balance": 5.0, "rate_per_hour": None}, START, False),
    ("own-threshold", {"balance": 3.0, "spend_per_hour": 2.0, "balance_low_hours": 1.0,
                       "balance_read_at": START}, START, False),
])
def test_balance_low_rule(name, extra, now, low):
    f = facts(**extra)
    assert bw.balance_is_low(f, now) is low
    assert ("balance_low" in kinds(bw.decide(f, now, {})[0])) is low


def test_each_told_once_across_a_restart_and_stored_privately(tmp_path):
    watch = bw.BudgetWatch(str(tmp_path))
    reply = watch.set_facts(dict(FAST, balance=1.0, spend_per_hour=1.0, balance_read_at=START), START)
    assert reply["told"] == [] and reply["balance_low"] is True
    seen = []
    for i in range(0, 9):
        seen += kinds(watch.check(START + i))
    assert seen == ["balance_low", "budget_80"]
    path = tmp_path / bw.BILLING
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    # the daemon restarts, the laptop pushes the same facts again: nothing is told twice
    again = bw.BudgetWatch(str(tmp_path))
    again.set_facts(dict(FAST, balance=1.0, spend_per_hour=1.0, balance_read_at=START), START + 9)
    for i in range(9, 30):
        seen += kinds(again.check(START + i))
    assert seen == ["balance_low", "budget_80", "budget_100"]
    assert again.status(START + 30)["told"] == ["budget_80", "budget_100", "balance_low"]


def test_a_top_up_makes_a_later_low_balance_news_again(tmp_path):
    watch = bw.BudgetWatch(str(tmp_path))
    low = dict(FAST, budget=None, balance=1.0, spend_per_hour=1.0, balance_read_at=START)
    watch.set_facts(low, START)
    assert kinds(watch.check(START)) == ["balance_low"]
    watch.set_facts(dict(low, balance_read_at=START + 60), START + 60)  # still low: told already
    assert watch.check(START + 61) == []
    watch.set_facts(dict(low, balance=50.0, balance_read_at=START + 120), START + 120)  # topped up
    assert watch.check(START + 121) == []
    # 50 at 1/h: under 2 h left after 48 h
    assert kinds(watch.check(START + 120 + 48.5 * 3600)) == ["balance_low"]


def test_bad_facts_are_refused():
    with pytest.raises(ValueError, match="granularity"):
        bw.facts_of(dict(FAST, granularity="fortnight"))
    assert check_request(dict(FAST, type="notify_billing")) is None
    for bad in ({"rate_per_hour": -1.0}, {"rate_per_hour": float("inf")}, {"start": "yesterday"},
                {"budget": True}, {"currency": "X" * 40}, {"balance": "lots"},
                {"balance_low_hours": -2}):
        assert check_request(dict(FAST, type="notify_billing", **bad)), bad
    assert check_request({"type": "notify_config", "events": ["crashed", 5]})
    assert check_request({"type": "notify_config", "events": ["crashed"]}) is None


# ---- the laptop's meter and the box tell the same levels at the same second ----------------

@pytest.mark.parametrize("rate, granularity, budget, offset", [
    (360.0, "second", 1.0, 0),
    (7.3, "second", 0.05, 0),
    (100.0, "minute", 3.0, 0),
    (10.0, "hour", 12.0, 0),
    (2.58, "hour", 5.0, 0),
    (2.58, "hour", 2.0, 0),  # the first hour's charge crosses both
    (360.0, "second", 1.0, 20),  # the watch starts after both were charged
    (1.0, "second", None, 0),
])
def test_box_and_laptop_agree_on_the_budget_moments(rate, granularity, budget, offset):
    unit = {"second": 1, "minute": 60, "hour": 3600}[granularity]
    t = [START + offset]
    clock = BillingClock("box", HostConfig(rate=rate, granularity=granularity, budget_session=budget),
                         None, clock=lambda: t[0])
    clock.start = START
    f = bw.facts_of({"rate_per_hour": rate, "granularity": granularity, "start": START,
                     "budget": budget, "currency": "CNY"})
    told, box, laptop = {}, [], []
    step = max(1, unit // 4)
    while t[0] <= START + offset + 3 * unit + 120:
        for kind, level, _b in clock.new_budget_warnings(t[0]):
            if kind == "session" and level >= 0.8:
                laptop.append((t[0], {0.8: "budget_80", 1.0: "budget_100"}[level]))
        events, told = bw.decide(f, t[0], told)
        box += [(t[0], k) for k in kinds(events)]
        t[0] += step
    assert box == laptop
    if budget:
        assert box  # the table's cases all reach their budget


# ---- the [notify] events filter, honoured on the box ---------------------------------------

class Sent:
    ok, retryable, reason = True, False, "HTTP 200"


def test_a_kind_left_out_of_the_events_filter_is_never_sent(tmp_path):
    sent = []

    def send(url, title, body, kind):
        sent.append(title)
        return Sent()
    n = Notifier(str(tmp_path), send=send, clock=lambda: 1e9)
    n.configure({"channels": ["json://127.0.0.1:9/hook"], "box": "b",
                 "events": ["budget_80", "budget_100"]})
    n.emit("balance_low", {"balance": "$1.00"}, run="1@1")
    n.emit("budget_80", {"cost": "$8.00", "budget": "$10.00"}, run="1@10")
    n.step()
    assert sent == ["b has used 80% of its budget"]
    # the filter is kept with the channels: a restarted daemon honours it too
    n2 = Notifier(str(tmp_path), send=send, clock=lambda: 1e9)
    n2.emit("crashed", {"job": "j", "cause": "traceback", "evidence": ""}, job="pid:1", run="1")
    n2.step()
    assert sent == ["b has used 80% of its budget"]
    # no filter in the config (an older laptop, or none set): every kind
    n2.configure({"channels": ["json://127.0.0.1:9/hook"], "box": "b"})
    n2.emit("crashed", {"job": "j", "cause": "traceback", "evidence": ""}, job="pid:2", run="2")
    n2.step()
    assert len(sent) == 2 and "crashed" in sent[1]


def test_spent_is_the_session_or_the_days_budget():
    assert not bw.spent(facts(), START + 9)     # $0.90 of $1
    assert bw.spent(facts(), START + 10)        # $1.00 of $1
    assert not bw.spent(None, START + 10)
    assert bw.spent(facts(budget=None, budget_day=0.5, day_start=START - 10, day_other_cost=0.2), START + 3)


def job(eta, state="running", **kw):
    return dict({"id": "tmux:%1", "pid": 42, "since": START, "state": state, "name": "train",
                 "progress": {"eta_seconds": eta}}, **kw)


def test_a_job_that_will_not_finish_within_the_money_left_is_said_once_per_run():
    short = bw.short_of_money(facts(budget=10.0), START + 60, [job(120)])  # $6 spent, $12 more
    assert [(j, r) for j, r, _ in short] == [("tmux:%1", "42@%d" % START)]
    assert "$12.00 more to finish; $4.00 of the budget is left" in short[0][2]
    assert bw.short_of_money(facts(budget=100.0), START + 60, [job(120)]) == []
    assert bw.short_of_money(facts(budget=10.0), START + 60, [job(120, state="hung"), job(None)]) == []


def test_a_balance_that_runs_out_before_the_eta_is_said():
    f = facts(budget=None, balance=3.0, balance_read_at=START, spend_per_hour=360.0)
    short = bw.short_of_money(f, START, [job(600)])  # $3 at $360/h: 30 s; the job needs 10 min
    assert short and "runs out in 0 min; the job needs 10 min" in short[0][2]
