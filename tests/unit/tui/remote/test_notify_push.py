"""The box's billing facts are sent when the daemon lacks them: once per change, again on
every new connection, not again to a probe that refused them, again after a timeout."""

import asyncio

from tui.remote import notify_push
from tui.remote.probe_client import ProbeError


class FakeClient:
    def __init__(self, fail=None):
        self.sent, self.fail = [], fail

    async def request(self, kind, **params):
        self.sent.append((kind, params))
        if self.fail:
            raise self.fail
        return {"cost": 1.0}


class FakeSession:
    def __init__(self, client):
        self.client, self.connects = client, 1


def test_billing_facts_are_sent_once_per_change_and_per_connection():
    async def run():
        s = FakeSession(FakeClient())
        a = {"rate_per_hour": 2.0, "start": 1.0}
        sends = [notify_push.share_billing(s, a) for _ in range(3)]
        await asyncio.sleep(0)
        assert sends == [True, False, False] and len(s.client.sent) == 1
        assert s.client.sent[0] == ("notify_billing", a)
        assert notify_push.share_billing(s, dict(a, rate_per_hour=3.0))  # a new rate
        s.connects += 1  # a reconnect (maybe a new daemon): again
        assert notify_push.share_billing(s, dict(a, rate_per_hour=3.0))
        assert not notify_push.share_billing(s, None)
        await asyncio.sleep(0)
        assert len(s.client.sent) == 3 and s.billing_reply == {"cost": 1.0}
        # an older probe refuses the request: not asked again on this connection
        old = FakeSession(FakeClient(ProbeError("unknown request type 'notify_billing'")))
        notify_push.share_billing(old, a)
        await asyncio.sleep(0)
        assert not notify_push.share_billing(old, a)
        # a timeout: tried again on the next call
        slow = FakeSession(FakeClient(asyncio.TimeoutError()))
        notify_push.share_billing(slow, a)
        await asyncio.sleep(0)
        assert notify_push.share_billing(slow, a)
    asyncio.run(run())
