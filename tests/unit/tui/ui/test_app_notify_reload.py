"""The open app and the box's notifications (issue 21): an edited [notify] reaches the box's
daemon at the reload, not at the next connect; the box's own budget_80/100 message is not
toasted a second time (the app's budget warning already says it), other box messages are."""

import os

from tui.core.config import Config
from tui.remote import notify_push, ssh
from tui.ui.app import GputuiApp, _AppListener

from tests.support.snapshot_app import NOW, FakeSession, feed

URL = "ntfy://ntfy.example.com/gpu_alerts"


class FakeClient:
    def __init__(self):
        self.sent = []

    async def request(self, kind, **params):
        self.sent.append((kind, params))
        return {"channels": list(params.get("channels") or []), "problems": []}


class LiveSession(FakeSession):
    """A session the app believes connected: its daemon's requests land in `client.sent`."""
    state = "live"

    def __init__(self, target, notify_config):
        super().__init__(target)
        self.client, self.notify_config = FakeClient(), notify_config
        self.notify_reply, self.notices, self.connects = None, [], 1

    def _notice(self, text):
        self.notices.append(text)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    st = os.stat(path)  # a second write within the same mtime tick still counts as a change
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def app_on(path, text, budget=None):
    from tui.core.notify.wire import notify_config
    write(path, text)
    config = Config.load(path)
    target = ssh.Target.parse("snapbox")
    session = LiveSession(target, notify_config(config.data, "snapbox", "snapbox")[0])
    app = GputuiApp(target, host_label="snapbox", config=config, ledger=None, session=session)
    app._preflight_started = True
    app.box.billing.clock = lambda: NOW
    app.box.state.clock = lambda: NOW
    return app, session


def sent_configs(session):
    return [p for k, p in session.client.sent if k == notify_push.NOTIFY_CONFIG]


async def test_an_edited_events_filter_reaches_the_box_at_the_reload(tmp_path):
    path = str(tmp_path / "config.toml")
    app, session = app_on(path, '[notify]\nurls = ["%s"]\n' % URL)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await pilot.pause(0.2)
        before = len(sent_configs(session))
        write(path, '[notify]\nurls = ["%s"]\nevents = ["crashed", "hung"]\n' % URL)
        app.reload_config()
        await pilot.pause(0.2)
        new = sent_configs(session)[before:]
        assert len(new) == 1 and new[0]["events"] == ["crashed", "hung"]
        assert new[0]["channels"] == [URL] and new[0]["box"] == "snapbox"
        # an edit that leaves [notify] alone sends nothing again
        write(path, '[notify]\nurls = ["%s"]\nevents = ["crashed", "hung"]\n\n'
                    '[hosts.snapbox]\nrate = 3.0\n' % URL)
        app.reload_config()
        await pilot.pause(0.2)
        assert len(sent_configs(session)) == before + 1
        assert app.box.cfg.rate == 3.0  # the reload itself went on
        # [notify] removed from this laptop's config: the box keeps its channels
        write(path, '[hosts.snapbox]\nrate = 3.0\n')
        app.reload_config()
        await pilot.pause(0.2)
        assert len(sent_configs(session)) == before + 1
        await app.action_quit()


async def test_the_boxes_budget_message_is_not_toasted_twice(tmp_path):
    path = str(tmp_path / "config.toml")
    app, _session = app_on(path, '[hosts.snapbox]\nrate = 11.96\ncurrency = "CNY"\n'
                                 'provider = "autodl"\nbudget_session = 5\n')
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        feed(app, 2)  # an hour in at 11.96/h: over the 5 CNY budget
        app.warn_budget(app.box)
        await pilot.pause(0.3)
        own = [n for n in app._notifications if n.message.startswith("Budget: 100%")]
        assert len(own) == 1, [n.message for n in app._notifications]
        listener = _AppListener(app)
        for kind, title in (("budget_100", "Budget spent on snapbox"),
                            ("budget_80", "Budget 80% on snapbox"),
                            ("crashed", "eval:0.0 crashed on snapbox")):
            listener.on_notify_event({"type": "notify_event", "kind": kind, "job": "tmux:%2",
                                      "t": NOW - 5, "title": title, "body": "from the box",
                                      "sent": True})
        await pilot.pause(0.3)
        titles = [n.title for n in app._notifications]
        assert "eval:0.0 crashed on snapbox" in titles  # the box's other messages are shown
        assert not [t for t in titles if t.startswith("Budget")], titles
        assert len([n for n in app._notifications if n.message.startswith("Budget")]) == 1
        await app.action_quit()
