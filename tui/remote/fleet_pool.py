"""The fleet's session pool: one RemoteSession per box (the same code as `connect`, with
its reconnects), connects bounded by a semaphore, each box's events landing in its
tui.core.fleet.rows.FleetBox."""

import asyncio
import logging
import time
from typing import Callable, List, Optional

from remote_probe import wire
from tui.core.fleet.rows import FleetBox, FleetHost
from tui.core.i18n import _
from tui.core.session.conn_state import ConnState
from tui.core.notify.wire import notify_config
from tui.remote import ssh
from tui.remote.late_sync import LateSemaphore
from tui.remote.session import REQUEST_ERRORS, RemoteSession

log = logging.getLogger("gputui.fleet")

CONCURRENT_CONNECTS = 8  # SSH handshakes + probe starts at once; the rest queue
PERSIST_PER_TICK = 2  # ledger writes per second at most (each is an fsync on the UI's loop)


class FleetSession(RemoteSession):
    """A RemoteSession whose connect attempts pass a shared gate, so 20 boxes (or 20
    reconnects after the laptop wakes up) do not all handshake at the same moment."""

    def __init__(self, *args, gate: LateSemaphore, box: FleetBox, **kwargs):
        super().__init__(*args, listener=box, **kwargs)
        self.gate = gate
        self.box = box

    async def open(self):
        async with self.gate:
            await super().open()
        # The daemon sends the whole backlog right after the subscribe reply; a ping answered
        # after it means the backlog is in, so the idle streak is judged on full history.
        try:
            await self.request(wire.PING, timeout=15)
            self.box.backlog_in = True
            self.box.on_change(self.box)
        except REQUEST_ERRORS as exc:
            log.info("%s: ping after subscribe failed: %s", self.box.host, exc)


class Fleet:
    def __init__(self, hosts: List[FleetHost], config, ledger=None, ssh_config=None,
                 concurrency=CONCURRENT_CONNECTS, ask_trust=None, remote_python=None,
                 on_change=None, clock=time.time, asker_for=None,
                 make_box: Callable[..., FleetBox] = FleetBox):
        self.config = config
        self.gate = LateSemaphore(concurrency)  # made before its loop runs: late_sync
        self.boxes: List[FleetBox] = []
        self.sessions = {}
        self._tasks = []
        self._persist_from = 0
        self._started = False
        self._make = dict(ledger=ledger, ssh_config=ssh_config, ask_trust=ask_trust,
                          remote_python=remote_python, on_change=on_change, clock=clock,
                          asker_for=asker_for, make_box=make_box)
        for h in hosts:
            self._add(h)

    def _add(self, h: FleetHost) -> FleetBox:
        m, config = self._make, self.config
        cfg = config.host(h.host)
        box = m["make_box"](h, cfg, m["ledger"], clock=m["clock"], on_change=m["on_change"])  # the UI's BoxContext
        self.boxes.append(box)
        if h.released:
            return box
        try:
            target = ssh.Target.parse(h.host, ssh_config=m["ssh_config"])
        except (ssh.ConnectError, ValueError) as exc:  # DestinationError is a ValueError
            box.on_state(ConnState.FAILED, str(exc))
            return box
        asker_for = m["asker_for"]
        self.sessions[h.host] = FleetSession(
            target, simulate=cfg.simulate, remote_dir=cfg.remote_dir, ask_trust=m["ask_trust"],
            remote_python=m["remote_python"], gate=self.gate, box=box,
            asker=asker_for(h.host) if asker_for else None,  # password dialogs, per box
            notify_config=notify_config(getattr(config, "data", None), h.host)[0])
        return box

    def add_config_hosts(self, config) -> List[str]:
        """Hosts `config` names that the fleet lacks join it (connecting now if the fleet runs):
        a long-lived fleet (the exporter) sees boxes added to the config after it started."""
        self.config = config
        have = {b.host for b in self.boxes}
        added = []
        for name in (config.data.get("hosts") or {}):
            if isinstance(name, str) and name not in have:
                self._add(FleetHost(name, False, None))
                have.add(name)
                added.append(name)
                if self._started and name in self.sessions:
                    self._tasks.append(asyncio.ensure_future(self._run(name, self.sessions[name])))
        return added

    def box(self, host) -> Optional[FleetBox]:
        return next((b for b in self.boxes if b.host == host), None)

    def start(self):
        self._started = True
        for host, session in self.sessions.items():
            self._tasks.append(asyncio.ensure_future(self._run(host, session)))

    async def _run(self, host, session):
        try:
            await session.run()
        except Exception as exc:  # noqa: BLE001 - one box's bug must not end the others
            log.exception("%s: session ended", host)
            session.box.on_state(ConnState.FAILED, "%s: %s" % (exc.__class__.__name__, exc))

    def restart(self, host):
        """Run a session again after it FAILED (e.g. the user fixed a key)."""
        session = self.sessions.get(host)
        if session is not None and session.state == ConnState.FAILED:
            session._closing = False
            self._tasks.append(asyncio.ensure_future(self._run(host, session)))
        elif session is not None:
            session.retry_now()

    def settled(self):
        return all(b.settled() for b in self.boxes)

    async def wait_settled(self, timeout):
        """Until every box is live with its backlog in, released or has failed an attempt."""
        deadline = time.monotonic() + timeout
        while not self.settled() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        return self.settled()

    def rows(self, now=None):
        return [b.row(now) for b in self.boxes]

    def persist(self, force=False, most=PERSIST_PER_TICK):
        """Write the boxes' billing to the ledger. Each write is a synchronous SQLite commit
        (fsync): 20 of them in one tick stalled the UI for 0.6 s, so at most `most` per call,
        taking turns (each box's own 10 s throttle still applies); force writes all."""
        n = len(self.boxes)
        wrote = 0
        for k in range(n):
            b = self.boxes[(self._persist_from + k) % n]
            if not b.connects:
                continue
            before = b.billing._persisted_at
            b.billing.persist(force=force)
            if b.billing._persisted_at != before:
                wrote += 1
                if not force and wrote >= most:
                    self._persist_from = (self._persist_from + k + 1) % n
                    return

    async def close(self, stop_daemons=False):
        self.persist(force=True)
        await asyncio.gather(*(s.close(stop_daemon=stop_daemons) for s in self.sessions.values()),
                             return_exceptions=True)
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


