"""The process tree over the demo box (issue 23): real processes (a launcher that starts two
ranks, all on the simulated GPU), their parents read from the real /proc by the probe, and
`T` in the app draws the ranks under the launcher and back to a flat list."""

import os
import signal
import subprocess
import sys

import pytest

from tui.remote.demo_box import DemoBox
from tui.ui.app import GputuiApp
from tui.ui.widgets.process_table import ProcessTable

from tests.e2e.test_app import SIZE, wait_for

LAUNCHER = r"""
import subprocess, sys, time
rank = "import time; time.sleep(99)"
kids = [subprocess.Popen([sys.executable, "-c", rank, "rank%d" % i, "GPUTUI_SIM_GPU_JOB"])
        for i in range(2)]
time.sleep(120)
"""


@pytest.fixture
async def demo_box():
    box = await DemoBox().start()
    yield box
    await box.stop()


def family(launcher_pid):
    """The launcher and its children, from /proc."""
    out = [launcher_pid]
    with open("/proc/%d/task/%d/children" % (launcher_pid, launcher_pid)) as f:
        out += [int(p) for p in f.read().split()]
    return out


async def test_T_shows_ranks_under_their_launcher(demo_box, tmp_path):
    (tmp_path / "launcher.py").write_text(LAUNCHER)
    launcher = subprocess.Popen([sys.executable, "launcher.py", "GPUTUI_SIM_GPU_JOB"], cwd=str(tmp_path),
                                env=demo_box.box_env(),  # the demo's scope: the box adopts them
                                start_new_session=True)
    app = GputuiApp(demo_box.target(), simulate="adopt", stop_daemon_on_exit=True)
    try:
        async with app.run_test(size=SIZE) as pilot:
            table = app.query_one(ProcessTable)
            await wait_for(pilot, lambda: table.row_count == 3
                           and all(r.ppid for r in app.box.state.proc_rows()))
            pids = family(launcher.pid)
            assert len(pids) == 3
            await pilot.press("T")
            await pilot.pause(0.2)
            rows = app.box.state.proc_rows()
            assert [r.pid for r in rows][0] == launcher.pid
            assert sorted(r.pid for r in rows[1:]) == sorted(pids[1:])
            assert [r.tree for r in rows] == ["", "├─ ", "└─ "]
            cmds = [str(table.get_row_at(i)[-1]) for i in range(3)]
            assert cmds[0].startswith("python launcher.py")
            assert cmds[1].startswith("├─ ") and "rank" in cmds[1]
            assert cmds[2].startswith("└─ ") and "rank" in cmds[2]
            await pilot.press("T")
            await pilot.pause(0.2)
            assert not any(str(table.get_row_at(i)[-1]).startswith(("├", "└")) for i in range(3))
            await pilot.press("q")
    finally:
        os.killpg(launcher.pid, signal.SIGKILL)  # the ranks too
        launcher.wait()
