"""The dashboard of one box: header, notices, GPUs, dataloaders, processes, billing, host.

It is handed the box it shows (tui.ui.box_context.BoxContext), displays what the box's
DashboardState holds and forwards keys to the flows (tui.ui.flows) for that box."""

import time

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from tui.core.jobs.clock_lines import clock_notice
from tui.core.checks.diagnosis import orphaned_workers
from tui.core.i18n import N_, _
from tui.core.jobs.lines import lines_for
from tui.core.jobs.proc_tree import tree_is_flat
from tui.core.jobs.tmux_rows import no_proc_notice, unprotected_advice
from tui.core.layout import (MAX_PROC_ROWS, compact_loaders, gpu_plan, jobs_lines, panel_width,
                             right_column)
from tui.core.state import loader_views
from tui.remote.session import FAILED, LIVE
from tui.ui import flows
from tui.ui.background import background
from tui.ui.box_context import BoxContext
from tui.ui.widgets.footer import Footer
from tui.ui.boxtext_rich import box_text
from tui.ui.widgets.billing_panel import (
    BillingPanel,
    clock_text,
    render_billing,
    render_summary,
)
from tui.ui.widgets.gpu_panel import GpuPanel
from tui.ui.widgets.host_panel import HostPanel
from tui.ui.widgets.jobs_panel import JobsPanel
from tui.ui.widgets.live import shown_rows, update_text
from tui.ui.widgets.loader_panel import LoaderPanel
from tui.ui.widgets.process_table import ProcessTable
from tui.ui.widgets.status_bar import StatusBar, render_status
from tui.ui.screens.filter_dialog import FilterScreen
from tui.ui.translate import Translated
from tui.ui.help_key import help_binding


