"""sshd boxes shaped like the awkward ones providers hand out (issue 9 §4, §5):

* a PTY-only proxy (RunPod's basic SSH): ForceCommand grants only an interactive shell
  on a terminal, refuses commands with "Error: Your SSH client doesn't support PTY",
  and there is no SFTP subsystem;
* a user whose ~/.bashrc talks (banner without newline, conda chatter, title escapes)
  even for non-interactive shells, with OpenSSH's sftp-server run through that shell;
* a user whose ~/.cache is read-only (or whose home is not writable).

Users are real (`useradd`, prefix gt_b_, suffixed per xdist worker), so these need root and skip
without it; the users this process created are deleted when the test session ends.
"""

import os
import pwd
import shutil
import subprocess

import pytest

from tests.support import per_worker
from tests.support.sshd import SSHD, SshBox, box_home, keygen, launch_sshd, stop_daemon

SFTP_SERVER = "/usr/lib/openssh/sftp-server"

PTY_ONLY = r"""#!/bin/sh
# What RunPod's basic SSH proxy does: a shell on a terminal, or nothing.
if [ -n "$SSH_ORIGINAL_COMMAND" ] || [ -z "$SSH_TTY" ]; then
  echo "Error: Your SSH client doesn't support PTY"
  exit 1
fi
printf 'Welcome to your pod\r\n\033]0;pod-7f3a\007'
# an interactive bash with a chatty rc file and a coloured prompt with a title escape
exec /bin/bash --rcfile "$(dirname "$0")/pod_bashrc" -i
"""

POD_BASHRC = r"""
echo "(base) conda activate: environment 'base' is ready"
printf 'no newline here -> '
PS1='\[\e]0;\u@pod: \w\a\]\[\e[32m\](base) root@pod:\w\$\[\e[0m\] '
"""


def write_pty_only(root, script=PTY_ONLY):
    """The ForceCommand script (and its shell's rc file) in root; -> its path."""
    path = root / "pty_only.sh"
    path.write_text(script)
    path.chmod(0o755)
    (root / "pod_bashrc").write_text(POD_BASHRC)
    return path

# Printed by every bash that sshd starts, interactive or not: no newline before the
# probe's first line, a title escape, conda-style chatter on stdout and stderr.
CHATTY_BASHRC = r"""
printf '\033]0;root@container: ~\007'
echo "(base) conda activate: environment 'base' is ready"
echo "conda warning: something on stderr" >&2
printf 'Welcome to the GPU cloud! No newline here -> '
"""


def start_box(root, users, extra_config="", subsystem="internal-sftp"):
    """A sshd for `users` (first one in the ssh_config alias `testbox`)."""
    if not os.path.exists(SSHD):
        pytest.skip("OpenSSH sshd is not installed (apt install openssh-server)")
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)  # other users' sshd sessions read nothing here but must reach scripts
    host_key, user_key = root / "host_ed25519", root / "id_ed25519"
    keygen(host_key)
    keygen(user_key)
    auth = root / "authorized_keys"
    auth.write_text((root / "id_ed25519.pub").read_text())
    os.chmod(auth, 0o644)
    for name in users:  # sshd reads keys as the user, who cannot enter pytest's 0700 tmp
        entry = pwd.getpwnam(name)
        if entry.pw_uid != os.getuid():
            dot = os.path.join(entry.pw_dir, ".ssh")
            os.makedirs(dot, exist_ok=True)
            shutil.copy(auth, os.path.join(dot, "authorized_keys"))
            for path in (dot, os.path.join(dot, "authorized_keys")):
                os.chown(path, entry.pw_uid, entry.pw_gid)
    log = root / "sshd.log"
    cfg = root / "sshd_config"
    proc, port = launch_sshd(cfg, log, lambda port: f"""
Port {port}
ListenAddress 127.0.0.1
HostKey {host_key}
PidFile {root}/sshd.pid
AuthorizedKeysFile {auth} .ssh/authorized_keys
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin yes
UsePAM no
AllowUsers {" ".join(users)}
{"Subsystem sftp " + subsystem if subsystem else ""}
LogLevel VERBOSE
SetEnv TMUX_TMPDIR={root}
{extra_config}
Match User {me()}
  SetEnv TMUX_TMPDIR={root} HOME={box_home(root)}
""")
    known = root / "known_hosts"
    pub = (root / "host_ed25519.pub").read_text().split()
    known.write_text("[127.0.0.1]:%d %s %s\n" % (port, pub[0], pub[1]))
    ssh_config = root / "ssh_config"
    ssh_config.write_text(f"""
Host testbox
  HostName 127.0.0.1
  Port {port}
  User {users[0]}
  IdentityFile {user_key}
  IdentitiesOnly yes
  UserKnownHostsFile {known}
""")
    return SshBox(root, port, proc, user_key, host_key, str(ssh_config), known, log)


def stop_box(box):
    box.proc.terminate()
    try:
        box.proc.wait(5)
    except subprocess.TimeoutExpired:
        box.proc.kill()


def me():
    return pwd.getpwuid(os.getuid()).pw_name


@pytest.fixture
def pty_only_box(tmp_path_factory):
    """sshd whose ForceCommand allows only an interactive shell on a PTY; no SFTP."""
    root = tmp_path_factory.mktemp("ptybox")
    script = write_pty_only(root)
    box = start_box(root, [me()], extra_config="ForceCommand %s" % script, subsystem=None)
    yield box
    stop_daemon(box.remote_dir)
    stop_box(box)


CREATED_USERS = set()  # by this process; deleted at the end of the session


