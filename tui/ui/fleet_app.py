"""`gputui` / `gputui fleet`: every box at once.

FleetApp is the one-box GputuiApp with many boxes: the per-box things every screen reads
(state, billing, session, host_key, host_cfg, autostop) point at the selected box, so the
same DashboardScreen, ReleaseScreen, TmuxScreen and dialogs work unchanged, and going back to
the fleet reconnects nothing."""

import asyncio
import logging
import time

from textual.app import App
from textual.binding import Binding
from textual.screen import Screen

from tui.core import fleet as fleet_core
from tui.core.billing import format_money
from tui.core.config import Config
from tui.core.i18n import N_, _
from tui.core.jobs import attach_argv
from tui.core.state import DashboardState
from tui.remote.fleet import open_fleet
from tui.ui.app import GputuiApp, StateChanged, settle_gc
from tui.ui.screens.dashboard import DashboardScreen
from tui.ui.screens.fleet import FleetScreen
from tui.ui.screens.tmux import default_hand_off
from tui.ui.translate import translate_bindings

log = logging.getLogger("gputui.fleet")


class FleetApp(GputuiApp):
    TITLE = "gputui fleet"
    BINDINGS = GputuiApp.BINDINGS + [
        Binding("escape", "back_to_fleet", N_("Fleet"), id="fleet.back", show=False,
                tooltip=N_("Back to the fleet (the other boxes stay connected)")),
    ]

    def __init__(self, hosts=None, ssh_config=None, remote_python=None, config=None, ledger=None,
                 fleet=None):
        App.__init__(self)  # not GputuiApp.__init__: that one builds a single session
        translate_bindings(self)  # what Translated.__init__ would have done
        self.config = config if config is not None else Config.load()
        self.keymap = self.config.keymap()
        if fleet is None:
            from tui.ui.screens.modals import DialogAsker
            fleet, notices = open_fleet(hosts, ssh_config=ssh_config, remote_python=remote_python,
                                        ask_trust=self.ask_trust, on_change=self._box_changed,
                                        config=self.config, ledger=ledger,
                                        asker_for=lambda host: DialogAsker(self, host))
        else:
            notices = []
        self.fleet = fleet
        self.startup_notices = notices
        self.current = next((b for b in fleet.boxes if b.host in fleet.sessions), fleet.boxes[0]
                            if fleet.boxes else None)
        self._dashboard = None
        self._shown_events = set()
        self._jobs_shown = -1
        self._rung = set()  # hosts whose alarm bell has rung
        self.stop_daemon_on_exit = False
        self.crash = None  # as GputuiApp: the exception that ended the app, and its log
        self.crash_log = None
        self.crash_log_file = None
        self._no_box = DashboardState("")  # what `state` is while the fleet is empty
        self.hand_off_terminal = default_hand_off
        self.attach_argv = lambda session_id: attach_argv(self.session.target, session_id)
        self.set_keymap(self.keymap)

    # -- the selected box, as the one-box screens expect it ----------------------------
    @property
    def state(self):
        return self.current.state if self.current is not None else self._no_box

    @property
    def billing(self):
        return self.current.billing

    @property
    def session(self):
        return self.fleet.sessions.get(self.current.host)

    @property
    def host_key(self):
        return self.current.host

    @property
    def host_cfg(self):
        return self.current.cfg

    @property
    def autostop(self):
        return self.current.autostop

    @autostop.setter
    def autostop(self, status):
        self.current.autostop = status

    @property
    def preflight_checks(self):
        return self.current.preflight_checks

    @preflight_checks.setter
    def preflight_checks(self, checks):
        self.current.preflight_checks = checks

    @property
    def jobs_version(self):
        return self.current.jobs_version

    @property
    def dashboard(self):
        return self._dashboard if self._dashboard is not None else _NotShown

    async def ask_trust(self, exc):
        """An unknown host key, asked in a dialog. The fleet's sessions run as plain tasks,
        not workers, so this waits on the dialog's callback instead of push_screen_wait."""
        from tui.ui.screens.modals import HostKeyScreen
        answer = asyncio.get_running_loop().create_future()
        self.push_screen(
            HostKeyScreen(exc.label, exc.algorithm, exc.fingerprint, exc.known_hosts_file),
            callback=lambda ok: answer.done() or answer.set_result(bool(ok)))
        return await answer

    def select_box(self, box):
        self.current = box

    # -- screens -------------------------------------------------------------------------
    def get_default_screen(self) -> Screen:
        return FleetScreen()

    @property
    def fleet_screen(self) -> FleetScreen:
        return self.default_screen

    def open_dashboard(self, box):
        self.select_box(box)
        self._dashboard = DashboardScreen()
        self.push_screen(self._dashboard)

    def action_back_to_fleet(self):
        if self.screen is self._dashboard:
            self.pop_screen()
            self._dashboard = None
            self.fleet_screen.refresh_rows()

    def on_mount(self):
        settle_gc()
        for notice in self.startup_notices:
            self.notify(notice, severity="warning", timeout=15, markup=False)
        self.fleet.start()
        self.set_interval(1.0, self.tick)

    def _box_changed(self, box):
        if box is self.current and self._dashboard is not None:
            self.post_message(StateChanged())

    def first_contact(self):
        pass  # the fleet runs no preflight on its own; `d` on a dashboard does

    def reconnect(self):
        self.fleet.restart(self.current.host)

    def tick(self):
        rows = self.fleet.rows()
        for host in fleet_core.new_alarms(rows, self._rung):
            self.bell()
            row = next(r for r in rows if r.host == host)
            self.notify(_("%s: every GPU idle for %s while billing %s") % (
                host, fleet_core.duration_text(row.idle_for),
                "%s/h" % format_money(row.rate, row.currency) if row.rate is not None
                else _("(no rate set)")), severity="error", timeout=30, markup=False)
        for box in self.fleet.boxes:
            self._box_notices(box)
        if self.screen is self.fleet_screen:
            self.fleet_screen.refresh_rows(rows)
        elif (self._dashboard is not None and self.screen is self._dashboard
              and self._dashboard.ready
              and time.monotonic() - getattr(self._dashboard, "last_refresh", 0.0) > 0.9):
            self._dashboard.refresh_status()  # as GputuiApp.tick: one repaint per second
            self._dashboard.refresh_billing()
        self.fleet.persist()

    def _box_notices(self, box):
        """Any box's autostop countdown and budget levels reach the user, whichever screen
        is in front (the one-box app does this for its own box)."""
        for e in box.autostop_events:
            key = (box.host, e.get("event"), e.get("t"))
            if key in self._shown_events or e.get("event") not in ("grace", "fired"):
                continue
            self._shown_events.add(key)
            if e.get("event") == "grace":
                self.bell()
                self.notify("%s: %s" % (box.host, e.get("message", _("autostop countdown started"))),
                            severity="error", timeout=30, markup=False)
            else:
                self.notify("%s: " % box.host + _("Autostop ran `%s` (%s, exit %s)") % (
                    e.get("command"), e.get("reason"), e.get("exit")),
                    severity="error", timeout=60, markup=False)
        if box.billing.start is None:
            return
        self.warn_budget(box.billing, box.cfg.currency, box.host)

    async def action_quit(self):
        await self.fleet.close()
        self.exit()


class _NotShownDashboard:
    """What `app.dashboard` is while no dashboard is open: updates have nowhere to land."""
    ready = False


_NotShown = _NotShownDashboard()
