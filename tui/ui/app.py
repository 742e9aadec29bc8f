"""The Textual app: one box's session, its state, and the global keys.

The dashboard itself is a Screen (tui.ui.screens.dashboard); the app holds what every screen
shares: the session and its listener, DashboardState, the billing clock, autostop state and
the one handler for failed background work."""

import gc
import logging
import os
import time
from typing import Iterable

from textual import on
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen

from remote_probe import wire
from tui import __version__
from tui.core.billing import format_money
from tui.core.billing_clock import BillingClock
from tui.core.boxtext import visible
from tui.core.config import Config
from tui.core.crash import crash_log_path, write_crash_log
from tui.core.jobs import attach_argv
from tui.core.i18n import N_, _
from tui.core.ledger import Ledger, LedgerError
from tui.core.state import DashboardState
from tui.remote.session import FAILED, Listener, RemoteSession
from tui.ui.background import background, failure_text
from tui.ui.screens.dashboard import DashboardScreen
from tui.ui.screens.modals import DialogAsker, HelpScreen, HostKeyScreen
from tui.ui.screens.tmux import TmuxScreen, default_hand_off
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
    """Something in DashboardState changed. Bursts (backfill) collapse into one."""

    def can_replace(self, message):
        return isinstance(message, StateChanged)


class _AppListener(Listener):
    """Session events -> DashboardState updates + one collapsed StateChanged message."""

    def __init__(self, app):
        self.app = app

    def _changed(self):
        self.app.post_message(StateChanged())

    def on_state(self, state, detail=""):
        self.app.state.set_connection(state, detail)
        self._changed()

    def on_inventory(self, inventory):
        self.app.state.set_inventory(inventory)
        self.app.billing.on_inventory(inventory)
        self.app.first_contact()
        self._changed()

    def on_sample(self, sample):
        self.app.sample_received = time.time()
        self.app.state.add_sample(sample)
        self.app.billing.on_sample(sample)
        self._changed()

    def on_autostop(self, status, event=None, events=None):
        self.app.autostop_changed(status, event, events)

    def on_jobs(self, jobs):
        self.app.state.set_jobs(jobs)
        self.app.jobs_version += 1
        self._changed()

    def on_proc_meta(self, procs):
        self.app.state.add_proc_meta(procs)

    def on_latency(self, ms):
        self.app.state.rtt_ms = ms

    def on_notice(self, text):
        self.app.notify(text, severity="warning", timeout=15, markup=False)  # box text is data


