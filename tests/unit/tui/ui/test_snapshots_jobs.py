"""Snapshots of the dashboard's jobs panel and the tmux panel with watched jobs (issue 21): a
running tqdm job with its bar, ETA clock time and duration and cost to finish, a crashed job
with its cause and last line, a hung job whose checkpoint sits on a wiped disk. Fixed clock,
UTC. Regenerate after an intended change: `pytest tests/unit/tui/ui/test_snapshots_jobs.py --snapshot-update`."""

import time

import pytest

from tui.ui.app import _AppListener

from tests.support.snapshot_app import NOW, TMUX, canned_app
from tests.support.watch_canned import jobs_block

SIZES = [(80, 24), (160, 50)]


@pytest.fixture(autouse=True)
def utc(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def watched_app():
    app = canned_app(2)
    plain = app.feed

    def feed():
        plain()
        _AppListener(app).on_jobs(jobs_block(NOW, tmux=TMUX))
    app.feed = feed
    return app


async def _fed(pilot):
    pilot.app.feed()
    await pilot.pause(0.3)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: "%dx%d" % s)
def test_dashboard_jobs_panel(snap_compare, size):
    assert snap_compare(watched_app(), terminal_size=size, run_before=_fed)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: "%dx%d" % s)
def test_tmux_panel_jobs(snap_compare, size):
    async def opened(pilot):
        await _fed(pilot)
        await pilot.press("t")
        await pilot.pause(1.0)
    assert snap_compare(watched_app(), terminal_size=size, run_before=opened)
