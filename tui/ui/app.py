"""The Textual apps: CockpitApp (what the one-box app and the fleet share) and GputuiApp
(`gputui connect`: one box).

Screens are handed the box they show (tui.ui.box_context.BoxContext): the box's state,
billing clock, session, host config and autostop live there, not on the app. The app holds
what is global: the config, the keys, toasts, the crash log, the one handler for failed
background work, the terminal hand-off."""

import gc
import logging
import time
from typing import Any, Callable, Iterable, List, Optional, Set, cast

from textual import on
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen

from tui import __version__
from tui.core.billing import format_money
from tui.core.boxtext import visible
from tui.core.config import Config
from tui.core.crash import crash_log_path, write_crash_log
from tui.core.i18n import N_, _
from tui.core.ledger import Ledger, LedgerError
from tui.remote.session import FAILED, Listener, RemoteSession
from tui.ui import flows
from tui.ui.background import background, failure_text
from tui.ui.box_context import BoxContext, single_box
from tui.ui.screens.dashboard import DashboardScreen
from tui.ui.screens.modals import DialogAsker, HelpScreen, HostKeyScreen
from tui.ui.screens.tmux_screen import TmuxScreen, default_hand_off
from tui.ui.translate import Translated

log = logging.getLogger("gputui.ui")

ABOUT = N_("gputui %s — a cockpit for rented GPU boxes. Data comes from a small probe "
           "daemon on the box that keeps sampling while you are away.")


