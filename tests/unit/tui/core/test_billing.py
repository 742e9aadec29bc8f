"""Billing math, table by table."""

import pytest

from tui.core.billing import rates as billing
from tui.core.billing.rates import IdleMeter


@pytest.mark.parametrize("elapsed, granularity, billed", [
    (0, "second", 0), (-5, "hour", 0), (1.2, "second", 2), (59, "minute", 60), (60, "minute", 60),
    (61, "minute", 120), (1, "hour", 3600), (3600, "hour", 3600), (3601, "hour", 7200),
    (3600.0000001, "hour", 3600), (3 * 3600 + 1, "hour", 4 * 3600),
])
def test_billable_seconds(elapsed, granularity, billed):
    assert billing.billable_seconds(elapsed, granularity) == billed


@pytest.mark.parametrize("elapsed, rate, granularity, cost", [
    (3600, 2.58, "second", 2.58), (1800, 2.58, "second", 1.29), (61 * 60, 3.0, "hour", 6.0),
    (90, 60.0, "minute", 2.0), (10, None, "second", None),
])
def test_cost_for(elapsed, rate, granularity, cost):
    got = billing.cost_for(elapsed, rate, granularity)
    assert got == pytest.approx(cost) if cost is not None else got is None


@pytest.mark.parametrize("amount, currency, text", [
    (12.4, "CNY", "¥12.40"), (3.2, "usd", "$3.20"), (0.049, "EUR", "€0.05"), (1234.5, "JPY", "¥1,234"),
    (1234567.891, "USD", "$1,234,567.89"), (12.4, "XYZ", "12.40 XYZ"), (-2, "GBP", "-£2.00"),
    (-0.001, "USD", "$0.00"), (None, "CNY", "—"),
])
def test_format_money(amount, currency, text):
    assert billing.format_money(amount, currency) == text


@pytest.mark.parametrize("utils, procs, idle", [
    ([0, 1], 0, True), ([0, 30], 0, False), ([0, 0], 1, False), ([], 0, False),
    ([None, 0], 0, False), ([4.9], 0, True), ([5], 0, False),
])
def test_gpus_idle(utils, procs, idle):
    assert billing.gpus_idle(utils, procs, threshold=5) is idle


def feed(meter, points):
    for t, idle in points:
        meter.add(t, idle)
    return meter.idle_seconds


@pytest.mark.parametrize("points, expected", [
    ([(0, True), (1, True), (2, True)], 2),  # idle intervals
    ([(0, True), (1, False), (2, True), (3, True)], 1),  # only idle-idle intervals count
    ([(0, True), (1, True), (100, True), (101, True)], 2),  # a 99 s gap is unknown, not idle
    ([(0, True), (1, True), (1, True), (0.5, True), (2, True)], 2),  # duplicates/backfill overlap
])
def test_idle_meter(points, expected):
    assert feed(IdleMeter(max_gap=10), points) == expected


def test_idle_meter_resumes_from_the_ledger_without_double_counting():
    first = IdleMeter()
    feed(first, [(t, True) for t in range(0, 11)])
    assert first.idle_seconds == 10
    # The app restarts; the daemon's backfill replays the same samples and then new ones.
    second = IdleMeter(first.idle_seconds, first.last_t)
    feed(second, [(t, True) for t in range(0, 16)])
    # 10..15 is new; the interval 10->11 straddles the restart and its start state is not
    # known, so it is not counted (idle cost never overstates).
    assert second.idle_seconds == 14


def test_idle_in_the_last_two_hours():
    m = IdleMeter()
    feed(m, [(t, True) for t in range(0, 7200 * 2, 5)])
    assert m.idle_since(14395 - 7200) == pytest.approx(7200, abs=5)


@pytest.mark.parametrize("cost, budget, already, crossed", [
    (10, 100, (), []), (50, 100, (), [0.5]), (85, 100, (0.5,), [0.8]), (120, 100, (), [0.5, 0.8, 1.0]),
    (120, None, (), []),
])
def test_budget_levels(cost, budget, already, crossed):
    assert billing.budget_levels_crossed(cost, budget, already) == crossed


def test_budget_projection():
    assert billing.seconds_until_budget(40, 10, 50) == pytest.approx(3600)
    assert billing.seconds_until_budget(60, 10, 50) == 0
    assert billing.seconds_until_budget(10, None, 50) is None
    assert billing.projected_cost(0, 7200, 3.0, "hour") == 6.0
    assert billing.projected_cost(0, 7201, 3.0, "hour") == 9.0


def test_storage_and_session_start():
    assert billing.storage_cost_per_day(200, 0.3) == pytest.approx(2.0)
    assert billing.storage_cost_per_day(None, 0.3) is None
    assert billing.session_start(None, 1000.0, 2000.0) == 1000.0  # instance start, not connect
    assert billing.session_start(500.0, 1000.0, 2000.0) == 500.0  # the user's override
    assert billing.session_start(None, None, 2000.0) == 2000.0


def test_next_clock_time_is_the_next_occurrence():
    import datetime
    now = datetime.datetime(2026, 11, 30, 23, 30).timestamp()
    assert billing.next_clock_time("07:00", now) == datetime.datetime(2026, 12, 1, 7, 0).timestamp()
    assert billing.next_clock_time("23:45", now) == datetime.datetime(2026, 11, 30, 23, 45).timestamp()
    with pytest.raises(ValueError):
        billing.next_clock_time("25:00", now)
    with pytest.raises(ValueError):
        billing.next_clock_time("soon", now)


def test_cost_today_counts_only_since_midnight():
    import datetime
    now = datetime.datetime(2026, 11, 30, 2, 0).timestamp()
    start = datetime.datetime(2026, 11, 29, 20, 0).timestamp()
    assert billing.cost_today(start, now, 10.0, other_sessions_today=1.5) == pytest.approx(21.5)
