"""`gputui demo` on a laptop without /proc (macOS, issue 23): the whole demo path (the embedded
SSH server, the deployed probe daemon, the app under Pilot) with the probe's proc root pointed
at an empty directory. The simulated GPUs, their processes and the DataLoader panel show; for
10+ s nothing crashes; the jobs the box cannot judge say so instead of being judged."""

import asyncio
import os
import subprocess
import sys
import time

import pytest

from remote_probe import wire
from tui.core.checks.checklist import check_jobs, env_frozen_text
from tui.core.jobs.tmux_rows import pane_rows
from tui.core.checks.preflight import WARN
from tui.remote.demo_box import DemoBox
from tui.ui.app import GputuiApp
from tui.ui.widgets.gpu_panel import GpuPanel
from tui.ui.widgets.loader_panel import LoaderPanel
from tui.ui.widgets.process_table import ProcessTable

from tests.e2e.test_app import SIZE, wait_for

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="hides a real /proc")


@pytest.fixture
async def hidden_proc_demo(tmp_path, monkeypatch):
    empty = tmp_path / "no-proc"
    empty.mkdir()
    # every command on the demo box inherits it (DemoBox.box_env), the probe daemon too
    monkeypatch.setenv("GPUTUI_PROC_ROOT", str(empty))
    box = await DemoBox().start()
    env = box.box_env()
    # a pane with a program in front (tmux says python runs) and one with only a shell in front
    subprocess.run(["tmux", "new-session", "-d", "-s", "train",
                    "%s -c 'import time; time.sleep(120)'" % sys.executable], env=env, check=True)
    subprocess.run(["tmux", "new-session", "-d", "-s", "shell", "/bin/sh"], env=env, check=True)
    yield box
    subprocess.run(["tmux", "kill-server"], env=env, capture_output=True)
    await box.stop()


def panes_of(app):
    sessions = ((app.box.state.jobs or {}).get("tmux") or {}).get("sessions") or []
    return {s["name"]: s["windows"][0]["panes"][0] for s in sessions}, sessions


async def test_demo_runs_without_proc_and_says_what_it_cannot_know(hidden_proc_demo):
    app = GputuiApp(hidden_proc_demo.target(), simulate="a100x2", host_label="demo",
                    stop_daemon_on_exit=True)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: app.box.state.samples_seen >= 2, timeout=40)
        started = time.monotonic()
        # the simulated GPUs and their processes, with the command the simulator knows
        # (waited for: on a loaded machine the first frame can be laid out before the second GPU)
        panel = app.query_one(GpuPanel)
        await wait_for(pilot, lambda: str(panel.render()).count("A100-SXM4-80GB") == 2, timeout=10)
        table = app.query_one(ProcessTable)
        await wait_for(pilot, lambda: table.row_count == 2)
        cmds = sorted(str(table.get_row_at(i)[-1]) for i in range(2))
        assert "finetune.py" in cmds[0] and "train.py" in cmds[1]
        # the DataLoader panel: the hook's stats files are judged alive with signal 0, not /proc
        await wait_for(pilot, lambda: len(app.box.state.dl) == 2, timeout=30)
        loaders = str(app.query_one("#loaders", LoaderPanel).render())
        assert "train.py" in loaders or str(min(app.box.state.dl)) in loaders

        # the jobs block says there is no /proc, and the dashboard says what that hides
        await wait_for(pilot, lambda: app.box.state.job_model.no_proc
                       and len(panes_of(app)[0]) == 2, timeout=30)
        notice = str(app.query_one("#notice").render())
        assert "No /proc" in notice and "tmux" in notice
        panes, sessions = panes_of(app)
        assert panes["train"]["running"] is True  # tmux shows python in front
        assert panes["shell"]["running"] is None  # a shell in front: cannot tell, never "idle"
        rows = {r["session"]: r for r in pane_rows(sessions, time.time())}
        assert "cannot tell" in rows["shell"]["command"] and "idle" not in rows["shell"]["command"]
        # the checklist's jobs item: a pane it cannot see into is no pass
        only_shell = [s for s in sessions if s["name"] == "shell"]
        item = check_jobs([], only_shell)
        assert item.verdict == WARN and "cannot check here" in item.reason
        assert check_jobs([], sessions).verdict != "pass"

        # the watch: the tmux job is running on tmux's word, with no hang or "waiting" guess,
        # and no process job (the simulator's, the daemon's children) is judged at all
        await wait_for(pilot, lambda: any(j.pane == panes["train"]["id"]
                                          for j in app.box.state.watched()), timeout=30)
        watched = app.box.state.watched()
        job = next(j for j in watched if j.pane == panes["train"]["id"])
        assert job.state.value == "running" and job.cause == "no_proc"
        assert any("no /proc" in e for e in job.evidence)
        assert not [j for j in watched if j.kind != "tmux"]

        # env capture: the job's interpreter cannot be read here, and the reply says so
        pids = [r.pid for r in app.box.state.proc_rows()]
        reply = await app.box.session.request(wire.ENV_CAPTURE, timeout=180, pids=pids)
        assert reply["python_source"] == "no_proc"
        assert "cannot be read" in env_frozen_text(reply)

        # 10+ s of samples with nothing failing: the app stays live, no error toast
        n = app.box.state.samples_seen
        while time.monotonic() - started < 11:
            await pilot.pause(0.5)
        assert app.box.state.samples_seen >= n + 5
        assert app.box.state.conn_state.name == "LIVE"
        assert not [t for t in app._notifications if t.severity == "error"]
        # the watch never judged anything ended while the pane ran
        assert all(j.state.value == "running" for j in app.box.state.watched())
        daemon_pid = app.box.session.client.hello["pid"]
        await pilot.press("q")
    # the demo's exit stops the daemon without /proc to watch it by (signal 0)
    for _ in range(60):
        try:
            os.kill(daemon_pid, 0)
        except ProcessLookupError:
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError("the demo's daemon outlived the demo")
