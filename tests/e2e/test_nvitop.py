"""nvitop one key away: commands built and quoted, the install step run for real over SSH
from a local wheel (no internet), the hand-off command run, failures explained."""

import base64
import hashlib
import os
import shlex
import subprocess
import sys
import zipfile

import pytest

from tui.core import nvitop_commands as nvitop
from tui.remote import ssh
from tui.remote.nvitop_install import install_nvitop, nvitop_present
from tui.remote.session import RemoteSession

from tests.support.sshd import free_port


def test_install_command_quotes_everything():
    cmd = nvitop.install_command("my dir/$(touch x)", python="/opt/py 3/bin/python",
                                 index_url="https://mirror.example/simple?a=1&b=2")
    assert cmd.startswith("'/opt/py 3/bin/python' -m pip install ")
    assert "--target \"$HOME\"/'my dir/$(touch x)/nvitop'" in cmd
    assert "--index-url 'https://mirror.example/simple?a=1&b=2'" in cmd
    assert cmd.endswith(" nvitop")
    # the shell sees exactly these words: nothing expands except $HOME
    words = shlex.split(cmd.replace('"$HOME"', "HOME"))
    assert "HOME/my dir/$(touch x)/nvitop" in words
    assert nvitop.dir_expr("/abs/dir/") == "/abs/dir/nvitop"
    assert nvitop.dir_expr(None) == '"$HOME"/.cache/gputui/nvitop'


def test_run_and_check_commands():
    run = nvitop.run_command("/r", "python3", args=("--once",))
    assert run == ("if command -v nvitop >/dev/null 2>&1; then exec nvitop --once; fi; "
                   "PYTHONPATH=/r/nvitop${PYTHONPATH:+:$PYTHONPATH} exec python3 -m nvitop --once")
    assert "import nvitop" in nvitop.check_command("/r")
    target = ssh.Target(host="box", ssh_config="/c f", port=2222, username="u")
    argv = nvitop.terminal_argv(target, "echo 'hi'")
    assert argv == ["ssh", "-t", "-F", "/c f", "-p", "2222", "-l", "u", "--", "box",
                    "/bin/sh -c 'echo '\"'\"'hi'\"'\"''"]


@pytest.mark.parametrize("output,expected", [
    ("WARNING: Retrying ... Failed to establish a new connection: [Errno 111] Connection refused",
     "cannot reach PyPI"),
    ("socket.gaierror: Temporary failure in name resolution", "pip_index_url"),
    ("/usr/bin/python3: No module named pip", "has no pip"),
    ("ERROR: No matching distribution found for nvitop", "found no nvitop"),
    ("ERROR: something odd\n", "pip failed (exit 1): ERROR: something odd"),
])
def test_install_failure_explained(output, expected):
    assert expected in nvitop.install_failure(output, 1)


def fake_nvitop_wheel(folder):
    """A minimal nvitop wheel (zip + dist-info) whose `python -m nvitop` says where it ran."""
    files = {
        "nvitop/__init__.py": "__version__ = '0.0.1'\n",
        "nvitop/__main__.py": "import sys, nvitop\nprint('fake nvitop from', nvitop.__file__, sys.argv[1:])\n",
        "nvitop-0.0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: nvitop\nVersion: 0.0.1\n",
        "nvitop-0.0.1.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (name, digest, len(text.encode())))
    record.append("nvitop-0.0.1.dist-info/RECORD,,")
    files["nvitop-0.0.1.dist-info/RECORD"] = "\n".join(record) + "\n"
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "nvitop-0.0.1-py3-none-any.whl")
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return path


async def test_install_from_a_local_wheel_and_run_it_over_ssh(sshbox, tmp_path):
    wheels = tmp_path / "wheels"
    fake_nvitop_wheel(str(wheels))
    target = ssh.Target.parse("testbox", ssh_config=sshbox.ssh_config)
    session = RemoteSession(target, simulate="idle", remote_dir=sshbox.remote_dir)
    await session.open()
    try:
        python = sys.executable  # a python with pip, reachable on the box (same machine)
        assert not await nvitop_present(session, python)
        # no index reachable: the failure says so, and names the mirror setting
        dead = "http://127.0.0.1:%d/simple" % free_port()
        ok, why = await install_nvitop(session, python, index_url=dead)
        assert not ok and ("cannot reach %s" % dead) in why and "pip_index_url" in why
        ok, said = await install_nvitop(session, python, find_links=str(wheels), no_index=True)
        assert ok, said
        assert os.path.exists(os.path.join(sshbox.remote_dir, "nvitop", "nvitop", "__main__.py"))
        assert await nvitop_present(session, python)
    finally:
        await session.close()
    # the hand-off command itself, through the real ssh client (no tty here: -t only warns)
    argv = nvitop.terminal_argv(target, nvitop.run_command(sshbox.remote_dir, python, args=("--once",)))
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert "fake nvitop from %s" % os.path.join(sshbox.remote_dir, "nvitop", "nvitop") in r.stdout
    assert "['--once']" in r.stdout


async def test_dashboard_flow_asks_then_hands_off(sshbox, tmp_path):
    """open_nvitop in the real app: not installed -> the exact command is shown and "n"
    installs nothing; once installed -> the terminal goes to `ssh -t HOST ... nvitop`."""
    from tui.ui.app import GputuiApp
    from tui.ui.flows import open_nvitop
    from tui.ui.screens.modals import ConfirmScreen
    target = ssh.Target.parse("testbox", ssh_config=sshbox.ssh_config)
    app = GputuiApp(target, simulate="idle", remote_dir=sshbox.remote_dir, stop_daemon_on_exit=True)
    app.box.cfg.python = sys.executable
    handed = []
    app.hand_off_terminal = lambda _app, argv: handed.append(argv) or 0
    async with app.run_test(size=(140, 45)) as pilot:
        for _ in range(300):
            if app.box.session.state == "live":
                break
            await pilot.pause(0.1)
        worker = app.run_worker(open_nvitop(app, app.box))
        for _ in range(100):
            if isinstance(app.screen, ConfirmScreen):
                break
            await pilot.pause(0.1)
        shown = app.screen.question.plain
        assert "--target" in shown and sshbox.remote_dir in shown and "No root" in shown
        # said up front: on a simulated box nvitop has no driver to read (issue 36)
        assert shown.startswith("This box's GPUs are simulated: nvitop needs the real NVIDIA driver")
        await pilot.press("n")
        await worker.wait()
        assert handed == [] and not os.path.exists(os.path.join(sshbox.remote_dir, "nvitop"))
        wheels = tmp_path / "wheels"
        fake_nvitop_wheel(str(wheels))
        ok, said = await install_nvitop(app.box.session, sys.executable, find_links=str(wheels), no_index=True)
        assert ok, said
        worker = app.run_worker(open_nvitop(app, app.box))
        await worker.wait()
        assert len(handed) == 1 and handed[0][:2] == ["ssh", "-t"] and "testbox" in handed[0]
        assert "-m nvitop" in handed[0][-1]
        await app.action_quit()
