"""Issue 9 §5 through real sshd processes: shells that talk, homes that refuse, and
failures that waiting cannot heal (they stop the reconnect loop with the reason)."""

import asyncio
import os
import shutil
import stat
import subprocess
import sys

import pytest

from remote_probe import wire
from tui.remote import session as session_mod
from tui.remote import ssh, transports
from tui.remote.probe import files as probe_files
from tui.remote.probe.bundle import build_probe, probe_filename

from tests.support.pty_fixtures import chatty_box, full_cache_box, readonly_cache_box  # noqa: F401
from tests.e2e.test_pty import Rec

pytestmark = pytest.mark.timeout(240)


def target(box):
    return ssh.Target.parse("testbox", ssh_config=box.ssh_config)


def gputui(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "tui", *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def test_the_chatty_fixture_really_breaks_sftp(chatty_box):
    """OpenSSH's own sftp client fails on this box: the noise is real."""
    r = subprocess.run(["sftp", "-F", chatty_box.ssh_config, "-b", "-", "testbox"], input="ls\n",
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30)
    assert r.returncode != 0


async def test_chatty_shell_first_deploy_status_and_download(chatty_box, tmp_path):
    # first contact, nothing deployed: the CLI works through the noise
    r = gputui("status", "testbox", "--json", "--simulate", "a100x2", "--ssh-config",
               chatty_box.ssh_config)
    assert r.returncode == 0, r.stderr
    home = chatty_box.user.pw_dir
    _, sha = build_probe()
    assert os.path.exists(os.path.join(home, ".cache", "gputui", probe_filename(sha)))
    # a live session, then a download: SFTP breaks on the noise, the probe channel carries it
    rec = Rec()
    s = session_mod.RemoteSession(target(chatty_box), simulate="idle", listener=rec)
    await s.open()
    try:
        assert s.transport_name == transports.EXEC and not s.uploaded
        payload = os.urandom(700000)
        path = os.path.join(home, "model.bin")
        with open(path, "wb") as f:
            f.write(payload)
        os.chown(path, chatty_box.user.pw_uid, chatty_box.user.pw_gid)
        from tui.core.transfer import download as transfer
        sha_box = (await s.request(wire.SHA256, paths=[path]))["sha256"][path]
        async with s.file_client() as files:
            assert isinstance(files, probe_files.ProbeFiles)
            st = os.stat(path)
            res = await transfer.download(files, path, str(tmp_path / "dl"), st.st_size, st.st_mtime,
                                          expected_sha=sha_box)
        assert res.status == "downloaded"
        assert open(res.local, "rb").read() == payload
        assert s.sftp_refused and any("SFTP does not work" in n for n in rec.notices)
    finally:
        await s.close()


def test_readonly_cache_falls_back_to_a_private_dir_and_says_so(readonly_cache_box):
    uid = readonly_cache_box.user.pw_uid
    r = gputui("status", "testbox", "--simulate", "cpu-only", "--ssh-config",
               readonly_cache_box.ssh_config)
    assert r.returncode == 0, r.stderr
    fallback = "/tmp/gputui-%d" % uid
    assert "is not writable; the probe lives in %s instead" % fallback in r.stderr
    st = os.stat(fallback)
    assert st.st_uid == uid and stat.S_IMODE(st.st_mode) == 0o700
    _, sha = build_probe()
    assert os.path.exists(os.path.join(fallback, probe_filename(sha)))


def test_full_cache_falls_back_like_a_readonly_one(full_cache_box):
    """Issue 23: a full ~/.cache took the deploy down instead of using /tmp/gputui-$UID."""
    uid = full_cache_box.user.pw_uid
    r = gputui("status", "testbox", "--simulate", "cpu-only", "--ssh-config", full_cache_box.ssh_config)
    assert r.returncode == 0, r.stderr
    fallback = "/tmp/gputui-%d" % uid
    assert "is full or refuses writes; the probe lives in %s instead" % fallback in r.stderr
    _, sha = build_probe()
    assert os.path.exists(os.path.join(fallback, probe_filename(sha)))
    # the next connect finds the probe there, with no second upload into the full disk
    again = gputui("status", "testbox", "--simulate", "cpu-only", "--ssh-config",
                   full_cache_box.ssh_config)
    assert again.returncode == 0, again.stderr


def test_unwritable_home_falls_back_too(readonly_cache_box):
    home = readonly_cache_box.user.pw_dir
    os.chown(home, 0, 0)  # ~ itself belongs to root now
    os.rmdir(os.path.join(home, ".cache"))
    r = gputui("status", "testbox", "--simulate", "cpu-only", "--ssh-config",
               readonly_cache_box.ssh_config)
    assert r.returncode == 0, r.stderr
    assert "/.cache/gputui is not writable; the probe lives in /tmp/gputui-" in r.stderr


# -- failures that waiting cannot heal --------------------------------------------------
async def run_until_failed(box, **kw):
    rec = Rec()
    s = session_mod.RemoteSession(target(box), remote_dir=box.remote_dir, listener=rec, **kw)
    await asyncio.wait_for(s.run(), 120)
    states = [st for st, _ in rec.states]
    assert states[-1] == session_mod.FAILED and session_mod.RECONNECTING not in states, rec.states
    return rec.states[-1][1], s


async def test_unknown_scenario_is_fatal(sshbox):
    detail, _ = await run_until_failed(sshbox, simulate="no-such-scenario")
    assert "unknown scenario 'no-such-scenario'" in detail and "a100x2" in detail
    r = gputui("status", "testbox", "--simulate", "nope", "--ssh-config", sshbox.ssh_config,
               "--remote-dir", sshbox.remote_dir)
    assert r.returncode == 64 and "unknown scenario 'nope'" in r.stderr  # the CLI checks first


async def test_missing_remote_python_is_fatal(sshbox):
    detail, _ = await run_until_failed(sshbox, remote_python="/nonexistent/python3")
    assert "/nonexistent/python3 does not exist on the box" in detail


async def test_old_python_is_fatal(sshbox, tmp_path):
    old = tmp_path / "python3"
    old.write_text("#!/bin/sh\ncase \"$1\" in -V) echo 'Python 3.6.15';; *) exit 1;; esac\n")
    old.chmod(0o755)
    detail, _ = await run_until_failed(sshbox, remote_python=str(old))
    assert "too old (Python 3.6.15)" in detail


FAKE_OLD_PROBE = """import sys, time
sys.stdout.write('{"type":"hello","protocol":0,"version":"0.0.1","capabilities":[]}\\n')
sys.stdout.flush()
time.sleep(30)
"""


async def test_incompatible_probe_is_redeployed(sshbox):
    _, sha = build_probe()
    os.makedirs(sshbox.remote_dir, exist_ok=True)
    path = os.path.join(sshbox.remote_dir, probe_filename(sha))
    with open(path, "w") as f:  # a probe file that speaks protocol 0 (python runs a .pyz script)
        f.write(FAKE_OLD_PROBE)
    rec = Rec()
    s = session_mod.RemoteSession(target(sshbox), simulate="idle", remote_dir=sshbox.remote_dir,
                                  listener=rec)
    await asyncio.wait_for(s.open(), 60)
    try:
        assert s.client.hello["protocol"] == wire.PROTOCOL and s.uploaded
        assert open(path, "rb").read() == build_probe()[0]
        assert any("another protocol; redeploying" in d for _, d in rec.states)
    finally:
        await s.close()


async def test_still_incompatible_after_redeploy_is_fatal(sshbox, monkeypatch):
    # gputui itself speaks a protocol no probe speaks: redeploy once, then stop with the reason
    monkeypatch.setattr(wire.messages, "PROTOCOL", 999)  # read by hello() and check_compatible()
    rec_detail, s = await run_until_failed(sshbox, simulate="idle")
    assert "still speaks another protocol after a redeploy" in rec_detail


FAKE_OLD_DAEMON = r"""
import json, os, socket, sys
path, config = sys.argv[1], json.loads(sys.argv[2])
srv = socket.socket(socket.AF_UNIX)
srv.bind(path)
srv.listen(4)
while True:
    conn, _ = srv.accept()
    conn.sendall((json.dumps({"type": "hello", "protocol": 0, "version": "0.0.1", "config": config,
                              "pid": os.getpid(), "capabilities": []}) + "\n").encode())
    data = b""
    while b"\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    if b'"shutdown"' in data:
        os.unlink(path)
        sys.exit(0)
    conn.close()
"""


async def test_a_running_daemon_of_another_protocol_is_replaced(sshbox):
    """The same probe file, but an older daemon still answers on the socket: gputui asks
    it to stop, redeploys, and the probe starts a daemon that speaks our protocol."""
    import json as _json
    from remote_probe.paths import ensure_private_dir, runtime_dir, socket_path
    from remote_probe.wire import config_key
    rdir = sshbox.remote_dir
    ensure_private_dir(rdir)
    ensure_private_dir(runtime_dir(rdir))
    fake = subprocess.Popen([sys.executable, "-c", FAKE_OLD_DAEMON, socket_path(rdir),
                             _json.dumps(config_key("idle"))])
    try:
        for _ in range(100):
            if os.path.exists(socket_path(rdir)):
                break
            await asyncio.sleep(0.05)
        s = session_mod.RemoteSession(target(sshbox), simulate="idle", remote_dir=rdir)
        await asyncio.wait_for(s.open(), 60)
        try:
            assert s.client.hello["protocol"] == wire.PROTOCOL
            assert s.client.hello["pid"] != fake.pid
            assert fake.wait(5) == 0  # it was asked to stop, and did
        finally:
            await s.close()
    finally:
        if fake.poll() is None:
            fake.kill()


# -- the login shell matrix (issue 23): every shell a box user may have, over exec ----------
LOGIN_SHELLS = {"bash": "/bin/bash", "zsh": "/usr/bin/zsh", "fish": "/usr/bin/fish",
                "dash": "/bin/dash", "busybox-sh": "busybox", "tcsh": "/usr/bin/tcsh",
                "csh": "/bin/csh"}


def login_shell_path(name, root):
    path = LOGIN_SHELLS[name]
    if path == "busybox":  # busybox runs as `sh` when called by that name
        bb = shutil.which("busybox")
        if bb is None:
            pytest.skip("busybox is not installed (apt install busybox)")
        where = "/tmp/gputui-test-shells"  # every user must reach it: not under pytest's 0700 tmp
        os.makedirs(where, exist_ok=True)
        os.chmod(where, 0o755)
        path = os.path.join(where, "ash")
        if not os.path.islink(path):
            os.symlink(bb, path)
    if not os.path.exists(path):
        pytest.skip("%s is not installed (apt install %s)" % (path, name))
    return path


@pytest.fixture(params=sorted(LOGIN_SHELLS))
def shell_box(request, tmp_path_factory):
    from tests.support.pty_fixtures import kill_user_daemons, make_user, start_box, stop_box
    root = tmp_path_factory.mktemp("shellbox")
    os.chmod(root, 0o755)
    user = make_user("gt_b_sh", shell=login_shell_path(request.param, root))
    box = start_box(root, [user.pw_name])
    box.user, box.shell = user, request.param
    yield box
    kill_user_daemons(user)
    stop_box(box)
    shutil.rmtree("/tmp/gputui-%d" % user.pw_uid, ignore_errors=True)


def test_every_login_shell_runs_the_probe_over_exec(shell_box):
    """csh/tcsh used to fail to parse the start command, so every connect was misdiagnosed
    as PTY-only; here each shell starts the probe over a plain exec channel."""
    r = gputui("status", "testbox", "--json", "--simulate", "cpu-only", "--ssh-config",
               shell_box.ssh_config)
    assert r.returncode == 0, (shell_box.shell, r.stderr)
    assert "terminal" not in r.stderr.lower() and "pty" not in r.stderr.lower(), r.stderr
    _, sha = build_probe()
    assert os.path.exists(os.path.join(shell_box.user.pw_dir, ".cache", "gputui", probe_filename(sha)))


# -- the same shells behind a PTY-only proxy (the line gputui types must parse in each) --------
@pytest.fixture(params=sorted(LOGIN_SHELLS))
def pty_shell_box(request, tmp_path_factory):
    from tests.support.pty_fixtures import PTY_ONLY, me, start_box, stop_box, write_pty_only
    from tests.support.sshd import stop_daemon
    root = tmp_path_factory.mktemp("ptyshell")
    os.chmod(root, 0o755)
    shell = login_shell_path(request.param, root)
    script = write_pty_only(root, PTY_ONLY.split("exec /bin/bash")[0] + "exec %s -i\n" % shell)
    box = start_box(root, [me()], extra_config="ForceCommand %s" % script, subsystem=None)
    box.shell = request.param
    yield box
    stop_daemon(box.remote_dir)
    stop_box(box)


def test_every_login_shell_runs_the_probe_over_the_terminal(pty_shell_box):
    r = gputui("status", "testbox", "--json", "--simulate", "cpu-only", "--ssh-config",
               pty_shell_box.ssh_config, "--remote-dir", pty_shell_box.remote_dir)
    assert r.returncode == 0, (pty_shell_box.shell, r.stderr)
    import json as _json
    assert _json.loads(r.stdout)["transport"] == "pty"
