"""The terminal hand-offs (tmux attach, nvitop) run `ssh` the way gputui connected (issue 23):
with $HOME redirected away from the passwd home, ssh would read the passwd home's config, keys
and known_hosts and silently reach nothing (or another box). `ssh -G` with the hand-off's own
options is the oracle: it must resolve the host, port, user, keys and known_hosts gputui used."""

import os
import shutil
import subprocess
import sys

import pytest

from tui.core.jobs.tmux_rows import attach_argv
from tui.core.nvitop_commands import terminal_argv
from tui.remote import ssh

resolve_mod = sys.modules["tui.remote.ssh.resolve"]  # the package's `resolve` is the function
target_mod = sys.modules["tui.remote.ssh.target"]

pytestmark = pytest.mark.skipif(shutil.which("ssh") is None, reason="needs OpenSSH's ssh -G")


def ssh_g(args, host):
    """OpenSSH's own view of `ssh ARGS HOST`, read independently of gputui's parser."""
    out = subprocess.run(["ssh", "-G", *args, "--", host], capture_output=True, text=True,
                         check=True, stdin=subprocess.DEVNULL).stdout
    seen = {}
    for line in out.splitlines():
        key, _sep, value = line.partition(" ")
        seen.setdefault(key.lower(), []).append(value)
    return seen


def handoff_args(argv, host):
    """The ssh options of a hand-off argv (between `ssh -t` and `-- HOST`)."""
    assert argv[:2] == ["ssh", "-t"]
    end = argv.index("--")
    assert argv[end + 1] == host
    return argv[2:end]


@pytest.fixture
def redirected_home(tmp_path, monkeypatch):
    """A throwaway HOME with its own ssh config, key and known_hosts (the passwd home is not it)."""
    home = tmp_path / "my home"  # a blank in the path: ssh option values must keep it one word
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "config").write_text(
        "Host gpubox\n  HostName 127.0.0.7\n  Port 2207\n  User trainer\n"
        "  IdentityFile ~/.ssh/id_gpubox\n  UserKnownHostsFile ~/.ssh/gpubox_known\n")
    (home / ".ssh" / "id_gpubox").write_text("not a real key\n")
    monkeypatch.setenv("HOME", str(home))
    assert resolve_mod.home_redirected()
    return home


@pytest.mark.parametrize("build", [
    lambda t: attach_argv(t, "$3"),
    lambda t: terminal_argv(t, "nvitop"),
], ids=["tmux attach", "nvitop"])
def test_handoff_reaches_the_box_gputui_resolved(redirected_home, build):
    target = ssh.Target.parse("gpubox")
    used = resolve_mod.resolve(target)  # what gputui itself connects with
    assert (used.hostname, used.port, used.user) == ("127.0.0.7", 2207, "trainer")
    seen = ssh_g(handoff_args(build(target), "gpubox"), "gpubox")
    assert seen["hostname"] == ["127.0.0.7"] and seen["port"] == ["2207"]
    assert seen["user"] == ["trainer"]
    known = str(redirected_home / ".ssh" / "gpubox_known")
    assert used.user_known_hosts == [known]
    # ssh -G prints the files it will read; a quoted path comes back as one
    assert seen["userknownhostsfile"][0].strip('"') == known
    keys = [k.strip('"') for k in seen.get("identityfile", [])]
    assert str(redirected_home / ".ssh" / "id_gpubox") in keys


def test_an_ssh_config_given_to_gputui_is_handed_on(redirected_home, tmp_path):
    cfg = tmp_path / "cfg"
    cfg.write_text("Host other\n  HostName 127.0.0.8\n  Port 2208\n")
    target = ssh.Target.parse("other", ssh_config=str(cfg))
    argv = attach_argv(target, "$1")
    assert argv[argv.index("-F") + 1] == str(cfg)
    seen = ssh_g(handoff_args(argv, "other"), "other")
    assert seen["hostname"] == ["127.0.0.8"] and seen["port"] == ["2208"]


def test_without_a_redirected_home_the_user_options_pass_as_given(monkeypatch):
    monkeypatch.setattr(resolve_mod, "home_redirected", lambda: False)
    monkeypatch.setattr(target_mod, "home_redirected", lambda: False)
    target = ssh.Target.parse(["-p", "2200", "-l", "u", "host.example"])
    assert target.ssh_args() == ["-p", "2200", "-l", "u"]  # no ssh -G run, nothing added
    assert os.path.basename(attach_argv(target, "$1")[0]) == "ssh"


def test_a_config_ssh_refuses_still_gives_a_hand_off(redirected_home):
    (redirected_home / ".ssh" / "config").write_text("Host gpubox\n  NoSuchOption yes\n")
    argv = attach_argv(ssh.Target.parse("gpubox"), "$1")  # ssh itself will say what is wrong
    assert argv[argv.index("-F") + 1] == str(redirected_home / ".ssh" / "config")
