"""A release that is verified (issue 36), end to end through real sshd and the real daemon:
autostop runs a release command that exits 0 and stops nothing; the app is closed; the box,
still up on the same boot past the verify window, sends exactly one release_unverified
message, and the daemon's snapshot says the release is not verified."""

import asyncio
import json
import shlex
import subprocess
import sys
import time

import pytest

from remote_probe import wire
from tui.remote import session as session_mod
from tui.remote import ssh

pytestmark = pytest.mark.timeout(120)

VERIFY_S = 3.0
TITLE = "testbox is still up after its release"


async def session(box):
    s = session_mod.RemoteSession(ssh.Target.parse("testbox", ssh_config=box.ssh_config),
                                  simulate="idle", remote_dir=box.remote_dir)
    await s.open()
    return s


def unverified(receiver):
    return [(t, m) for (t, _p, _h, _b), m in zip(receiver.hits, receiver.messages())
            if m["title"] == TITLE]


async def test_a_release_that_stops_nothing_is_an_alarm(sshbox, tmp_path, receiver):
    ran_at = tmp_path / "ran_at"
    # exits 0 and stops nothing: only writes when it ran
    command = "date +%%s.%%N > %s" % shlex.quote(str(ran_at))
    s = await session(sshbox)
    await s.request(wire.NOTIFY_CONFIG, channels=[receiver.url], box="testbox", enabled=True,
                    quiet=None, templates={})
    # a deadline (not the idle window): a tmux job another test starts cannot cancel it
    armed = await s.request(wire.AUTOSTOP_ARM, command=command, deadline=time.time() + 1,
                            grace=1, verify_s=VERIFY_S)
    assert armed["autostop"]["armed"]["verify_s"] == VERIFY_S
    await s.close()  # the laptop goes away

    end = time.time() + 40
    while time.time() < end and not unverified(receiver):
        await asyncio.sleep(0.1)
    assert ran_at.exists(), "the release command never ran"
    alarms = unverified(receiver)
    assert alarms, [m["title"] for m in receiver.messages()]
    delay = alarms[0][0] - float(ran_at.read_text())
    print("release command -> release_unverified message: %.2f s (verify window %.0f s)"
          % (delay, VERIFY_S))
    assert VERIFY_S - 0.5 <= delay <= VERIFY_S + 4.0
    body = alarms[0][1]["message"]
    assert alarms[0][1]["type"] == "failure"  # the box is billing: loud, through quiet hours too
    assert "but the box is still up and billing" in body
    assert "`%s` exited 0; same boot, uptime" % command in body

    await asyncio.sleep(VERIFY_S + 2)  # more ticks: still one alarm
    assert len(unverified(receiver)) == 1, receiver.messages()

    s = await session(sshbox)
    try:
        snap = await s.request(wire.SNAPSHOT)
        events = (await s.request(wire.AUTOSTOP_STATUS))["events"]
        # autostop can be armed again on a box that is still up
        again = await s.request(wire.AUTOSTOP_ARM, command="true", idle_seconds=3600)
        await s.request(wire.AUTOSTOP_DISARM)
    finally:
        await s.close()
    release = snap["autostop"]["release"]
    assert release["verified"] is False
    assert release["command"] == command and release["exit"] == 0
    assert abs(release["ran_at"] - float(ran_at.read_text())) < 2
    assert [e["event"] for e in events].count("release_unverified") == 1
    assert again["autostop"]["armed"]["command"] == "true"

    # what the user reads: `gputui status` (the same daemon: --simulate idle)
    args = ["status", "testbox", "--simulate", "idle", "--ssh-config", sshbox.ssh_config,
            "--remote-dir", sshbox.remote_dir]
    run = [sys.executable, "-W", "ignore", "-m", "tui"]
    doc = json.loads(subprocess.run(run + args + ["--json"], stdout=subprocess.PIPE, text=True,
                                    timeout=90, stdin=subprocess.DEVNULL).stdout)
    assert doc["release"]["verified"] is False and doc["release"]["command"] == command
    text = subprocess.run(run + args, stdout=subprocess.PIPE, text=True, timeout=90,
                          stdin=subprocess.DEVNULL).stdout
    line = next(ln for ln in text.splitlines() if "release command ran at" in ln)
    assert line.startswith("⚠ ") and "but the box is still up and billing" in line, text


async def test_the_apps_release_that_stops_nothing_is_not_verified(sshbox):
    s = await session(sshbox)
    try:
        reply = await s.request(wire.RELEASE, command="true", verify_s=2)
        assert reply["exit"] == 0
        first = (await s.request(wire.AUTOSTOP_STATUS))["autostop"]["release"]
        assert first["verified"] is None and first["via"] == "release"  # the window runs
        await asyncio.sleep(3.5)
        status = await s.request(wire.AUTOSTOP_STATUS)
    finally:
        await s.close()
    assert status["autostop"]["release"]["verified"] is False
    assert [e["event"] for e in status["events"]].count("release_unverified") == 1