def open_fleet(hosts=None, ssh_config=None, remote_python=None, ask_trust=None, on_change=None,
               config=None, ledger=None, asker_for=None, make_box=FleetBox):
    """The Fleet of `hosts` (or the default fleet: open ledger sessions + config hosts),
    with the ledger and config it reads, plus notices for the user (config/ledger problems)."""
    from tui.core.config import Config
    from tui.core.fleet.rows import fleet_hosts
    from tui.core.billing.ledger import Ledger, LedgerError
    config = config if config is not None else Config.load()
    notices = []
    if ledger is None:
        try:
            ledger = Ledger()
        except (LedgerError, OSError) as exc:
            notices.append(_("ledger unavailable: %s") % exc)
    if ledger is not None and ledger.notice:
        notices.append(ledger.notice)
    rows = ledger.sessions() if ledger is not None else []
    names = [h for h in (config.data.get("hosts") or {}) if isinstance(h, str)]
    fleet = Fleet(fleet_hosts(rows, names, hosts), config, ledger, ssh_config=ssh_config,
                  ask_trust=ask_trust, remote_python=remote_python, on_change=on_change,
                  asker_for=asker_for, make_box=make_box)
    notices.extend(config.problems)
    return fleet, notices


async def fleet_rows(hosts=None, ssh_config=None, timeout=60.0, remote_python=None):
    """`gputui fleet --check/--json`: connect every box, wait until each is settled (or the
    timeout), -> (rows, alarm threshold in seconds, notices)."""
    fleet, notices = open_fleet(hosts, ssh_config=ssh_config, remote_python=remote_python)
    fleet.start()
    try:
        if not await fleet.wait_settled(timeout):
            notices.append(_("some boxes did not answer within %.0f s") % timeout)
        rows = fleet.rows()
        threshold = min((b.threshold_s() for b in fleet.boxes), default=1800.0)
        return rows, threshold, notices
    finally:
        await fleet.close()
