"""Autostop end to end: armed through real sshd, enforced by the daemon with the app gone."""

import asyncio
import json
import os
import subprocess
import time

import pytest

from remote_probe import wire
from tui.remote import session as session_mod
from tui.remote import ssh

from tests.support.sshd import start_sshd, stop_daemon


def target(box):
    return ssh.Target.parse("testbox", ssh_config=box.ssh_config)


async def arm(box, scenario, **params):
    s = session_mod.RemoteSession(target(box), simulate=scenario, remote_dir=box.remote_dir)
    await s.open()
    reply = await s.request(wire.AUTOSTOP_ARM, **params)
    await s.close()  # the laptop goes away
    return reply["autostop"]


async def wait_file(path, timeout):
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path):
            return time.time()
        await asyncio.sleep(0.05)
    return None


def events(box):
    path = os.path.join(box.remote_dir, "autostop-events.jsonl")
    return [json.loads(l) for l in open(path)] if os.path.exists(path) else []


async def fired_reasons(box, timeout=10):
    """The reasons of the "fired" events, once one is logged: the daemon logs it after the
    release command exits, so it can land just after the command's own marker file."""
    end = time.time() + timeout
    while time.time() < end:
        reasons = [e["reason"] for e in events(box) if e["event"] == "fired"]
        if reasons:
            return reasons
        await asyncio.sleep(0.1)
    return []


async def test_idle_box_is_released_with_the_app_disconnected(own_pid_box, tmp_path):
    sshbox = own_pid_box  # a job started in any tmux on the machine would cancel the grace
    marker = tmp_path / "released"
    status = await arm(sshbox, "idle", command="touch %s" % marker, idle_seconds=2, grace=1)
    assert status["armed"]["command"].startswith("touch")
    fired_at = await wait_file(str(marker), 15)
    assert fired_at is not None, events(sshbox)
    assert await fired_reasons(sshbox) == ["idle"]
    kinds = [e["event"] for e in events(sshbox)]
    assert kinds[-3:] == ["armed", "grace", "fired"]
    grace = [e for e in events(sshbox) if e["event"] == "grace"][-1]
    # From the moment the idle window was complete: the grace, plus at most one tick, plus the
    # scheduling a loaded test machine adds to the daemon's tick and this poll (3.03 s was read
    # once at a load average of 14).
    delay = fired_at - (grace["idle_since"] + 2.0)
    assert 1.0 <= delay <= 1.0 + 1.0 + 1.5, "fired %.2f s after the idle window" % delay
    print("autostop firing delay after the idle window: %.2f s (grace 1 s)" % delay)
    # The app shows what happened at its next connect.
    s = session_mod.RemoteSession(target(sshbox), simulate="idle", remote_dir=sshbox.remote_dir)

    class L(session_mod.Listener):
        seen = None

        def on_autostop(self, status, event=None, events=None):
            L.seen = events

    s.listener = L()
    await s.open()
    await s.close()
    assert any(e["event"] == "fired" and e["exit"] == 0 for e in L.seen)


async def test_cancel_on_the_box_prevents_the_release(sshbox, tmp_path):
    marker = tmp_path / "released"
    await arm(sshbox, "idle", command="touch %s" % marker, idle_seconds=1, grace=4)
    end = time.time() + 10
    while time.time() < end and "grace" not in [e["event"] for e in events(sshbox)]:
        await asyncio.sleep(0.1)
    assert "grace" in [e["event"] for e in events(sshbox)]
    # The one documented command, run on the box:
    out = subprocess.run([os.path.join(sshbox.remote_dir, "cancel-autostop")],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=30)
    assert out.returncode == 0 and "cancelled" in out.stdout
    await asyncio.sleep(5)
    assert not marker.exists()
    assert events(sshbox)[-1]["event"] == "disarmed"
    assert events(sshbox)[-1]["reason"] == "cancelled on the box"
    # run again, nothing is armed: it says so instead of "this box will not be stopped"
    again = subprocess.run([os.path.join(sshbox.remote_dir, "cancel-autostop")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=30)
    assert again.returncode == 0 and "was not armed" in again.stdout, again.stdout
    assert "will not be stopped" not in again.stdout


async def test_cancel_from_the_app_prevents_the_release(sshbox, tmp_path):
    marker = tmp_path / "released"
    s = session_mod.RemoteSession(target(sshbox), simulate="idle", remote_dir=sshbox.remote_dir)
    await s.open()
    await s.request(wire.AUTOSTOP_ARM, command="touch %s" % marker, idle_seconds=1, grace=3)
    await asyncio.sleep(1.5)
    reply = await s.request(wire.AUTOSTOP_DISARM, reason="cancelled from gputui")
    assert reply["autostop"]["armed"] is None
    await s.close()
    await asyncio.sleep(4)
    assert not marker.exists()


async def test_busy_bursts_reset_the_idle_window(sshbox, tmp_path):
    marker = tmp_path / "released"
    await arm(sshbox, "pulse", command="touch %s" % marker, idle_seconds=4, grace=1)
    await asyncio.sleep(9)
    assert not marker.exists()
    assert "grace" not in [e["event"] for e in events(sshbox)]


@pytest.fixture
def own_pid_box(tmp_path_factory):
    """A box in a PID namespace of its own: a root daemon counts a job started in any tmux on
    the machine as "a job started just before the release" (right on a real box), and under
    xdist other tests start tmux jobs all the time."""
    from tests.e2e.test_provider_ns import UNSHARE, _unshare_works
    if not _unshare_works():
        pytest.skip("unshare --pid --mount-proc needs root")
    box = start_sshd(tmp_path_factory.mktemp("pidbox"),
                     wrap=[UNSHARE, "--pid", "--fork", "--mount-proc", "--kill-child"])
    box.trust()
    yield box
    box.proc.kill()  # --kill-child: the namespace and everything in it goes
    box.proc.wait(10)


async def test_deadline_fires_even_while_busy(own_pid_box, tmp_path):
    box = own_pid_box
    marker = tmp_path / "released"
    await arm(box, "a100x2", command="touch %s" % marker, deadline=time.time() + 2, grace=1)
    assert await wait_file(str(marker), 15) is not None, events(box)
    assert await fired_reasons(box) == ["deadline"]


async def test_armed_state_survives_a_daemon_restart(sshbox):
    await arm(sshbox, "idle", command="shutdown -h now", idle_seconds=3600, grace=60)
    stop_daemon(sshbox.remote_dir)
    s = session_mod.RemoteSession(target(sshbox), simulate="idle", remote_dir=sshbox.remote_dir)
    await s.open()
    reply = await s.request(wire.AUTOSTOP_STATUS)
    assert reply["autostop"]["armed"]["command"] == "shutdown -h now"
    await s.request(wire.AUTOSTOP_DISARM)
    await s.close()
