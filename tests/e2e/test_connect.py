"""Reaching boxes the way people rent them (issue 9), through real sshd processes:
a throwaway HOME with ~/.ssh as a user has it and NO --ssh-config; destinations typed as
alias, user@host:port and the provider's pasted `ssh -p ...` command; accept-new and
UserKnownHostsFile none; an encrypted key; ProxyCommand noise; a jump host."""

import json
import os
import subprocess
import sys

import pexpect
import pytest

from tests.support.user_world import make_home, start_plain_sshd, user_world  # noqa: F401 - fixture
from tests.support import TESTS

GPUTUI = [sys.executable, "-m", "tui"]


def gputui(*args, timeout=90, env=None):
    return subprocess.run(GPUTUI + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL, env=env)


def spawn(*args, timeout=60):
    """gputui on a real terminal (pty), for prompts that need one."""
    return pexpect.spawn(GPUTUI[0], GPUTUI[1:] + list(args), timeout=timeout, encoding="utf-8",
                         env=dict(os.environ), dimensions=(40, 200))


def ledger_hosts():
    r = gputui("ledger", "--json")
    assert r.returncode == 0, r.stderr
    return [row["host"] for row in json.loads(r.stdout)]


def test_alias_from_home_ssh_config_without_flag(user_world):
    r = gputui("status", "mybox", "--simulate", "a100x2", "--remote-dir", user_world.box.remote_dir)
    assert r.returncode == 0, r.stderr
    assert "A100-SXM4-80GB" in r.stdout
    assert ledger_hosts() == ["mybox"]


def test_user_host_port_and_pasted_command_are_one_box(user_world):
    box = user_world.box
    dest = "%s@127.0.0.1:%d" % (user_world.user, box.port)
    common = ["--simulate", "a100x2", "--remote-dir", box.remote_dir, "--json"]
    r = gputui("status", dest, *common)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["gpus"][0]["name"] == "NVIDIA A100-SXM4-80GB"
    # pasted as many words (gputui's options after it) and as one quoted word
    r = gputui("status", "ssh", "-p", str(box.port), "%s@127.0.0.1" % user_world.user, *common)
    assert r.returncode == 0, r.stderr
    r = gputui("status", "ssh -p %d %s@127.0.0.1" % (box.port, user_world.user), *common)
    assert r.returncode == 0, r.stderr
    assert ledger_hosts() == [dest]  # one ledger row for the three spellings


def test_ssh_config_flag_still_works_with_a_redirected_home(user_world):
    box = user_world.box
    r = gputui("status", "testbox", "--ssh-config", box.ssh_config, "--remote-dir", box.remote_dir,
               "--simulate", "idle")
    assert r.returncode == 0, r.stderr


def test_accept_new_records_first_key_and_refuses_a_changed_one(user_world, tmp_path):
    box = user_world.box
    user_world.known_hosts.write_text("")
    with open(user_world.config, "a") as f:
        f.write("  StrictHostKeyChecking accept-new\n")
    r = gputui("status", "mybox", "--simulate", "idle", "--remote-dir", box.remote_dir)
    assert r.returncode == 0, r.stderr  # no terminal, no prompt: accepted as first key
    assert user_world.known_hosts.read_text() == user_world.host_line()
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    pub = (tmp_path / "other.pub").read_text().split()
    user_world.known_hosts.write_text("[127.0.0.1]:%d %s %s\n" % (box.port, pub[0], pub[1]))
    r = gputui("status", "mybox", "--simulate", "idle", "--remote-dir", box.remote_dir)
    assert r.returncode == 2 and "CHANGED" in r.stderr