class GputuiApp(Translated, App):
    CSS_PATH = "app.tcss"
    TITLE = "gputui"
    # Global keys only; each screen brings its own (the dashboard's are in DashboardScreen).
    BINDINGS = [
        Binding("q", "quit", N_("Quit"), id="quit", tooltip=N_("Leave gputui; the probe keeps sampling on the box")),
        Binding("question_mark", "help", N_("Help"), id="help", tooltip=N_("Show the keys of this screen")),
    ]

    def __init__(self, target, simulate=None, remote_dir=None, host_label=None,
                 stop_daemon_on_exit=False, session=None, remote_python=None,
                 config=None, ledger=None):
        super().__init__()
        self.state = DashboardState(host_label or target.host)
        self.config = config if config is not None else Config.load()
        # config and ledger key: the alias or user@host:port (a pasted command lands on the same row)
        self.host_key = getattr(target, "key", None) or target.host
        self.host_cfg = self.config.host(self.host_key)
        self.keymap = self.config.keymap()
        self.startup_notices = list(self.config.problems)
        if ledger is None:
            try:
                ledger = Ledger()
            except (LedgerError, OSError) as exc:
                ledger = None
                self.startup_notices.append(_("Ledger unavailable: %s") % exc)
        if ledger is not None and ledger.notice:
            self.startup_notices.append(ledger.notice)
        self.billing = BillingClock(self.host_key, self.host_cfg, ledger)
        self.autostop = None
        self._shown_events = set()
        self.jobs_version = 0
        self.preflight_checks = None
        self._preflight_started = False
        self._jobs_shown = -1
        # The terminal hand-off for `tmux attach`; tests replace it (suspend() needs a tty).
        self.hand_off_terminal = default_hand_off
        # How to attach to a tmux session on the box (`ssh -t HOST tmux attach`); the demo
        # attaches to its local tmux server instead.
        self.attach_argv = lambda session_id: attach_argv(self.session.target, session_id)
        self.session = session or RemoteSession(
            target, simulate=simulate, remote_dir=remote_dir, listener=_AppListener(self),
            ask_trust=self.ask_trust, remote_python=remote_python,
            asker=DialogAsker(self, self.host_key))  # password/passphrase dialogs (issue 9)
        self.stop_daemon_on_exit = stop_daemon_on_exit
        self.crash = None  # the exception that ended the app, if one did (see _handle_exception)
        self.crash_log = None
        self.crash_log_file = None  # where a crash is logged; None: the state dir's crash.log
        self.set_keymap(self.keymap)

    def notify(self, message, *, title="", severity="information", timeout=None, markup=False):
        """Every toast is plain text: messages carry box text (paths, argv, probe errors),
        so markup is off and control characters are shown, whoever calls this."""
        super().notify(visible(message, keep_newlines=True), title=visible(title),
                       severity=severity, timeout=timeout, markup=False)

    def _handle_exception(self, error):
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

    # Bench mode (bench/latency.py): GPUTUI_FRAME_LOG=FILE records, for the first frame written
    # to the terminal after each new sample, "frame_time seq sample_time" (sample->screen).
    _frame_log = os.environ.get("GPUTUI_FRAME_LOG")
    _frame_seq = None
    sample_received = 0.0

    def _display(self, screen, renderable):
        super()._display(screen, renderable)
        sample = self.state.sample
        if self._frame_log and renderable is not None and sample and sample.get("seq") != self._frame_seq:
            self._frame_seq = sample.get("seq")
            with open(self._frame_log, "a") as f:
                f.write("%.6f %s %.6f %.6f\n" % (time.time(), sample.get("seq"), sample.get("t") or 0,
                                                   self.sample_received))

    def get_default_screen(self) -> Screen:
        return DashboardScreen()

    @property
    def dashboard(self) -> DashboardScreen:
        return self.default_screen

    def on_mount(self):
        settle_gc()
        for notice in self.startup_notices:
            self.notify(notice, severity="warning", timeout=15, markup=False)
        self.run_session()
        # The billing clock and the data-age counter tick even when no samples arrive.
        self.set_interval(1.0, self.tick)

    def tick(self):
        # A sample that arrived within the last second already redrew the header and the
        # meter: one repaint per second, not two (issue 12).
        if self.is_running and self.dashboard.ready and time.monotonic() - self.dashboard.last_refresh > 0.9:
            self.dashboard.refresh_status()
            self.dashboard.refresh_billing()
        self.warn_budget(self.billing, self.host_cfg.currency, self.host_key)
        self.billing.persist()
        if self.billing.problem:
            self.notify(self.billing.problem, severity="error", timeout=20, markup=False)
            self.billing.problem = None

    def warn_budget(self, billing, currency, host):
        """A bell and a toast for each budget level this box's billing newly crossed."""
        for kind, level, budget in billing.new_budget_warnings():
            self.bell()
            self.notify(_("Budget: %d%% of %s spent (%s) on %s") % (
                round(level * 100), format_money(budget, currency),
                _("this session") if kind == "session" else _("today"), host),
                severity="error" if level >= 1 else "warning", timeout=20, markup=False)

    # The session's own failures are shown in the dashboard's notice line, not as a toast.
    @background("Session", group="session")
    async def run_session(self):
        await self.session.run()

    def reconnect(self):
        self.notify(_("Reconnecting to %s now…") % self.host_key, timeout=4, markup=False)
        if self.session.state == FAILED:
            self.run_session()
        else:
            self.session.retry_now()

    async def ask_trust(self, exc):
        return await self.push_screen_wait(
            HostKeyScreen(exc.label,  # names the jump host when the unknown key is a hop's
                          exc.algorithm, exc.fingerprint, exc.known_hosts_file))

    @on(StateChanged)
    def state_changed(self, _event=None):
        # Not while shutting down: the screens are already gone then, and a late sample
        # must not turn a clean quit into a crash report.
        if not self.is_running:
            return
        if self.dashboard.ready:
            t0 = time.time()
            self.dashboard.refresh_view()
            if self._frame_log:
                with open(self._frame_log + ".view", "a") as f:
                    f.write("%.6f %.6f\n" % (t0 - self.sample_received, time.time() - t0))
        if isinstance(self.screen, TmuxScreen) and self._jobs_shown != self.jobs_version:
            self._jobs_shown = self.jobs_version
            self.screen.refresh_panes()

    # -- autostop ------------------------------------------------------------------
    def autostop_changed(self, status, event=None, events=None):
        self.autostop = status
        for e in ([event] if event else []) + list(events or []):
            key = (e.get("event"), e.get("t"))
            if key in self._shown_events:
                continue
            self._shown_events.add(key)
            kind = e.get("event")
            if kind == "grace":
                self.bell()
                self.notify(e.get("message", _("autostop countdown started")), severity="error",
                            timeout=30, markup=False)
            elif kind == "fired":
                self.notify(_("Autostop ran `%s` (%s, exit %s)") % (
                    e.get("command"), e.get("reason"), e.get("exit")), severity="error",
                    timeout=60, markup=False)
            elif kind == "disarmed" and event is not None:
                self.notify(_("Autostop %s") % e.get("reason"), timeout=8, markup=False)
        if self.dashboard.ready:
            self.dashboard.refresh_billing()

    async def autostop_request(self, what, **params):
        """Arm or disarm the probe's autostop; failures go to the worker error handler."""
        kind = wire.AUTOSTOP_ARM if what == "arm" else wire.AUTOSTOP_DISARM
        reply = await self.session.request(kind, **params)
        self.autostop_changed(reply.get("autostop"))
        if kind == wire.AUTOSTOP_ARM:
            self.notify(_("Autostop armed on %s") % self.host_key, timeout=8, markup=False)

    # -- preflight -----------------------------------------------------------------
    def first_contact(self):
        """Right after the first connect: a quick preflight (no matmul) in the background."""
        if not self._preflight_started:
            self._preflight_started = True
            self.quick_preflight()

    @background("Preflight")
    async def quick_preflight(self):
        from tui.core.preflight import worst
        from tui.ui.screens.doctor import summary
        checks = await self.run_preflight(smoke=False)
        verdict = worst(checks)
        self.notify(summary(checks), severity={"pass": "information", "warn": "warning",
                                               "fail": "error"}[verdict], timeout=15, markup=False)

    async def run_preflight(self, smoke=True):
        from tui.core.preflight import run_checks
        from tui.core.report import doctor_request
        # a matmul on a GPU someone is training on would disturb the run: only on idle GPUs
        busy = any(r.kind == "C" for r in self.state.proc_rows())
        reply = await self.session.request(wire.PREFLIGHT, timeout=240,
                                           **doctor_request(self.host_cfg, smoke and not busy))
        dyn = dict(enumerate(self.state.gpus))
        self.preflight_checks = run_checks(reply["facts"], self.host_cfg, self.billing.preset, dyn)
        return self.preflight_checks

    # -- global actions ------------------------------------------------------------
    def action_help(self):
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

    def action_tmux(self):
        self._jobs_shown = self.jobs_version
        self.push_screen(TmuxScreen())

    def report_failure(self, name, exc):
        """The one place a failed background action becomes a notice (like harlequin)."""
        log.error("%s failed", name, exc_info=exc)
        self.notify(failure_text(name, exc), severity="error", timeout=15, markup=False)

    async def action_quit(self):
        self.billing.persist(force=True)
        await self.session.close(stop_daemon=self.stop_daemon_on_exit)
        self.exit()

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
