"""The budget line and warnings follow the billing granularity (issue 23): per started hour the
money is committed when the hour starts, so "runs out" is that hour's start, it does not drift
while the hour runs, and 80 % / 100 % arrive each at its own charged moment, never together."""

import time

import pytest

from tui.core.billing import rates as billing
from tui.core.billing.clock import BillingClock
from tui.core.config import HostConfig

H = 3600.0


@pytest.mark.parametrize("amount,rate,gran,expected", [
    (25.0, 10.0, "hour", 2 * H),          # hour 3 (from 2 h) takes 20 -> 30: crosses 25
    (30.0, 10.0, "hour", 2 * H),          # exactly 30 is reached by the 3rd hour too
    (30.0001, 10.0, "hour", 3 * H),
    (10.0, 10.0, "hour", 0.0),            # the first hour's charge, made at the start
    (25.0, 10.0, "minute", 149 * 60.0),   # 150 minutes, the 150th starts at 149 min
    (25.0, 10.0, "second", 8999.0),
    (0.0, 10.0, "hour", 0.0),
])
def test_charged_at(amount, rate, gran, expected):
    assert billing.charged_at(1000.0, amount, rate, gran) == pytest.approx(1000.0 + expected)


def test_charged_at_without_a_rate_or_start():
    assert billing.charged_at(None, 5, 10) is None
    assert billing.charged_at(0.0, 5, None) is None
    assert billing.charged_at(0.0, 5, 0) is None


def test_runs_out_does_not_drift_within_the_hour():
    start = 0.0
    seen = {billing.budget_runs_out_at(start, now, 11.96, 50.0, "hour")
            for now in range(60, 3 * 3600, 60)}
    assert seen == {4 * H}  # 5 hours cost 59.80: the 5th hour, from 4 h, crosses 50
    assert billing.budget_runs_out_at(start, 4 * H + 1, 11.96, 50.0, "hour") is None  # made
    assert billing.budget_runs_out_at(start, 0, 11.96, None, "hour") is None


@pytest.mark.parametrize("now,already,due,show", [
    (1.0, (), [0.5], 0.5),                           # the first hour is charged at once: 60 %
    (H - 1, (0.5,), [], None),
    (H + 1, (0.5,), [0.8, 1.0], 1.0),                # hour 2 -> 60: 80 % and 100 % in one charge
    (H + 1, (), [0.5, 0.8, 1.0], 1.0),               # an app started late: one warning
    (H + 1, (0.5, 0.8, 1.0), [], None),
])
def test_levels_due_in_one_charge_are_one_warning(now, already, due, show):
    assert billing.budget_levels_due(0.0, now, 30.0, 50.0, "hour", already) == (due, show)


def test_clock_warns_once_per_charge(tmp_path):
    now = [0.0]
    cfg = HostConfig(rate=11.96, granularity="hour", budget_session=50.0)
    clock = BillingClock("h", cfg, None, clock=lambda: now[0])
    clock.start = 0.0
    got = []
    for t in range(0, int(5 * H), 60):
        now[0] = float(t)
        got += [(t, lvl) for _k, lvl, _b in clock.new_budget_warnings()]
    # 11.96/h, budget 50: 50 % is charged when hour 3 starts, 80 % hour 4, 100 % hour 5
    assert got == [(2 * 3600, 0.5), (3 * 3600, 0.8), (4 * 3600, 1.0)]


@pytest.mark.parametrize("gran,needle", [("second", ", runs out at 12:34"),
                                         ("hour", ", crossed by the hour starting at 12:34")])
def test_runs_out_reads_as_a_clock_time(monkeypatch, gran, needle):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    try:
        when = 12 * H + 34 * 60
        assert billing.runs_out_phrase(when, when - 60, gran) == needle
        assert billing.runs_out_phrase(when + 86400, when, gran).endswith("01-02 12:34")
    finally:
        monkeypatch.undo()
        time.tzset()


def test_clock_one_warning_when_one_charge_crosses_two_levels():
    now = [0.0]
    cfg = HostConfig(rate=30.0, granularity="hour", budget_session=50.0)
    clock = BillingClock("h", cfg, None, clock=lambda: now[0])
    clock.start = 0.0
    got = []
    for t in range(0, int(3 * H), 60):
        now[0] = float(t)
        got += [(t, lvl) for _k, lvl, _b in clock.new_budget_warnings()]
    assert got == [(0, 0.5), (3600, 1.0)]  # hour 2 takes it from 60 % to 120 %: one toast
    assert clock.figures(1800.0).budget_runs_out_at == 3600.0