@pytest.mark.parametrize("value", ["none", "/dev/null"])
def test_known_hosts_none_still_checks_and_asks_once(user_world, value):
    box = user_world.box
    with open(user_world.config, "a") as f:
        f.write("  UserKnownHostsFile %s\n" % value)
    # no terminal: refused, never "no check"
    r = gputui("status", "mybox", "--simulate", "idle", "--remote-dir", box.remote_dir)
    assert r.returncode == 2 and "can't be established" in r.stderr, r.stderr
    assert not os.path.exists(box.remote_dir)
    # a terminal: asked once, trusted for this run (nowhere written), then connected
    child = spawn("status", "mybox", "--simulate", "idle", "--remote-dir", box.remote_dir)
    child.expect("memory for this run only|can't be established")
    child.expect(r"\(yes/no\)\? ")
    child.sendline("yes")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    assert child.before.count("can't be established") == 0  # not asked a second time


def test_encrypted_key_asks_for_its_passphrase_on_the_terminal(user_world):
    box = user_world.box
    subprocess.run(["ssh-keygen", "-q", "-p", "-P", "", "-N", "s3cret-phrase", "-f",
                    str(user_world.key)], check=True)
    r = gputui("status", "mybox", "--simulate", "idle", "--remote-dir", box.remote_dir)
    assert r.returncode == 2 and "passphrase" in r.stderr and "no terminal" in r.stderr, r.stderr
    child = spawn("status", "mybox", "--simulate", "idle", "--remote-dir", box.remote_dir)
    child.expect("Enter passphrase for key '%s'" % user_world.key)
    child.sendline("s3cret-phrase")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    assert "s3cret-phrase" not in child.before  # not echoed


def test_proxy_command_stderr_does_not_leak(user_world):
    box = user_world.box
    relay = os.path.join(TESTS, "support", "tcp_relay.py")
    with open(user_world.config, "a") as f:
        f.write("  ProxyCommand sh -c 'echo stray-proxy-noise >&2; exec %s %s %%h %%p'\n"
                % (sys.executable, relay))
    r = gputui("status", "mybox", "--simulate", "idle", "--remote-dir", box.remote_dir)
    assert r.returncode == 0, r.stderr
    assert "stray-proxy-noise" not in r.stderr + r.stdout


@pytest.fixture
def jump_pair(user_world, tmp_path_factory):
    """The box (conftest sshbox) is reached through a second sshd, `jumpbox`."""
    jump = start_plain_sshd(tmp_path_factory.mktemp("jump"), (
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
        "AuthorizedKeysFile %s\nAllowUsers %s\nAllowTcpForwarding yes\n"
        % (user_world.box.root / "authorized_keys", user_world.user)))
    with open(user_world.config, "a") as f:
        f.write("  ProxyJump jumpbox\nHost jumpbox\n  HostName 127.0.0.1\n  Port %d\n  User %s\n"
                % (jump.port, user_world.user))
    yield user_world, jump
    jump.stop()


def test_unknown_key_on_the_jump_host_names_the_hop(jump_pair):
    world, jump = jump_pair
    box = world.box
    r = gputui("status", "mybox", "--simulate", "idle", "--remote-dir", box.remote_dir)
    assert r.returncode == 2
    assert "jump host jumpbox (127.0.0.1:%d)" % jump.port in r.stderr, r.stderr
    child = spawn("status", "mybox", "--simulate", "idle", "--remote-dir", box.remote_dir)
    child.expect("The authenticity of jump host jumpbox")
    child.expect(r"\(yes/no\)\? ")
    child.sendline("yes")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    assert jump.host_line() in world.known_hosts.read_text()
    # trusted now: no terminal needed, and the box really was reached through the hop
    r = gputui("status", "mybox", "--simulate", "idle", "--remote-dir", box.remote_dir)
    assert r.returncode == 0, r.stderr
    assert "Accepted publickey" in jump.log.read_text()


def test_unknown_key_on_the_final_box_behind_a_jump_names_the_box(jump_pair):
    world, jump = jump_pair
    world.known_hosts.write_text(jump.host_line())
    r = gputui("status", "mybox", "--simulate", "idle", "--remote-dir", world.box.remote_dir)
    assert r.returncode == 2
    assert "can't be established" in r.stderr and "jump host" not in r.stderr, r.stderr