def settle_gc():
    """Everything imported and composed at start lives for the whole run: move it out of the
    collector's way and collect the young generation less often (GC pauses were the
    sample->frame p95 spikes: 8 GPUs p95 63-142 ms -> 27-35 ms, issue 12)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(20000, 20, 20)


class StateChanged(Message):
    """Something about `box` changed (its state, jobs, billing). Bursts (backfill) collapse
    into one per box."""

    def __init__(self, box: BoxContext) -> None:
        super().__init__()
        self.box = box

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, StateChanged) and message.box is self.box


class _AppListener(Listener):
    """The one-box app's session events: into its box's record (tui.core.fleet_rows.FleetBox, as in
    the fleet), then what the app does about them, plus one collapsed StateChanged."""

    def __init__(self, app: "GputuiApp") -> None:
        self.app = app
        self.box = app.box

    def _changed(self) -> None:
        self.app.post_message(StateChanged(self.box))

    def on_state(self, state: str, detail: str = "") -> None:
        self.box.on_state(state, detail)
        self._changed()

    def on_inventory(self, inventory: dict) -> None:
        self.box.on_inventory(inventory)
        self.app.first_contact()
        self._changed()

    def on_sample(self, sample: dict) -> None:
        self.box.on_sample(sample)
        self._changed()

    def on_autostop(self, status: Optional[dict], event: Optional[dict] = None,
                    events: Optional[list] = None) -> None:
        self.box.on_autostop(status, event, events)
        flows.autostop_changed(self.app, self.box, status, event, events or ())

    def on_jobs(self, jobs: dict) -> None:
        self.box.on_jobs(jobs)
        self._changed()

    def on_proc_meta(self, procs: list) -> None:
        self.box.on_proc_meta(procs)

    def on_latency(self, ms: float) -> None:
        self.box.on_latency(ms)

    def on_notice(self, text: str) -> None:
        self.box.on_notice(text)
        self.app.notify(text, severity="warning", timeout=15, markup=False)  # box text is data


class CockpitApp(Translated, App):
    """What the one-box app and the fleet share: the global keys, toasts as plain text, the
    crash log, the failure notice, budget warnings and the start-up sequence. Each box's data
    is in its BoxContext; screens are handed the box they show.

    Textual runs every class's own on_mount along the MRO, so only this class defines it:
    subclasses say what to start in start_sessions() (the fleet used to run the one-box
    on_mount too, and so opened its first box twice, issue 20)."""

    CSS_PATH = "app.tcss"
    TITLE = "gputui"
    # Global keys only; each screen brings its own (the dashboard's are in DashboardScreen).
    BINDINGS = [
        Binding("q", "quit", N_("Quit"), id="quit", tooltip=N_("Leave gputui; the probe keeps sampling on the box")),
        Binding("question_mark", "help", N_("Help"), id="help", tooltip=N_("Show the keys of this screen")),
    ]

    def __init__(self, config: Config) -> None:
        super().__init__()
        self.config = config
        self.keymap = config.keymap()
        self.startup_notices: List[str] = []  # toasts once the app runs (config, ledger problems)
        self.shown_events: Set[tuple] = set()  # (host, event, t) of autostop events shown
        # The terminal hand-off for `tmux attach` and nvitop; tests replace it (suspend()
        # needs a tty).
        self.hand_off_terminal: Callable[[App, List[str]], Optional[int]] = default_hand_off
        self.handoff_said = ""  # the last hand-off's ssh stderr (tmux_screen.default_hand_off)
        self.stop_daemon_on_exit = False
        self.crash: Optional[BaseException] = None  # what ended the app, if anything did
        self.crash_log: Optional[str] = None
        self.crash_log_file: Optional[str] = None  # where a crash is logged; None: the state dir's
        self.set_keymap(self.keymap)

    def notify(self, message, *, title="", severity="information", timeout=None, markup=False):
        """Every toast is plain text: messages carry box text (paths, argv, probe errors),
        so markup is off and control characters are shown, whoever calls this."""
        super().notify(visible(message, keep_newlines=True), title=visible(title),
                       severity=severity, timeout=timeout, markup=False)

    def _handle_exception(self, error: Exception) -> None:
        """A crash: the full traceback goes to the crash log, the terminal gets one line
        (tui.cli.app_exit) and the exit status is not 0. Textual's own handling still runs
        (it stops the app and lets run_test re-raise in tests); only its multi-screen
        traceback print is dropped."""
        if self.crash is None:
            self.crash = error
            self.crash_log = write_crash_log(error, self.crash_log_file or crash_log_path())
            log.error("gputui crashed", exc_info=error)
        super()._handle_exception(error)
        self._exit_renderables.clear()

    def on_mount(self) -> None:
        settle_gc()
        for notice in self.startup_notices:
            self.notify(notice, severity="warning", timeout=15, markup=False)
        self.start_sessions()
        # The billing clocks and the data-age counter tick even when no samples arrive.
        self.set_interval(1.0, self.tick)

    # -- what each app says for itself ------------------------------------------------------
    def start_sessions(self) -> None:
        raise NotImplementedError

    def tick(self) -> None:
        raise NotImplementedError

    def dashboard_of(self, box: BoxContext) -> Optional[DashboardScreen]:
        """The dashboard showing `box`, if one is open (updates for it land there)."""
        raise NotImplementedError

    def reconnect(self, box: BoxContext) -> None:
        """`r`: reconnect `box` now instead of waiting."""
        raise NotImplementedError

    # -- shared ---------------------------------------------------------------------------
    def refresh_dashboard_clock(self, box: BoxContext) -> None:
        """The per-second repaint of the box's header and billing. A sample that arrived
        within the last second already redrew them: one repaint per second, not two (issue 12)."""
        dashboard = self.dashboard_of(box)
        if (self.is_running and dashboard is not None and dashboard.ready
                and time.monotonic() - dashboard.last_refresh > 0.9):
            dashboard.refresh_status()
            dashboard.refresh_billing()

    def warn_budget(self, box: BoxContext) -> None:
        """A bell and a toast for each budget level this box's billing newly crossed."""
        for kind, level, budget in box.billing.new_budget_warnings():
            self.bell()
            self.notify(_("Budget: %d%% of %s spent (%s) on %s") % (
                round(level * 100), format_money(budget, box.cfg.currency),
                _("this session") if kind == "session" else _("today"), box.host),
                severity="error" if level >= 1 else "warning", timeout=20, markup=False)

    @on(StateChanged)
    def state_changed(self, event: StateChanged) -> None:
        # Not while shutting down: the screens are already gone then, and a late sample
        # must not turn a clean quit into a crash report.
        if not self.is_running:
            return
        dashboard = self.dashboard_of(event.box)
        if dashboard is not None and dashboard.ready:
            dashboard.refresh_view()
        screen = self.screen
        if isinstance(screen, TmuxScreen) and screen.box is event.box:
            screen.jobs_changed()

    def action_help(self) -> None:
        """The keys of the screen in front (its own, then the global ones)."""
        keys, seen = [], set()
        for key, active in self.screen.active_bindings.items():
            b = active.binding
            if b.action in seen or not b.description:
                continue
            seen.add(b.action)
            # widgets' own bindings (Textual's scroll keys) are translated here, not at creation
            keys.append((self.get_key_display(b), _(b.description), _(b.tooltip) if b.tooltip else b.tooltip))
        self.push_screen(HelpScreen(keys, _(ABOUT) % __version__))

    def report_failure(self, name: str, exc: BaseException) -> None:
        """The one place a failed background action becomes a notice (like harlequin)."""
        log.error("%s failed", name, exc_info=exc)
        self.notify(failure_text(name, exc), severity="error", timeout=15, markup=False)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        seen = set()
        for _key, active in screen.active_bindings.items():
            b = active.binding
            if b.action in seen or not b.description or b.action == "quit":  # Textual lists Quit
                continue
            seen.add(b.action)
            yield SystemCommand(b.description, "%s  [%s]" % (b.tooltip or b.description, b.key),
                                lambda node=active.node, a=b.action: node.run_action(a))


