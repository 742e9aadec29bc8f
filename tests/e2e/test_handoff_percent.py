"""A hand-off's ssh (tmux attach, nvitop) with $HOME redirected gets the key and known_hosts
files gputui read as `-o IdentityFile=PATH`: ssh expands %-tokens in those values again, so
a key whose path holds a '%' (written `%%` in ~/.ssh/config) must reach ssh as `%%`, or ssh
reads another file and the hand-off is refused. Checked by a real login through sshd."""

import os
import shutil
import subprocess

import pytest

from tests.support.user_world import make_home
from tui.remote import ssh

pytestmark = pytest.mark.skipif(shutil.which("ssh") is None, reason="needs OpenSSH's ssh")


def test_a_key_path_with_a_percent_sign_still_logs_the_hand_off_in(sshbox, tmp_path, monkeypatch):
    world = make_home(tmp_path, sshbox)
    keys = world.home / "keys 100%"
    keys.mkdir()
    shutil.move(str(world.key), str(keys / "id_%d"))
    world.config.write_text(world.config.read_text().replace(
        "IdentityFile ~/.ssh/id_ed25519", 'IdentityFile "~/keys 100%%/id_%%d"'))
    monkeypatch.setenv("HOME", str(world.home))
    argv = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
            *ssh.Target.parse("mybox").ssh_args(), "--", "mybox", "echo", "handed-off"]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 0 and p.stdout.strip() == "handed-off", (argv, p.stderr)
    assert os.path.exists(keys / "id_%d")
