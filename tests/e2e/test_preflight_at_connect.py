"""The quick preflight right after connect (issue h15): on a box whose daemon has watched it
for an hour, it said "Preflight failed: connection to the probe was lost" while the header
said live. The daemon had dropped the laptop as a client that stopped reading: the backlog it
had asked for alone was more than the daemon's limit for one client's unread bytes."""

import asyncio
import os
import signal

from remote_probe import wire
from tui.core.config import Config
from tui.remote import ssh
from tui.remote.probe.client import ProbeError
from tui.remote.session import LIVE, RemoteSession
from tui.ui.app import GputuiApp
from tui.ui.screens.modals import HelpScreen

from tests.e2e.test_app import wait_for
from tests.e2e.test_direct import bridges
from tests.support.aged_daemon import start_aged_daemon

HOUR = 3600  # samples at 1 Hz: an 8-GPU box's hour is 8 MB of backlog, over the 4 MB limit


def notices(app):
    return [str(n.message) for n in app._notifications]


async def test_the_preflight_at_connect_survives_an_hours_backlog_and_leaves_help_open(
        sshbox, tmp_path):
    start_aged_daemon(sshbox.remote_dir, "h100x8", HOUR)
    target = ssh.Target.parse("testbox", ssh_config=sshbox.ssh_config)
    app = GputuiApp(target, simulate="h100x8", remote_dir=sshbox.remote_dir,
                    config=Config({}, path=str(tmp_path / "config.toml")), ledger=None)
    async with app.run_test(size=(160, 50), notifications=True) as pilot:
        await pilot.press("question_mark")  # help open while the preflight is on its way
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        help_screen, focused = app.screen, app.focused
        await wait_for(pilot, lambda: any(n.startswith("Preflight") for n in notices(app)),
                       timeout=90)
        said = [n for n in notices(app) if n.startswith("Preflight")]
        assert len(said) == 1 and said[0].startswith("Preflight: ") and "press d" in said[0], said
        session = app.box.session
        # the backlog came whole, on the first connection: nothing was dropped and retried
        assert session.connects == 1 and session.state == LIVE
        assert session.last_seq > HOUR
        # the result is a toast: the help modal stays in front and keeps the focus
        assert app.screen is help_screen and app.focused is focused
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen))
        await pilot.press("q")


async def live(session):
    for _ in range(400):
        if session.state == LIVE and session.client and not session.client.closed.is_set():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the session is not live again: %s" % session.state)


async def preflight_with_its_channel_cut(session, cut, **params):
    """A preflight whose channel is cut, by `cut()`, right after it went out."""
    await live(session)
    client, before = session.client, set(session.client.pending)
    asked = asyncio.ensure_future(session.request(wire.PREFLIGHT, timeout=60, **params))
    while not set(client.pending) - before:
        await asyncio.sleep(0)
    cut()
    [result] = await asyncio.gather(asked, return_exceptions=True)
    return result


async def test_a_preflight_whose_channel_is_lost_is_sent_again_on_the_next_one(sshbox):
    target = ssh.Target.parse("testbox", ssh_config=sshbox.ssh_config)
    session = RemoteSession(target, simulate="a100x2", remote_dir=sshbox.remote_dir)
    running = asyncio.ensure_future(session.run())
    try:
        await live(session)
        assert not session.direct  # the first connect: a bridge on the box carries the channel

        def kill_the_bridge():
            pids = bridges(sshbox.remote_dir)
            assert pids
            for pid in pids:
                os.kill(pid, signal.SIGKILL)

        reply = await preflight_with_its_channel_cut(session, kill_the_bridge, smoke=False,
                                                     retry_lost=True)
        assert isinstance(reply, dict) and reply["facts"]["ncpu"] == os.cpu_count(), reply
        assert session.connects == 2  # answered on the connection after the one it was lost with
        # A request not marked as safe to repeat is not sent again: the loss is said as it is.
        assert session.direct  # the reconnect reached the daemon's socket: no bridge to kill
        lost = await preflight_with_its_channel_cut(session, session.process.close, smoke=False)
        assert isinstance(lost, ProbeError) and "connection to the probe was lost" in str(lost)
        await live(session)
        assert session.connects == 3
    finally:
        await session.close()
        await asyncio.wait_for(running, 10)