def test_home_without_config_or_keys_fails_clearly(sshbox, tmp_path, monkeypatch):
    world = make_home(tmp_path, None)
    monkeypatch.setenv("HOME", str(world.home))
    r = gputui("status", "mybox")
    assert r.returncode == 2 and "Cannot resolve host mybox" in r.stderr
    r = gputui("status", "nobody@127.0.0.1:%d" % sshbox.port)
    assert r.returncode == 2 and "can't be established" in r.stderr


async def test_connect_timeout_from_the_config_and_not_while_typing(tmp_path):
    """A box that accepts TCP and never speaks: ConnectTimeout from the config decides."""
    import asyncio
    import time

    from tui.remote import ssh

    async def silent(reader, writer):
        await asyncio.sleep(30)
        writer.close()
    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    cfg = tmp_path / "cfg"
    cfg.write_text("Host mute\n  HostName 127.0.0.1\n  Port %d\n  ConnectTimeout 1\n" % port)
    t0 = time.monotonic()
    with pytest.raises(ssh.ConnectError, match="Timed out"):
        await ssh.connect(ssh.Target.parse("mute", ssh_config=str(cfg)))
    assert time.monotonic() - t0 < 10  # 1 s, not gputui's default 15 s
    server.close()


def test_target_options_feed_the_port_watch(user_world):
    from tui.remote import ssh
    opts = ssh.Target.parse("mybox").options()
    assert (opts.host, opts.port) == ("127.0.0.1", user_world.box.port)
    with open(user_world.config, "a") as f:
        f.write("  ProxyJump somewhere\n")
    assert ssh.Target.parse("mybox").options().tunnel  # the watch stays off through a jump


async def test_app_asks_for_an_encrypted_keys_passphrase_in_a_dialog(user_world):
    import asyncio

    from textual.widgets import Input

    from tui.remote import ssh
    from tui.remote.session import LIVE
    from tui.ui.app import GputuiApp
    from tui.ui.screens.modals import PasswordScreen
    subprocess.run(["ssh-keygen", "-q", "-p", "-P", "", "-N", "dialog-phrase", "-f",
                    str(user_world.key)], check=True)
    app = GputuiApp(ssh.Target.parse("mybox"), simulate="idle",
                    remote_dir=user_world.box.remote_dir)
    async with app.run_test(size=(160, 45)) as pilot:
        loop = asyncio.get_running_loop()
        end = loop.time() + 30
        while not (isinstance(app.screen, PasswordScreen) and app.screen.query("Input")):
            assert loop.time() < end
            await pilot.pause(0.05)
        shown = " ".join(str(w.render()) for w in app.screen.query("Label"))
        assert str(user_world.key) in shown
        field = app.screen.query_one(Input)
        assert field.password
        field.value = "dialog-phrase"
        await pilot.press("enter")
        while app.box.state.conn_state != LIVE:
            assert loop.time() < end
            await pilot.pause(0.05)
        await pilot.press("q")


def test_accept_new_with_hash_known_hosts_writes_a_hashed_line(user_world):
    box = user_world.box
    user_world.known_hosts.write_text("")
    with open(user_world.config, "a") as f:
        f.write("  StrictHostKeyChecking accept-new\n  HashKnownHosts yes\n")
    for _ in range(2):  # the second connect finds the hashed line
        r = gputui("status", "mybox", "--simulate", "idle", "--remote-dir", box.remote_dir)
        assert r.returncode == 0, r.stderr
    text = user_world.known_hosts.read_text()
    assert text.startswith("|1|") and text.count("\n") == 1 and "127.0.0.1" not in text


