"""Autostop survives the daemon (issue 20): armed through a real sshd, the app closed, the
daemon killed with SIGKILL; the watcher starts it again and the release still runs. Then
the next contact closes the ledger session and the fleet shows the box released (issue 23)."""

import asyncio
import json
import os
import signal
import time

from remote_probe import wire
from remote_probe.autostop import policy as autostop, supervise
from remote_probe.paths import lock_path
from tui.core.fleet import rows as fleet_rows
from tui.core.config import HostConfig
from tui.core.billing.ledger import Ledger
from tui.remote import session as session_mod
from tui.remote import ssh


def target(box):
    return ssh.Target.parse("testbox", ssh_config=box.ssh_config)


def pid_in(path):
    """The pid a lock file names, or None while it is missing or being written: its owner
    truncates it and then writes, so a reader can find it empty."""
    try:
        with open(path) as f:
            return json.load(f)["pid"]
    except (OSError, ValueError, KeyError):
        return None


def daemon_pid(box):
    return pid_in(lock_path(box.remote_dir))


def watcher_pid(box):
    return pid_in(os.path.join(box.remote_dir, supervise.SUPERVISE_LOCK))


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def until(cond, timeout):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.1)
    return True


async def test_autostop_fires_after_the_daemon_is_killed(sshbox, tmp_path):
    marker = tmp_path / "released"
    s = session_mod.RemoteSession(target(sshbox), simulate="idle", remote_dir=sshbox.remote_dir)
    await s.open()
    reply = await s.request(wire.AUTOSTOP_ARM, command="touch %s" % marker,
                            deadline=time.time() + 8, grace=1)
    assert reply["autostop"]["armed"]
    await s.close()  # the laptop goes away
    first = daemon_pid(sshbox)
    assert first
    assert await until(lambda: watcher_pid(sshbox), 10)
    watcher = watcher_pid(sshbox)
    assert await until(lambda: open("/proc/%d/comm" % watcher).read().strip() == "gputui-watch", 15)
    os.kill(first, signal.SIGKILL)  # what a `pkill -9 python` or the OOM killer does
    assert await until(lambda: marker.exists(), 40), "\n".join(
        open(os.path.join(sshbox.remote_dir, name)).read()[-2000:]
        for name in ("daemon.log", autostop.EVENTS_FILE)
        if os.path.exists(os.path.join(sshbox.remote_dir, name)))
    assert await until(lambda: daemon_pid(sshbox), 5)
    assert daemon_pid(sshbox) != first  # a new daemon ran the release
    assert await until(lambda: not alive(watcher), 10)  # fired: nothing armed, the watcher left

    # the next contact (a fleet opened later) closes the session the release ended
    ledger = Ledger(str(tmp_path / "ledger.db"))
    box = fleet_rows.FleetBox(fleet_rows.FleetHost("testbox"), HostConfig(rate=3.6), ledger)
    s = session_mod.RemoteSession(target(sshbox), simulate="idle", remote_dir=sshbox.remote_dir,
                                  listener=box)
    try:
        await s.open()
    finally:
        await s.close()
    fired = [e for e in box.autostop_events if e["event"] == "fired"]
    assert fired and fired[-1]["late"] and fired[-1]["exit"] == 0
    row = ledger.sessions()[0]
    assert row["end"] == fired[-1]["t"] and row["ended_how"] == "released by autostop"
    assert box.row().state == fleet_rows.RELEASED
    assert fleet_rows.check_exit_code([box.row()]) == 0
    ledger.close()


async def test_the_watcher_leaves_when_autostop_is_disarmed(sshbox):
    s = session_mod.RemoteSession(target(sshbox), simulate="idle", remote_dir=sshbox.remote_dir)
    await s.open()
    try:
        await s.request(wire.AUTOSTOP_ARM, command="true", deadline=time.time() + 3600, grace=1)
        assert await until(lambda: watcher_pid(sshbox), 10)
        watcher = watcher_pid(sshbox)
        assert await until(lambda: alive(watcher), 15)
        await s.request(wire.AUTOSTOP_DISARM, reason="cancelled")
        assert await until(lambda: not alive(watcher), 10)
    finally:
        await s.close()


def test_next_step():
    assert supervise.next_step(armed=True, daemon_alive=True) == "wait"
    assert supervise.next_step(armed=True, daemon_alive=False) == "restart"
    assert supervise.next_step(armed=False, daemon_alive=False) == "exit"
    assert supervise.next_step(armed=True, daemon_alive=False, owner_gone=True) == "exit"
