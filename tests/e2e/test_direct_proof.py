"""The direct path's proof (issue 20): a laptop holding a cached socket path opens it
straight over direct-streamlocal. If the box's /tmp runtime dir was deleted and made again
by another user, what listens there is a stranger's daemon: the laptop must refuse it
before sending it anything but the nonce, and fall back to the command path saying why.
Run with a real second box user through a real sshd."""

import os
import shutil
import subprocess
import sys

import pytest

from remote_probe import __version__, wire
from tui.core.session import probe_sockets

from tests.support.pty_fixtures import kill_user_daemons, make_user, start_box, stop_box

pytestmark = pytest.mark.timeout(300)

VICTIM, ATTACKER = "gt_g2_victim", "gt_g2_attacker"
BOX_PYTHON = shutil.which("python3", path="/usr/bin:/usr/local/bin:/bin") or "python3"


def gputui(box, log, *args):
    return subprocess.run([sys.executable, "-m", "tui", "--log", str(log), "status", "testbox",
                           "--simulate", "idle", "--ssh-config", box.ssh_config, *args],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=150,
                          stdin=subprocess.DEVNULL)


# Speaks the daemon's hello at the victim's old socket path, logs every line it is sent and
# answers a `prove` with a guess: all a stranger can do without the victim's secret.
IMPOSTOR = r"""
import json, os, socket, sys, threading
path, log, hello = sys.argv[1], sys.argv[2], sys.argv[3]
s = socket.socket(socket.AF_UNIX)
s.bind(path)
os.chmod(path, 0o777)
s.listen(8)
print("listening", flush=True)
def serve(c):
    c.sendall((hello + "\n").encode())
    for line in c.makefile("rb"):
        msg = json.loads(line)
        with open(log, "a") as f:
            f.write(msg.get("type", "?") + "\n")
        if msg.get("type") == "prove":
            c.sendall((json.dumps({"type": "reply", "id": msg["id"], "proof": "00" * 32}) + "\n").encode())
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""


@pytest.fixture
def two_users(tmp_path_factory):
    victim, attacker = make_user(VICTIM), make_user(ATTACKER)
    cache = os.path.join(victim.pw_dir, ".cache")
    os.makedirs(cache, exist_ok=True)
    os.chmod(cache, 0o555)  # root's, read-only for the victim: the probe falls back to /tmp
    box = start_box(tmp_path_factory.mktemp("proofbox"), [victim.pw_name])
    yield box, victim, attacker
    stop_box(box)
    for entry in (victim, attacker):
        kill_user_daemons(entry)
        subprocess.run(["pkill", "-KILL", "-u", entry.pw_name], stderr=subprocess.DEVNULL)
    shutil.rmtree("/tmp/gputui-%d" % victim.pw_uid, ignore_errors=True)
    shutil.rmtree("/tmp/%s-log" % ATTACKER, ignore_errors=True)


def test_a_strangers_daemon_at_the_cached_socket_path_is_refused(two_users, isolated_dirs, tmp_path):
    box, victim, attacker = two_users
    state = "/tmp/gputui-%d" % victim.pw_uid
    first = gputui(box, tmp_path / "first.log")
    assert first.returncode == 0, first.stderr[-1500:]
    cached = [e for e in probe_sockets._load().values() if isinstance(e, dict) and e.get("socket")]
    assert cached and cached[0]["socket"] == os.path.join(state, "run", "probe.sock")
    assert len(cached[0]["secret"]) == 64  # learnt over the command path
    # the victim's daemon dies and a /tmp cleaner takes its dir; the attacker makes it again
    subprocess.run(["pkill", "-KILL", "-u", VICTIM], stderr=subprocess.DEVNULL)
    shutil.rmtree(state)
    logdir = "/tmp/%s-log" % ATTACKER
    for d in (state, os.path.join(state, "run"), logdir):
        os.mkdir(d)
        os.chown(d, attacker.pw_uid, attacker.pw_gid)
        os.chmod(d, 0o777)
    log = os.path.join(logdir, "heard")
    hello = wire.encode(wire.hello("probe", __version__, ("samples",), pid=4242,
                                   config=wire.config_key("idle"), started=1.0, last_seq=0,
                                   socket=cached[0]["socket"], binds=1, sessions=0)).decode().strip()
    fake = subprocess.Popen([BOX_PYTHON, "-c", IMPOSTOR, cached[0]["socket"], log, hello],
                            user=attacker.pw_uid, group=attacker.pw_gid, extra_groups=[], cwd="/",
                            stdout=subprocess.PIPE)
    try:
        assert fake.stdout.readline().strip() == b"listening"
        second = gputui(box, tmp_path / "second.log")
    finally:
        fake.kill()
        fake.wait()
    heard = open(log).read().split() if os.path.exists(log) else []
    assert "prove" in heard, heard  # the cached path was tried, and challenged
    # ... and nothing but the challenge and the hello reached the stranger: no subscribe,
    # no snapshot, no autostop or tmux request
    assert set(heard) <= {"prove", "hello"}, heard
    said = (tmp_path / "second.log").read_text()
    assert "did not prove it is the one gputui started" in said, said[-2000:]
    assert "Traceback" not in second.stderr
    # the command path then refuses the attacker's directory by name (round one's check)
    assert second.returncode != 0
    assert "belongs to %s" % ATTACKER in second.stderr, second.stderr[-1500:]
