"""The box's billing facts are sent when the daemon lacks them: once per change, again on
every new connection, not again to a probe that refused them, again after a timeout."""

import asyncio

from tui.remote import notify_push
from tui.remote.probe.client import ProbeError


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


class LiveSession(FakeSession):
    def __init__(self, client, notify_config=None, state="live"):
        super().__init__(client)
        self.notify_config, self.state = notify_config, state
        self.notify_reply, self.notices = None, []

    def _notice(self, text):
        self.notices.append(text)


NTFY = {"urls": ["ntfy://ntfy.example.com/gpu_alerts"]}


def connected_with(data, state="live"):
    """A session as the app made it at connect from `data`, the box named "lab box"."""
    from tui.core.notify.wire import notify_config
    return LiveSession(FakeClient(), notify_config(data, "box1", "lab box")[0], state)


def test_a_config_reload_sends_changed_channels_and_events_now():
    """(config at connect, config after the edit, session state) -> what reaches the box."""
    cases = [
        # a new [notify] events filter: sent now, under the name sent at connect
        (NTFY, dict(NTFY, events=["crashed"]), "live", ["crashed"]),
        # a channel added to a laptop that had none at connect
        ({}, NTFY, "live", None),
        # nothing about notifications changed: nothing sent again
        (NTFY, NTFY, "live", "unsent"),
        # the laptop's config lost its [notify]: the box keeps its channels (never erased)
        (NTFY, {}, "live", "unsent"),
        # not connected: kept for the next connect, not sent into a dead channel
        (NTFY, dict(NTFY, events=["hung"]), "reconnecting", "unsent"),
    ]
    for before, after, state, want in cases:
        async def run():
            s = connected_with({"notify": before} if before else {}, state)
            kept = s.notify_config
            notify_push.reload_notify_config(s, {"notify": after} if after else {}, "box1", "box1")
            await asyncio.sleep(0)
            return s, kept
        s, kept = asyncio.run(run())
        case = (before, after, state)
        if want == "unsent":
            assert s.client.sent == [], case
            if after and after != before:  # stored for the next connect
                assert s.notify_config["events"] == after["events"], case
            else:
                assert s.notify_config == kept, case
            continue
        assert [k for k, _p in s.client.sent] == [notify_push.NOTIFY_CONFIG], case
        params = s.client.sent[0][1]
        assert params["events"] == want and params["channels"] == after["urls"], case
        assert params["box"] == ("lab box" if before else "box1"), case
        assert s.notify_config == params, case


def test_a_reload_returns_the_new_configs_problems_once():
    async def run():
        s = connected_with({"notify": NTFY})
        bad = {"notify": {"urls": ["dingtalk://"]}}
        first = notify_push.reload_notify_config(s, bad, "box1")
        again = notify_push.reload_notify_config(s, bad, "box1")
        await asyncio.sleep(0)
        return first, again
    first, again = asyncio.run(run())
    assert first and "dingtalk" in first[0] and again == [], (first, again)
