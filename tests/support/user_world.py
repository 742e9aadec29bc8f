"""Fixtures shaped like a real user's laptop and rented boxes (issue 9).

- ``user_world``: a throwaway HOME (HOME is monkeypatched) with ~/.ssh/config holding an
  alias, ~/.ssh/id_ed25519 and ~/.ssh/known_hosts exactly as a user has them, for the
  conftest ``sshbox``. Tests then run `gputui` with NO --ssh-config.
- ``pw_box``: a password-login sshd (AutoDL style) for a real local user ``gt_a_pw`` (per xdist
  worker: ``gt_a_pw_gw3``) with a password in /etc/shadow (needs root; skipped otherwise).
- ``start_plain_sshd``: a second sshd for jump-host tests.
"""

import os
import pwd
import shutil
import subprocess

import pytest

from tests.support import per_worker
from tests.support.sshd import SSHD, keygen, launch_sshd, stop_daemon

PW_USER = per_worker("gt_a_pw")
PW_PASSWORD = "gt-a-Corr3ct-horse"


class World:
    def __init__(self, home, box):
        self.home, self.box = home, box
        self.ssh_dir = home / ".ssh"
        self.config = self.ssh_dir / "config"
        self.key = self.ssh_dir / "id_ed25519"
        self.known_hosts = self.ssh_dir / "known_hosts"
        self.user = pwd.getpwuid(os.getuid()).pw_name

    def host_line(self, box=None):
        box = box or self.box
        pub = (box.host_key.parent / (box.host_key.name + ".pub")).read_text().split()
        return "[127.0.0.1]:%d %s %s\n" % (box.port, pub[0], pub[1])


def make_home(root, box, alias_extra=""):
    """HOME with ~/.ssh as a user has it: alias, default key, known_hosts with the box."""
    home = root / "home"
    ssh_dir = home / ".ssh"
    ssh_dir.mkdir(parents=True)
    os.chmod(ssh_dir, 0o700)
    world = World(home, box)
    if box is not None:
        shutil.copy(box.user_key, world.key)
        shutil.copy(str(box.user_key) + ".pub", str(world.key) + ".pub")
        os.chmod(world.key, 0o600)
        world.known_hosts.write_text(world.host_line())
        world.config.write_text(
            "Host mybox\n  HostName 127.0.0.1\n  Port %d\n  User %s\n"
            "  IdentityFile ~/.ssh/id_ed25519\n%s" % (box.port, world.user, alias_extra))
    return world


@pytest.fixture
def user_world(sshbox, tmp_path_factory, monkeypatch):
    world = make_home(tmp_path_factory.mktemp("laptop"), sshbox)
    monkeypatch.setenv("HOME", str(world.home))
    return world


class PlainSshd:
    def __init__(self, root, port, proc, host_key, log):
        self.root, self.port, self.proc, self.host_key, self.log = root, port, proc, host_key, log

    def host_line(self):
        pub = (self.root / "host_ed25519.pub").read_text().split()
        return "[127.0.0.1]:%d %s %s\n" % (self.port, pub[0], pub[1])

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def start_plain_sshd(root, body):
    """sshd on 127.0.0.1 with exactly `body` as its auth settings (first value wins)."""
    if not os.path.exists(SSHD):
        pytest.skip("OpenSSH sshd is not installed")
    root.mkdir(parents=True, exist_ok=True)
    host_key = root / "host_ed25519"
    keygen(host_key)
    log = root / "sshd.log"
    cfg = root / "sshd_config"
    # body first: in sshd_config the first value wins
    proc, port = launch_sshd(cfg, log, lambda port: (
        "%s\nPort %d\nListenAddress 127.0.0.1\nHostKey %s\nPidFile %s/sshd.pid\n"
        "UsePAM no\nStrictModes no\nSubsystem sftp internal-sftp\nLogLevel VERBOSE\n"
        % (body, port, host_key, root)))
    return PlainSshd(root, port, proc, host_key, log)


def make_pw_user(home):
    """A real local user with a password (sshd without PAM checks /etc/shadow)."""
    if os.geteuid() != 0:
        pytest.skip("creating a password user needs root")
    if shutil.which("useradd") is None or shutil.which("chpasswd") is None:
        pytest.skip("useradd/chpasswd not installed")
    subprocess.run(["userdel", PW_USER], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    subprocess.run(["useradd", "-M", "-d", str(home), "-s", "/bin/sh", PW_USER], check=True)
    subprocess.run(["chpasswd"], input="%s:%s\n" % (PW_USER, PW_PASSWORD), text=True, check=True)
    home.mkdir(parents=True, exist_ok=True)
    ent = pwd.getpwnam(PW_USER)
    os.chown(home, ent.pw_uid, ent.pw_gid)
    os.chmod(home, 0o755)
    return ent


def kill_user_processes(uid):
    """What the tests started as the throwaway user (simulated jobs), each by its pid."""
    import psutil
    for p in psutil.process_iter(["uids"]):
        try:
            if p.info["uids"] and p.info["uids"].real == uid:
                p.kill()
        except psutil.Error:
            pass


class PwBox:
    def __init__(self, sshd, home, remote_dir):
        self.sshd, self.home, self.remote_dir = sshd, home, remote_dir
        self.port = sshd.port
        self.user = PW_USER
        self.password = PW_PASSWORD
        self.dest = "%s@127.0.0.1:%d" % (PW_USER, sshd.port)


def _box(tmp_path_factory, auth_body):
    import pathlib
    import tempfile
    root = tmp_path_factory.mktemp("pwbox")
    # the box user must reach its home: pytest's tmp tree is root-only (0700)
    home = pathlib.Path(tempfile.mkdtemp(prefix=PW_USER + "_home_"))
    os.chmod(home, 0o755)
    ent = make_pw_user(home)
    sshd = start_plain_sshd(root / "sshd", auth_body + "AllowUsers %s\nSetEnv TMUX_TMPDIR=%s\n"
                            % (PW_USER, home))
    remote_dir = home / "remote"
    return PwBox(sshd, home, str(remote_dir)), ent


def _stop_box(box, ent):
    stop_daemon(box.remote_dir)
    kill_user_processes(ent.pw_uid)
    box.sshd.stop()
    subprocess.run(["userdel", PW_USER], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    shutil.rmtree(box.home, ignore_errors=True)


@pytest.fixture
def pw_box(tmp_path_factory):
    """Password login allowed, public keys too (so an installed key works next time), and
    no key authorized yet: the first connect needs the password."""
    box, ent = _box(tmp_path_factory, "PasswordAuthentication yes\nKbdInteractiveAuthentication no\n"
                    "PubkeyAuthentication yes\nAuthorizedKeysFile .ssh/authorized_keys\n")
    yield box
    _stop_box(box, ent)


@pytest.fixture
def kbd_box(tmp_path_factory):
    """Keyboard-interactive only, through PAM (the server words the prompt)."""
    if not os.path.exists("/etc/pam.d/sshd"):
        pytest.skip("no PAM configuration for sshd")
    box, ent = _box(tmp_path_factory, "UsePAM yes\nPasswordAuthentication no\n"
                    "KbdInteractiveAuthentication yes\nPubkeyAuthentication no\n")
    yield box
    _stop_box(box, ent)
