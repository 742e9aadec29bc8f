"""Password login (AutoDL style: `ssh -p PORT root@host` plus a password, no key) through a
real sshd and a real local user with a password: on the terminal (pty), with no terminal,
wrong passwords, the once-per-host ssh-copy-id offer, and the app's masked dialog."""

import os
import subprocess
import sys

import pexpect
import pytest

from tui.core.config import Config
from tui.remote import ssh
from tui.remote.session import FAILED, LIVE
from tui.ui.app import GputuiApp
from tui.ui.screens.modals import ConfirmScreen, PasswordScreen

from tests.e2e.test_app import wait_for
from tests.support.user_world import kbd_box, make_home, pw_box  # noqa: F401 - fixture

GPUTUI = [sys.executable, "-m", "tui"]


def _laptop(box, tmp_path, monkeypatch):
    world = make_home(tmp_path, None)
    world.known_hosts.write_text(box.sshd.host_line())
    monkeypatch.setenv("HOME", str(world.home))
    return world


@pytest.fixture
def laptop(pw_box, tmp_path, monkeypatch):
    """A laptop with no key at all and the box's host key already known."""
    return _laptop(pw_box, tmp_path, monkeypatch)


def box_args(box):
    return [box.dest, "--simulate", "idle", "--remote-dir", box.remote_dir]


def spawn(*args):
    return pexpect.spawn(GPUTUI[0], GPUTUI[1:] + list(args), timeout=60, encoding="utf-8",
                         env=dict(os.environ), dimensions=(40, 200))


def run(*args):
    return subprocess.run(GPUTUI + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=90, stdin=subprocess.DEVNULL)


def config_text():
    path = os.path.join(os.environ["GPUTUI_CONFIG_DIR"], "config.toml")
    return open(path).read() if os.path.exists(path) else ""


def test_password_on_the_terminal_then_refusing_the_key_offer_is_remembered(pw_box, laptop):
    child = spawn("status", *box_args(pw_box))
    child.expect("%s's password: " % pw_box.dest)
    child.sendline(pw_box.password)
    child.expect("Install your public key")
    child.expect(r"\(yes/no\) ")
    child.sendline("no")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    assert "No GPU" in child.before or "GPU" in child.before
    assert pw_box.password not in child.before  # never echoed
    cfg = Config.load()
    assert cfg.host(pw_box.dest).key_install_declined
    assert pw_box.password not in config_text()
    assert not os.path.exists(laptop.key)  # no key created on a no
    # second run: the password again, but no offer
    child = spawn("status", *box_args(pw_box))
    child.expect("password: ")
    child.sendline(pw_box.password)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "Install your public key" not in child.before


def test_wrong_passwords_fail_once_naming_the_methods(pw_box, laptop):
    child = spawn("status", *box_args(pw_box))
    for _ in range(ssh.PASSWORD_TRIES):
        child.expect("password: ")
        child.sendline("not-the-password")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 2
    out = child.before
    assert "Authentication failed for %s" % pw_box.dest in out
    assert "the server offers publickey, password" in out and "tried password" in out


def test_no_terminal_fails_clearly(pw_box, laptop):
    r = run("status", *box_args(pw_box))
    assert r.returncode == 2
    assert "Authentication failed" in r.stderr and "no terminal to ask on" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_yes_installs_a_new_key_and_the_next_connect_needs_nothing(pw_box, laptop):
    child = spawn("status", *box_args(pw_box))
    child.expect("password: ")
    child.sendline(pw_box.password)
    child.expect("You have no key yet")
    child.expect(r"\(yes/no\) ")
    child.sendline("yes")
    child.expect("Installed .*id_ed25519.pub on %s" % pw_box.dest)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    assert os.path.exists(laptop.key) and oct(os.stat(laptop.key).st_mode & 0o777) == "0o600"
    pub = open(str(laptop.key) + ".pub").read().split()[1]
    assert pub in (pw_box.home / ".ssh" / "authorized_keys").read_text()
    r = run("status", *box_args(pw_box))  # no terminal: the key alone logs in
    assert r.returncode == 0, r.stderr


def dialog_ready(app):
    """The password dialog is up and composed (under load the screen shows before its
    widgets are mounted)."""
    return isinstance(app.screen, PasswordScreen) and bool(app.screen.query("Input"))