def make_user(name, bashrc="", shell="/bin/bash"):
    """A throwaway login user with bash and this ~/.bashrc (root only). `name` is a base name:
    each xdist worker gets its own user (gt_b_chatty_gw3)."""
    name = per_worker(name)
    if os.geteuid() != 0:
        pytest.skip("creating a test user needs root")
    if shutil.which("useradd") is None:
        pytest.skip("useradd is not installed")
    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "-m", "-s", "/bin/bash", name], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # no password, but not locked ("!"): sshd refuses locked accounts even with a key
        subprocess.run(["usermod", "-p", "*", name], check=True)
    CREATED_USERS.add(name)
    if pwd.getpwnam(name).pw_shell != shell:
        subprocess.run(["usermod", "-s", shell, name], check=True)
    entry = pwd.getpwnam(name)
    home = entry.pw_dir
    # start each test from a clean home: no probe, no daemon state from an earlier run
    kill_user_daemons(entry)
    for child in os.listdir(home):
        path = os.path.join(home, child)
        subprocess.run(["chattr", "-i", path], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        if os.path.isdir(path) and not os.path.islink(path):
            os.chmod(path, 0o755)
            shutil.rmtree(path)
        else:
            os.unlink(path)
    with open(os.path.join(home, ".bashrc"), "w") as f:
        f.write(bashrc)
    os.chown(os.path.join(home, ".bashrc"), entry.pw_uid, entry.pw_gid)
    os.chmod(home, 0o755)
    os.chown(home, entry.pw_uid, entry.pw_gid)
    return entry


def kill_user_daemons(entry):
    """Stop the probe daemons a test user's sessions left (by pid, from their lock files)."""
    from remote_probe.daemon import terminate
    for state in (os.path.join(entry.pw_dir, ".cache", "gputui"), "/tmp/gputui-%d" % entry.pw_uid,
                  "/run/user/%d/gputui" % entry.pw_uid):
        if os.path.isdir(state):
            try:
                terminate(state)
            except Exception:  # noqa: BLE001 - best effort cleanup
                pass


@pytest.fixture
def chatty_box(tmp_path_factory):
    """A user whose ~/.bashrc prints junk for every shell; SFTP runs through that shell."""
    user = make_user("gt_b_chatty", CHATTY_BASHRC)
    if not os.path.exists(SFTP_SERVER):
        pytest.skip("OpenSSH's sftp-server is not installed")
    box = start_box(tmp_path_factory.mktemp("chattybox"), [user.pw_name], subsystem=SFTP_SERVER)
    box.user = user
    yield box
    kill_user_daemons(user)
    stop_box(box)
    shutil.rmtree("/tmp/gputui-%d" % user.pw_uid, ignore_errors=True)


@pytest.fixture
def readonly_cache_box(tmp_path_factory):
    """A user whose ~/.cache belongs to root (read-only for the user)."""
    user = make_user("gt_b_rocache")
    cache = os.path.join(user.pw_dir, ".cache")
    os.makedirs(cache)
    os.chmod(cache, 0o555)  # owned by root, not writable by the user
    box = start_box(tmp_path_factory.mktemp("robox"), [user.pw_name])
    box.user = user
    yield box
    kill_user_daemons(user)
    stop_box(box)
    shutil.rmtree("/tmp/gputui-%d" % user.pw_uid, ignore_errors=True)


def delete_created_users():
    """userdel -r every user make_user created in this process (their daemons stopped first)."""
    for name in sorted(CREATED_USERS):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        kill_user_daemons(entry)
        from tests.support.user_world import kill_user_processes
        kill_user_processes(entry.pw_uid)
        subprocess.run(["userdel", "-r", "-f", name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree("/tmp/gputui-%d" % entry.pw_uid, ignore_errors=True)
    CREATED_USERS.clear()


def pytest_unconfigure(config):
    delete_created_users()


@pytest.fixture
def full_cache_box(tmp_path_factory):
    """A user whose ~/.cache is a full disk (a tiny tmpfs filled to the last block)."""
    user = make_user("gt_b_fullcache")
    cache = os.path.join(user.pw_dir, ".cache")
    os.makedirs(cache)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,uid=%d,gid=%d,mode=0755"
                       % (user.pw_uid, user.pw_gid), "tmpfs", cache],
                      stderr=subprocess.DEVNULL).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        with open(os.path.join(cache, "filler"), "wb") as f:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
    except OSError:
        pass
    box = start_box(tmp_path_factory.mktemp("fullbox"), [user.pw_name])
    box.user = user
    yield box
    kill_user_daemons(user)
    stop_box(box)
    subprocess.run(["umount", "-l", cache])
    shutil.rmtree("/tmp/gputui-%d" % user.pw_uid, ignore_errors=True)


# Vast's default: every interactive login attaches to (or starts) one tmux session.
TMUX_BASHRC = POD_BASHRC + r"""
if [ -z "$TMUX" ]; then
  exec tmux new-session -A -s ssh_tmux
fi
"""


@pytest.fixture
def pty_tmux_box(tmp_path_factory):
    """A PTY-only proxy whose interactive bash execs tmux (attach or create), like Vast."""
    root = tmp_path_factory.mktemp("ptytmux")
    script = write_pty_only(root)
    (root / "pod_bashrc").write_text(TMUX_BASHRC)
    box = start_box(root, [me()], extra_config="ForceCommand %s" % script, subsystem=None)
    yield box
    stop_daemon(box.remote_dir)
    subprocess.run(["tmux", "-S", str(root / ("tmux-%d" % os.getuid()) / "default"), "kill-server"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stop_box(box)
