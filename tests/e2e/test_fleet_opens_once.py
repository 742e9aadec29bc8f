"""The fleet opens each box once (issue 20): a fleet of N boxes makes exactly N SSH
connections through the real sshd, and its one-second tick runs once a second, not once per
app class that defines on_mount."""

import asyncio
import re
import time

from tui.ui.fleet_app import FleetApp

from tests.support.fleet_fixtures import simfleet  # noqa: F401 - the fixture

BOXES = ("busy", "idle1", "cpubox")


def accepted(log_text: str) -> int:
    """Logins sshd accepted (LogLevel VERBOSE logs one "Accepted publickey" per connection)."""
    return len(re.findall(r"Accepted publickey for ", log_text))


async def test_fleet_of_n_boxes_makes_n_ssh_connections_and_one_tick_a_second(simfleet):  # noqa: F811
    before = accepted(simfleet.box.log.read_text())
    app = FleetApp(hosts=list(BOXES), ssh_config=simfleet.ssh_config)
    ticks: list = []
    tick = app.tick
    app.tick = lambda: (ticks.append(time.monotonic()), tick())[1]  # what set_interval calls
    async with app.run_test(size=(170, 30)) as pilot:
        for _ in range(600):
            if app.fleet.settled() and all(b.session_state == "live" for b in app.fleet.boxes):
                break
            await pilot.pause(0.1)
        assert [b.session_state for b in app.fleet.boxes] == ["live"] * len(BOXES)
        await asyncio.sleep(2.0)  # a second connection would have had time to log in
        since = len(ticks)
        await asyncio.sleep(3.0)
        window = len(ticks) - since
        logins = accepted(simfleet.box.log.read_text()) - before
        connects = {b.host: b.connects for b in app.fleet.boxes}
        await app.action_quit()
    assert logins == len(BOXES), simfleet.box.log.read_text()[-3000:]
    assert connects == {h: 1 for h in BOXES}
    assert 2 <= window <= 4, "%d ticks in 3 s" % window
