"""The terminal hand-off (tmux attach, nvitop): the event loop keeps serving while the program
has the terminal (in `gputui demo` the box's SSH server is in this very loop), Ctrl-C goes to
the program and not to gputui, and a failing program's own words stay until Enter."""

import asyncio
import contextlib
import os
import signal

from tui.remote.demo_box import DEMO_ALIAS, DemoBox
from tui.ui.terminal_handoff import default_hand_off, failure_prompt, hand_off, run_in_terminal


class HeadlessApp:
    """What default_hand_off uses of a Textual app, for a test without a tty."""
    def __init__(self):
        self.painting = True
        self.hand_off_terminal = default_hand_off

    @contextlib.contextmanager
    def batch_update(self):
        self.painting = False
        yield
        self.painting = True

    suspend = contextlib.nullcontext


async def test_hand_off_to_ssh_on_the_demo_box_is_served(capfd):
    """The demo's embedded server answers the handed-off `ssh` (it used to wait forever)."""
    box = await DemoBox().start()
    try:
        argv = ["ssh", "-F", box.ssh_config, "-o", "BatchMode=yes", "-o", "ConnectTimeout=8",
                DEMO_ALIAS, "echo served in $HOME"]
        code = await asyncio.wait_for(hand_off(HeadlessApp(), argv), 40)
        out = capfd.readouterr().out
        assert code == 0, out
        assert "served in %s" % box.home in out
    finally:
        await box.stop()


async def test_demo_runs_box_commands_here_in_the_box_home(capfd):
    box = await DemoBox().start()
    try:
        code = await hand_off(HeadlessApp(), box.terminal_argv("pwd; echo $XDG_CACHE_HOME"))
        out = capfd.readouterr().out.split()
        assert code == 0 and out == [box.home, os.path.join(box.home, ".cache")]
    finally:
        await box.stop()


async def test_ctrl_c_goes_to_the_program_not_to_gputui():
    # Ctrl-C in a cooked terminal signals the whole group: gputui gets SIGINT too and lives
    # (asyncio.run's own handler would cancel the app's main task).
    before = signal.getsignal(signal.SIGINT)
    code = await run_in_terminal(["sh", "-c", "kill -INT $PPID; sleep 0.3; exit 0"])
    assert code == 0
    # ... and the program itself still dies of it (it does not inherit an ignored SIGINT)
    code = await run_in_terminal(["sh", "-c", "kill -INT $$; sleep 5"], pause_on_failure=False)
    assert code == -signal.SIGINT
    assert signal.getsignal(signal.SIGINT) == before  # gputui's own handling is back


async def test_a_failed_program_stays_on_screen_until_enter(tmp_path):
    master, slave = os.openpty()
    out_path = tmp_path / "screen"
    with os.fdopen(slave, "r") as tty_in, open(out_path, "w") as screen:
        task = asyncio.ensure_future(run_in_terminal(
            ["sh", "-c", "echo NVML not found >&2; exit 3"], stdin=tty_in, stdout=screen))
        await asyncio.sleep(1.0)
        assert not task.done()  # still showing nvitop's own error
        os.write(master, b"\n")
        assert await asyncio.wait_for(task, 5) == 3
    os.close(master)
    said = out_path.read_text()
    assert "sh exited with 3" in said and "Enter" in said
    assert failure_prompt(["/usr/bin/nvitop"], 1).strip().startswith("[nvitop exited with 1")
