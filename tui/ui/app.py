"""The Textual apps: CockpitApp (what the one-box app and the fleet share) and GputuiApp
(`gputui connect`: one box).

Screens are handed the box they show (tui.ui.box_context.BoxContext): the box's state,
billing clock, session, host config and autostop live there, not on the app. The app holds
what is global: the config, the keys, toasts, the crash log, the one handler for failed
background work, the terminal hand-off."""

import gc
import logging
import sys
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Set, cast

from textual import on
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen

from remote_probe.wire import notify_kinds
from tui import __version__
from tui.core.billing.rates import format_money
from tui.core.text.boxtext import visible
from tui.core import providers
from tui.core.config import Config
from tui.core.config_reload import ConfigWatcher, apply_host, host_changes
from tui.core.crash import crash_log_path, write_crash_log
from tui.core.i18n import N_, _
from tui.core.billing.ledger import Ledger, LedgerError
from tui.core.notify.wire import billing_params, notify_config
from tui.remote.notify_push import reload_notify_config, share_billing
from tui.remote.session import FAILED, LIVE, Listener, RemoteSession
from tui.ui import flows
from tui.ui.background import background, failure_text
from tui.ui.box_context import BoxContext, single_box
from tui.ui.screens.dashboard import DashboardScreen
from tui.ui.palette import ActionsProvider
from tui.ui.screens.modals import DialogAsker, HelpScreen, HostKeyScreen
from tui.ui.terminal_handoff import default_hand_off
from tui.ui.translate import Translated
from tui.ui.heap import TRIM_EVERY, trim_heap
from tui.ui.help_key import help_binding
from tui.ui.key_names import key_display

log = logging.getLogger("gputui.ui")
PRICE_EVERY = 300.0  # seconds between provider_price requests (the box caches its answer as long)

CONFIG_POLL = 2.0  # seconds between looks at the config file
ABOUT = N_("gputui %s — a cockpit for rented GPU boxes. Data comes from a small probe "
           "daemon on the box that keeps sampling while you are away.")


def settle_gc():
    """Everything imported and composed at start lives for the whole run: move it out of the
    collector's way and collect the young generation less often (GC pauses were the
    sample->frame p95 spikes: 8 GPUs p95 63-142 ms -> 27-35 ms, issue 12). 5000, not 20000:
    what Textual's strips leave in reference cycles each frame waits for the collector, and
    20000 young objects of it held ~1.2 MB more RSS (issue 25); a young collection of 5000
    takes well under a millisecond."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(5000, 20, 20)


def shared_slot_keys(bindings) -> Dict[str, Any]:
    """key -> the binding whose footer slot and help row it shares: `s` and `S` both map to
    the Sort binding shown as "s/S" (its tooltip tells what S does)."""
    out: Dict[str, Any] = {}
    for b in bindings:
        parts = (b.key_display or "").split("/")
        if len(parts) > 1 and all(parts):
            for key in parts:
                out.setdefault(key, b)
    return out


class StateChanged(Message):
    """Something about `box` changed (its state, jobs, billing). Bursts (backfill) collapse
    into one per box."""

    def __init__(self, box: BoxContext) -> None:
        super().__init__()
        self.box = box

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, StateChanged) and message.box is self.box


class _AppListener(Listener):
    """The one-box app's session events: into its box's record (tui.core.fleet.rows.FleetBox, as in
    the fleet), then what the app does about them, plus one collapsed StateChanged."""

    def __init__(self, app: "GputuiApp") -> None:
        self.app = app
        self.box = app.box

    def _changed(self) -> None:
        self.app.post_message(StateChanged(self.box))

    def on_state(self, state: str, detail: str = "") -> None:
        old = self.box.state.conn_state
        self.box.on_state(state, detail)
        flows.connection_changed(self.app, self.box, old, state)
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
        event, news = self.box.on_autostop(status, event, events)
        flows.autostop_changed(self.app, self.box, status, event, news)

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

    def on_notify_event(self, event: dict) -> None:
        """What the daemon just told the user's phone, toasted once (reconnects repeat it)."""
        ev = self.box.state.take_notify_event(event)
        if ev is not None and ev.kind not in ("budget_80", "budget_100"):  # warn_budget says it
            urgent = ev.kind in notify_kinds.URGENT_KINDS
            self.app.notify(ev.body, title=ev.title, severity="error" if urgent else "warning",
                            timeout=30 if urgent else 12, markup=False)


