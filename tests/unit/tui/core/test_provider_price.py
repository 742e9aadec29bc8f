"""The provider's price in the billing clock, the balance clock, the daemon's price cache and the
release-action choice (issue 22): plain functions, table-driven."""

import datetime
import time

import pytest

from remote_probe import wire
from remote_probe.provider import api as provider_api
from tui.core.billing import provider_price
from tui.core.billing.clock import BillingClock
from tui.core.config import HostConfig
from tui.core.providers import resolve
from tui.core.checks.release_actions import action_command_text, needs_choice, release_choices
from tui.ui.widgets.billing_panel import autostop_text, clock_text, render_billing

RUNPOD_OK = {"provider": "runpod", "ok": True, "rate_per_hour": 0.69, "currency": "USD", "balance": 12.0,
             "spend_per_hour": 2.0, "source": "RunPod API", "reason": None, "fallback": None}
REFUSED = {"provider": "runpod", "ok": False, "fallback": "typed rate", "reason": "the key was refused (HTTP 401)"}
NO_KEY = {"provider": None, "ok": False, "fallback": "typed rate", "reason": "no provider API key on this box"}


@pytest.mark.parametrize("api, typed, rate, currency, source, label, notice", [
    (RUNPOD_OK, None, 0.69, "USD", "api", "price from RunPod API", None),
    (RUNPOD_OK, 9.0, 0.69, "USD", "api", "price from RunPod API", None),  # the provider's own figure wins
    (REFUSED, 9.0, 9.0, "CNY", "typed", "typed rate", "refused (HTTP 401)"),
    (REFUSED, None, None, "CNY", "none", "no rate", "refused (HTTP 401)"),
    (NO_KEY, 9.0, 9.0, "CNY", "typed", "typed rate", None),  # nothing to say on a box without a provider
    (None, None, None, "CNY", "none", "no rate", None),
    (dict(RUNPOD_OK, rate_per_hour=None), 3.0, 3.0, "CNY", "typed", "typed rate", None),  # balance only
])
def test_price_in_use(api, typed, rate, currency, source, label, notice):
    p = provider_price.price_in_use(api, typed, "CNY")
    assert (p.rate, p.currency, p.source, p.label) == (rate, currency, source, label)
    assert (notice in p.notice) if notice else p.notice is None


def epoch(h, m=0):
    return datetime.datetime(2026, 12, 1, h, m).timestamp()


@pytest.mark.parametrize("prov, api, hhmm", [
    ("runpod", dict(RUNPOD_OK, read_at=epoch(12)), "18:00"),  # 12.0 at 2.0/h from 12:00
    ("runpod", dict(RUNPOD_OK, read_at=epoch(12), spend_per_hour=None), "05:23"),  # this pod's price: tomorrow
    ("runpod", dict(RUNPOD_OK, read_at=epoch(12), balance=None), None),
    ("runpod", REFUSED, None),
    ("gcp", dict(RUNPOD_OK, read_at=epoch(12)), None),  # a provider that does not stop at zero
])
def test_balance_runs_out_at_a_clock_time(prov, api, hhmm):
    out = provider_price.runs_out(api, resolve({}, HostConfig(provider=prov)), epoch(12, 5))
    if hhmm is None:
        assert out is None
        return
    assert out["hhmm"] == hhmm
    text = provider_price.runs_out_text(out, lambda v: "$%.2f" % v)
    assert text.startswith("balance $12.00 runs out at ") and hhmm in text and "RunPod stops" in text
    assert (out["date"] is None) == (hhmm == "18:00")  # another day: the date is said


def clock(cfg, now):
    c = BillingClock("h", cfg, None, clock=lambda: now)
    c.on_inventory({"host": {"instance_start": now - 3600, "provider": {"env": {"RUNPOD_POD_ID": "p"}}},
                    "gpus": []})
    return c


def test_the_billing_clock_uses_the_provider_price_with_no_rate_typed():
    now = epoch(12)
    c = clock(HostConfig(), now)
    assert c.figures().rate is None and c.figures().rate_label == "no rate"
    c.set_provider_price(dict(RUNPOD_OK, read_at=now))
    f = c.figures()
    assert f.rate == 0.69 and f.currency == "USD" and f.cost == pytest.approx(0.69)
    assert f.rate_source == "api" and f.rate_label == "price from RunPod API"
    assert f.balance_runs_out["hhmm"] == "18:00"
    assert c.take_price_notice() is None
    assert "(price from RunPod API)" in clock_text(f).plain
    panel = render_billing(f, None, now).plain
    assert "price from RunPod API" in panel and "balance $12.00 runs out at 18:00" in panel
    assert "after stop: the volume disk at /workspace keeps billing" in panel


