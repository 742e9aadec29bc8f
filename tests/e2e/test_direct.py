"""Reaching a running daemon through its socket (direct-streamlocal, issue 12).

The first connect starts the probe with a command; later ones open the daemon's socket over
the SSH connection: no command runs on the box and no bridge process stays there. Boxes that
forbid socket forwarding, a daemon that is gone and a daemon with other settings all fall
back to the command, and the user sees the same dashboard."""

import asyncio
import json
import os
import subprocess
import sys

from remote_probe import paths
from remote_probe.daemon import terminate
from tui.core.session import probe_sockets
from tui.remote import ssh
from tui.remote.probe import files as probe_files
from tui.remote.session import RemoteSession

from tests.support.sshd import start_sshd, stop_sshd
from tests.support.hostile import ARGV0_SHOWN, assert_inert
from tests.e2e.test_hostile import start_hostile_box
from tests.support.user_world import make_home, user_world  # noqa: F401 - fixture


def gputui(*args):
    return subprocess.run([sys.executable, "-m", "tui", *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120, stdin=subprocess.DEVNULL)


def commands_run(box):
    """How many commands sshd started (exec or shell), from its own log."""
    return box.log.read_text(errors="replace").count("Starting session:")


def bridges(remote_dir):
    """Probe processes on the box that bridge a connection (attach), for this state dir."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = open("/proc/%s/cmdline" % pid, "rb").read().split(b"\0")
        except OSError:
            continue
        if b"attach" in argv and os.fsencode(remote_dir) in argv:
            found.append(int(pid))
    return found


def cache_entries():
    try:
        return json.load(open(probe_sockets.cache_path()))
    except OSError:
        return {}


async def test_the_second_status_runs_no_command_on_the_box(user_world):
    box = user_world.box
    conn = await start_hostile_box(box)  # a GPU job and tmux sessions with hostile names
    try:
        first = gputui("status", "mybox", "--simulate", "adopt", "--remote-dir", box.remote_dir)
        assert first.returncode == 0, first.stderr
        before = commands_run(box)
        second = gputui("status", "mybox", "--simulate", "adopt", "--remote-dir", box.remote_dir)
        assert second.returncode == 0, second.stderr
        assert commands_run(box) == before  # nothing was started on the box
        # the same box text, as inert through the socket as through the bridge
        assert_inert(second.stdout)
        assert ARGV0_SHOWN in second.stdout and "tmux session [/]" in second.stdout
        [entry] = cache_entries().values()
        assert entry["socket"] == paths.socket_path(box.remote_dir)
    finally:
        conn.close()


async def test_a_live_session_through_the_socket_leaves_no_bridge_and_reads_files(sshbox, tmp_path):
    target = ssh.Target.parse("testbox", ssh_config=sshbox.ssh_config)
    first = RemoteSession(target, simulate="a100x2", remote_dir=sshbox.remote_dir)
    await first.open()
    assert not first.direct and len(bridges(sshbox.remote_dir)) == 1
    await first.close()
    for _ in range(50):  # the bridge ends with its channel
        if not bridges(sshbox.remote_dir):
            break
        await asyncio.sleep(0.1)
    session = RemoteSession(target, simulate="a100x2", remote_dir=sshbox.remote_dir)
    await session.open()
    try:
        assert session.direct and session.state == "live"
        assert bridges(sshbox.remote_dir) == []
        reply = await session.fresh_snapshot()
        assert len(reply["sample"]["gpus"]) == 2
        # Checkpoint downloads without SFTP come through the daemon here (no bridge to ask).
        blob = os.urandom(700_000)
        (tmp_path / "ckpt.pt").write_bytes(blob)
        f = probe_files.ProbeFiles(session.request).open(str(tmp_path / "ckpt.pt"))
        assert await f.read(len(blob), 0) == blob
    finally:
        await session.close()


async def test_a_gone_daemon_or_other_settings_fall_back_to_starting_the_probe(sshbox):
    target = ssh.Target.parse("testbox", ssh_config=sshbox.ssh_config)

    async def connect(scenario):
        s = RemoteSession(target, simulate=scenario, remote_dir=sshbox.remote_dir)
        await s.open()
        reply = await s.fresh_snapshot()
        await s.close()
        return s, len(reply["sample"]["gpus"])

    s, gpus = await connect("a100x2")
    assert (s.direct, gpus) == (False, 2)
    terminate(sshbox.remote_dir)  # the box rebooted, or someone killed the daemon
    s, gpus = await connect("a100x2")
    assert (s.direct, gpus) == (False, 2)  # the socket was gone: started again
    s, gpus = await connect("h100x8")  # the user asks for another box shape
    assert (s.direct, gpus) == (False, 8)  # the old daemon was replaced, not reused
    s, gpus = await connect("h100x8")
    assert (s.direct, gpus) == (True, 8)


def test_a_box_that_forbids_socket_forwarding_is_tried_once(tmp_path_factory, monkeypatch):
    box = start_sshd(tmp_path_factory.mktemp("box"), extra_config="AllowStreamLocalForwarding no")
    try:
        box.trust()
        args = ["status", "testbox", "--ssh-config", box.ssh_config, "--simulate", "a100x2",
                "--remote-dir", box.remote_dir]
        assert gputui(*args).returncode == 0
        r = gputui(*args)  # tries the socket, is refused, starts the probe as before
        assert r.returncode == 0 and "A100" in r.stdout, r.stderr
        [entry] = cache_entries().values()
        assert "refused" in entry
        refusals = box.log.read_text(errors="replace").count("streamlocal")
        r = gputui(*args)
        assert r.returncode == 0 and "A100" in r.stdout
        assert box.log.read_text(errors="replace").count("streamlocal") == refusals  # not asked again
    finally:
        terminate(box.remote_dir)
        stop_sshd(box)
