"""A job started from gputui's new-job action runs with the hook: stats reach the app."""

import sys

import pytest

from tui.tmux_screen import JobScreen, TmuxScreen
from tui.widgets.loader_panel import LoaderPanel

from .test_app import SIZE, wait_for
from .test_dlhook import TRAIN
from .test_e2e_tmux import make_app

pytest.importorskip("torch")
pytestmark = pytest.mark.timeout(240)


async def test_new_job_reports_dataloader_stats_and_a_diagnosis(sshbox, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    app = make_app(sshbox, "idle", tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.state.samples_seen >= 1)
        await pilot.press("t")
        await wait_for(pilot, lambda: isinstance(app.screen, TmuxScreen))
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, JobScreen))
        app.screen.query_one("#name").value = "starved"
        app.screen.query_one("#cwd").value = str(tmp_path)
        # no code change: a plain training script, num_workers=0 and a slow dataset
        app.screen.query_one("#command").value = "%s train.py 0.01 0 0.002 60" % sys.executable
        await pilot.click("#ok")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.state.dl and any(
            (s.get("wait_fraction") or 0) > 0.5 for s in app.state.dl.values()), timeout=60)
        await pilot.pause(1.2)
        panel = app.query_one("#loaders", LoaderPanel)
        assert panel.has_class("shown")
        text = str(panel.render())
        assert "num_workers=0" in text and "waiting" in text
        assert "set num_workers" in text
        await pilot.press("q")
