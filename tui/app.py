"""The Textual app: the live GPU dashboard of one box."""

from typing import Iterable

from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from . import __version__
from .screens import HelpScreen, HostKeyScreen
from .session import FAILED, LIVE, Listener, RemoteSession
from .state import DashboardState
from .widgets.gpu_card import GpuCard
from .widgets.host_panel import HostPanel
from .widgets.process_table import ProcessTable
from .widgets.status_bar import StatusBar, render_status

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
        self._changed()

    def on_sample(self, sample):
        self.app.state.add_sample(sample)
        self._changed()

    def on_proc_meta(self, procs):
        self.app.state.add_proc_meta(procs)

    def on_latency(self, ms):
        self.app.state.rtt_ms = ms


class GputuiApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "gputui"
    BINDINGS = [
        Binding("q", "quit", "Quit", id="quit", tooltip="Leave gputui; the probe keeps sampling on the box"),
        Binding("question_mark", "help", "Help", id="help", tooltip="Show every key"),
        Binding("s", "cycle_sort", "Sort", id="sort", tooltip="Sort processes by the next column"),
        Binding("S", "reverse_sort", "Reverse", id="reverse", tooltip="Reverse the process order"),
        Binding("r", "retry", "Reconnect", id="retry", tooltip="Reconnect now instead of waiting"),
    ]

    def __init__(self, target, simulate=None, remote_dir=None, host_label=None,
                 stop_daemon_on_exit=False, session=None, remote_python=None):
        super().__init__()
        self.state = DashboardState(host_label or target.host)
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
                yield ProcessTable(id="procs")
            with VerticalScroll(id="right"):
                yield HostPanel(id="host")
        yield Footer()

    def on_mount(self):
        self.query_one("#procs", ProcessTable).border_title = "GPU processes"
        self.query_one("#host", HostPanel).border_title = "Host"
        self.refresh_view()
        self.run_session()
        # The data-age counter must tick while disconnected (no samples arrive then).
        self.set_interval(1.0, self.refresh_status)

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
        self.query_one("#procs", ProcessTable).show(st.proc_rows(), st.sort_key, st.sort_reverse)
        host = dict((st.sample or {}).get("host") or {}, disks=st.disks)
        self.query_one("#host", HostPanel).show(host, st.inventory.get("host") or {},
                                                st.cpu_history)

    def refresh_status(self):
        st = self.state
        self.query_one("#status", StatusBar).update(render_status(
            st.host_label, st.gpu_model(), st.conn_state, st.rtt_ms, st.data_age(),
            st.inventory.get("driver"), st.inventory.get("cuda_driver")))

    def refresh_notice(self):
        st = self.state
        notice = self.query_one("#notice", Static)
        text, kind = None, None
        if st.conn_state == FAILED:
            text, kind = "✗ " + st.conn_detail + "   (r: try again, q: quit)", "error"
        elif st.conn_state != LIVE and st.conn_detail:
            text, kind = "◌ %s: %s   (r: retry now)" % (st.conn_state, st.conn_detail), "warn"
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

    def action_cycle_sort(self):
        self.state.cycle_sort()
        self.refresh_view()

    def action_reverse_sort(self):
        self.state.sort_reverse = not self.state.sort_reverse
        self.refresh_view()

    @on(DataTable.HeaderSelected)
    def sort_by_header(self, event):
        self.state.sort_by(event.column_key.value)
        self.refresh_view()

    def action_retry(self):
        if self.session.state == FAILED:
            self.run_session()
        else:
            self.session.retry_now()

    async def action_quit(self):
        await self.session.close(stop_daemon=self.stop_daemon_on_exit)
        self.exit()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for b in self.BINDINGS:
            action = b.action
            yield SystemCommand(b.description, "%s  [%s]" % (b.tooltip, b.key),
                                lambda a=action: self.run_action(a))
