"""Destinations as provider consoles and `ssh` show them -> one Destination and one key."""

import pytest

from tui.core.destination import Destination, DestinationError, parse_destination

D = Destination


@pytest.mark.parametrize("argv,expected", [
    (["mybox"], D("mybox")),
    (["root@connect.example.com"], D("connect.example.com", user="root")),
    (["root@connect.example.com:38211"], D("connect.example.com", user="root", port=38211)),
    (["connect.example.com:38211"], D("connect.example.com", port=38211)),
    (["ssh://root@connect.example.com:38211"], D("connect.example.com", user="root", port=38211)),
    (["ssh://root@connect.example.com/"], D("connect.example.com", user="root")),
    (["ssh://box"], D("box")),
    (["-p", "38211", "root@connect.example.com"], D("connect.example.com", user="root", port=38211)),
    (["root@connect.example.com", "-p", "38211"], D("connect.example.com", user="root", port=38211)),
    (["-p38211", "root@h"], D("h", user="root", port=38211)),
    (["ssh", "-p", "38211", "root@connect.example.com"],
     D("connect.example.com", user="root", port=38211)),
    (["ssh -p 38211 root@connect.example.com"], D("connect.example.com", user="root", port=38211)),
    (["/usr/bin/ssh root@h"], D("h", user="root")),
    (["ssh -i ~/.ssh/k -i 'my key' -p 2 u@h"], D("h", user="u", port=2, identity_files=("~/.ssh/k", "my key"))),
    (["-l", "alice", "h"], D("h", user="alice")),
    (["-l", "alice", "bob@h"], D("h", user="alice")),  # ssh: -l wins over user@
    (["-J", "jump@bastion:2200", "u@inner"], D("inner", user="u", jump="jump@bastion:2200")),
    (["-o", "StrictHostKeyChecking=accept-new", "h"],
     D("h", options=(("StrictHostKeyChecking", "accept-new"),))),
    (["-oConnectTimeout 5", "h"], D("h", options=(("ConnectTimeout", "5"),))),
    (["-o", "Port=2222", "-o", "User=root", "h"], D("h", user="root", port=2222)),
    (["-F", "/tmp/cfg", "alias"], D("alias", config="/tmp/cfg")),
    (["[::1]:2222"], D("::1", port=2222)),
    (["root@[fe80::1]:22"], D("fe80::1", user="root", port=22)),
    (["::1"], D("::1")),
    (["a.b-c_d.example"], D("a.b-c_d.example")),
    (["user@host@h"], D("h", user="user@host")),
])
def test_parses(argv, expected):
    assert parse_destination(argv) == expected


@pytest.mark.parametrize("argv,message", [
    ([], "no box given"),
    (["ssh"], "no box given"),
    (["-p", "2222"], "no destination"),
    (["-p", "x", "h"], "not a port number"),
    (["h:0"], "not a port number"),
    (["h:99999"], "not a port number"),
    (["-L", "8080:localhost:8080", "root@h"], "port forwarding"),
    (["ssh -p 22 root@h -L 8080:localhost:8080"], "-L"),
    (["-t", "h"], "-t"),
    (["h", "nvidia-smi"], "cannot be given here"),
    (["-p"], "needs a value"),
    (["@h"], "empty user"),
    (["u@"], "no host"),
    (["-o", "novalue", "h"], "Key=Value"),
    (["ssh://h/path"], "no path"),
    (["[::1"], "unclosed"),
    (["ssh 'unbalanced"], "cannot split"),
    (["h;rm"], "not a host name"),
    (["u@h$(id)"], "not a host name"),
    (["ssh://-oProxyCommand"], "not a host name"),
])
def test_errors_say_what_to_change(argv, message):
    with pytest.raises(DestinationError, match=message):
        parse_destination(argv)


def test_same_box_typed_several_ways_has_one_key():
    forms = [["ssh -p 38211 root@connect.example.com"],
             ["ssh", "-p", "38211", "root@connect.example.com"],
             ["root@connect.example.com:38211"],
             ["ssh://root@connect.example.com:38211"],
             ["-l", "root", "connect.example.com:38211"],
             ["-i", "~/.ssh/other", "-p", "38211", "root@connect.example.com"]]
    keys = {parse_destination(f).key() for f in forms}
    assert keys == {"root@connect.example.com:38211"}
    assert parse_destination(["mybox"]).key() == "mybox"
    assert parse_destination(["root@h"]).key() == parse_destination(["root@h:22"]).key() == "root@h"
    assert parse_destination(["[::1]:2222"]).key() == "[::1]:2222"
    assert parse_destination(["h:2222"]).key() == "h:2222"


def test_ssh_args_round_trip():
    d = parse_destination(["ssh -F /c -p 2 -l u -i k -J j -o ConnectTimeout=3 h"])
    assert d.ssh_args() == ["-F", "/c", "-p", "2", "-l", "u", "-i", "k", "-J", "j",
                            "-o", "ConnectTimeout=3"]
    assert parse_destination(d.ssh_args() + [d.host]) == d
