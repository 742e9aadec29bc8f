"""The Textual app: the live GPU dashboard of one box."""

import asyncio
import time
from typing import Iterable

from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static
from textual.worker import Worker, WorkerState

from remote_probe import protocol
from tui import __version__
from tui.core import billing
from tui.core.billing import format_money
from tui.core.billing_clock import BillingClock
from tui.core.config import Config, ConfigError
from tui.core.diagnosis import orphaned_workers
from tui.core.jobs import unprotected_advice
from tui.core.ledger import Ledger, LedgerError
from tui.core.state import DashboardState, loader_views
from tui.remote.probe_client import ProbeError
from tui.remote.session import FAILED, LIVE, Listener, RemoteSession
from tui.ui.screens.modals import (
    AutostopScreen,
    ConfirmScreen,
    HelpScreen,
    HostKeyScreen,
    RateScreen,
)
from tui.ui.screens.tmux import TmuxScreen, default_hand_off
from tui.ui.widgets.billing_panel import BillingPanel, clock_text, render_billing
from tui.ui.widgets.gpu_card import GpuCard
from tui.ui.widgets.host_panel import HostPanel
from tui.ui.widgets.loader_panel import LoaderPanel
from tui.ui.widgets.process_table import ProcessTable
from tui.ui.widgets.status_bar import StatusBar, render_status

ABOUT = ("gputui %s — a cockpit for rented GPU boxes. Data comes from a small probe "
         "daemon on the box that keeps sampling while you are away." % __version__)


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


class GputuiApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "gputui"
    BINDINGS = [
        Binding("q", "quit", "Quit", id="quit", tooltip="Leave gputui; the probe keeps sampling on the box"),
        Binding("question_mark", "help", "Help", id="help", tooltip="Show every key"),
        Binding("s", "cycle_sort", "Sort", id="sort", tooltip="Sort processes by the next column"),
        Binding("S", "reverse_sort", "Reverse", id="reverse", tooltip="Reverse the process order"),
        Binding("t", "tmux", "tmux", id="tmux",
                tooltip="tmux sessions on the box: new job, attach, Ctrl-C, kill, rename"),
        Binding("d", "doctor", "Doctor", id="doctor",
                tooltip="Preflight: GPU count, slices, torch build, CUDA vs driver, matmul speed, disks"),
        Binding("R", "release", "Release", id="release",
                tooltip="Shutdown checklist: jobs, VRAM, downloads, code, temp files, bill; then release"),
        Binding("b", "rate", "Rate", id="rate", tooltip="Enter what this box costs per hour"),
        Binding("a", "autostop", "Autostop", id="autostop",
                tooltip="Arm or cancel the probe's autostop (runs the release command when idle)"),
        Binding("r", "retry", "Reconnect", id="retry", tooltip="Reconnect now instead of waiting"),
    ]

    def __init__(self, target, simulate=None, remote_dir=None, host_label=None,
                 stop_daemon_on_exit=False, session=None, remote_python=None,
                 config=None, ledger=None):
        super().__init__()
        self.state = DashboardState(host_label or target.host)
        self.config = config if config is not None else Config.load()
        self.host_key = target.host  # config and ledger key: the name given to `connect`
        self.host_cfg = self.config.host(self.host_key)
        self.startup_notices = list(self.config.problems)
        if ledger is None:
            try:
                ledger = Ledger()
            except (LedgerError, OSError) as exc:
                ledger = None
                self.startup_notices.append("Ledger unavailable: %s" % exc)
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
        self.session = session or RemoteSession(
            target, simulate=simulate, remote_dir=remote_dir, listener=_AppListener(self),
            ask_trust=self.ask_trust, remote_python=remote_python)
        self.stop_daemon_on_exit = stop_daemon_on_exit
        self._card_count = -1

    # -- layout ------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        yield Static(id="notice")
        with Horizontal(id="body"):
            with Vertical(id="left"):
                yield VerticalScroll(id="gpus")
                yield LoaderPanel(id="loaders")
                yield ProcessTable(id="procs")
            with VerticalScroll(id="right"):
                yield BillingPanel(id="billing")
                yield HostPanel(id="host")
        yield Footer()

    def on_mount(self):
        self.query_one("#procs", ProcessTable).border_title = "GPU processes"
        self.query_one("#host", HostPanel).border_title = "Host"
        self.query_one("#billing", BillingPanel).border_title = "Billing"
        self.query_one("#loaders", LoaderPanel).border_title = "DataLoaders"
        for notice in self.startup_notices:
            self.notify(notice, severity="warning", timeout=15)
        self.refresh_view()
        self.run_session()
        # The billing clock and the data-age counter tick even when no samples arrive.
        self.set_interval(1.0, self.tick)

    def tick(self):
        self.refresh_status()
        self.refresh_billing()
        for kind, level, budget in self.billing.new_budget_warnings():
            self.bell()
            self.notify("Budget: %d%% of %s spent (%s) on %s" % (
                round(level * 100), format_money(budget, self.host_cfg.currency),
                "this session" if kind == "session" else "today", self.host_key),
                severity="error" if level >= 1 else "warning", timeout=20)
        self.billing.persist()
        if self.billing.problem:
            self.notify(self.billing.problem, severity="error", timeout=20)
            self.billing.problem = None

    @work(exclusive=True, group="session", exit_on_error=False)
    async def run_session(self):
        await self.session.run()

    async def ask_trust(self, exc):
        return await self.push_screen_wait(
            HostKeyScreen(exc.host if exc.port in (None, 22) else "%s:%s" % (exc.host, exc.port),
                          exc.algorithm, exc.fingerprint, exc.known_hosts_file))

    # -- display -----------------------------------------------------------------
    @on(StateChanged)
    def refresh_view(self, _event=None):
        self.refresh_status()
        self.refresh_notice()
        self.refresh_gpus()
        st = self.state
        self.query_one("#body").set_class(st.conn_state != LIVE, "stale")
        orphans = orphaned_workers(((st.jobs or {}).get("loaders") or {}).get("orphans") or [])
        self.query_one("#loaders", LoaderPanel).show(loader_views(st), orphans)
        if isinstance(self.screen, TmuxScreen) and self._jobs_shown != self.jobs_version:
            self._jobs_shown = self.jobs_version
            self.screen.refresh_panes()
        self.query_one("#procs", ProcessTable).show(st.proc_rows(), st.sort_key, st.sort_reverse)
        host = dict((st.sample or {}).get("host") or {}, disks=st.disks)
        self.query_one("#host", HostPanel).show(host, st.inventory.get("host") or {},
                                                st.cpu_history)

    def refresh_status(self):
        st = self.state
        reconnect = None
        if self.session.next_attempt_at is not None:
            reconnect = (self.session.attempt, self.session.next_attempt_at - time.monotonic())
        text = render_status(st.host_label, st.gpu_model(), st.conn_state, st.rtt_ms,
                             st.data_age(), st.inventory.get("driver"),
                             st.inventory.get("cuda_driver"), self.billing.preset.name, reconnect,
                             transport=getattr(self.session, "pty_label", None))
        text.append_text(clock_text(self.billing.figures()))
        self.query_one("#status", StatusBar).update(text)

    def refresh_billing(self):
        self.query_one("#billing", BillingPanel).update(
            render_billing(self.billing.figures(), self.autostop, now=time.time()))

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
                self.notify(e.get("message", "autostop countdown started"), severity="error",
                            timeout=30)
            elif kind == "fired":
                self.notify("Autostop ran `%s` (%s, exit %s)" % (
                    e.get("command"), e.get("reason"), e.get("exit")), severity="error", timeout=60)
            elif kind == "disarmed" and event is not None:
                self.notify("Autostop %s" % e.get("reason"), timeout=8)
        self.refresh_billing()

    def refresh_notice(self):
        st = self.state
        notice = self.query_one("#notice", Static)
        text, kind = None, None
        if st.conn_state == FAILED:
            text, kind = "✗ " + st.conn_detail + "   (r: try again, q: quit)", "error"
        elif st.conn_state != LIVE and st.conn_detail:
            text, kind = "◌ %s: %s   (r: retry now)" % (st.conn_state, st.conn_detail), "warn"
        elif st.unprotected():
            jobs = st.unprotected()
            text = "⚠ " + unprotected_advice(jobs[0])
            if len(jobs) > 1:
                text += "  (+%d more: see t)" % (len(jobs) - 1)
            kind = "error"
        elif st.no_gpu_reason():
            text, kind = "No GPU data: " + st.no_gpu_reason(), "warn"
        notice.set_class(text is not None, "shown")
        notice.set_class(kind == "error", "error")
        notice.set_class(kind == "warn", "warn")
        notice.update(text or "")

    def refresh_gpus(self):
        st = self.state
        box = self.query_one("#gpus", VerticalScroll)
        count = len(st.gpus)
        if count != self._card_count:
            box.remove_children()
            box.mount_all([GpuCard(i, id="gpu-%d" % i) for i in range(count)])
            box.set_class(count == 1, "one")
            box.display = count > 0
            self._card_count = count
            self.call_after_refresh(self.refresh_gpus)
            return
        for i, dyn in enumerate(st.gpus):
            try:
                card = box.query_one("#gpu-%d" % i, GpuCard)
            except Exception:  # not mounted yet; the next refresh fills it
                continue
            card.show(st.gpu_static(i), dyn, st.gpu_history.get(i, ()))

    # -- actions -----------------------------------------------------------------
    def action_help(self):
        keys = [(self.get_key_display(b), b.description, b.tooltip) for b in self.BINDINGS]
        self.push_screen(HelpScreen(keys, ABOUT))

    def first_contact(self):
        """Right after the first connect: a quick preflight (no matmul) in the background."""
        if not self._preflight_started:
            self._preflight_started = True
            self.quick_preflight()

    @work(exclusive=True, group="preflight", exit_on_error=False)
    async def quick_preflight(self):
        checks = await self.run_preflight(smoke=False)
        if checks:
            from tui.core.preflight import worst
            from tui.ui.screens.doctor import summary
            verdict = worst(checks)
            self.notify(summary(checks), severity={"pass": "information", "warn": "warning",
                                                   "fail": "error"}[verdict], timeout=15)

    async def run_preflight(self, smoke=True):
        from tui.core.preflight import run_checks
        from tui.core.report import doctor_request
        # a matmul on a GPU someone is training on would disturb the run: only on idle GPUs
        busy = any(r.kind == "C" for r in self.state.proc_rows())
        try:
            reply = await self.session.request(protocol.PREFLIGHT, timeout=240,
                                               **doctor_request(self.host_cfg, smoke and not busy))
        except Exception as exc:  # noqa: BLE001 - one notice, the dashboard goes on
            self.notify("Preflight failed: %s" % exc, severity="error", timeout=10)
            return None
        dyn = dict(enumerate(self.state.gpus))
        self.preflight_checks = run_checks(reply["facts"], self.host_cfg, self.billing.preset, dyn)
        return self.preflight_checks

    def action_release(self):
        from tui.ui.screens.release import ReleaseScreen
        self.push_screen(ReleaseScreen())

    def action_doctor(self):
        from tui.ui.screens.doctor import DoctorScreen
        self.push_screen(DoctorScreen())

    def action_tmux(self):
        self._jobs_shown = self.jobs_version
        self.push_screen(TmuxScreen())

    def action_cycle_sort(self):
        self.state.cycle_sort()
        self.refresh_view()

    def action_reverse_sort(self):
        self.state.sort_reverse = not self.state.sort_reverse
        self.refresh_view()

    @on(Worker.StateChanged)
    def worker_failed(self, event):
        """One place turns a failed background action into a notice (like harlequin)."""
        if event.state == WorkerState.ERROR and event.worker.group != "session":
            self.notify("%s failed: %s" % (event.worker.name or "action", event.worker.error),
                        severity="error", timeout=15)

    @on(DataTable.HeaderSelected)
    def sort_by_header(self, event):
        self.state.sort_by(event.column_key.value)
        self.refresh_view()

    def action_retry(self):
        if self.session.state == FAILED:
            self.run_session()
        else:
            self.session.retry_now()

    @work(exclusive=True, group="dialog")
    async def action_rate(self):
        cfg = self.host_cfg
        answer = await self.push_screen_wait(RateScreen(self.host_key, cfg.rate, cfg.currency,
                                                        cfg.granularity))
        if answer is None:
            return
        rate, currency, granularity = answer
        self.billing.set_rate(rate, currency, granularity)
        try:
            self.config.set_host_values(self.host_key, rate=rate, currency=currency,
                                        granularity=granularity)
            self.notify("Rate %s/h saved for %s" % (format_money(rate, currency), self.host_key))
        except ConfigError as exc:
            self.notify("Rate used for this session only: %s" % exc, severity="warning", timeout=15)
        self.refresh_billing()

    @work(exclusive=True, group="dialog")
    async def action_autostop(self):
        auto = self.host_cfg.autostop
        if self.autostop and self.autostop.get("armed"):
            if await self.push_screen_wait(ConfirmScreen("Cancel autostop on %s?" % self.host_key)):
                await self._autostop_request(protocol.AUTOSTOP_DISARM, reason="cancelled from gputui")
            return
        command = self.billing.preset.release_command
        if not auto.allowed:
            self.notify("Autostop is off for %s. It runs a command that stops the box, so it is "
                        "opt-in: add `[hosts.\"%s\".autostop]` with `allowed = true` to %s"
                        % (self.host_key, self.host_key, self.config.path), severity="warning",
                        timeout=20)
            return
        if not command:
            self.notify("No release command known for %s (%s): set release_command in %s"
                        % (self.host_key, self.billing.preset.name, self.config.path),
                        severity="warning", timeout=20)
            return
        answer = await self.push_screen_wait(AutostopScreen(
            self.host_key, command, auto.idle_minutes, auto.max_hours, auto.grace_seconds,
            stop_at=auto.deadline))
        if answer is None:
            return
        deadlines = []
        if answer["max_hours"]:
            deadlines.append(time.time() + answer["max_hours"] * 3600)
        if answer.get("stop_at"):
            deadlines.append(billing.next_clock_time(answer["stop_at"], time.time()))
        deadline = min(deadlines) if deadlines else None
        idle = answer["idle_minutes"] * 60 if answer["idle_minutes"] is not None else None
        await self._autostop_request(
            protocol.AUTOSTOP_ARM, command=command, idle_seconds=idle, deadline=deadline,
            grace=auto.grace_seconds,
            threshold=auto.idle_threshold if auto.idle_threshold is not None else self.host_cfg.idle_threshold)

    async def _autostop_request(self, kind, **params):
        try:
            reply = await self.session.request(kind, **params)
        except (ProbeError, asyncio.TimeoutError) as exc:
            self.notify("Autostop: %s" % exc, severity="error", timeout=15)
            return
        self.autostop_changed(reply.get("autostop"))
        if kind == protocol.AUTOSTOP_ARM:
            self.notify("Autostop armed on %s" % self.host_key, timeout=8)

    async def action_quit(self):
        self.billing.persist(force=True)
        await self.session.close(stop_daemon=self.stop_daemon_on_exit)
        self.exit()

    # (tmux and rate stay: the Release screen offers them as fixes)
    DASHBOARD_ONLY = frozenset({"cycle_sort", "reverse_sort", "doctor", "release", "autostop", "retry"})

    def check_action(self, action, parameters):
        """Dashboard keys stay out of the sub-screens' footers (they have their own)."""
        if action in self.DASHBOARD_ONLY and len(self.screen_stack) > 1:
            return False
        return True

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for b in self.BINDINGS:
            action = b.action
            yield SystemCommand(b.description, "%s  [%s]" % (b.tooltip, b.key),
                                lambda a=action: self.run_action(a))
