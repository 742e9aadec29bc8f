"""Issue 23: IPv6 labels keep their brackets ("user@[::1]:39585", not "user@::1:39585")."""

import socket
import subprocess
import sys

import pytest

from tui.remote.ssh.known_hosts import host_port


@pytest.mark.parametrize("host, port, label", [
    ("::1", 39585, "[::1]:39585"),
    ("fe80::1%eth0", 2222, "[fe80::1%eth0]:2222"),
    ("::1", 22, "::1"),
    ("::1", None, "::1"),
    ("10.0.0.2", 2222, "10.0.0.2:2222"),
    ("box.example", 22, "box.example"),
])
def test_host_port(host, port, label):
    assert host_port(host, port) == label


def test_refused_ipv6_connect_names_the_box_with_brackets():
    try:
        s = socket.socket(socket.AF_INET6)
        s.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback here")
    port = s.getsockname()[1]
    s.close()  # nothing listens there now: the connect is refused
    r = subprocess.run([sys.executable, "-m", "tui", "status", "root@[::1]:%d" % port],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    assert r.returncode != 0
    assert "[::1]:%d" % port in r.stderr and "::1:%d" % port not in r.stderr.replace("[::1]:", "")
