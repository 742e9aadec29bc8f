"""The open app and `gputui notify test HOST` through a real sshd, real tmux and helper watch2's
daemon (issue 21): the app sends the user's channels as notify_config on connect (the box
answers with them redacted), a tqdm job started from the tmux panel shows on the dashboard's
jobs panel with its progress, ETA and cost to finish; `notify test HOST` makes the box send
one message to a loopback receiver and says ok per channel; the webhook key is in no output;
"release when this job ends" armed from the tmux panel runs the release command once, after
the app closed."""

import os
import subprocess
import sys
import time

import pytest
from textual.widgets import Static

from tui.core.config import Config
from tui.core.billing.ledger import Ledger
from tui.remote import ssh
from tui.ui.app import GputuiApp

from tests.e2e.test_app import wait_for
from tests.e2e.test_tmux import start_job_like_a_user
from tests.e2e.test_watch_status import JOB
from tests.unit.tui.cli.test_notify_cmd import receiver  # noqa: F401 - the fixture
from tests.support.watch_canned import TOKEN

pytestmark = pytest.mark.timeout(240)


def config_text(port):
    return ('[notify]\nurls = ["json://gputui:%s@127.0.0.1:%d/hook"]\n\n'
            '[hosts.testbox]\nrate = 36.0\ncurrency = "USD"\n' % (TOKEN, port))


async def test_app_sends_channels_and_shows_the_jobs_progress(sshbox, tmp_path, receiver):  # noqa: F811
    port, _got = receiver
    path = tmp_path / "config.toml"
    path.write_text(config_text(port))
    script = tmp_path / "job.py"
    script.write_text(JOB)
    app = GputuiApp(ssh.Target.parse("testbox", ssh_config=sshbox.ssh_config), simulate="a100x2",
                    remote_dir=sshbox.remote_dir, config=Config.load(str(path)),
                    ledger=Ledger(str(tmp_path / "l.db")))
    async with app.run_test(size=(160, 50), notifications=True) as pilot:
        await start_job_like_a_user(app, pilot, "tqdm-job", str(tmp_path), "python3 %s" % script)
        await wait_for(pilot, lambda: app._session.notify_reply is not None, 30)
        reply = app._session.notify_reply
        assert len(reply["channels"]) == 1 and TOKEN not in repr(reply)
        assert reply["channels"][0].startswith("json://")
        await pilot.press("escape")

        def shown():
            jobs = [j for j in app.box.state.watched() if j.name.startswith("tqdm-job")]
            return jobs and jobs[0].progress is not None and jobs[0].progress.eta_seconds is not None
        await wait_for(pilot, shown, 40)
        await pilot.pause(1.5)
        panel = str(app.screen.query_one("#jobs", Static).render())
        assert "tqdm-job" in panel and "%" in panel and "ETA" in panel and "to finish" in panel, panel
        texts = " ".join(n.message + n.title for n in app._notifications)
        assert TOKEN not in texts
        await app.action_quit()


def test_notify_test_host_sends_from_the_box(sshbox, receiver):  # noqa: F811
    port, got = receiver
    path = Config.load().path  # the isolated config dir (conftest)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(config_text(port))
    r = subprocess.run([sys.executable, "-m", "tui", "notify", "test", "testbox", "--simulate", "a100x2",
                        "--ssh-config", sshbox.ssh_config, "--remote-dir", sshbox.remote_dir],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert r.stdout.startswith("✓ json://") and "every channel works (1)" in r.stdout, r.stdout
    assert TOKEN not in r.stdout + r.stderr
    assert len(got) == 1 and got[0][0] == "/hook" and "gputui" in got[0][2]


async def test_release_when_this_job_ends_runs_the_command_once_with_the_app_closed(sshbox, tmp_path):
    marker = tmp_path / "released"
    path = tmp_path / "config.toml"
    path.write_text('[hosts.testbox]\nrate = 2.0\nrelease_command = "echo once >> %s"\n\n'
                    '[hosts.testbox.autostop]\nallowed = true\ngrace_seconds = 1\n' % marker)
    app = GputuiApp(ssh.Target.parse("testbox", ssh_config=sshbox.ssh_config), simulate="idle",
                    remote_dir=sshbox.remote_dir, config=Config.load(str(path)),
                    ledger=Ledger(str(tmp_path / "l.db")))
    async with app.run_test(size=(160, 50), notifications=True) as pilot:
        await start_job_like_a_user(app, pilot, "short-job", str(tmp_path), "sleep 12; echo done")
        await wait_for(pilot, lambda: app.box.state.watch_for_pane(app.screen.selected) is not None, 30)
        await pilot.press("w")
        await wait_for(pilot, lambda: "$ echo once" in str(getattr(app.screen, "question", "")), 10)
        await pilot.press("y")
        await wait_for(pilot, lambda: ((app.box.autostop or {}).get("armed") or {}).get("when_job_done"), 15)
        armed = app.box.autostop["armed"]
        assert armed["when_job_done"].startswith("tmux:")
        await app.action_quit()
    # the app is closed: the box's daemon releases by itself after the job ends and the grace
    deadline = time.time() + 60
    while time.time() < deadline and not marker.exists():
        time.sleep(1)
    assert marker.exists(), "the release command did not run"
    time.sleep(4)
    assert marker.read_text().splitlines() == ["once"]
