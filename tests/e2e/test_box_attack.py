"""Another user on the same box (issue 20): the two symlink attacks, run by a real second
user (`gt_g_attacker`) against a real victim (`gt_g_victim`) through sshd. Both must fail
safely and say why: no attacker code runs as the victim, no attacker daemon is talked to.
Also SO_PEERCRED on both ends of the daemon's socket, and `rm -rf run/` under a live daemon."""

import hashlib
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import time

import pytest

from remote_probe import paths, wire
from tui.remote.probe.bundle import build_probe, probe_filename

from tests.support.pty_fixtures import kill_user_daemons, make_user, start_box, stop_box

pytestmark = pytest.mark.timeout(300)

VICTIM, ATTACKER = "gt_g_victim", "gt_g_attacker"
BOX_PYTHON = shutil.which("python3", path="/usr/bin:/usr/local/bin:/bin") or "python3"  # one other users may run


def as_user(entry, argv, **kw):
    """Run argv as that box user (uid, gid, no extra groups), like their own shell would."""
    return subprocess.run(argv, user=entry.pw_uid, group=entry.pw_gid, extra_groups=[],
                          cwd="/", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=60, **kw)


def gputui(box, *args):
    return subprocess.run([sys.executable, "-m", "tui", "status", "testbox", "--simulate", "idle",
                           "--ssh-config", box.ssh_config, *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=150, stdin=subprocess.DEVNULL)


@pytest.fixture
def two_users(tmp_path_factory):
    victim, attacker = make_user(VICTIM), make_user(ATTACKER)
    cache = os.path.join(victim.pw_dir, ".cache")
    os.makedirs(cache)
    os.chmod(cache, 0o555)  # root's, read-only for the victim: the probe falls back to /tmp
    box = start_box(tmp_path_factory.mktemp("sharedbox"), [victim.pw_name])
    made = []
    yield box, victim, attacker, made
    stop_box(box)
    for entry in (victim, attacker):
        kill_user_daemons(entry)
        subprocess.run(["pkill", "-KILL", "-u", entry.pw_name], stderr=subprocess.DEVNULL)
    for path in made + ["/tmp/gputui-%d" % victim.pw_uid]:
        if os.path.islink(path) or os.path.isfile(path):
            os.unlink(path)
        elif os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)


EVIL_PYZ = """import os
with open(%r, "a") as f:
    f.write("attacker code ran as uid %%d\\n" %% os.getuid())
"""


def test_a_fallback_dir_symlinked_by_another_user_runs_no_attacker_code(two_users, isolated_dirs):
    """The attacker's link first points at a directory the victim owns (test -d/-w/-O all
    pass through it: the probe used to be deployed and run through the link), then at the
    attacker's own with a "probe" of the right name; swapped between the check and the exec,
    that ran the attacker's code as the victim. Now the link is refused, naming its owner."""
    box, victim, attacker, made = two_users
    fallback = "/tmp/gputui-%d" % victim.pw_uid
    stash = "/tmp/%s-stash" % ATTACKER
    marker = os.path.join(stash, "pwned")
    made += [stash]
    # 1. the attacker points the victim's fallback name at a directory the victim owns
    r = as_user(attacker, ["ln", "-s", victim.pw_dir, fallback])
    assert r.returncode == 0, r.stderr
    assert os.lstat(fallback).st_uid == attacker.pw_uid
    first = gputui(box)
    # 2. ... then swaps it to their own directory holding a "probe" of the right name
    as_user(attacker, ["mkdir", "-m", "777", stash])
    _, sha = build_probe()
    with open(os.path.join(stash, probe_filename(sha)), "w") as f:
        f.write(EVIL_PYZ % marker)
    os.chown(os.path.join(stash, probe_filename(sha)), attacker.pw_uid, attacker.pw_gid)
    os.chmod(os.path.join(stash, probe_filename(sha)), 0o644)
    as_user(attacker, ["ln", "-sfn", stash, fallback])
    # the victim's daemon is gone (a reboot, an OOM kill): the next connect starts the probe again
    subprocess.run(["pkill", "-KILL", "-u", VICTIM], stderr=subprocess.DEVNULL)
    second = gputui(box)
    assert not os.path.exists(marker), open(marker).read()  # no attacker code ran as the victim
    assert not [n for n in os.listdir(victim.pw_dir) if n.startswith("probe-")]  # nor through the link
    for r in (first, second):
        assert r.returncode != 0
        assert "/tmp/gputui-%d is a symbolic link owned by %s" % (victim.pw_uid, ATTACKER) in r.stderr, \
            r.stderr[-1500:]
        assert "Traceback" not in r.stderr


FAKE_DAEMON = r"""
import json, os, socket, sys
path, log, config = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
s = socket.socket(socket.AF_UNIX)
s.bind(path)
os.chmod(path, 0o777)
s.listen(8)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    with open(log, "a") as f:
        f.write("a client connected\n")
    c.sendall((json.dumps({"type": "hello", "protocol": 1, "config": config,
                           "sock_path": path}) + "\n").encode())
"""