async def _wait(pilot, cond, timeout=30.0):
    await wait_for(pilot, cond, timeout)


async def test_app_asks_in_a_masked_dialog_and_reconnects_without_asking(pw_box, laptop):
    app = GputuiApp(ssh.Target.parse(pw_box.dest), simulate="idle", remote_dir=pw_box.remote_dir)
    async with app.run_test(size=(160, 45)) as pilot:
        await _wait(pilot, lambda: dialog_ready(app))
        from textual.widgets import Input
        field = app.screen.query_one(Input)
        assert field.password  # masked
        shown = " ".join(str(w.render()) for w in app.screen.query("Label"))
        assert "%s's password:" % pw_box.dest in shown
        field.value = pw_box.password
        await pilot.press("enter")
        await _wait(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")
        await _wait(pilot, lambda: app.box.state.conn_state == LIVE)
        # a dropped link reconnects with the remembered password, no dialog
        app.box.session.conn.close()
        await _wait(pilot, lambda: app.box.state.conn_state != LIVE)
        await _wait(pilot, lambda: app.box.state.conn_state == LIVE)
        assert not isinstance(app.screen, PasswordScreen)
        assert app.box.session.connects >= 2
        await pilot.press("q")
    assert Config.load().host(pw_box.dest).key_install_declined
    for root, _dirs, files in os.walk(os.path.dirname(os.environ["GPUTUI_CONFIG_DIR"])):
        for name in files:
            with open(os.path.join(root, name), "rb") as f:
                assert pw_box.password.encode() not in f.read(), name


async def test_app_cancelled_password_stops_instead_of_retrying(pw_box, laptop):
    app = GputuiApp(ssh.Target.parse(pw_box.dest), simulate="idle", remote_dir=pw_box.remote_dir)
    async with app.run_test(size=(160, 45)) as pilot:
        await _wait(pilot, lambda: dialog_ready(app))
        await pilot.press("escape")
        await _wait(pilot, lambda: app.box.state.conn_state == FAILED)
        assert "Authentication failed" in app.box.state.conn_detail
        await pilot.press("q")


def test_keyboard_interactive_prompt_as_the_server_words_it(kbd_box, tmp_path, monkeypatch):
    _laptop(kbd_box, tmp_path, monkeypatch)
    child = spawn("status", *box_args(kbd_box))
    child.expect("Password: ")  # PAM's wording, not ours
    child.sendline(kbd_box.password)
    child.expect(r"\(yes/no\) ")  # a password logged in: the key offer
    child.sendline("no")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before


async def test_app_keyboard_interactive_dialog(kbd_box, tmp_path, monkeypatch):
    _laptop(kbd_box, tmp_path, monkeypatch)
    app = GputuiApp(ssh.Target.parse(kbd_box.dest), simulate="idle", remote_dir=kbd_box.remote_dir)
    async with app.run_test(size=(160, 45)) as pilot:
        await _wait(pilot, lambda: dialog_ready(app))
        from textual.widgets import Input
        shown = " ".join(str(w.render()) for w in app.screen.query("Label"))
        assert "Password:" in shown
        app.screen.query_one(Input).value = kbd_box.password
        await pilot.press("enter")
        await _wait(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")
        await _wait(pilot, lambda: app.box.state.conn_state == LIVE)
        await pilot.press("q")


@pytest.mark.parametrize("shell", ["/usr/bin/fish", "/usr/bin/tcsh"])
def test_key_install_works_under_fish_and_tcsh_login_shells(pw_box, laptop, shell):
    """Issue 23: under fish the key install said "Installed" while fish refused the command,
    and the next connect asked for the password again."""
    from tests.support.user_world import PW_USER
    if not os.path.exists(shell):
        pytest.skip("%s is not installed" % shell)
    subprocess.run(["usermod", "-s", shell, PW_USER], check=True)
    child = spawn("status", *box_args(pw_box))
    child.expect("password: ")
    child.sendline(pw_box.password)
    child.expect(r"\(yes/no\) ")
    child.sendline("yes")
    child.expect("Installed .*id_ed25519.pub on %s" % pw_box.dest)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    pub = open(str(laptop.key) + ".pub").read().split()[1]
    assert pub in (pw_box.home / ".ssh" / "authorized_keys").read_text()
    r = run("status", *box_args(pw_box))  # no terminal: the key alone logs in
    assert r.returncode == 0, r.stderr
