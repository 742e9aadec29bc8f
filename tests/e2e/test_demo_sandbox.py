"""`gputui demo` is a sandbox: it lists, offers and writes nothing outside its temp folder,
attaches to its own tmux, fails fast on a bad scenario and cleans up on SIGTERM."""

import glob
import os
import pty
import select
import signal
import subprocess
import sys
import time

import pytest

from remote_probe import wire
from tui.remote.demo_box import DemoBox
from tui.ui.demo import demo_app, local_dirs_inside
from tui.ui.screens.release_screen import ReleaseScreen

from tests.support.sshd import REPO
from tests.e2e.test_app import wait_for


@pytest.fixture
async def demo_box():
    box = await DemoBox().start()
    yield box
    await box.stop()


def test_unknown_scenario_fails_at_once_with_the_list():
    for argv in (["demo", "--scenario", "nope"], ["status", "somebox", "--simulate", "nope"]):
        r = subprocess.run([sys.executable, "-m", "tui", *argv], cwd=REPO, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=30)
        assert r.returncode == 64
        assert "unknown scenario 'nope'" in r.stderr and "a100x2" in r.stderr and "h100x8" in r.stderr


async def test_the_demo_opens_on_an_hour_old_rental_not_a_blown_budget(demo_box):
    """The demo box is this machine: billing from PID 1's start opened `gputui demo` on
    "Budget: 100% of ¥50.00 spent" (the laptop's uptime at ¥11.96/h). It was rented an hour ago."""
    with local_dirs_inside(demo_box.dir):
        app = demo_app(demo_box, "a100x2")
        async with app.run_test(size=(120, 40), notifications=True) as pilot:
            await wait_for(pilot, lambda: app.box.state.samples_seen >= 2, timeout=30)
            await pilot.pause(1.0)
            f = app.box.billing.figures()
            assert 3600 <= f.elapsed < 3600 + 120, f.elapsed
            assert 11.9 <= f.cost < 12.5, f.cost  # an hour at ¥11.96
            assert "1:0" in str(app.query_one("#status").render())  # ⏱ 1:00:xx
            assert not [n.message for n in app._notifications if "Budget" in n.message]
            await app.action_quit()


async def test_release_screen_lists_and_writes_only_inside_the_demo(demo_box, isolated_dirs):
    # A big file of someone else's in the real /tmp: the demo must not list it or offer it.
    outside = "/tmp/gputui-not-the-demos-%d.bin" % os.getpid()
    subprocess.run(["truncate", "-s", "3G", outside], check=True)
    real_data = isolated_dirs / "data"
    try:
        with local_dirs_inside(demo_box.dir):
            app = demo_app(demo_box, "a100x2")
            async with app.run_test(size=(160, 45)) as pilot:
                await wait_for(pilot, lambda: app.box.state.samples_seen >= 1, timeout=30)
                await pilot.press("R")
                await wait_for(pilot, lambda: isinstance(app.screen, ReleaseScreen) and app.screen.items,
                               timeout=60)
                screen = app.screen
                shown = "\n".join([i.reason for i in screen.items] +
                                  [d for i in screen.items for d in i.details])
                assert outside not in shown and "gputui-not-the-demos" not in shown
                assert screen.release.base.startswith(demo_box.dir)
                await pilot.press("e")  # capture env: written inside the demo folder
                await wait_for(pilot, lambda: {i.key: i for i in screen.items}["env"].verdict == "pass",
                               timeout=60)
                await app.action_quit()
        written = glob.glob(os.path.join(demo_box.dir, "local", "data", "downloads", "**", "*"),
                            recursive=True)
        assert written, "capture env wrote nothing in the demo folder"
        assert not os.path.exists(real_data / "downloads")  # the user's real downloads untouched
    finally:
        os.unlink(outside)


def run_in_pty(argv, until, send=None, timeout=30, env=None):
    """Run argv on a pseudo-terminal; once `until` shows in its output, send `send`."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execvpe(argv[0], argv, env or os.environ)
    out, sent, deadline = b"", False, time.time() + timeout
    try:
        while time.time() < deadline:
            r, _, _ = select.select([fd], [], [], 0.2)
            if r:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:  # EIO: the program closed its terminal, i.e. it is ending
                    chunk = b""
                if not chunk:
                    _, status = os.waitpid(pid, 0)
                    return os.waitstatus_to_exitcode(status), out
                out += chunk
            if not sent and until(out):
                sent = True
                for key in send or ():
                    time.sleep(0.5)  # let the program settle its terminal queries first
                    os.write(fd, key)
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:  # what it wrote just before exiting ("[detached …]") is still to be read
                while select.select([fd], [], [], 0.2)[0]:
                    try:
                        chunk = os.read(fd, 65536)
                    except OSError:
                        break
                    if not chunk:
                        break
                    out += chunk
                return os.waitstatus_to_exitcode(status), out
        raise AssertionError("timed out; output so far: %r" % out[-2000:])
    finally:
        os.close(fd)
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


async def test_attach_in_the_demo_reaches_its_own_tmux_and_returns_on_detach(demo_box):
    with local_dirs_inside(demo_box.dir):
        app = demo_app(demo_box, "idle")
        async with app.run_test(size=(160, 45)) as pilot:
            await wait_for(pilot, lambda: app.box.state.samples_seen >= 1, timeout=30)
            reply = await app.box.session.request(wire.TMUX_NEW, name="train", cwd="~",
                                              command="echo demo-job-output; sleep 60")
            argv = app.box.attach_argv(reply["session"])
            await app.action_quit()
    assert demo_box.tmux_socket() in argv
    env = dict(os.environ, TERM="xterm", TMUX="/tmp/someone-elses-tmux,1,0")  # as inside tmux
    # C-b d detaches: the attach ends by itself, which hands the terminal back to the app.
    code, out = run_in_pty(argv, lambda o: b"demo-job-output" in o, send=[b"\x02", b"d"], env=env)
    assert code == 0 and b"detached" in out


def test_sigterm_leaves_no_demo_folder_and_no_daemon(tmp_path):
    tmpdir = tmp_path / "t"
    tmpdir.mkdir()
    env = dict(os.environ, TMPDIR=str(tmpdir), TERM="xterm", COLUMNS="120", LINES="40")
    env.pop("TMUX", None)
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(REPO)
        os.execvpe(sys.executable, [sys.executable, "-m", "tui", "demo", "--scenario", "idle"], env)
    try:
        deadline = time.time() + 60
        folder = None
        while time.time() < deadline:  # live once the daemon has written its lock in the box
            select.select([fd], [], [], 0.2)
            try:
                os.read(fd, 65536)
            except OSError:
                pass
            found = glob.glob(str(tmpdir / "gputui-demo-*" / "home" / ".cache" / "gputui" / "*.pyz"))
            if found:
                folder = found[0].split("/home/")[0]
                time.sleep(2)
                break
        assert folder, "the demo did not start"
        os.kill(pid, signal.SIGTERM)
        end = time.time() + 30
        while time.time() < end:
            try:
                os.read(fd, 65536)
            except OSError:
                pass
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.1)
        else:
            raise AssertionError("the demo did not exit on SIGTERM")
        assert not os.path.exists(folder)
        left = subprocess.run(["pgrep", "-af", folder], stdout=subprocess.PIPE, text=True).stdout
        assert left.strip() == "", left
    finally:
        os.close(fd)
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
