"""The head start of `gputui status` (issue 38, tui.core.ssh_g): what it runs and when
tui.remote.ssh may take its `ssh -G` answer and its socket instead of doing the same again."""

import socket
import stat
import subprocess
import sys

import pytest

from tui.core import ssh_g
from tui.core.destination import parse_destination


def done(stdout, rc=0, stderr=""):
    return subprocess.CompletedProcess(["ssh", "-G"], rc, stdout, stderr)


@pytest.fixture(autouse=True)
def no_head_start():
    ssh_g.discard()
    yield
    ssh_g.discard()


def test_direct_address_is_hostname_port_and_connect_timeout():
    assert ssh_g.direct_address(done("hostname 10.0.0.5\nport 2222\nconnecttimeout 7\n")) == (("10.0.0.5", 2222), 7)
    assert ssh_g.direct_address(done("hostname h\nport 22\nconnecttimeout none\nproxyjump none\n"
                                     "proxycommand none\n")) == (("h", 22), ssh_g.CONNECT_TIMEOUT)


@pytest.mark.parametrize("out", ["hostname h\nport 22\nproxyjump j@bastion\n",
                                 "hostname h\nport 22\nproxycommand nc %h %p\n",
                                 "port 22\n", "hostname h\nport x\n"])
def test_no_early_socket_through_a_jump_a_proxy_command_or_an_odd_answer(out):
    assert ssh_g.direct_address(done(out)) == (None, 0)


def test_no_early_socket_when_ssh_refused_the_config():
    assert ssh_g.direct_address(done("", rc=255, stderr="bad config")) == (None, 0)
    assert ssh_g.direct_address(OSError("no ssh")) == (None, 0)


@pytest.mark.parametrize("words, config", [
    (["box"], None), (["root@10.1.2.3:2200"], "/tmp/cfg"),
    (["ssh", "-p", "2", "-l", "me", "-i", "/k", "-J", "j", "-o", "ConnectTimeout=3", "h"], None),
    (["ssh", "-F", "/etc/x", "h"], None)])
def test_its_argv_is_the_one_resolve_runs(words, config, monkeypatch):
    from tui.remote import ssh
    resolve_mod = sys.modules["tui.remote.ssh.resolve"]
    ran = []

    def fake(argv):
        ran.append(argv)
        return "hostname h\nport 22\nuser u\n"
    monkeypatch.setattr(resolve_mod, "run_ssh_g", fake)
    ssh.resolve(ssh.Target.parse(words, ssh_config=config), binary="/usr/bin/ssh")
    dest = parse_destination(words)
    dest.config = config or dest.config
    assert ssh_g.ssh_g_argv("/usr/bin/ssh", dest) == ran[0]


def fake_ssh(tmp_path, out):
    path = tmp_path / "ssh"
    path.write_text("#!/bin/sh\ncat <<'EOF'\n%sEOF\n" % out)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


@pytest.mark.skipif(sys.platform == "win32", reason="a shell script as ssh")
def test_taken_once_for_the_same_argv_and_address(tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    binary = fake_ssh(tmp_path, "hostname 127.0.0.1\nport %d\n" % port)
    head = ssh_g.begin(parse_destination(["box"]), binary)
    assert ssh_g.take_ssh_g(head.argv + ["other"]) is None  # another command: not this one's
    got = ssh_g.take_ssh_g(head.argv)
    assert got.returncode == 0 and "port %d" % port in got.stdout
    assert ssh_g.take_ssh_g(head.argv) is None  # once
    assert ssh_g.take_socket("127.0.0.1", port + 1) == (None, None)  # another address
    head = ssh_g.begin(parse_destination(["box"]), binary)
    ssh_g.take_ssh_g(head.argv)
    sock, error = ssh_g.take_socket("127.0.0.1", port)
    assert error is None and sock.getpeername()[1] == port
    sock.close()
    assert ssh_g.take_socket("127.0.0.1", port) == (None, None)  # once
    server.close()


@pytest.mark.skipif(sys.platform == "win32", reason="a shell script as ssh")
def test_a_refused_connection_is_handed_over_as_its_error(tmp_path):
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    head = ssh_g.begin(parse_destination(["box"]), fake_ssh(tmp_path, "hostname 127.0.0.1\nport %d\n" % port))
    ssh_g.take_ssh_g(head.argv)
    sock, error = ssh_g.take_socket("127.0.0.1", port)
    assert sock is None and isinstance(error, ConnectionRefusedError)


def test_the_socket_waits_for_its_ssh_g_to_be_taken(tmp_path):
    """A resolve that ran its own `ssh -G` (another argv) gets no socket from the head start."""
    ssh_g.begin(parse_destination(["box"]), fake_ssh(tmp_path, "hostname 127.0.0.1\nport 1\n"))
    assert ssh_g.take_socket("127.0.0.1", 1) == (None, None)
    assert ssh_g._head is None


def test_no_ssh_binary_no_head_start():
    assert ssh_g.begin(parse_destination(["box"]), None) is None
    assert ssh_g.take_ssh_g(["ssh", "-G", "--", "box"]) is None
