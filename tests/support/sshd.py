"""A real OpenSSH sshd on 127.0.0.1 with a throwaway host key and user key (fixtures `sshbox`,
`untrusted_sshbox`), and the helpers the other sshd fixtures build on.

Safe under pytest-xdist: every sshd gets a port of its own (a free port can be taken by another
worker between the probe and sshd's bind, so a bind failure picks another port and starts again),
and every box lives in the worker's own tmp tree."""

import os
import shutil
import socket
import subprocess
import time

import pytest

from tests.support import REPO  # noqa: F401 - re-exported for the tests that import it here

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
BIND_TRIES = 8


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def keygen(path, kind="ed25519"):
    subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-f", str(path)], check=True)


class SshBox:
    """A running sshd and an ssh_config alias `testbox` that reaches it."""

    def __init__(self, root, port, proc, user_key, host_key, ssh_config, known_hosts, log):
        self.root, self.port, self.proc = root, port, proc
        self.user_key, self.host_key = user_key, host_key
        self.ssh_config, self.known_hosts, self.log = ssh_config, known_hosts, log
        self.remote_dir = str(root / "remote")

    def trust(self):
        """Put the host key in known_hosts, as if the user had accepted it before."""
        pub = (self.host_key.parent / (self.host_key.name + ".pub")).read_text().split()
        self.known_hosts.write_text("[127.0.0.1]:%d %s %s\n" % (self.port, pub[0], pub[1]))

    def session_pids(self):
        """pids of the per-connection sshd processes (children of the listener)."""
        out = subprocess.run(["pgrep", "-P", str(self.proc.pid)], stdout=subprocess.PIPE,
                             text=True).stdout.split()
        return [int(p) for p in out]


def wait_port(port, proc, log):
    """Until this sshd (`proc`) listens on 127.0.0.1:port; its log in the error if it died.

    Reads sshd's own "Server listening" line rather than connecting: under xdist another
    worker's sshd may hold the port, and a connect would succeed against the wrong server."""
    deadline = time.time() + 10
    want = "Server listening on 127.0.0.1 port %d" % port
    while time.time() < deadline:
        text = log.read_text(errors="replace") if log.exists() else ""
        if want in text and proc.poll() is None:
            return
        if proc.poll() is not None:
            raise RuntimeError("sshd failed to start: " + text)
        time.sleep(0.02)
    raise RuntimeError("sshd did not listen: " + log.read_text(errors="replace"))


def _bind_lost(text):
    return "Address already in use" in text or "Cannot bind any address" in text


def launch_sshd(cfg, log, config_for_port, wrap=()):
    """Write `config_for_port(port)` to cfg and start sshd -D on it; -> (proc, port).

    A port lost to a parallel worker between free_port() and sshd's bind is retried."""
    os.makedirs("/run/sshd", exist_ok=True)  # privilege separation dir on Debian
    for attempt in range(BIND_TRIES):
        port = free_port()
        cfg.write_text(config_for_port(port))
        with open(log, "wb") as out:
            proc = subprocess.Popen(list(wrap) + [SSHD, "-D", "-e", "-f", str(cfg)], stdout=out,
                                    stderr=subprocess.STDOUT)
        try:
            wait_port(port, proc, log)
            return proc, port
        except RuntimeError:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if attempt + 1 < BIND_TRIES and _bind_lost(log.read_text(errors="replace")):
                continue
            raise
    raise AssertionError("unreachable")


def box_home(root):
    """A throwaway HOME for the box user that is this test process's own user.

    sshd would give that user its real home, and with it the developer's dotfiles: a
    `pyenv init` in /root/.bashrc waiting 60 s on a rehash lock a killed login left behind
    made every start script miss its deadline, suite-wide. A box user's home is the box's,
    not the lab's."""
    home = root / "home"
    home.mkdir(exist_ok=True)
    return home


def start_sshd(root, extra_config="", wrap=()):
    """`wrap`: argv put before sshd (e.g. unshare into a PID namespace, issue 22)."""
    if not os.path.exists(SSHD):
        pytest.skip("OpenSSH sshd is not installed (apt install openssh-server)")
    root.mkdir(parents=True, exist_ok=True)
    host_key = root / "host_ed25519"
    user_key = root / "id_ed25519"
    keygen(host_key)
    keygen(user_key)
    auth = root / "authorized_keys"
    auth.write_text((root / "id_ed25519.pub").read_text())
    os.chmod(auth, 0o600)
    log = root / "sshd.log"
    cfg = root / "sshd_config"
    home = box_home(root)
    user = os.environ.get("USER") or subprocess.run(["id", "-un"], stdout=subprocess.PIPE,
                                                   text=True).stdout.strip()
    proc, port = launch_sshd(cfg, log, lambda port: f"""
Port {port}
ListenAddress 127.0.0.1
HostKey {host_key}
PidFile {root}/sshd.pid
AuthorizedKeysFile {auth}
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin yes
UsePAM no
AllowUsers {user}
Subsystem sftp internal-sftp
LogLevel VERBOSE
SetEnv TMUX_TMPDIR={root} GPUTUI_SIM_SCOPE={root} HOME={home}
{extra_config}
""", wrap)
    known = root / "known_hosts"
    known.write_text("")
    ssh_config = root / "ssh_config"
    ssh_config.write_text(f"""
Host testbox
  HostName 127.0.0.1
  Port {port}
  User {user}
  IdentityFile {user_key}
  IdentitiesOnly yes
  UserKnownHostsFile {known}
""")
    return SshBox(root, port, proc, user_key, host_key, str(ssh_config), known, log)


def box_tmux_env(box):
    """Environment that reaches the test box's tmux server, never the developer's own."""
    env = dict(os.environ, TMUX_TMPDIR=str(box.root), GPUTUI_SIM_SCOPE=str(box.root))
    env.pop("TMUX", None)
    return env


def stop_sshd(box):
    subprocess.run(["tmux", "kill-server"], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   env=box_tmux_env(box))
    box.proc.terminate()
    try:
        box.proc.wait(5)
    except subprocess.TimeoutExpired:
        box.proc.kill()
    sweep_scope(str(box.root))


def sweep_scope(scope):
    """Kill whatever the box's logins left running: a daemon that was still starting when the
    test stopped it (no pid in its lock yet), its simulated jobs, a job a test started. Each
    carries the box's GPUTUI_SIM_SCOPE (sshd's SetEnv), so nothing of another test is touched;
    left alone they outlived the run and took CPU from every later test."""
    import signal

    from remote_probe.watch.scope import scope_of
    deadline = time.monotonic() + 3
    sig = signal.SIGTERM
    while True:
        left = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()
                and scope_of(p) == scope]
        if not left:
            return
        for pid in left:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        if time.monotonic() > deadline:
            if sig == signal.SIGKILL:
                return
            sig = signal.SIGKILL
        time.sleep(0.1)


def stop_daemon(state_dir):
    """Stop a probe daemon left by a test (they are meant to outlive SSH)."""
    from remote_probe.daemon import terminate
    terminate(state_dir)


@pytest.fixture
def sshbox(tmp_path_factory):
    """A fresh sshd whose host key is already trusted."""
    box = start_sshd(tmp_path_factory.mktemp("box"))
    box.trust()
    yield box
    stop_daemon(box.remote_dir)
    stop_sshd(box)


@pytest.fixture
def untrusted_sshbox(tmp_path_factory):
    box = start_sshd(tmp_path_factory.mktemp("box"))
    yield box
    stop_daemon(box.remote_dir)
    stop_sshd(box)
