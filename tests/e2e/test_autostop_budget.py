"""Autostop by money (issue 36), end to end with the app closed: real sshd, the real daemon.
Armed with at_budget (opt-in per host), the box runs its release command once the session's
budget is spent at the laptop's rate, busy GPU or not; unarmed for it, a spent budget
releases nothing."""

import asyncio
import shlex
import time

import pytest

from remote_probe import wire
from tests.e2e.test_watch import session

pytestmark = pytest.mark.timeout(180)


async def test_a_spent_budget_releases_the_box_with_the_app_closed(sshbox, tmp_path):
    marker = tmp_path / "released"
    s = await session(sshbox, "a100x2")  # both GPUs busy: idle would never fire
    await s.request(wire.AUTOSTOP_ARM, command="touch %s" % shlex.quote(str(marker)), grace=2,
                    at_budget=True, verify_s=600)
    # $3.60/h ($0.001/s) for the last 992 s: $0.992 of a $1.00 budget, spent 8 s from now
    await s.request(wire.NOTIFY_BILLING, rate_per_hour=3.6, currency="USD", granularity="second",
                    start=time.time() - 992, budget=1.0)
    await s.close()  # the laptop goes away
    spent_at = time.time() + 8
    end = time.time() + 60
    while not marker.exists() and time.time() < end:
        await asyncio.sleep(0.2)
    assert marker.exists(), "the budget was spent and nothing was released"
    print("budget spent -> release command %.1f s (grace 2 s)" % (marker.stat().st_mtime - spent_at))
    assert marker.stat().st_mtime >= spent_at - 1.5  # not before the money was spent
    s = await session(sshbox, "a100x2")
    try:
        events = (await s.request(wire.AUTOSTOP_STATUS))["events"]
    finally:
        await s.close()
    fired = [e for e in events if e.get("event") == "fired"]
    assert len(fired) == 1 and fired[0]["reason"] == "budget"


async def test_a_spent_budget_releases_nothing_unless_armed_for_it(sshbox, tmp_path):
    marker = tmp_path / "released"
    s = await session(sshbox, "a100x2")
    await s.request(wire.AUTOSTOP_ARM, command="touch %s" % shlex.quote(str(marker)), grace=1,
                    idle_seconds=3600)
    await s.request(wire.NOTIFY_BILLING, rate_per_hour=3.6, currency="USD", granularity="second",
                    start=time.time() - 3600, budget=1.0)
    await s.close()
    await asyncio.sleep(8)
    assert not marker.exists()
