"""A job started from gputui's new-job action runs with the hook: stats reach the app."""

import importlib.util
import sys

import pytest

from tui.ui.widgets.loader_panel import LoaderPanel

from tests.e2e.test_app import SIZE, wait_for
from tests.unit.remote_probe.test_dlhook import TRAIN
from tests.e2e.test_tmux import make_app, start_job_like_a_user

# torch runs in the box's training process only: not imported here (1.2 s per worker)
pytestmark = [pytest.mark.timeout(240),
              pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="CPU torch is not installed (pip install -e '.[test]')")]


async def test_new_job_reports_dataloader_stats_and_a_diagnosis(sshbox, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    app = make_app(sshbox, "idle", tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        # no code change: a plain training script, num_workers=0 and a slow dataset
        await start_job_like_a_user(app, pilot, "starved", str(tmp_path),
                                    "%s train.py 0.01 0 0.002 60" % sys.executable)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.box.state.dl and any(
            (s.wait_fraction or 0) > 0.5 for s in app.box.state.dl.values()), timeout=60)
        await pilot.pause(1.2)
        panel = app.query_one("#loaders", LoaderPanel)
        assert panel.has_class("shown")
        text = str(panel.render())
        assert "num_workers=0" in text and "waiting" in text
        assert "set num_workers" in text
        await pilot.press("q")