def test_a_runtime_dir_symlinked_by_another_user_never_reaches_their_daemon(two_users, isolated_dirs):
    """The long --remote-dir's predictable /tmp name is squatted: the victim never uses it
    (never follows the link, never talks to what listens there) and works from a fresh,
    unpredictable directory instead."""
    box, victim, attacker, made = two_users
    remote = os.path.join(victim.pw_dir, "a-long-remote-dir-name-for-the-runtime-fallback-" * 2)
    digest = hashlib.sha256(os.fsencode(remote)).hexdigest()[:16]
    rdir = "/tmp/gputui-%d-%s" % (victim.pw_uid, digest)  # predictable by anyone
    assert paths.runtime_dir(remote) == "/tmp/gputui-%d-%s" % (os.getuid(), digest)
    evil = "/tmp/%s-run" % ATTACKER
    log = os.path.join(evil, "log")
    made += [rdir, evil]
    r = as_user(attacker, ["ln", "-s", victim.pw_dir, rdir])
    assert r.returncode == 0, r.stderr
    first = gputui(box, "--remote-dir", remote)
    # the attacker swaps the link to their own run dir with a daemon on a 0777 socket
    as_user(attacker, ["mkdir", "-m", "777", evil])
    fake = subprocess.Popen([BOX_PYTHON, "-c", FAKE_DAEMON, os.path.join(evil, "probe.sock"), log,
                             json.dumps(wire.config_key("idle"))], user=attacker.pw_uid,
                            group=attacker.pw_gid, extra_groups=[], cwd="/", stdout=subprocess.PIPE)
    try:
        assert fake.stdout.readline().strip() == b"listening"
        as_user(attacker, ["ln", "-sfn", evil, rdir])
        second = gputui(box, "--remote-dir", remote)
    finally:
        fake.kill()
        fake.wait()
    assert not os.path.exists(log), "the victim talked to the attacker's daemon"
    assert stat.S_IMODE(os.stat(victim.pw_dir).st_mode) == 0o755  # not chmod'ed through the link
    # the squatted name is left alone; the victim's probe runs in an unpredictable dir of its own
    with open(os.path.join(remote, "run-dir")) as f:
        chosen = f.read().strip()
    made.append(chosen)
    assert chosen != rdir and chosen.startswith("/tmp/gputui-%d-" % victim.pw_uid)
    st = os.lstat(chosen)
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == victim.pw_uid and stat.S_IMODE(st.st_mode) == 0o700
    assert os.path.exists(os.path.join(chosen, "probe.sock"))
    for r in (first, second):
        assert r.returncode == 0, r.stderr[-1500:]
        assert "Traceback" not in r.stderr


def test_a_client_of_another_user_gets_nothing_from_the_daemon():
    import tempfile
    attacker = make_user(ATTACKER)
    top = tempfile.mkdtemp(prefix="gt_g_peer-")  # under /tmp: pytest's own tmp is 0700
    state = os.path.join(top, "state")
    probe = subprocess.Popen([sys.executable, "-m", "remote_probe", "daemon", "--state-dir", state,
                              "--simulate", "idle"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sock_path = paths.socket_path(state)
    try:
        deadline = time.time() + 20
        while not os.path.exists(sock_path) and time.time() < deadline:
            time.sleep(0.05)
        # a mistake opens the way (a chmod by hand): the daemon still checks who connects
        for d in (top, state, os.path.dirname(sock_path)):
            os.chmod(d, 0o755)
        os.chmod(sock_path, 0o777)
        client = ("import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
                  "s.settimeout(5); print(repr(s.recv(100)))")
        r = as_user(attacker, [BOX_PYTHON, "-c", client, sock_path])
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == "b''"  # closed at once, no hello, no samples
        mine = socket.socket(socket.AF_UNIX)  # its own user is still served
        mine.connect(sock_path)
        mine.settimeout(5)
        assert b'"hello"' in mine.recv(65536)
        mine.close()
    finally:
        probe.terminate()
        probe.wait(10)
        shutil.rmtree(top, ignore_errors=True)


def test_attach_refuses_a_socket_served_by_another_user(tmp_path):
    attacker = make_user(ATTACKER)
    evil = "/tmp/%s-peer" % ATTACKER
    shutil.rmtree(evil, ignore_errors=True)
    as_user(attacker, ["mkdir", "-m", "777", evil])
    fake = subprocess.Popen([BOX_PYTHON, "-c", FAKE_DAEMON, evil + "/probe.sock", evil + "/log",
                             json.dumps(wire.config_key(None))], user=attacker.pw_uid,
                            group=attacker.pw_gid, extra_groups=[], cwd="/", stdout=subprocess.PIPE)
    try:
        assert fake.stdout.readline().strip() == b"listening"
        from remote_probe import attach
        with pytest.raises(paths.UnsafePath, match="served by %s" % ATTACKER):
            attach.connect(evil + "/probe.sock")
    finally:
        fake.kill()
        fake.wait()
        shutil.rmtree(evil, ignore_errors=True)


def test_rm_rf_of_run_lets_no_second_daemon_start_and_run_comes_back_private(tmp_path):
    state = str(tmp_path / "state")
    argv = [sys.executable, "-m", "remote_probe", "daemon", "--state-dir", state, "--simulate", "idle"]
    first = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rdir = paths.runtime_dir(state)
    try:
        deadline = time.time() + 20
        while not os.path.exists(paths.socket_path(state)) and time.time() < deadline:
            time.sleep(0.05)
        old = os.umask(0o022)
        try:
            shutil.rmtree(rdir)
            second = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    timeout=30)
        finally:
            os.umask(old)
        assert second.returncode == 0  # it found the lock held and left
        assert first.poll() is None
        deadline = time.time() + 10
        while not os.path.exists(paths.socket_path(state)) and time.time() < deadline:
            time.sleep(0.05)  # the live daemon binds its socket again
        assert os.path.exists(paths.socket_path(state))
        assert stat.S_IMODE(os.stat(rdir).st_mode) == 0o700
        from remote_probe.dlhook_site import gputui_dlhook
        gputui_dlhook.write_stats(os.path.join(tmp_path, "hooked", "run", "dl"))
        for d in ("hooked", "hooked/run", "hooked/run/dl"):
            assert stat.S_IMODE(os.stat(tmp_path / d).st_mode) == 0o700, d
    finally:
        first.terminate()
        first.wait(10)
