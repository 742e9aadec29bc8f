"""The direct socket path against a box that lies: another program on the daemon's socket,
a state dir deleted on the laptop, file downloads through the socket."""

import asyncio
import logging
import os
import socket
import threading
import time

import pytest

from remote_probe import paths
from remote_probe.wire import config_key
from remote_probe.daemon import terminate
from tui.core.session import probe_sockets
from tui.remote import ssh, transports
from tui.remote.probe import files as probe_files
from tui.remote.session import RemoteSession

SCARY = ("Traceback", "Error", "error", "failed", "protocol")


class Impostor:
    """Something else listening on the daemon's socket path: speaks `mode`."""

    def __init__(self, path, mode):
        if os.path.exists(path):
            os.unlink(path)
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(path)
        self.sock.listen(8)
        self.mode, self.conns, self.accepted = mode, [], 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            self.conns.append(c)
            try:
                if self.mode == "garbage":
                    c.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n\x1b[31m[b]boom[/b]\n" * 50)
                elif self.mode == "flood":  # bytes with no newline, as fast as it can
                    threading.Thread(target=self._flood, args=(c,), daemon=True).start()
                # "silent": accept and never answer
            except OSError:
                pass

    def _flood(self, c):
        try:
            while True:
                c.sendall(b"x" * 65536)
        except OSError:
            pass

    def close(self):
        self.sock.close()
        for c in self.conns:
            c.close()


async def _connect(target, remote_dir):
    s = RemoteSession(target, simulate="a100x2", remote_dir=remote_dir)
    t0 = time.monotonic()
    await s.open()
    took = time.monotonic() - t0
    return s, took


def _rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


@pytest.mark.parametrize("mode", ["garbage", "silent", "flood"])
async def test_the_socket_path_gives_up_on_another_program_within_seconds(sshbox, tmp_path, mode,
                                                                          caplog):
    target = ssh.Target.parse("testbox", ssh_config=sshbox.ssh_config)
    s, _ = await _connect(target, sshbox.remote_dir)  # any SSH connection to the box
    impostor = Impostor(str(tmp_path / "other.sock"), mode)
    try:
        peak = _rss_mb()
        t0 = time.monotonic()
        with pytest.raises(transports.DirectUnavailable) as exc:
            await transports.start_direct(s.conn, str(tmp_path / "other.sock"), config_key("a100x2"))
        assert time.monotonic() - t0 < transports.DIRECT_TIMEOUT + 2  # then the command path
        assert impostor.accepted == 1
        assert not exc.value.channel_refused  # the channel opened: not taken for a refusal
        # a peer that never sends a newline does not fill the laptop's memory meanwhile
        assert _rss_mb() - peak < 64
        # nothing logged at WARNING: without --log, Python prints those on the user's stderr
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text[:500]
    finally:
        impostor.close()
        await s.close()
        terminate(sshbox.remote_dir)


@pytest.mark.parametrize("mode", ["garbage", "silent", "flood"])
async def test_another_program_on_the_socket_falls_back_quietly(sshbox, mode):
    target = ssh.Target.parse("testbox", ssh_config=sshbox.ssh_config)
    s, _ = await _connect(target, sshbox.remote_dir)
    await s.close()
    terminate(sshbox.remote_dir)
    sock_path = paths.socket_path(sshbox.remote_dir)
    impostor = Impostor(sock_path, mode)
    try:
        s, took = await _connect(target, sshbox.remote_dir)
        try:
            assert impostor.accepted >= 1  # the socket was tried
            assert not s.direct and s.state == "live"
            reply = await s.fresh_snapshot()
            assert len(reply["sample"]["gpus"]) == 2  # the user gets the dashboard
            # nothing alarming about an internal fallback reaches the user
            assert not [n for n in s.notices if any(w in n for w in SCARY)], s.notices
            assert took < transports.DIRECT_TIMEOUT + 20
        finally:
            await s.close()
    finally:
        impostor.close()
        terminate(sshbox.remote_dir)


async def test_a_deleted_state_dir_on_the_laptop_starts_the_probe_as_before(sshbox, tmp_path):
    import shutil
    target = ssh.Target.parse("testbox", ssh_config=sshbox.ssh_config)
    s, _ = await _connect(target, sshbox.remote_dir)
    await s.close()
    shutil.rmtree(os.path.dirname(probe_sockets.cache_path()))
    s, _ = await _connect(target, sshbox.remote_dir)
    try:
        assert not s.direct and s.state == "live"
    finally:
        await s.close()
    s, _ = await _connect(target, sshbox.remote_dir)  # and remembered again
    try:
        assert s.direct
        # a download of an empty file and past the end through the socket
        (tmp_path / "empty").write_bytes(b"")
        f = probe_files.ProbeFiles(s.request).open(str(tmp_path / "empty"))
        assert await f.read(1024, 0) == b""
    finally:
        await s.close()
        terminate(sshbox.remote_dir)


async def test_a_killed_daemon_that_left_its_socket_file_is_started_again(sshbox):
    import json
    import signal
    target = ssh.Target.parse("testbox", ssh_config=sshbox.ssh_config)
    s, _ = await _connect(target, sshbox.remote_dir)
    old_pid = s.client.hello["pid"]
    await s.close()
    os.kill(old_pid, signal.SIGKILL)  # the OOM killer: no cleanup, the socket file stays
    for _ in range(100):
        try:
            os.kill(old_pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    assert os.path.exists(paths.socket_path(sshbox.remote_dir))
    try:
        s, took = await _connect(target, sshbox.remote_dir)
        try:
            assert not s.direct and s.state == "live"
            assert s.client.hello["pid"] != old_pid
            assert not [n for n in s.notices if any(w in n for w in SCARY)], s.notices
        finally:
            await s.close()
        [entry] = json.load(open(probe_sockets.cache_path())).values()
        assert "refused" not in entry  # a dead daemon is not a box that forbids sockets
        s, _ = await _connect(target, sshbox.remote_dir)
        try:
            assert s.direct
        finally:
            await s.close()
    finally:
        terminate(sshbox.remote_dir)


def test_a_box_with_disable_forwarding_is_tried_once(tmp_path_factory):
    import json
    import subprocess
    import sys
    from tests.support.sshd import start_sshd, stop_sshd
    box = start_sshd(tmp_path_factory.mktemp("box"), extra_config="DisableForwarding yes")
    try:
        box.trust()
        args = [sys.executable, "-m", "tui", "status", "testbox", "--ssh-config", box.ssh_config,
                "--simulate", "a100x2", "--remote-dir", box.remote_dir]
        for _ in range(3):
            r = subprocess.run(args, capture_output=True, text=True, timeout=120,
                               stdin=subprocess.DEVNULL)
            assert r.returncode == 0 and "A100" in r.stdout, r.stderr
            assert "prohibited" not in r.stdout + r.stderr  # the fallback is not the user's concern
        [entry] = json.load(open(probe_sockets.cache_path())).values()
        assert "refused" in entry
    finally:
        terminate(box.remote_dir)
        stop_sshd(box)


async def test_downloading_a_fifo_through_the_socket_is_an_error_not_a_hang(sshbox, tmp_path):
    target = ssh.Target.parse("testbox", ssh_config=sshbox.ssh_config)
    s, _ = await _connect(target, sshbox.remote_dir)
    await s.close()
    fifo = tmp_path / "ckpt.pt"
    os.mkfifo(str(fifo))
    s, _ = await _connect(target, sshbox.remote_dir)
    try:
        assert s.direct
        f = probe_files.ProbeFiles(s.request).open(str(fifo))
        with pytest.raises(Exception) as exc:
            await asyncio.wait_for(f.read(1024, 0), 5)
        assert not isinstance(exc.value, asyncio.TimeoutError), "the download hangs"
    finally:
        await s.close()
        try:  # a writer unblocks the daemon's open() so that it can stop
            fd = os.open(str(fifo), os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
        except OSError:
            pass
        terminate(sshbox.remote_dir)


async def test_downloads_through_the_socket_say_what_is_wrong(sshbox, tmp_path):
    target = ssh.Target.parse("testbox", ssh_config=sshbox.ssh_config)
    s, _ = await _connect(target, sshbox.remote_dir)
    await s.close()
    s, _ = await _connect(target, sshbox.remote_dir)
    try:
        assert s.direct
        files = probe_files.ProbeFiles(s.request)
        for missing in (tmp_path / "gone.pt", tmp_path):
            with pytest.raises(Exception) as exc:
                await asyncio.wait_for(files.open(str(missing)).read(10, 0), 10)
            assert str(missing) in str(exc.value)
        blob = os.urandom(3 * 512 * 1024 + 17)  # several chunks, the last one short
        (tmp_path / "ckpt.pt").write_bytes(blob)
        f = files.open(str(tmp_path / "ckpt.pt"))
        assert await f.read(len(blob) + 999, 0) == blob
        assert await f.read(100, len(blob) - 10) == blob[-10:]
        assert await f.read(100, len(blob) + 5) == b""
    finally:
        await s.close()
        terminate(sshbox.remote_dir)


async def test_a_socket_file_deleted_under_a_running_daemon_is_not_a_refusal(sshbox):
    """/tmp cleaners (systemd-tmpfiles) delete old sockets under deep homes' /tmp fallback."""
    import json
    target = ssh.Target.parse("testbox", ssh_config=sshbox.ssh_config)
    s, _ = await _connect(target, sshbox.remote_dir)
    await s.close()

    def daemon_pid():
        with open(paths.lock_path(sshbox.remote_dir)) as f:
            return json.loads(f.read() or "{}").get("pid")
    before = daemon_pid()
    os.unlink(paths.socket_path(sshbox.remote_dir))
    try:
        s, _ = await _connect(target, sshbox.remote_dir)
        try:
            # live, through the same daemon (its history kept): either the fallback path, or,
            # on a loaded machine, direct attach to the path the daemon bound again within a
            # tick (keep_bound) before this connect tried it: both are right
            assert s.state == "live" and daemon_pid() == before
            assert not s.direct or os.path.exists(paths.socket_path(sshbox.remote_dir))
        finally:
            await s.close()
        entries = json.load(open(probe_sockets.cache_path())).values()
        assert not [e for e in entries if "refused" in e]
    finally:
        terminate(sshbox.remote_dir)