class DashboardScreen(Translated, Screen):
    BINDINGS = [
        # s and S share one footer slot ("s/S Sort"): the footer has 80 columns to fit
        Binding("s", "cycle_sort", N_("Sort"), id="sort", key_display="s/S",
                tooltip=N_("Sort processes by the next column (S: reverse)")),
        Binding("S", "reverse_sort", N_("Reverse"), id="reverse", tooltip=N_("Reverse the process order"),
                show=False),
        Binding("t", "tmux", "tmux", id="tmux",
                tooltip=N_("tmux sessions on the box: new job, attach, Ctrl-C, kill, rename")),
        Binding("d", "doctor", N_("Doctor"), id="doctor",
                tooltip=N_("Preflight: GPU count, slices, torch build, CUDA vs driver, matmul speed, disks")),
        Binding("R", "release", N_("Release"), id="release",
                tooltip=N_("Shutdown checklist: jobs, VRAM, downloads, code, temp files, bill; then release")),
        Binding("a", "autostop", N_("Autostop"), id="autostop",
                tooltip=N_("Arm or cancel the probe's autostop (runs the release command when idle)")),
        Binding("r", "retry", N_("Reconnect"), id="retry", tooltip=N_("Reconnect now instead of waiting")),
        Binding("slash", "filter", N_("Filter"), id="filter",
                tooltip=N_("Show only processes whose command, user or pid match")),
        # Quit before nvitop: at 80 columns the footer still says how to leave
        Binding("q", "app.quit", N_("Quit"), id="dashboard.quit",
                tooltip=N_("Leave gputui; the probe keeps sampling on the box")),
        # Help here, not last with the app's keys: at 80 columns `?` (the way to every key the
        # footer cannot fit) ends the footer; Rate, set once per box, comes after it
        help_binding("dashboard.help"),
        Binding("b", "rate", N_("Rate"), id="rate", tooltip=N_("Enter the price this box bills per hour")),
        # after Quit and Help: at 80 columns both stay in the footer, T shows from ~100
        Binding("T", "tree", N_("Tree"), id="tree",
                tooltip=N_("Show processes under their parents (torchrun and its ranks); T again: a flat list")),
        Binding("N", "nvitop", "nvitop", id="nvitop",
                tooltip=N_("nvitop on the box in this terminal (offers to install it into gputui's own folder)")),
        Binding("u", "push", N_("Push"), id="push",
                tooltip=N_("Copy local files or folders onto the box: resumable, verified, with what it costs")),
    ]

    def __init__(self, box: BoxContext) -> None:
        super().__init__(id="dashboard")
        self.box = box
        self.ready = False  # composed and mounted: the app's updates can land
        self.last_refresh = 0.0  # monotonic time of the last full refresh
        self._procs_title = ""  # the process table's title as last set

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        yield Static(id="notice")
        yield Static(id="summary")  # billing and host in one line when the right column is hidden
        with Horizontal(id="body"):
            with Vertical(id="left"):
                yield GpuPanel(id="gpus")
                yield LoaderPanel(id="loaders")
                yield JobsPanel(id="jobs")
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
        self.query_one("#jobs", JobsPanel).border_title = _("Jobs")
        self.query_one("#gpus", GpuPanel).border_title = _("GPUs")
        self.ready = True
        self.refresh_view()

    def on_resize(self, _event):
        if self.ready:
            self.refresh_view()

    # -- display -----------------------------------------------------------------
    def refresh_view(self):
        self.last_refresh = time.monotonic()
        st = self.box.state
        # the billing figures once for the whole refresh (header, jobs, billing): each is a
        # Figures of ~30 fields and a walk through the ledger's cache
        now = self.box.billing.clock()
        figures = self.box.billing.figures(now)
        self.set_class(not right_column(self.size.width or 120), "narrow")
        self.refresh_status(figures)
        self.refresh_notice()
        self.query_one("#body").set_class(st.conn_state != LIVE, "stale")
        orphans = orphaned_workers(st.job_model.loaders.orphans)
        self.query_one("#loaders", LoaderPanel).show(loader_views(st), orphans,
                                                     compact=compact_loaders(self.size.height or 40))
        self.refresh_jobs(figures, now)
        rows = st.proc_rows()  # joined and sorted once per refresh: the GPU plan counts them too
        self.refresh_gpus(rows)  # after the dataloader panel: the GPU plan counts its rows
        procs = self.query_one("#procs", ProcessTable)
        procs.show(rows, st.sort_key, st.sort_reverse, more=st.procs_more())
        title = _("GPU processes") + (_(" — tree (T: flat list)") if st.proc_tree else "") + (
            _(" — filter: %s (/ to change)") % st.proc_filter if st.proc_filter else "")
        if title != self._procs_title:  # setting it repaints the whole table, even unchanged
            self._procs_title = title
            procs.border_title = box_text(title)  # the filter is the user's text: never markup
        self.query_one("#host", HostPanel).show(st.host_view(), st.host_facts, st.cpu_history)
        self.refresh_billing(figures, now)

    def refresh_jobs(self, figures=None, now=None):
        """The watched jobs (state, progress, ETA, cost to finish); hidden when there are none."""
        box = self.box
        now = box.billing.clock() if now is None else now
        figures = box.billing.figures(now) if figures is None else figures
        lines = lines_for(box.state, figures, now)
        width, height = self.size.width or 120, self.size.height or 40
        compact = compact_loaders(height)
        # on a short terminal the process table keeps its rows: the panel gets what is left
        room = jobs_lines(len(box.state.gpus), width, height, self.other_rows(),
                          wanted=3 if compact else 5)
        self.query_one("#jobs", JobsPanel).show(lines, now, figures.currency, panel_width(width),
                                                compact=compact, max_lines=room)

    def refresh_status(self, figures=None):
        box, st = self.box, self.box.state
        session = box.session
        reconnect = None
        if session is not None and session.next_attempt_at is not None:
            reconnect = (session.attempt, session.next_attempt_at - time.monotonic())
        text = render_status(st.host_label, st.gpu_model(), st.conn_state, st.rtt_ms,
                             st.data_age(), st.inventory.get("driver"),
                             st.inventory.get("cuda_driver"), box.billing.preset.name, reconnect,
                             clock=clock_text(box.billing.figures() if figures is None else figures),
                             transport=getattr(session, "transport_label", None),
                             width=self.size.width or None)
        update_text(self.query_one("#status", StatusBar), text)

    def refresh_billing(self, figures=None, now=None):
        box = self.box
        now = box.billing.clock() if now is None else now
        figures = box.billing.figures(now) if figures is None else figures
        if right_column(self.size.width or 120):
            update_text(self.query_one("#billing", BillingPanel),
                        render_billing(figures, box.autostop, now=now, jobs=box.state.watched()))
        else:
            update_text(self.query_one("#summary", Static),
                        render_summary(figures, box.autostop, box.state.host, self.size.width))

    def refresh_notice(self):
        st = self.box.state
        notice = self.query_one("#notice", Static)
        text, kind = None, None
        if st.conn_state == FAILED:
            text, kind = "✗ " + st.conn_detail + _("   (r: try again, q: quit)"), "error"
        elif st.conn_state != LIVE and st.conn_detail:
            text, kind = _("◌ %s: %s   (r: retry now)") % (st.conn_state.label, st.conn_detail), "warn"
        elif st.job_model.clocks:
            # a spot notice or the balance at zero: counted down on every refresh (issue 36)
            text, kind = clock_notice(st.job_model.clocks, time.time()), "error"
        elif st.unprotected():
            jobs = st.unprotected()
            text = "⚠ " + unprotected_advice(jobs[0])
            if len(jobs) > 1:
                text += _("  (+%d more: see t)") % (len(jobs) - 1)
            kind = "error"
        elif st.no_gpu_reason():
            text, kind = _("No GPU data: ") + st.no_gpu_reason(), "warn"
        elif no_proc_notice(st.job_model.no_proc):
            text, kind = no_proc_notice(st.job_model.no_proc), "warn"
        notice.set_class(text is not None, "shown")
        notice.set_class(kind == "error", "error")
        notice.set_class(kind == "warn", "warn")
        update_text(notice, box_text(text or ""))  # argv, errors from the box: text, not markup

    def refresh_gpus(self, rows=None):
        st = self.box.state
        panel = self.query_one("#gpus", GpuPanel)
        count = len(st.gpus)
        panel.display = count > 0
        if not count:
            return
        plan = gpu_plan(count, self.size.width or 120, self.size.height or 40, self.fixed_rows(),
                        procs=min(len(st.proc_rows() if rows is None else rows), MAX_PROC_ROWS))
        panel.show(st.gpu_cards(), st.gpu_histories(), plan)

    def fixed_rows(self):
        """Rows outside the GPU panel and the process table: header, footer, notice, summary,
        dataloader panel, jobs panel."""
        return self.other_rows() + self.query_one("#jobs", JobsPanel).rows_needed  # this frame's

    def other_rows(self):
        """Rows of the header, footer, notice, summary and dataloader panel as this refresh
        left them: a notice shown or a panel grown this refresh has no laid-out size yet, and
        planning with the last layout's squeezed the process table for a frame (CI caught it)."""
        width = self.size.width or 120
        rows = 2 + (0 if right_column(width) else 1)  # header, footer; the narrow summary line
        notice = self.query_one("#notice", Static)
        if notice.has_class("shown"):
            rows += shown_rows(notice, width - 2)  # padding 0 1
        loaders = self.query_one("#loaders", LoaderPanel)
        if loaders.has_class("shown"):
            # it sits in the left column: beside billing and host, its lines wrap at the GPU
            # panel's width, not the screen's (a loader line of 115-156 columns at 160 wide was
            # planned as one row and laid out as two)
            rows += min(LoaderPanel.MAX_HEIGHT, shown_rows(loaders, panel_width(width)) + 2)  # + border
        return rows

    # -- actions -----------------------------------------------------------------
    # the other screens are imported on their key: the dashboard in front does not carry
    # their widgets (DataTable, Input, OptionList...) in memory (issue 25)
    def action_release(self) -> None:
        from tui.ui.screens.release_screen import ReleaseScreen
        self.app.push_screen(ReleaseScreen(self.box))

    def action_doctor(self) -> None:
        from tui.ui.screens.doctor import DoctorScreen
        self.app.push_screen(DoctorScreen(self.box))

    def action_tmux(self) -> None:
        from tui.ui.screens.tmux_screen import TmuxScreen
        self.app.push_screen(TmuxScreen(self.box))

    def action_push(self) -> None:
        from tui.ui.screens.push_screen import PushScreen
        self.app.push_screen(PushScreen(self.box))

    def action_cycle_sort(self) -> None:
        # only the columns shown at this width: sorting by a hidden one looks like nothing
        self.box.state.cycle_sort(list(self.query_one("#procs", ProcessTable).columns))
        self.refresh_view()

    @background("Filter", group="dialog")
    async def action_filter(self) -> None:
        answer = await self.app.push_screen_wait(FilterScreen(self.box.state.proc_filter))
        if answer is not None:
            self.box.state.proc_filter = answer
            self.refresh_view()

    def action_tree(self) -> None:
        st = self.box.state
        st.proc_tree = not st.proc_tree
        self.refresh_view()
        rows = st.proc_rows()
        if st.proc_tree and rows and tree_is_flat(rows):  # T seemed to do nothing: say why
            self.notify(_("No GPU process here has a parent among them: the tree is flat "
                          "(T again: the plain list)"), timeout=8, markup=False)

    def action_reverse_sort(self) -> None:
        self.box.state.sort_reverse = not self.box.state.sort_reverse
        self.refresh_view()

    @on(ProcessTable.SortRequested)
    def sort_by_header(self, event: ProcessTable.SortRequested) -> None:
        self.box.state.sort_by(event.key)
        self.refresh_view()

    def action_retry(self) -> None:
        flows.cockpit(self).reconnect(self.box)

    @background("nvitop", group="dialog")
    async def action_nvitop(self) -> None:
        await flows.open_nvitop(flows.cockpit(self), self.box)

    @background("Rate", group="dialog")
    async def action_rate(self) -> None:
        if await flows.ask_rate(flows.cockpit(self), self.box):
            self.refresh_billing()

    @background("Autostop", group="dialog")
    async def action_autostop(self) -> None:
        await flows.arm_or_cancel_autostop(flows.cockpit(self), self.box)
