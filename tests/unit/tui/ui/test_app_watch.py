"""The open app and the box's watch (issue 21), canned (the daemon's side is helper watch2's):
"release when this job ends" from the tmux panel confirms with the exact release command and
arms autostop with when_job_done; the billing panel then says which idle rule is in force;
a notify_event is toasted once however often it arrives; the app sends the user's channels as
notify_config after connecting and logs none of their secrets."""

import logging

from textual.widgets import Static

from remote_probe import wire
from tui.core.config import Config
from tui.remote import notify_push, ssh
from tui.ui.app import GputuiApp, _AppListener
from tui.ui.screens.modals import ConfirmScreen

from tests.support.snapshot_app import NOW, TMUX, FakeSession, feed
from tests.support.watch_canned import TOKEN, jobs_block

URL = "ntfys://%s@ntfy.example.com/gpu_alerts" % TOKEN


class RecordingSession(FakeSession):
    def __init__(self, target):
        super().__init__(target)
        self.sent = []

    async def request(self, kind, **params):
        self.sent.append((kind, params))
        if kind == wire.AUTOSTOP_ARM:
            return {"autostop": {"armed": dict(params, armed_at=NOW), "rule": "no_compute",
                                 "when_job_done": params.get("when_job_done")}}
        return await super().request(kind, **params)


def app_with(autostop_allowed=True):
    target = ssh.Target.parse("snapbox")
    config = Config({"notify": {"urls": [URL]},
                     "hosts": {"snapbox": {"rate": 11.96, "currency": "CNY", "provider": "autodl",
                                           "autostop": {"allowed": autostop_allowed}}}})
    session = RecordingSession(target)
    app = GputuiApp(target, host_label="snapbox", config=config, ledger=None, session=session)
    app._preflight_started = True
    app.box.billing.clock = lambda: NOW
    app.box.state.clock = lambda: NOW

    def fed():
        feed(app, 2)
        _AppListener(app).on_jobs(jobs_block(NOW, tmux=TMUX))
    app.feed = fed
    return app, session


async def test_release_when_this_job_ends_from_the_tmux_panel():
    app, session = app_with()
    async with app.run_test(size=(160, 50), notifications=True) as pilot:
        app.feed()
        await pilot.pause(0.3)
        await pilot.press("t")
        await pilot.pause(0.5)
        pane_job = app.screen.query_one("#pane-job", Static).render()
        assert "42%" in str(pane_job) and "to finish" in str(pane_job)
        await pilot.press("w")
        await pilot.pause(0.5)
        assert isinstance(app.screen, ConfirmScreen)
        question = app.screen.question.plain
        command = app.box.billing.preset.release_command
        assert command and "$ " + command in question and "train vit-l16:0.0" in question
        await pilot.press("y")
        await pilot.pause(0.5)
        arms = [p for k, p in session.sent if k == wire.AUTOSTOP_ARM]
        assert len(arms) == 1 and arms[0]["when_job_done"] == "tmux:%1"
        assert arms[0]["command"] == command
        await pilot.press("escape")
        await pilot.pause(0.5)
        billing = str(app.screen.query_one("#billing").render())
        assert "idle rule: no compute process" in billing, billing
        assert "releases when train vit-l16:0.0 ends" in billing, billing
        await app.action_quit()


async def test_release_when_done_needs_autostop_allowed():
    app, session = app_with(autostop_allowed=False)
    async with app.run_test(size=(160, 50), notifications=True) as pilot:
        app.feed()
        await pilot.pause(0.3)
        await pilot.press("t")
        await pilot.pause(0.5)
        await pilot.press("w")
        await pilot.pause(0.5)
        assert not isinstance(app.screen, ConfirmScreen)
        assert not [k for k, _p in session.sent if k == wire.AUTOSTOP_ARM]
        assert any("Autostop is off" in n.message for n in app._notifications)
        await app.action_quit()


async def test_notify_event_toasted_once():
    app, _session = app_with()
    event = {"type": "notify_event", "kind": "crashed", "job": "tmux:%2", "t": NOW - 5,
             "title": "eval:0.0 crashed on snapbox: CUDA out of memory", "body": "[b]last[/b] lines",
             "sent": True}
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        app.feed()
        listener = _AppListener(app)
        for _i in range(3):
            listener.on_notify_event(event)
        listener.on_notify_event(dict(event, t=NOW - 1))  # a new event of the same job
        await pilot.pause(0.3)
        toasts = [n for n in app._notifications if "crashed on snapbox" in n.title]
        assert len(toasts) == 2 and toasts[0].message == "[b]last[/b] lines"  # text, not markup
        await app.action_quit()


class FakeClient:
    def __init__(self):
        self.sent = []

    async def request(self, kind, **params):
        self.sent.append((kind, params))
        return {"channels": ["ntfys://…@ntfy.example.com/gpu_alerts"],
                "problems": ["dingtalk://…: missing token"]}


async def test_notify_config_after_connect_logs_no_secret(caplog):
    target = ssh.Target.parse("snapbox")
    app = GputuiApp(target, config=Config({"notify": {"urls": [URL]}}), ledger=None)
    params = app._session.notify_config  # what the app hands its real session
    assert params["channels"] == [URL] and params["enabled"] is True and params["box"] == "snapbox"
    assert params["templates"]["crashed"]["title"] and "cuda_oom" in params["causes"]
    assert TOKEN not in repr(params) and TOKEN not in repr(app._session.__dict__)

    class Session:
        notify_config = params
        client = FakeClient()
        notify_reply = None
        notices = []

        def _notice(self, text):
            self.notices.append(text)

    s = Session()
    with caplog.at_level(logging.DEBUG):
        await notify_push.send_notify_config(s)
    assert s.client.sent == [(notify_push.NOTIFY_CONFIG, params)]
    assert s.notify_reply["channels"] == ["ntfys://…@ntfy.example.com/gpu_alerts"]
    assert s.notices == ["Notifications: dingtalk://…: missing token"]
    assert TOKEN not in caplog.text and TOKEN not in repr(s.notify_reply) and TOKEN not in str(s.notices)
