"""The dashboard of one box: header, notices, GPUs, dataloaders, processes, billing, host.

It only displays what the app's DashboardState holds and forwards keys to actions."""

import time

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from tui.core import billing
from tui.core.billing import format_money
from tui.core.config import ConfigError
from tui.core.diagnosis import orphaned_workers
from tui.core.i18n import N_, _
from tui.core.jobs import unprotected_advice
from tui.core.layout import compact_loaders, gpu_plan, right_column
from tui.core.state import loader_views
from tui.remote.session import FAILED, LIVE
from tui.ui.background import background
from tui.ui.boxtext import box_text
from tui.ui.screens.modals import AutostopScreen, ConfirmScreen, RateScreen
from tui.ui.widgets.billing_panel import (
    BillingPanel,
    clock_text,
    render_billing,
    render_summary,
)
from tui.ui.widgets.gpu_panel import GpuPanel
from tui.ui.widgets.host_panel import HostPanel
from tui.ui.widgets.live import update_text
from tui.ui.widgets.loader_panel import LoaderPanel
from tui.ui.widgets.process_table import ProcessTable
from tui.ui.widgets.status_bar import StatusBar, render_status
from tui.ui.translate import Translated


class DashboardScreen(Translated, Screen):
    BINDINGS = [
        Binding("s", "cycle_sort", N_("Sort"), id="sort", tooltip=N_("Sort processes by the next column")),
        Binding("S", "reverse_sort", N_("Reverse"), id="reverse", tooltip=N_("Reverse the process order"),
                show=False),
        Binding("t", "app.tmux", "tmux", id="tmux",
                tooltip=N_("tmux sessions on the box: new job, attach, Ctrl-C, kill, rename")),
        Binding("d", "doctor", N_("Doctor"), id="doctor",
                tooltip=N_("Preflight: GPU count, slices, torch build, CUDA vs driver, matmul speed, disks")),
        Binding("R", "release", N_("Release"), id="release",
                tooltip=N_("Shutdown checklist: jobs, VRAM, downloads, code, temp files, bill; then release")),
        Binding("b", "rate", N_("Rate"), id="rate", tooltip=N_("Enter what this box costs per hour")),
        Binding("a", "autostop", N_("Autostop"), id="autostop",
                tooltip=N_("Arm or cancel the probe's autostop (runs the release command when idle)")),
        Binding("r", "retry", N_("Reconnect"), id="retry", tooltip=N_("Reconnect now instead of waiting")),
        Binding("N", "nvitop", "nvitop", id="nvitop", show=False,
                tooltip=N_("nvitop on the box in this terminal (offers to install it into gputui's own folder)")),
    ]

    def __init__(self):
        super().__init__(id="dashboard")
        self.ready = False  # composed and mounted: the app's updates can land
        self.last_refresh = 0.0  # monotonic time of the last full refresh

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        yield Static(id="notice")
        yield Static(id="summary")  # billing and host in one line when the right column is hidden
        with Horizontal(id="body"):
            with Vertical(id="left"):
                yield GpuPanel(id="gpus")
                yield LoaderPanel(id="loaders")
                yield ProcessTable(id="procs")
            with VerticalScroll(id="right"):
                yield BillingPanel(id="billing")
                yield HostPanel(id="host")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self):
        self.query_one("#procs", ProcessTable).border_title = _("GPU processes")
        self.query_one("#host", HostPanel).border_title = _("Host")
        self.query_one("#billing", BillingPanel).border_title = _("Billing")
        self.query_one("#loaders", LoaderPanel).border_title = "DataLoaders"
        self.query_one("#gpus", GpuPanel).border_title = _("GPUs")
        self.ready = True
        self.refresh_view()

    def on_resize(self, _event):
        if self.ready:
            self.refresh_view()

    # -- display -----------------------------------------------------------------
    def refresh_view(self):
        self.last_refresh = time.monotonic()
        st = self.app.state
        self.set_class(not right_column(self.size.width or 120), "narrow")
        self.refresh_status()
        self.refresh_notice()
        self.refresh_gpus()
        self.query_one("#body").set_class(st.conn_state != LIVE, "stale")
        orphans = orphaned_workers(st.job_model.loaders.orphans)
        self.query_one("#loaders", LoaderPanel).show(loader_views(st), orphans,
                                                     compact=compact_loaders(self.size.height or 40))
        self.query_one("#procs", ProcessTable).show(st.proc_rows(), st.sort_key, st.sort_reverse,
                                                    more=st.procs_more())
        self.query_one("#host", HostPanel).show(st.host_view(), st.host_facts, st.cpu_history)
        self.refresh_billing()

    def refresh_status(self):
        app, st = self.app, self.app.state
        reconnect = None
        if app.session.next_attempt_at is not None:
            reconnect = (app.session.attempt, app.session.next_attempt_at - time.monotonic())
        text = render_status(st.host_label, st.gpu_model(), st.conn_state, st.rtt_ms,
                             st.data_age(), st.inventory.get("driver"),
                             st.inventory.get("cuda_driver"), app.billing.preset.name, reconnect,
                             clock=clock_text(app.billing.figures()),
                             transport=getattr(app.session, "transport_label", None),
                             width=self.size.width or None)
        update_text(self.query_one("#status", StatusBar), text)

    def refresh_billing(self):
        app = self.app
        figures = app.billing.figures()
        if right_column(self.size.width or 120):
            update_text(self.query_one("#billing", BillingPanel),
                        render_billing(figures, app.autostop, now=app.billing.clock()))
        else:
            update_text(self.query_one("#summary", Static),
                        render_summary(figures, app.autostop, app.state.host, self.size.width))

    def refresh_notice(self):
        st = self.app.state
        notice = self.query_one("#notice", Static)
        text, kind = None, None
        if st.conn_state == FAILED:
            text, kind = "✗ " + st.conn_detail + _("   (r: try again, q: quit)"), "error"
        elif st.conn_state != LIVE and st.conn_detail:
            text, kind = _("◌ %s: %s   (r: retry now)") % (st.conn_state.label, st.conn_detail), "warn"
        elif st.unprotected():
            jobs = st.unprotected()
            text = "⚠ " + unprotected_advice(jobs[0])
            if len(jobs) > 1:
                text += _("  (+%d more: see t)") % (len(jobs) - 1)
            kind = "error"
        elif st.no_gpu_reason():
            text, kind = _("No GPU data: ") + st.no_gpu_reason(), "warn"
        notice.set_class(text is not None, "shown")
        notice.set_class(kind == "error", "error")
        notice.set_class(kind == "warn", "warn")
        update_text(notice, box_text(text or ""))  # argv, errors from the box: text, not markup

    def refresh_gpus(self):
        st = self.app.state
        panel = self.query_one("#gpus", GpuPanel)
        count = len(st.gpus)
        panel.display = count > 0
        if not count:
            return
        plan = gpu_plan(count, self.size.width or 120, self.size.height or 40, self.fixed_rows())
        panel.show(st.gpu_cards(), st.gpu_histories(), plan)

    def fixed_rows(self):
        """Rows outside the GPU panel and the process table: header, footer, notice, summary,
        dataloader panel."""
        rows = 2
        for wid in ("#notice", "#summary", "#loaders"):
            w = self.query_one(wid)
            if w.display and w.styles.display != "none":
                rows += w.outer_size.height
        return rows

    # -- actions -----------------------------------------------------------------
    def action_release(self):
        from tui.ui.screens.release import ReleaseScreen
        self.app.push_screen(ReleaseScreen())

    def action_doctor(self):
        from tui.ui.screens.doctor import DoctorScreen
        self.app.push_screen(DoctorScreen())

    def action_cycle_sort(self):
        self.app.state.cycle_sort()
        self.refresh_view()

    def action_reverse_sort(self):
        self.app.state.sort_reverse = not self.app.state.sort_reverse
        self.refresh_view()

    @on(ProcessTable.SortRequested)
    def sort_by_header(self, event):
        self.app.state.sort_by(event.key)
        self.refresh_view()

    def action_retry(self):
        self.app.reconnect()

    @background("nvitop", group="dialog")
    async def action_nvitop(self):
        from tui.ui.nvitop import open_nvitop
        await open_nvitop(self.app)

    @background("Rate", group="dialog")
    async def action_rate(self):
        app = self.app
        cfg = app.host_cfg
        answer = await app.push_screen_wait(RateScreen(app.host_key, cfg.rate, cfg.currency,
                                                       cfg.granularity))
        if answer is None:
            return
        rate, currency, granularity = answer
        app.billing.set_rate(rate, currency, granularity)
        try:
            app.config.set_host_values(app.host_key, rate=rate, currency=currency,
                                       granularity=granularity)
            app.notify(_("Rate %s/h saved for %s") % (format_money(rate, currency), app.host_key),
                       markup=False)
        except ConfigError as exc:  # the rate still applies; only saving it failed
            app.notify(_("Rate used for this session only: %s") % exc, severity="warning",
                       timeout=15, markup=False)
        self.refresh_billing()

    @background("Autostop", group="dialog")
    async def action_autostop(self):
        app = self.app
        auto = app.host_cfg.autostop
        if app.autostop and app.autostop.get("armed"):
            if await app.push_screen_wait(ConfirmScreen(_("Cancel autostop on %s?") % app.host_key)):
                await app.autostop_request("disarm", reason="cancelled from gputui")
            return
        command = app.billing.preset.release_command
        if not auto.allowed:
            app.notify(_("Autostop is off for %s. It runs a command that stops the box, so it is "
                         "opt-in: add `[hosts.\"%s\".autostop]` with `allowed = true` to %s")
                       % (app.host_key, app.host_key, app.config.path), severity="warning",
                       timeout=20, markup=False)
            return
        if not command:
            app.notify(_("No release command known for %s (%s): set release_command in %s")
                       % (app.host_key, app.billing.preset.name, app.config.path),
                       severity="warning", timeout=20, markup=False)
            return
        answer = await app.push_screen_wait(AutostopScreen(
            app.host_key, command, auto.idle_minutes, auto.max_hours, auto.grace_seconds,
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
        threshold = (auto.idle_threshold if auto.idle_threshold is not None
                     else app.host_cfg.idle_threshold)
        await app.autostop_request("arm", command=command, idle_seconds=idle, deadline=deadline,
                                   grace=auto.grace_seconds, threshold=threshold)