def test_a_refused_key_falls_back_to_the_typed_rate_and_says_so_once():
    c = clock(HostConfig(rate=2.0, currency="CNY"), epoch(12))
    c.set_provider_price(REFUSED)
    f = c.figures()
    assert f.rate == 2.0 and f.currency == "CNY" and f.rate_label == "typed rate"
    assert "refused (HTTP 401)): using the typed rate" in c.take_price_notice()
    assert c.take_price_notice() is None
    c.set_provider_price(REFUSED)  # asked again five minutes later: not said again
    assert c.take_price_notice() is None
    assert "typed rate" in render_billing(c.figures(), None, epoch(12)).plain


def test_the_price_cache_reads_once_for_a_few_minutes():
    calls, now = [], [1000.0]

    def reader():
        calls.append(now[0])
        return dict(RUNPOD_OK) if len(calls) != 3 else dict(REFUSED)
    cache = provider_api.PriceCache(reader, clock=lambda: now[0], ttl=300, failed_ttl=60)
    first = cache.get()
    assert not first["cached"] and first["read_at"] == 1000.0
    now[0] += 299
    assert cache.get()["cached"] and len(calls) == 1
    assert not cache.get(fresh=True)["cached"] and len(calls) == 2
    now[0] += 301
    assert not cache.get()["ok"] and len(calls) == 3  # a failure is kept a minute only
    now[0] += 61
    assert cache.get()["ok"] and len(calls) == 4


def test_the_price_reply_fits_the_wire_schema():
    report = wire.Report()
    msg = {"type": wire.REPLY, "id": 1, "price": dict(RUNPOD_OK, read_at=time.time(), cached=True)}
    wire.clean(msg, report)
    assert report.count == 0
    assert wire.check_request({"type": wire.PROVIDER_PRICE, "fresh": True}) is None
    assert wire.check_request({"type": wire.PROVIDER_PRICE, "fresh": "yes"})


@pytest.mark.parametrize("prov, keys, chosen, warns", [
    ("runpod", ["stop", "terminate"], "stop", {"terminate": "network volume"}),
    ("vast", ["stop", "destroy"], "stop", {"destroy": "every file"}),
    ("azure", ["deallocate", "os-shutdown"], "deallocate", {"os-shutdown": "keeps billing"}),
    ("autodl", ["shutdown"], "shutdown", {}),
])
def test_release_choices(prov, keys, chosen, warns):
    choices = release_choices(resolve({}, HostConfig(provider=prov)))
    assert [c.key for c in choices] == keys and [c.key for c in choices if c.chosen] == [chosen]
    for c in choices:
        assert any(line.startswith("keeps: ") for line in c.lines)
        assert any(line.startswith("wipes: ") for line in c.lines)
        if c.key in warns:
            assert warns[c.key] in c.warning
    by_key = {c.key: c for c in choices}
    if prov == "azure":
        assert not by_key["deallocate"].runs_on_box and by_key["os-shutdown"].runs_on_box


@pytest.mark.parametrize("prov, cfg, here, asks", [
    ("runpod", {}, False, True),
    ("runpod", {}, True, False),
    ("runpod", {"release_action": "terminate"}, False, False),
    ("runpod", {"release_command": "my-stop"}, False, False),
    ("autodl", {}, False, False),  # one action: nothing to ask
])
def test_needs_choice(prov, cfg, here, asks):
    host_cfg = HostConfig(provider=prov, **cfg)
    assert needs_choice(resolve({}, host_cfg), host_cfg, here) is asks


def test_the_command_text_names_the_action():
    p = resolve({}, HostConfig(provider="runpod"), action="terminate")
    assert action_command_text(p).endswith("(RunPod terminate)") and "pod delete" in action_command_text(p)
    custom = resolve({}, HostConfig(provider="runpod", release_command="my-stop"))
    assert action_command_text(custom) == "my-stop"


def test_the_autostop_line_names_the_action():
    armed = {"armed": {"command": "x", "idle_seconds": 600, "action": "terminate"}, "idle_for": 5}
    assert "autostop armed (terminate)" in autostop_text(armed).plain
    assert "autostop armed: " in autostop_text({"armed": {"command": "x", "idle_seconds": 60}}).plain