class CockpitApp(Translated, App):
    """What the one-box app and the fleet share: the global keys, toasts as plain text, the
    crash log, the failure notice, budget warnings and the start-up sequence. Each box's data
    is in its BoxContext; screens are handed the box they show.

    Textual runs every class's own on_mount along the MRO, so only this class defines it:
    subclasses say what to start in start_sessions() (the fleet used to run the one-box
    on_mount too, and so opened its first box twice, issue 20)."""

    CSS_PATH = "app.tcss"
    TITLE = "gputui"
    COMMANDS = {ActionsProvider}  # Textual's system commands, matched on their help too
    # Global keys only; each screen brings its own (the dashboard's are in DashboardScreen).
    BINDINGS = [
        Binding("q", "quit", N_("Quit"), id="quit", tooltip=N_("Leave gputui; the probe keeps sampling on the box")),
        help_binding("help", "help"),
    ]

    def get_key_display(self, binding: Binding) -> str:
        """Textual's hook for spelling a key: from gputui's table (tui/ui/key_names.py), so the
        footer does not map the Unicode name database; Textual's spelling for any other key."""
        if binding.key_display:
            return binding.key_display
        modifiers, key = binding.parse_key()
        return key_display(modifiers, key) or super().get_key_display(binding)

    def __init__(self, config: Config) -> None:
        super().__init__()
        self.config = config
        self.keymap = config.keymap()
        self.startup_notices: List[str] = []  # toasts once the app runs (config, ledger problems)
        self.shown_events: Set[tuple] = set()  # (host, event, t) of autostop events shown
        # The terminal hand-off for `tmux attach` and nvitop; tests replace it (suspend()
        # needs a tty).
        self.hand_off_terminal: Callable[[App, List[str]], Any] = default_hand_off
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
        self.config_watch = ConfigWatcher(self.config.path)
        self.set_interval(CONFIG_POLL, self.reload_config)
        self.set_interval(TRIM_EVERY, trim_heap, name="trim heap")

    def watched_boxes(self) -> List[BoxContext]:
        """The boxes whose config a reload applies to."""
        boxes = getattr(self, "boxes", None)
        return list(boxes) if boxes else [b for b in [getattr(self, "box", None)] if b is not None]

    def reload_config(self) -> None:
        """An edited config file takes effect now, with a toast saying what changed."""
        new = self.config_watch.poll()
        if new is None:
            return
        for problem in new.problems:
            self.notify(problem, severity="warning", timeout=15, markup=False)
        if new.broken:
            return  # keep what was read before
        self.config = new
        for box in self.watched_boxes():
            # channels and the [notify] events filter reach the box now, not at the next connect
            for problem in reload_notify_config(box.session, new.data, box.host, box.label):
                self.notify(problem, severity="warning", timeout=15, markup=False)
            fresh = new.host(box.host)
            changes = host_changes(box.cfg, fresh)
            if not changes:
                continue
            apply_host(box.cfg, fresh)
            facts = (box.state.inventory or {}).get("host") or {}
            box.billing.preset = providers.resolve(facts.get("provider") or {}, box.cfg)
            self.notify(_("Config reloaded for %s: %s") % (box.host, "; ".join(changes)),
                        timeout=10, markup=False)
            dashboard = self.dashboard_of(box)
            if dashboard is not None and dashboard.ready:
                dashboard.refresh_view()

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
            now = box.billing.clock()
            figures = box.billing.figures(now)  # once for both
            dashboard.refresh_status(figures)
            dashboard.refresh_billing(figures, now)

    def warn_budget(self, box: BoxContext) -> None:
        """A bell and a toast for each budget level this box's billing newly crossed; and the
        box's daemon kept up to date with what it costs, so it warns with the app closed."""
        if box.session is not None and box.session_state == LIVE:
            share_billing(box.session, billing_params(box.billing))
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
        tmux = sys.modules.get("tui.ui.screens.tmux_screen")  # imported on `t`: until then no such screen
        if tmux is not None and isinstance(screen, tmux.TmuxScreen) and screen.box is event.box:
            screen.jobs_changed()

    def screen_keys(self, screen: Optional[Screen] = None) -> List[tuple]:
        """(key, description, tooltip) of every key of `screen` (its own, then the app's):
        gputui's bindings only, not Textual's generic widget keys ("Scroll Left", "Cursor
        up") nor its system ones (^q when `q` quits)."""
        screen = screen or self.screen
        keys, seen = [], set()
        own = [active.binding for active in screen.active_bindings.values()
               if active.node in (screen, self)]
        shared = shared_slot_keys(own)
        for _key, active in screen.active_bindings.items():
            b = active.binding
            if (b.action in seen or not b.description or b.system or b.id is None
                    or active.node not in (screen, self)):  # gputui's bindings all have ids
                continue
            if b.key in shared and shared[b.key] is not b:
                continue  # S is told in s's row ("s/S Sort ... (S: reverse)"): one line a key
            seen.add(b.action)
            keys.append((self.get_key_display(b), b.description, b.tooltip or None))
        return keys

    def action_help(self) -> None:
        """The keys of the screen in front (its own, then the global ones)."""
        self.push_screen(HelpScreen(self.screen_keys(), _(ABOUT) % __version__))

    def report_failure(self, name: str, exc: BaseException) -> None:
        """The one place a failed background action becomes a notice (like harlequin)."""
        log.error("%s failed", name, exc_info=exc)
        self.notify(failure_text(name, exc), severity="error", timeout=15, markup=False)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        seen = set()
        for _key, active in screen.active_bindings.items():
            b = active.binding
            if b.action in seen or not b.description or b.system or b.action == "quit":
                continue  # Textual lists Quit
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
        notify, problems = notify_config(config.data, host, host_label or target.host)
        self.startup_notices.extend(problems)  # no secret in them (redacted)
        self._session: RemoteSession = session or RemoteSession(
            target, simulate=simulate or host_cfg.simulate,  # the flag, else the host's setting
            remote_dir=remote_dir or host_cfg.remote_dir, listener=_AppListener(self),
            ask_trust=self.ask_trust, remote_python=remote_python,
            asker=DialogAsker(self, host),  # password/passphrase dialogs (issue 9)
            notify_config=notify)  # sent after every connect
        self.box.session = self._session
        self.stop_daemon_on_exit = stop_daemon_on_exit
        self._preflight_started = False
        self._price_asked_at: Optional[float] = None  # monotonic time of the last provider_price

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
        if (self._price_asked_at is not None and time.monotonic() - self._price_asked_at > PRICE_EVERY
                and box.session_state == LIVE):
            self.read_price()
        if box.billing.problem:
            self.notify(box.billing.problem, severity="error", timeout=20, markup=False)
            box.billing.problem = None

    # The session's own failures are shown in the dashboard's notice line, not as a toast.
    @background("Session", group="session")
    async def run_session(self) -> None:
        await self._session.run()

    def reconnect(self, box: BoxContext) -> None:
        self.notify(_("Reconnecting to %s now…") % box.host, timeout=4, markup=False)
        box.reconnect_asked = True  # the toast "Reconnected" closes what this one opened
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
            self.read_price()

    @background("Provider price")
    async def read_price(self) -> None:
        """The provider's price and balance, read on the box (issue 22); again every few
        minutes from tick() (the daemon caches it, so this costs the provider nothing)."""
        self._price_asked_at = time.monotonic()
        await flows.read_provider_price(self, self.box)

    @background("Preflight")
    async def quick_preflight(self) -> None:
        from tui.core.checks.preflight import worst
        from tui.core.checks.preflight import summary  # not the doctor screen: it pulls DataTable
        checks = await flows.run_preflight(self.box, smoke=False)
        verdict = worst(checks)
        self.notify(summary(checks), severity={"pass": "information", "warn": "warning",
                                               "fail": "error"}[verdict], timeout=15, markup=False)

    async def action_quit(self) -> None:
        self.box.billing.persist(force=True)
        await self._session.close(stop_daemon=self.stop_daemon_on_exit)
        self.exit()