def test_certificate_file_from_the_config_logs_in(user_world, tmp_path_factory):
    """A CA-signed user certificate named by CertificateFile (not the -cert.pub default)."""
    world = user_world
    root = tmp_path_factory.mktemp("ca")
    ca = root / "ca"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(ca)], check=True)
    subprocess.run(["ssh-keygen", "-q", "-s", str(ca), "-I", "gt-a", "-n", world.user,
                    str(world.key) + ".pub"], check=True)
    os.rename(str(world.key) + "-cert.pub", str(world.ssh_dir / "signed.pub"))
    sshd = start_plain_sshd(root / "sshd", (
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
        "AuthorizedKeysFile none\nTrustedUserCAKeys %s.pub\nAllowUsers %s\n" % (ca, world.user)))
    try:
        with open(world.known_hosts, "a") as f:
            f.write(sshd.host_line())
        with open(world.config, "a") as f:
            f.write("Host certbox\n  HostName 127.0.0.1\n  Port %d\n  User %s\n"
                    "  IdentityFile ~/.ssh/id_ed25519\n  CertificateFile ~/.ssh/signed.pub\n"
                    % (sshd.port, world.user))
        r = gputui("status", "certbox", "--simulate", "idle", "--remote-dir", world.box.remote_dir)
        assert r.returncode == 0, r.stderr
        assert "Accepted publickey" in sshd.log.read_text() and "CA ED25519" in sshd.log.read_text()
    finally:
        sshd.stop()


async def test_app_trust_dialog_names_the_jump_host(jump_pair):
    import asyncio

    from tui.remote import ssh
    from tui.remote.session import LIVE
    from tui.ui.app import GputuiApp
    from tui.ui.screens.modals import HostKeyScreen
    world, jump = jump_pair
    app = GputuiApp(ssh.Target.parse("mybox"), simulate="idle", remote_dir=world.box.remote_dir)
    async with app.run_test(size=(160, 45)) as pilot:
        loop = asyncio.get_running_loop()
        end = loop.time() + 30
        while not (isinstance(app.screen, HostKeyScreen) and app.screen.query("Static")):
            assert loop.time() < end
            await pilot.pause(0.05)
        shown = " ".join(str(w.render()) for w in app.screen.query("Static"))
        assert "jump host jumpbox (127.0.0.1:%d)" % jump.port in shown
        await pilot.press("y")
        while app.box.state.conn_state != LIVE:
            assert loop.time() < end
            await pilot.pause(0.05)
        await pilot.press("q")
    assert jump.host_line() in world.known_hosts.read_text()


def test_login_refused_by_the_jump_host_names_the_hop_and_is_final(jump_pair):
    world, jump = jump_pair
    with open(world.known_hosts, "a") as f:
        f.write(jump.host_line())
    world.config.write_text(world.config.read_text().replace(
        "ProxyJump jumpbox", "ProxyJump gt_a_nouser@jumpbox"))
    r = gputui("status", "mybox", "--simulate", "idle", "--remote-dir", world.box.remote_dir)
    assert r.returncode == 2
    assert "Authentication failed for jump host gt_a_nouser@jumpbox" in r.stderr, r.stderr
    assert "as gt_a_nouser" in r.stderr and "server offers publickey" in r.stderr


def test_a_key_recorded_only_for_the_ip_is_unknown_not_changed(user_world, tmp_path):
    """CheckHostIP no (OpenSSH's default): providers recycle IPs; another name's old key
    at the same address is not a 'changed' key for this name."""
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    pub = (tmp_path / "other.pub").read_text().split()
    user_world.known_hosts.write_text("[127.0.0.1]:%d %s %s\n" % (user_world.box.port, pub[0], pub[1]))
    user_world.config.write_text(user_world.config.read_text().replace(
        "HostName 127.0.0.1", "HostName localhost"))
    r = gputui("status", "mybox", "--simulate", "idle", "--remote-dir", user_world.box.remote_dir)
    assert r.returncode == 2
    assert "can't be established" in r.stderr and "CHANGED" not in r.stderr, r.stderr
