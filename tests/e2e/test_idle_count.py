"""Idle seconds kept by the daemon (issue 20): the box sees every sample, so its count is
the one shown. Through a real sshd whose session processes are killed under the app, and
with two apps on one box at once."""

import asyncio
import os
import time

from tui.core.billing.clock import BillingClock
from tui.core.config import HostConfig
from tui.core.billing.ledger import Ledger
from tui.remote import session as session_mod
from tui.remote import ssh


class BillingListener(session_mod.Listener):
    """What the app does with a session's messages for billing (BoxContext in the app)."""

    def __init__(self, ledger):
        self.clock = BillingClock("testbox", HostConfig(rate=3.6), ledger)
        self.samples = []

    def on_inventory(self, inventory):
        self.clock.on_inventory(inventory)

    def on_sample(self, sample):
        self.samples.append(sample)
        self.clock.on_sample(sample)
        self.clock.persist()


def open_session(box, listener):
    target = ssh.Target.parse("testbox", ssh_config=box.ssh_config)
    s = session_mod.RemoteSession(target, simulate="idle", remote_dir=box.remote_dir,
                                  listener=listener)
    return s, asyncio.ensure_future(s.run())


async def until(cond, timeout=60):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def test_idle_seconds_survive_connection_cuts_and_an_app_restart(sshbox, tmp_path):
    ledger = Ledger(str(tmp_path / "ledger.db"))
    app = BillingListener(ledger)
    s, runner = open_session(sshbox, app)
    try:
        for _ in range(3):  # cut the connection under the app, stay away, come back
            await until(lambda: s.state == session_mod.LIVE and len(app.samples) >= 2)
            for pid in sshbox.session_pids():
                os.kill(pid, 9)
            await until(lambda: s.state != session_mod.LIVE)
            await asyncio.sleep(3)  # idle seconds pass on the box meanwhile
            s.retry_now()
            await until(lambda: s.state == session_mod.LIVE)
        n = len(app.samples)
        await until(lambda: len(app.samples) >= n + 2)
    finally:
        await s.close()
        runner.cancel()
    first, last = app.samples[0], app.samples[-1]
    shown = app.clock.figures().idle_seconds
    # every second of an idle box since the first sample seen is counted, cuts included
    # (before: each reconnect rebuilt the count from the ledger and lost the time away)
    assert shown >= last["t"] - first["t"] - 1.5, (shown, last["t"] - first["t"])
    assert shown == last["idle_s"]  # the daemon's own figure
    app.clock.persist(force=True)
    time.sleep(3)  # the app is closed for a while; the box goes on idling
    again = BillingListener(ledger)
    s, runner = open_session(sshbox, again)
    opened = time.time()
    try:  # past the backlog: samples taken now
        await until(lambda: again.samples and again.samples[-1]["t"] >= opened)
    finally:
        await s.close()
        runner.cancel()
    assert again.clock.figures().idle_seconds >= shown + 3  # the time the app was closed too
    ledger.close()


async def test_two_apps_on_one_box_show_the_same_idle_seconds(sshbox, tmp_path):
    ledger = Ledger(str(tmp_path / "ledger.db"))
    one = BillingListener(ledger)
    s1, r1 = open_session(sshbox, one)
    await until(lambda: len(one.samples) >= 8)  # seconds since its last ledger write
    for pid in sshbox.session_pids():  # one short cut under the first app
        os.kill(pid, 9)
    await until(lambda: s1.state != session_mod.LIVE)
    s1.retry_now()
    await until(lambda: s1.state == session_mod.LIVE)
    two = BillingListener(ledger)  # starts later: saw none of the first samples
    s2, r2 = open_session(sshbox, two)
    try:
        await until(lambda: two.samples and one.samples[-1]["seq"] <= two.samples[-1]["seq"])
        seq = two.samples[-1]["seq"] + 1  # a sample both get live
        await until(lambda: min(one.samples[-1]["seq"], two.samples[-1]["seq"]) >= seq)
    finally:
        for s, r in ((s1, r1), (s2, r2)):
            await s.close()
            r.cancel()
    a, b = one.clock.figures().idle_seconds, two.clock.figures().idle_seconds
    assert abs(a - b) <= 1.5, (a, b)  # within one sample
    two.clock.persist(force=True)
    one.clock.persist(force=True)  # the one that saw more writes last: the ledger keeps the max
    rows = ledger.sessions()
    assert len(rows) == 1 and rows[0]["idle_seconds"] == max(a, b)
    ledger.close()


def test_status_from_cron_records_the_boxes_idle_seconds(sshbox):
    """`gputui status` (cron, a script) writes the daemon's idle count into the ledger row:
    the idle cost of a box nobody watched is known."""
    import json
    import subprocess
    import sys

    def gputui(*args):
        return subprocess.run([sys.executable, "-m", "tui", *args], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=90,
                              stdin=subprocess.DEVNULL)

    box = ["--simulate", "idle", "--ssh-config", sshbox.ssh_config, "--remote-dir", sshbox.remote_dir]
    assert gputui("status", "testbox", *box).returncode == 0
    time.sleep(4)  # the idle box is sampled with nobody connected
    r = gputui("status", "testbox", *box)
    assert r.returncode == 0, r.stderr
    rows = json.loads(gputui("ledger", "--json").stdout)
    assert len(rows) == 1 and rows[0]["idle_seconds"] >= 3, rows
