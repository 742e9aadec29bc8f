"""What the laptop tells the box's daemon so it can warn with the laptop closed (issue 21):
the billing facts (the price in use, the session's start and budget, the provider balance),
sent again whenever they change or the connection is new; the `[notify] events` filter in
notify_config. (Sending them: tests/unit/tui/remote/test_notify_push.py.)"""

from remote_probe.watch import budget_watch
from remote_probe.wire import check_request
from tui.core.billing import rates as billing
from tui.core.billing.clock import BillingClock
from tui.core.config import HostConfig
from tui.core.notify.wire import billing_params, notify_config

RUNPOD_OK = {"provider": "runpod", "ok": True, "rate_per_hour": 0.69, "currency": "USD", "balance": 12.0,
             "spend_per_hour": 2.0, "source": "RunPod API", "read_at": 1_700_000_000.0}


def clock(**cfg):
    c = BillingClock("box", HostConfig(**cfg), None, clock=lambda: 1_700_000_100.0)
    return c


def test_nothing_to_send_before_the_session_start_is_known():
    assert billing_params(clock(rate=2.0)) is None


def test_typed_rate_and_budget():
    c = clock(rate=2.58, currency="CNY", granularity="hour", budget_session=50.0)
    c.start = 1_700_000_000.0
    p = billing_params(c)
    assert p == {"rate_per_hour": 2.58, "currency": "CNY", "granularity": "hour",
                 "start": 1_700_000_000.0, "budget": 50.0, "balance": None,
                 "balance_read_at": None, "spend_per_hour": None, "budget_day": None,
                 "day_start": billing.local_midnight(1_700_000_100.0), "day_other_cost": 0.0,
                 "balance_low_hours": 2.0}
    assert check_request(dict(p, type="notify_billing")) is None  # the box takes it


class Ledger:
    def __init__(self, cost):
        self.cost, self.asked = cost, []

    def cost_since(self, t0, exclude_id=None):
        self.asked.append((t0, exclude_id))
        return self.cost


def test_the_daily_budget_travels_with_the_laptops_midnight_and_other_sessions():
    c = clock(rate=2.0, budget_day=30.0, balance_low_hours=5)
    c.start, c.ledger, c.session = 1_700_000_000.0, Ledger(7.123), {"id": 4}
    p = billing_params(c)
    midnight = billing.local_midnight(1_700_000_100.0)
    assert (p["budget_day"], p["day_start"], p["day_other_cost"]) == (30.0, midnight, 7.12)
    assert p["balance_low_hours"] == 5 and c.ledger.asked == [(midnight, 4)]
    assert check_request(dict(p, type="notify_billing")) is None
    # the box counts today's spend as the laptop's figures do (to the cent sent)
    assert abs(budget_watch.day_cost(p, 1_700_000_100.0) - c.figures().day_cost) < 0.006


def test_the_providers_price_and_balance_win_when_the_box_read_them():
    c = clock(rate=9.0, currency="CNY", budget_session=5.0)
    c.start = 1_700_000_000.0
    c.set_provider_price(RUNPOD_OK)
    p = billing_params(c)
    assert (p["rate_per_hour"], p["currency"]) == (0.69, "USD")
    assert (p["balance"], p["balance_read_at"], p["spend_per_hour"]) == (12.0, 1_700_000_000.0, 2.0)
    # the provider could not be asked: the typed rate, no balance
    c.set_provider_price({"provider": "runpod", "ok": False, "reason": "HTTP 401", "balance": 3.0})
    p = billing_params(c)
    assert p["rate_per_hour"] == 9.0 and p["balance"] is None


def test_the_events_filter_travels_with_notify_config():
    data = {"notify": {"urls": ["ntfy://ntfy.sh/topic_abc"], "events": ["crashed", "budget_100"]}}
    params, _ = notify_config(data, "box")
    assert params["events"] == ["crashed", "budget_100"]
    assert check_request(dict(params, type="notify_config")) is None
    params, _ = notify_config({"notify": {"urls": ["ntfy://ntfy.sh/topic_abc"]}}, "box")
    assert params["events"] is None  # every kind
