"""The box tells the budget with the laptop closed (issue 21), end to end: real sshd, the
real daemon. The laptop's own billing meter (BillingClock, at a high rate and a small
budget) builds the facts, pushes them with the notify config, and goes away; the daemon,
from its own clock, sends "80 % of the budget" then "the whole budget" to a loopback
webhook, each once, also after a daemon restart and a reconnect; a kind the user's
`[notify] events` leaves out (balance low) never arrives; no secret in the log or the
box's billing file."""

import asyncio
import os
import re
import stat
import time

import pytest

from remote_probe import wire
from tests.support.webhook import TOKEN, USER_PASS
from tui.core.billing.clock import BillingClock
from tui.core.config import HostConfig
from tui.core.notify.wire import billing_params
from tui.remote import notify_push
from tui.remote import session as session_mod
from tui.remote import ssh

pytestmark = pytest.mark.timeout(180)

SCENARIO = "idle"
RATE = 360.0  # per hour: 0.10 a second, so a 1.00 budget is spent in 10 s (80 % 7 s in)


async def session(box):
    s = session_mod.RemoteSession(ssh.Target.parse("testbox", ssh_config=box.ssh_config),
                                  simulate=SCENARIO, remote_dir=box.remote_dir)
    await s.open()
    return s


async def push_billing(s, params):
    """What the app's tick does (CockpitApp.warn_budget), then wait for the box's answer."""
    s.billing_reply = None
    assert notify_push.share_billing(s, params)
    for _ in range(100):
        if s.billing_reply is not None:
            return s.billing_reply
        await asyncio.sleep(0.05)
    raise AssertionError("the box never answered notify_billing")


def titles(receiver):
    return [m["title"] for m in receiver.messages()]


async def test_budget_80_then_100_once_each_with_the_app_closed(sshbox, receiver):
    clock = BillingClock("testbox", HostConfig(rate=RATE, currency="USD", budget_session=1.0), None)
    s = await session(sshbox)
    clock.start = time.time()
    # the provider's answer: the balance covers minutes, so balance_low is due at once...
    clock.set_provider_price({"provider": "runpod", "ok": True, "rate_per_hour": RATE,
                              "currency": "USD", "balance": 2.0, "spend_per_hour": RATE,
                              "read_at": clock.start, "source": "RunPod API"})
    # ...but the user's [notify] events leave it out
    await s.request(wire.NOTIFY_CONFIG, channels=[receiver.url], box="testbox", enabled=True,
                    quiet=None, templates={}, events=["crashed", "budget_80", "budget_100"])
    params = billing_params(clock)
    reply = await push_billing(s, params)
    assert reply["told"] == [] and reply["balance_low"] is True and reply["budget"] == 1.0
    await s.close()  # the laptop goes away

    end = clock.start + 40
    while time.time() < end and len(receiver.hits) < 2:
        await asyncio.sleep(0.1)
    assert titles(receiver) == ["testbox has used 80% of its budget",
                                "testbox has used its whole budget"], receiver.messages()
    (t80, *_), (t100, *_) = receiver.hits
    # each when its charge is made (7 s and 9 s in, per second), give or take a tick and a send
    print("budget_80 after %.1f s, budget_100 after %.1f s" % (t80 - clock.start, t100 - clock.start))
    assert 6.5 <= t80 - clock.start <= 7 + 8
    assert 8.5 <= t100 - clock.start <= 9 + 8 and t100 > t80
    first, second = receiver.messages()
    # the spend when it is sent: $0.80 on time, more on a loaded machine, never the 100 % level
    spent = re.search(r"\$(\d+\.\d\d) of \$1\.00", first["message"])
    assert first["type"] == "warning" and spent and 0.80 <= float(spent.group(1)) < 1.00, first
    assert second["type"] == "failure" and "of $1.00" in second["message"]
    assert receiver.hits[0][1] == "/hook/" + TOKEN

    # the daemon restarts (a redeploy); the laptop comes back and pushes the same facts:
    # what was told stays told
    s = await session(sshbox)
    await s.request(wire.SHUTDOWN)
    await s.close()
    s = await session(sshbox)
    reply = await push_billing(s, params)
    assert reply["told"] == ["budget_80", "budget_100", "balance_low"]
    await s.close()
    await asyncio.sleep(6)
    assert len(receiver.hits) == 2, receiver.messages()

    log = open(os.path.join(sshbox.remote_dir, "daemon.log")).read()
    assert "notification balance_low: not queued" in log  # decided, and held back by the filter
    assert not any("balance" in t.lower() for t in titles(receiver))
    stored = os.path.join(sshbox.remote_dir, "notify", "billing.json")
    assert stat.S_IMODE(os.stat(stored).st_mode) == 0o600
    for text in (log, open(stored).read()):
        assert TOKEN not in text and USER_PASS not in text
