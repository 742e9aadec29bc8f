"""The billing meter: instance start, ledger continuity, per-day budget across sessions."""

import datetime

from tui.core.billing.clock import BillingClock
from tui.core.config import HostConfig
from tui.core.billing.ledger import Ledger


def inventory(boot="boot-1", start=None):
    return {"gpus": [{"index": 0, "name": "NVIDIA A100-SXM4-80GB"}],
            "host": {"boot_id": boot, "instance_start": start, "provider": {"paths": ["/root/autodl-tmp"]}}}


def test_clock_starts_at_the_instance_and_day_budget_counts_other_sessions(tmp_path):
    noon = datetime.datetime(2026, 11, 30, 12, 0).timestamp()
    ledger = Ledger(str(tmp_path / "l.db"))
    other = ledger.open_session("other-box", "b0", noon - 7200, now=noon - 3600)
    ledger.update(other["id"], cost=30.0, last_contact=noon - 60)
    now = [noon]
    clock = BillingClock("box", HostConfig(rate=10.0, budget_day=40.0), ledger, clock=lambda: now[0])
    clock.on_inventory(inventory(start=noon - 3600))
    f = clock.figures()
    assert f.start == noon - 3600 and round(f.cost, 2) == 10.0
    assert f.provider == "AutoDL"
    assert round(f.day_cost, 2) == 40.0  # 30 from the other box + 10 from this one
    # crossed at one moment: one warning, the highest (issue 23)
    assert clock.new_budget_warnings() == [("day", 1.0, 40.0)]
    assert clock.new_budget_warnings() == []  # each level once


def test_restart_continues_the_same_session_and_idle_count(tmp_path):
    ledger = Ledger(str(tmp_path / "l.db"))
    t = [1000.0]
    first = BillingClock("box", HostConfig(rate=36.0), ledger, clock=lambda: t[0])
    first.on_inventory(inventory(start=500.0))
    for i in range(11):
        first.on_sample({"t": 1000.0 + i, "seq": i + 1, "gpus": [[0] + [None] * 10], "procs": []})
    first.persist(force=True)
    assert first.figures().idle_seconds == 10
    second = BillingClock("box", HostConfig(), ledger, clock=lambda: t[0])  # no rate in config now
    second.on_inventory(inventory(start=500.0))
    assert second.session["id"] == first.session["id"]
    assert second.figures().rate == 36.0  # remembered in the ledger
    assert second.figures().idle_seconds == 10
    reboot = BillingClock("box", HostConfig(rate=36.0), ledger, clock=lambda: t[0])
    reboot.on_inventory(inventory(boot="boot-2", start=900.0))
    assert reboot.session["id"] != first.session["id"]
