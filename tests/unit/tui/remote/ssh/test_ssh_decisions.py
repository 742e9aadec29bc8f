"""The small decisions behind a connection: ciphers, keepalives, host-key policy,
known_hosts files, tokens, the CLI's word split, the auth-failure line."""

import pytest

from tui.cli import split_box_argv
from tui.remote import ssh


def res(**kw):
    base = dict(original="b", hostname="b", port=22, user="u", identity_files=[])
    base.update(kw)
    return ssh.Resolved(**base)


def test_ciphers_keep_the_users_set_in_gputuis_speed_order():
    default = ["chacha20-poly1305@openssh.com", "aes128-ctr", "aes192-ctr", "aes256-ctr",
               "aes128-gcm@openssh.com", "aes256-gcm@openssh.com"]
    assert ssh.merged_ciphers(default)[:2] == ["aes128-gcm@openssh.com", "aes256-gcm@openssh.com"]
    assert set(ssh.merged_ciphers(default)) == set(default)
    assert ssh.merged_ciphers(["aes256-ctr", "aes256-gcm@openssh.com"]) == [
        "aes256-gcm@openssh.com", "aes256-ctr"]
    assert ssh.merged_ciphers(["aes128-cbc", "aes256-ctr"]) == ["aes256-ctr", "aes128-cbc"]
    # nothing asyncssh can speak: gputui's list rather than an empty one
    assert ssh.merged_ciphers(["no-such-cipher"]) == list(ssh.ENCRYPTION_ALGS)


def test_keepalive_is_the_users_when_set():
    assert ssh.keepalive(res()) == (ssh.KEEPALIVE_INTERVAL, ssh.KEEPALIVE_COUNT_MAX)
    assert ssh.keepalive(res(server_alive_interval=60, server_alive_count_max=5)) == (60, 5)


@pytest.mark.parametrize("strict,policy", [
    ("ask", "ask"), ("yes", "refuse"), ("accept-new", "accept"), ("no", "accept"),
    ("off", "accept"), ("weird", "ask")])
def test_host_key_policy(strict, policy):
    assert ssh.host_key_policy(strict) == policy


def test_known_hosts_none_reads_global_files_and_writes_nowhere():
    r = res(user_known_hosts=["none"], global_known_hosts=["/etc/ssh/ssh_known_hosts"])
    assert ssh.known_hosts_paths(r) == (["/etc/ssh/ssh_known_hosts"], None)
    r = res(user_known_hosts=["/dev/null"], global_known_hosts=[])
    assert ssh.known_hosts_paths(r) == ([], None)
    r = res(user_known_hosts=["/a", "/b"], global_known_hosts=["/g"])
    assert ssh.known_hosts_paths(r) == (["/a", "/b", "/g"], "/a")


def test_tokens():
    ctx = ssh.token_context("box", "h.example", 2022, "ann", "j1")
    assert ssh.expand_tokens("%h:%p:%r:%n:%%:%j", ctx) == "h.example:2022:ann:box:%:j1"
    assert len(ctx["C"]) == 40
    with pytest.raises(ssh.ConnectError, match="unknown token %z"):
        ssh.expand_tokens("%z", ctx)


@pytest.mark.parametrize("argv,expected", [
    (["status", "ssh", "-p", "2", "root@h", "--json"],
     ["status", "--json", "--", "ssh", "-p", "2", "root@h"]),
    (["status", "-p", "2", "root@h", "--simulate", "a100x2", "--ssh-config=/c"],
     ["status", "--simulate", "a100x2", "--ssh-config=/c", "--", "-p", "2", "root@h"]),
    (["--log", "/tmp/l", "connect", "ssh -p 2 root@h"],
     ["--log", "/tmp/l", "connect", "--", "ssh -p 2 root@h"]),
    (["status", "mybox"], ["status", "--", "mybox"]),
    (["ledger", "--json"], ["ledger", "--json"]),
    (["status", "--", "-p", "2", "h"], ["status", "--", "-p", "2", "h"]),
])
def test_cli_word_split(argv, expected):
    assert split_box_argv(argv) == expected


def test_cli_rejects_a_bad_destination_clearly(capsys):
    from tui.cli import EXIT_USAGE, main
    assert main(["status", "ssh", "-L", "1:h:1", "root@h"]) == EXIT_USAGE
    assert "-L" in capsys.readouterr().err


def test_auth_failure_line_names_methods():
    line = ssh.auth_failure("root@h:2", ["publickey", "password"], ["agent key"],
                            ["a password needed, but no terminal"])
    assert "server offers publickey, password" in line and "tried agent key" in line
    assert "no terminal" in line
    assert "tried nothing" in ssh.auth_failure("u@h", ["publickey"], [], [])


def test_hashed_known_hosts_name_matches_what_ssh_keygen_finds(tmp_path):
    import subprocess

    import asyncssh
    key = asyncssh.generate_private_key("ssh-ed25519")
    line = ssh._key_line("[127.0.0.1]:2222", key, hashed=True)
    assert line.startswith("|1|") and "127.0.0.1" not in line
    known = tmp_path / "known_hosts"
    known.write_text(line)
    # OpenSSH's own lookup finds the hashed entry (and asyncssh matches it too)
    out = subprocess.run(["ssh-keygen", "-F", "[127.0.0.1]:2222", "-f", str(known)],
                         stdout=subprocess.PIPE, text=True)
    assert out.returncode == 0 and "found" in out.stdout
    trusted = asyncssh.match_known_hosts(asyncssh.import_known_hosts(line), "127.0.0.1",
                                         "127.0.0.1", 2222)[0]
    assert len(trusted) == 1


def test_an_ssh_without_dash_G_falls_back_to_asyncssh(tmp_path):
    old = tmp_path / "ssh"
    old.write_text("#!/bin/sh\necho 'ssh: illegal option -- G' >&2\nexit 255\n")
    old.chmod(0o755)
    cfg = tmp_path / "cfg"
    cfg.write_text("Host box\n  HostName 10.0.0.9\n  Port 2201\n")
    res = ssh.resolve(ssh.Target.parse("box", ssh_config=str(cfg)), binary=str(old))
    assert (res.hostname, res.port) == ("10.0.0.9", 2201)


def test_a_config_ssh_refuses_is_not_retried(tmp_path):
    cfg = tmp_path / "cfg"
    cfg.write_text("Host box\n  NoSuchKeyword yes\n")
    with pytest.raises(ssh.NotRetryable, match="cannot be used"):
        ssh.resolve(ssh.Target.parse("box", ssh_config=str(cfg)))
