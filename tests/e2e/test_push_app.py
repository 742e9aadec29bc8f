"""`u` on the dashboard: the push screen over a real PTY-only box (files through the probe
channel). Pick a folder in the local file tree, read the plan (size, the GPUs' rate, the
FIFO that is not sent), send it with ctrl+g, watch per-file and overall progress reach the
end, and find the files verified on the box."""

import os
import re

import pytest
from textual.widgets import DirectoryTree, Input

from tests.e2e.test_app import SIZE, wait_for
from tests.e2e.test_push import make_tree, sha
from tests.e2e.test_pty import target
from tests.support.pty_fixtures import pty_only_box  # noqa: F401
from tui.remote.transfer.push_probe import CHUNK, CHUNKS_IN_FLIGHT

pytestmark = pytest.mark.timeout(300)



async def pick_folder(pilot, app, data):
    """As a user does it: wait for the box, `u`, the folder picked in the tree. -> the screen."""
    from tui.ui.screens.push_screen import PushScreen
    await wait_for(pilot, lambda: app.box.state.samples_seen >= 1, timeout=90)
    await pilot.press("u")
    await wait_for(pilot, lambda: isinstance(app.screen, PushScreen))
    screen = app.screen
    tree = screen.query_one(DirectoryTree)
    await wait_for(pilot, lambda: any(str(n.data.path) == str(data) for n in tree.root.children))
    tree.focus()
    tree.cursor_line = next(i for i, n in enumerate(tree.root.children) if str(n.data.path) == str(data)) + 1
    await pilot.press("enter")
    await wait_for(pilot, lambda: screen.chosen == str(data))
    return screen

async def test_push_screen_sends_a_picked_folder_with_plan_and_progress(pty_only_box, tmp_path, monkeypatch):
    from tui.core.config import Config
    from tui.ui.app import GputuiApp
    from tui.ui.screens.push_screen import PushScreen
    local = tmp_path / "laptop"
    local.mkdir()
    data = make_tree(local, mb=8)
    dest = tmp_path / "boxside" / "dest"
    monkeypatch.chdir(local)  # the file picker opens where gputui was started
    config = Config({"hosts": {"testbox": {"rate": 12.0, "currency": "CNY"}}})
    app = GputuiApp(target(pty_only_box), simulate="idle", remote_dir=pty_only_box.remote_dir,
                    stop_daemon_on_exit=True, config=config, ledger=None)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        screen = await pick_folder(pilot, app, data)
        plan = str(screen.query_one("#push-plan").render())
        assert "2 files, 8.0 MiB" in plan, plan
        assert "the GPUs bill ¥12.00/h" in plan, plan
        assert "not sent: data/pipe (a FIFO)" in plan, plan
        screen.query_one(Input).value = str(dest)
        await pilot.press("ctrl+g")
        await wait_for(pilot, lambda: screen.done_text != "", timeout=180)
        progress = str(screen.query_one("#push-progress").render())
        assert "Done: 2 files sent, 0 up to date, 0 failed (through probe channel)" in progress, progress
        # the small file goes beside the big one, so either may be the last one shown
        assert ("this file: data/big.bin" in progress or "this file: data/sub/train.py" in progress) \
            and "overall:" in progress, progress
        assert "8.0 MiB / 8.0 MiB  100%" in progress, progress
        assert sha(dest / "data" / "big.bin") == sha(data / "big.bin")
        assert os.readlink(dest / "data" / "link.py") == "sub/train.py"
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, PushScreen))
        await pilot.press("q")


async def test_escape_mid_send_stops_it_and_ctrl_g_continues(pty_only_box, tmp_path, monkeypatch):
    from tui.core.config import Config
    from tui.ui.app import GputuiApp
    from tui.ui.screens.push_screen import PushScreen
    local = tmp_path / "laptop"
    local.mkdir()
    data = make_tree(local, mb=128)  # big enough that escape lands mid-file on an idle machine
    dest = tmp_path / "boxside" / "dest"
    part = dest / "data" / "big.bin.gputui-part"
    monkeypatch.chdir(local)
    app = GputuiApp(target(pty_only_box), simulate="idle", remote_dir=pty_only_box.remote_dir,
                    stop_daemon_on_exit=True, config=Config({}), ledger=None)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        screen = await pick_folder(pilot, app, data)
        screen.query_one(Input).value = str(dest)
        await pilot.press("ctrl+g")
        await wait_for(pilot, lambda: part.exists() and part.stat().st_size > 1 << 20, timeout=120)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not screen.sending, timeout=30)
        # read once the send has stopped: on a loaded machine the key reaches the app a few
        # hundred ms after it is pressed, and chunks sent meanwhile were sent before escape
        at_escape = part.stat().st_size
        assert isinstance(app.screen, PushScreen)  # still here: the user reads how to go on
        # the progress line is redrawn a frame after the worker stops (later on a loaded box)
        try:
            await wait_for(pilot, lambda: "Stopped." in str(screen.query_one("#push-progress").render()),
                           timeout=10)
        except AssertionError:
            raise AssertionError(str(screen.query_one("#push-progress").render()))
        progress = str(screen.query_one("#push-progress").render())
        assert "Stopped." in progress and "press ctrl+g to continue" in progress, progress
        await pilot.pause(1.5)  # the box finishes the chunks already on their way, no more
        cut_at = part.stat().st_size
        in_flight = (CHUNKS_IN_FLIGHT + 1) * CHUNK
        assert cut_at <= at_escape + in_flight, ("the send went on after escape", at_escape, cut_at)
        assert cut_at < 128 << 20 and not (dest / "data" / "big.bin").exists(), "escape came too late"
        await pilot.press("ctrl+g")
        await wait_for(pilot, lambda: screen.done_text.startswith("Done"), timeout=180)
        # the small file may have landed before escape (it goes beside the big one): then it
        # is up to date now; the big one is sent either way, nothing failed
        assert re.search(r"Done: (2 files sent, 0 up to date|1 file sent, 1 up to date), 0 failed",
                         screen.done_text), screen.done_text
        assert sha(dest / "data" / "big.bin") == sha(data / "big.bin") and not part.exists()
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, PushScreen))
        await pilot.press("q")
