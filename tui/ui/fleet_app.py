"""`gputui` / `gputui fleet`: every box at once.

FleetApp holds one BoxContext per box (tui.ui.box_context); the fleet screen lists them and
hands the chosen one to the same DashboardScreen, ReleaseScreen, TmuxScreen and flows the
one-box app uses, so going back to the fleet reconnects nothing."""

import asyncio
import logging
import time
from typing import Any, Dict, List, Optional, Set, cast

from textual.binding import Binding
from textual.screen import Screen

from tui.core.fleet import rows as fleet_core
from tui.core.billing.rates import format_money
from tui.core.config import Config
from tui.core.i18n import N_, _
from tui.core.billing.ledger import Ledger
from tui.remote.fleet_pool import Fleet, open_fleet
from tui.core.model import ConnState
from tui.ui import flows
from tui.ui.app import PRICE_EVERY, CockpitApp, StateChanged
from tui.ui.box_context import BoxContext
from tui.ui.flows import event_time
from tui.ui.screens.dashboard import DashboardScreen
from tui.ui.screens.fleet_screen import FleetScreen
from tui.ui.screens.modals import DialogAsker, HostKeyScreen

log = logging.getLogger("gputui.fleet")


class FleetApp(CockpitApp):
    TITLE = "gputui fleet"
    BINDINGS = CockpitApp.BINDINGS + [
        Binding("escape", "back_to_fleet", N_("Fleet"), id="fleet.back",
                tooltip=N_("Back to the fleet (the other boxes stay connected)")),
    ]

    def __init__(self, hosts: Optional[List[str]] = None, ssh_config: Optional[str] = None,
                 remote_python: Optional[str] = None, config: Optional[Config] = None,
                 ledger: Optional[Ledger] = None, fleet: Optional[Fleet] = None) -> None:
        config = config if config is not None else Config.load()
        super().__init__(config)
        if fleet is None:
            fleet, notices = open_fleet(hosts, ssh_config=ssh_config, remote_python=remote_python,
                                        ask_trust=self.ask_trust, on_change=self._box_changed,
                                        config=config, ledger=ledger, make_box=BoxContext,
                                        asker_for=lambda host: DialogAsker(self, host))
            self.startup_notices.extend(notices)
        self.fleet = fleet
        self.boxes: List[BoxContext] = []
        for box in fleet.boxes:
            if not isinstance(box, BoxContext):
                raise TypeError("FleetApp needs a Fleet built with make_box=BoxContext")
            box.session = fleet.sessions.get(box.host)
            self.boxes.append(box)
        self._dashboard: Optional[DashboardScreen] = None
        self._rung: Set[str] = set()  # hosts whose alarm bell has rung
        self._price_asked: Dict[str, float] = {}  # host -> monotonic time of its last provider_price

    async def ask_trust(self, exc: Any) -> bool:
        """An unknown host key, asked in a dialog. The fleet's sessions run as plain tasks,
        not workers, so this waits on the dialog's callback instead of push_screen_wait."""
        answer: "asyncio.Future[bool]" = asyncio.get_running_loop().create_future()

        def answered(ok: Optional[bool]) -> None:
            if not answer.done():
                answer.set_result(bool(ok))
        self.push_screen(
            HostKeyScreen(exc.label, exc.algorithm, exc.fingerprint, exc.known_hosts_file),
            callback=answered)
        return await answer

    # -- screens -------------------------------------------------------------------------
    def get_default_screen(self) -> Screen:
        return FleetScreen(self.fleet)

    @property
    def fleet_screen(self) -> FleetScreen:
        return cast(FleetScreen, self.default_screen)

    def dashboard_of(self, box: BoxContext) -> Optional[DashboardScreen]:
        dashboard = self._dashboard
        return dashboard if dashboard is not None and dashboard.box is box else None

    def on_fleet_screen_open_box(self, event: FleetScreen.OpenBox) -> None:
        self.open_dashboard(event.box)

    def open_dashboard(self, box: BoxContext) -> None:
        self._dashboard = DashboardScreen(box)
        self.push_screen(self._dashboard)

    def check_action(self, action: str, parameters: tuple) -> Optional[bool]:
        if action == "back_to_fleet":  # in the footer only where it leads somewhere
            return self._dashboard is not None and self.screen is self._dashboard  # False: hidden
        return True

    def action_back_to_fleet(self) -> None:
        if self._dashboard is not None and self.screen is self._dashboard:
            self.pop_screen()
            self._dashboard = None
            self.fleet_screen.refresh_rows()

    # -- sessions ------------------------------------------------------------------------
    def start_sessions(self) -> None:
        self.fleet.start()

    def _box_changed(self, box: BoxContext) -> None:
        if self.dashboard_of(box) is not None:
            self.post_message(StateChanged(box))

    def reconnect(self, box: BoxContext) -> None:
        self.fleet.restart(box.host)

    def tick(self) -> None:
        rows = self.fleet.rows()
        for host in fleet_core.new_alarms(rows, self._rung):
            self.bell()
            row = next(r for r in rows if r.host == host)
            self.notify(_("%s: every GPU idle for %s while billing %s") % (
                host, fleet_core.duration_text(row.idle_for),
                "%s/h" % format_money(row.rate, row.currency) if row.rate is not None
                else _("(no rate set)")), severity="error", timeout=30, markup=False)
        for box in self.boxes:
            self._box_notices(box)
        self._ask_prices()
        if self.screen is self.fleet_screen:
            self.fleet_screen.refresh_rows(rows)
        elif self._dashboard is not None and self.screen is self._dashboard:
            self.refresh_dashboard_clock(self._dashboard.box)
        self.fleet.persist()

    def _ask_prices(self) -> None:
        """Each live box's provider price and balance (issue 22), asked once it is live and
        again every PRICE_EVERY seconds; one worker per box, so one slow box holds up no other."""
        now = time.monotonic()
        for box in self.boxes:
            if (box.session is None or box.session_state != ConnState.LIVE
                    or now - self._price_asked.get(box.host, -PRICE_EVERY) < PRICE_EVERY):
                continue
            self._price_asked[box.host] = now

            async def read(box: BoxContext = box) -> None:
                try:
                    await flows.read_provider_price(self, box)
                except Exception as exc:  # noqa: BLE001 - one box's failure is its notice
                    self.report_failure(_("Provider price of %s") % box.host, exc)
            self.run_worker(read(), group="price-" + box.host, exclusive=True, exit_on_error=False)

    def _box_notices(self, box: BoxContext) -> None:
        """Any box's autostop countdown and budget levels reach the user, whichever screen
        is in front (the one-box app does this for its own box)."""
        for e in box.autostop_events:
            key = (box.host, e.get("event"), e.get("t"))
            if key in self.shown_events or e.get("event") not in ("grace", "fired"):
                continue
            self.shown_events.add(key)
            if e.get("event") == "grace":
                self.bell()
                self.notify("%s: %s%s" % (box.host, event_time(e),
                                          e.get("message", _("autostop countdown started"))),
                            severity="error", timeout=30, markup=False)
            else:
                self.notify("%s: " % box.host + event_time(e) + _("Autostop ran `%s` (%s, exit %s)") % (
                    e.get("command"), e.get("reason"), e.get("exit")),
                    severity="error", timeout=60, markup=False)
        if box.billing.start is None:
            return
        self.warn_budget(box)

    async def action_quit(self) -> None:
        await self.fleet.close()
        self.exit()