class GputuiApp(CockpitApp):
    """`gputui connect HOST`: one box, its dashboard the default screen."""

    def __init__(self, target: Any, simulate: Optional[str] = None, remote_dir: Optional[str] = None,
                 host_label: Optional[str] = None, stop_daemon_on_exit: bool = False,
                 session: Optional[RemoteSession] = None, remote_python: Optional[str] = None,
                 config: Optional[Config] = None, ledger: Optional[Ledger] = None) -> None:
        config = config if config is not None else Config.load()
        # config and ledger key: the alias or user@host:port (a pasted command lands on the same row)
        host = getattr(target, "key", None) or target.host
        host_cfg = config.host(host)
        super().__init__(config)
        self.startup_notices.extend(config.problems)  # after host() and keymap(): their problems
        if ledger is None:
            try:
                ledger = Ledger()
            except (LedgerError, OSError) as exc:
                ledger = None
                self.startup_notices.append(_("Ledger unavailable: %s") % exc)
        if ledger is not None and ledger.notice:
            self.startup_notices.append(ledger.notice)
        self.box = single_box(host, host_cfg, ledger, label=host_label or target.host)
        self._session: RemoteSession = session or RemoteSession(
            target, simulate=simulate, remote_dir=remote_dir, listener=_AppListener(self),
            ask_trust=self.ask_trust, remote_python=remote_python,
            asker=DialogAsker(self, host))  # password/passphrase dialogs (issue 9)
        self.box.session = self._session
        self.stop_daemon_on_exit = stop_daemon_on_exit
        self._preflight_started = False

    def get_default_screen(self) -> Screen:
        return DashboardScreen(self.box)

    @property
    def dashboard(self) -> DashboardScreen:
        return cast(DashboardScreen, self.default_screen)

    def dashboard_of(self, box: BoxContext) -> Optional[DashboardScreen]:
        return self.dashboard if box is self.box else None

    def start_sessions(self) -> None:
        self.run_session()

    def tick(self) -> None:
        box = self.box
        self.refresh_dashboard_clock(box)
        self.warn_budget(box)
        box.billing.persist()
        if box.billing.problem:
            self.notify(box.billing.problem, severity="error", timeout=20, markup=False)
            box.billing.problem = None

    # The session's own failures are shown in the dashboard's notice line, not as a toast.
    @background("Session", group="session")
    async def run_session(self) -> None:
        await self._session.run()

    def reconnect(self, box: BoxContext) -> None:
        self.notify(_("Reconnecting to %s now…") % box.host, timeout=4, markup=False)
        if self._session.state == FAILED:
            self.run_session()
        else:
            self._session.retry_now()

    async def ask_trust(self, exc: Any) -> bool:
        return await self.push_screen_wait(
            HostKeyScreen(exc.label,  # names the jump host when the unknown key is a hop's
                          exc.algorithm, exc.fingerprint, exc.known_hosts_file))

    # -- preflight -----------------------------------------------------------------
    def first_contact(self) -> None:
        """Right after the first connect: a quick preflight (no matmul) in the background."""
        if not self._preflight_started:
            self._preflight_started = True
            self.quick_preflight()

    @background("Preflight")
    async def quick_preflight(self) -> None:
        from tui.core.preflight_verdicts import worst
        from tui.ui.screens.doctor import summary
        checks = await flows.run_preflight(self.box, smoke=False)
        verdict = worst(checks)
        self.notify(summary(checks), severity={"pass": "information", "warn": "warning",
                                               "fail": "error"}[verdict], timeout=15, markup=False)

    async def action_quit(self) -> None:
        self.box.billing.persist(force=True)
        await self._session.close(stop_daemon=self.stop_daemon_on_exit)
        self.exit()
