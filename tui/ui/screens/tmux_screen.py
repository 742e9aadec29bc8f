"""The tmux panel: sessions and panes on the box, a live preview, and job actions."""

from typing import Dict, Optional

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Input, Label, Static

from remote_probe import wire
from tui.core.text import paste
from tui.core.text.boxtext import ELLIPSIS, visible
from tui.core.i18n import N_, _
from tui.core.jobs.lines import JobLine, lines_for
from tui.core.session.handoff_reason import handoff_failure
from tui.core.jobs.tmux_rows import pane_rows, safe_session_name, tmux_column_widths, unprotected_advice
from tui.core.text.cells import cell_len
from tui.remote.session import REQUEST_ERRORS, RemoteSession
from tui.ui.background import background
from tui.ui.box_context import BoxContext
from tui.ui.widgets.footer import Footer
from tui.ui.boxtext_rich import ansi_text, box_text, plain
from tui.ui.widgets.jobs_panel import pane_job_cell, render_jobs
from tui.ui.screens.modals import ConfirmScreen, FormScreen
from tui.ui.terminal_handoff import hand_off
from tui.ui.translate import Translated

PREVIEW_EVERY = 1.0
COLUMNS = (("session", N_("SESSION")), ("window", N_("WINDOW")), ("pane", N_("PANE")),
           ("command", N_("COMMAND")), ("elapsed", N_("RUNNING")), ("attached", N_("ATT")),
           ("job", N_("JOB")))


def clipped(cell: Text, width: int, middle: bool = False) -> Text:
    """A cell cut to its column with a visible '…' (never a silent cut: "train.s"); `middle`
    keeps both ends ("train…-12"): session names differ at the end as often as not."""
    if cell.cell_len <= width:
        return cell
    if middle and width >= 5:
        plain = cell.plain
        start = len(plain)  # the tail: half the room after the '…'
        while start > 0 and cell_len(plain[start - 1:]) <= (width - 1) // 2:
            start -= 1
        end = 0  # the head: what is left
        while end < start and cell_len(plain[:end + 1]) <= width - 1 - cell_len(plain[start:]):
            end += 1
        return Text.assemble(cell[:end], ELLIPSIS, cell[start:])
    cut = cell.copy()
    cut.truncate(width, overflow="ellipsis")
    return cut


class JobScreen(FormScreen):
    """New job: name, working directory, command."""

    BINDINGS = [Binding("escape", "cancel", N_("Cancel"), id="job.cancel")]
    DEFAULT_CSS = """
    JobScreen { align: center middle; }
    JobScreen > Vertical { width: 80; max-width: 100%; height: auto; border: thick $primary; background: $surface; padding: 1 2; }
    JobScreen Input { margin-bottom: 1; }
    JobScreen #error { color: $error; height: auto; }
    """

    def __init__(self, title=N_("New job in tmux"), name="", cwd="~", command="", rename=False):
        super().__init__()
        self.title_text, self.rename = title, rename
        self.values = (name, cwd, command)

    def compose(self) -> ComposeResult:
        name, cwd, command = self.values
        with Vertical():
            yield Label(Text(_(self.title_text), style="bold"))
            yield Label(_("Session name:"))
            yield Input(value=plain(name), id="name")
            if not self.rename:
                yield Label(_("Working directory on the box:"))
                yield Input(value=cwd, id="cwd")
                yield Label(_("Command (runs detached; survives any disconnect):"))
                yield Input(value=command, id="command", placeholder="python train.py --epochs 90")
            yield Static(id="error")
            yield from self.form_buttons(_("OK"))

    def submit(self) -> None:
        name, problem = safe_session_name(self.query_one("#name", Input).value)
        if problem:
            self.error(_(problem))
            return
        if self.rename:
            self.dismiss({"name": name})
            return
        command = self.query_one("#command", Input).value.strip()
        if not command:
            self.error(_("what should the job run?"))
            return
        self.dismiss({"name": name, "cwd": self.query_one("#cwd", Input).value.strip() or "~",
                      "command": command})


class TmuxScreen(Translated, Screen):
    BINDINGS = [
        Binding("escape,t", "app.pop_screen", N_("Back"), id="tmux.back", tooltip=N_("Back to the dashboard")),
        Binding("n", "new_job", N_("New job"), id="tmux.new", tooltip=N_("Start a command in a new detached tmux session")),
        Binding("enter", "attach", N_("Attach"), id="tmux.attach", priority=True,
                tooltip=N_("Hand the terminal to tmux attach; detach (C-b d) to come back")),
        Binding("c", "interrupt", "Ctrl-C", id="tmux.interrupt", tooltip=N_("Send Ctrl-C to the selected pane")),
        Binding("k", "kill", N_("Kill"), id="tmux.kill", tooltip=N_("Kill the selected session")),
        Binding("R", "rename", N_("Rename"), id="tmux.rename", tooltip=N_("Rename the selected session")),
        Binding("m", "move", N_("Move into tmux"), id="tmux.move",
                tooltip=N_("Move an unprotected job into a new tmux session with reptyr")),
        Binding("i", "install", N_("Install tmux"), id="tmux.install",
                tooltip=N_("Install tmux on the box (when it is missing)")),
        Binding("w", "release_when_done", N_("Release when done"), id="tmux.release_when_done",
                tooltip=N_("Arm autostop to release the box when the selected pane's job ends")),
    ]
    DEFAULT_CSS = """
    TmuxScreen #tmux-left { width: 1fr; }
    TmuxScreen #panes { height: 1fr; border: round $primary-darken-1; }
    TmuxScreen #tmux-notice { height: auto; padding: 0 1; }
    TmuxScreen #pane-job { height: auto; max-height: 5; padding: 0 1; }
    TmuxScreen #preview-box { width: 1fr; border: round $primary-darken-1; }
    """

    def __init__(self, box: BoxContext) -> None:
        super().__init__()
        self.box = box
        self.selected: Optional[str] = None  # pane id
        self.preview_text = ""
        self.jobs_shown = box.jobs_version  # the box's jobs report the table shows
        self.pane_lines: Dict[str, JobLine] = {}  # watched job lines by pane id
        self.widths: Optional[Dict[str, int]] = None  # the table's columns as last laid out

    def compose(self) -> ComposeResult:
        yield Static(id="tmux-notice")
        with Horizontal():
            with Vertical(id="tmux-left"):
                yield DataTable(id="panes", cursor_type="row", zebra_stripes=True)
                yield Static(id="pane-job")
            with VerticalScroll(id="preview-box"):
                yield Static(id="preview")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self):
        table = self.query_one("#panes", DataTable)
        table.border_title = box_text(_("tmux sessions on %s") % self.box.label)
        self.query_one("#preview-box").border_title = _("preview")
        self.refresh_panes()
        self.set_interval(PREVIEW_EVERY, self.refresh_preview)
        self.refresh_preview()

    def on_resize(self, _event):
        self.refresh_pane_job()
        self.call_after_refresh(self.refresh_panes)  # the columns fit the table's new width

    # -- display -----------------------------------------------------------------
    def is_open(self):
        """False once the user left the screen while a request was still in flight."""
        return self in self.app.screen_stack

    def jobs_changed(self) -> None:
        """A new jobs report from the box: redraw the panes once per report."""
        if self.jobs_shown != self.box.jobs_version:
            self.jobs_shown = self.box.jobs_version
            self.refresh_panes()
            self.refresh_bindings()  # m / i are in the footer only when they can act

    def check_action(self, action, parameters):
        jobs = self.box.state.jobs or {}
        if action == "move":
            return bool(self.box.state.unprotected() and jobs.get("reptyr"))
        if action == "install":
            install = (jobs.get("tmux") or {}).get("install") or {}
            return bool(install.get("argv") and install.get("can_run"))
        return True

    def refresh_panes(self):
        if not self.is_open():
            return  # closed while a request was in flight
        st = self.box.state
        table = self.query_one("#panes", DataTable)
        rows = pane_rows(st.tmux_sessions(), st.clock())
        now = self.box.billing.clock()
        figures = self.box.billing.figures()
        by_pane = {ln.job.pane: ln for ln in lines_for(st, figures, now) if ln.job.pane}
        cells = []
        for r in rows:
            line: Optional[JobLine] = by_pane.get(r["pane"])
            # names from the box: text (a `[@click=app.quit]` name is not a link)
            cells.append({"session": box_text(r["session"], limit=40), "window": box_text(r["window"], limit=40),
                          "pane": box_text(r["pane"]),
                          "command": box_text(r["command"], style="bold" if r["running"] else "dim", limit=80),
                          "elapsed": Text(r["elapsed"]), "attached": Text(r["attached"]),
                          "job": pane_job_cell(line, now, figures.currency)})
        widths = self.column_widths(table, cells)
        if widths != self.widths:  # the columns change with the width and the longest cells
            self.widths = widths
            table.clear(columns=True)
            for key, title in COLUMNS:
                if key in widths:
                    table.add_column(_(title), width=widths[key], key=key)
        else:
            table.clear()
        for r, row in zip(rows, cells):
            table.add_row(*(clipped(row[key], widths[key], middle=key == "session")
                            for key, _t in COLUMNS if key in widths),
                          key=r["key"])
        if rows:
            keys = [r["key"] for r in rows]
            if self.selected not in keys:
                self.selected = keys[0]
            table.move_cursor(row=keys.index(self.selected))
        else:
            self.selected = None
        self.pane_lines = by_pane
        self.refresh_pane_job()
        self.refresh_notice()

    def column_widths(self, table: DataTable, cells) -> Dict[str, int]:
        """The columns that fit the table's width now (tui.core.jobs.tmux_rows)."""
        # inside the border, before any scrollbar (`size` is what a scrollbar leaves)
        gutter = table.styles.gutter
        if table.region.width:
            inner, height = table.region.width - gutter.width, table.region.height - gutter.height
        else:  # not laid out yet: the left half, under the notice line
            inner, height = (self.app.size.width or 80) // 2 - 2, (self.app.size.height or 24) - 5
        if len(cells) + 1 > height:  # the header and the rows overflow: a vertical scrollbar
            inner -= table.styles.scrollbar_size_vertical
        natural = [(key, cell_len(_(title)), max([row[key].cell_len for row in cells] or [0]))
                   for key, title in COLUMNS]
        return tmux_column_widths(natural, inner, padding=2 * table.cell_padding)

    def refresh_pane_job(self):
        """The selected pane's watched job under the table: state with its evidence,
        progress, ETA, cost to finish, checkpoint warning (w: release when it ends)."""
        line = self.pane_lines.get(self.selected) if self.selected else None
        widget = self.query_one("#pane-job", Static)
        widget.display = line is not None  # no empty line under the table
        if line is None:
            return
        width = max(30, (self.app.size.width or 80) // 2 - 2)  # the left half, before layout too
        text = render_jobs([line], width, self.box.billing.clock(), self.box.billing.figures().currency,
                           max_lines=4)
        widget.update(text)

    def refresh_notice(self):
        st = self.box.state
        t = Text()
        error = st.tmux_error()
        if error:
            t.append("%s. " % visible(error), style="bold yellow")
            install = ((st.jobs or {}).get("tmux") or {}).get("install") or {}
            if install.get("argv"):
                t.append(_("Install with `%s`") % visible(paste.join(install["argv"])))
                t.append(_(" — press i") if install.get("can_run") else " (%s)" % visible(install.get("why")),
                         style="bold" if install.get("can_run") else "dim")
            t.append("\n")
        elif not st.tmux_sessions():
            t.append(_("No tmux sessions on the box. Press n to start a job that survives disconnects.\n"),
                     style="dim")
        for job in st.unprotected():
            t.append("⚠ " + unprotected_advice(job) + "\n", style="bold red")
        if st.unprotected() and (st.jobs or {}).get("reptyr"):
            t.append(_("reptyr is installed on the box: press m to move pid %d into a new tmux "
                       "session (needs ptrace: root, or kernel.yama.ptrace_scope = 0).\n")
                     % st.unprotected()[0]["pid"])
        t.rstrip()
        self.query_one("#tmux-notice", Static).update(t)

    @on(DataTable.RowHighlighted)
    def row_highlighted(self, event):
        if event.row_key is not None and event.row_key.value != self.selected:
            self.selected = event.row_key.value
            self.refresh_pane_job()
            self.refresh_preview()

    @on(DataTable.RowSelected)
    def row_selected(self, event):
        # enter on the table (which has focus) means attach, like the footer says
        self.selected = event.row_key.value
        self.action_attach()

    @background("Preview", group="tmux-preview")
    async def refresh_preview(self):
        if not self.is_open():
            return
        if self.selected is None:
            self.query_one("#preview", Static).update(Text(_("(no pane)"), style="dim"))
            return
        try:
            reply = await self.box_session().request(wire.TMUX_CAPTURE, pane=self.selected, lines=300)
        except REQUEST_ERRORS as exc:  # shown in the preview: it is the preview's content
            self.query_one("#preview", Static).update(box_text(_("preview unavailable: %s") % exc, style="dim"))
            return
        self.preview_text = reply.get("text", "")
        if not self.is_open():
            return
        box = self.query_one("#preview-box", VerticalScroll)
        at_bottom = box.scroll_y >= box.max_scroll_y - 1
        self.query_one("#preview", Static).update(ansi_text(self.preview_text.rstrip("\n")))
        self.query_one("#preview-box").border_title = box_text(_("preview of %s") % self.selected)
        if at_bottom:
            box.call_after_refresh(box.scroll_end, animate=False)

    # -- actions -----------------------------------------------------------------
    def box_session(self) -> RemoteSession:
        # only a connected box's tmux panel opens (the fleet opens no screen of a released box)
        assert self.box.session is not None
        return self.box.session

    def _session_of(self, pane):
        for s in self.box.state.tmux_sessions():
            for w in s["windows"]:
                if any(p["id"] == pane for p in w["panes"]):
                    return s
        return None

    async def _request(self, kind, done=None, **params):
        reply = await self.box_session().request(kind, **params)
        if done:
            self.app.notify(done, timeout=5)
        await self.reload()
        return reply

    async def reload(self):
        try:
            reply = await self.box_session().request(wire.TMUX_LIST)
        except REQUEST_ERRORS:  # the next sample brings the list anyway
            return
        jobs = dict(self.box.state.jobs or {})
        jobs["tmux"] = reply["tmux"]
        self.box.state.set_jobs(jobs)
        self.refresh_panes()

    @background('New job', group="tmux-action")
    async def action_new_job(self):
        answer = await self.app.push_screen_wait(JobScreen())
        if answer:
            reply = await self._request(wire.TMUX_NEW, done=_("Started %s") % answer["name"],
                                        dlhook=True, **answer)
            if reply:
                self.selected = reply.get("pane")
                self.refresh_panes()

    @background('Attach', group="tmux-action")
    async def action_attach(self):
        s = self._session_of(self.selected)
        if s is None:
            return
        argv = self.box.attach_argv(s["id"])
        code = await hand_off(self.app, argv)
        failed = handoff_failure(argv, code, "")
        if failed:
            self.app.notify(failed, severity="warning", markup=False, timeout=20)
        await self.reload()

    @background('Ctrl-C', group="tmux-action")
    async def action_interrupt(self):
        s = self._session_of(self.selected)
        if s and await self.app.push_screen_wait(ConfirmScreen(
                _("Send Ctrl-C to pane %s of session '%s'?") % (self.selected, s["name"]))):
            await self._request(wire.TMUX_INTERRUPT, done=_("Ctrl-C sent"), pane=self.selected)

    @background('Kill session', group="tmux-action")
    async def action_kill(self):
        s = self._session_of(self.selected)
        if s and await self.app.push_screen_wait(ConfirmScreen(
                _("Kill tmux session '%s' and everything running in it?") % s["name"])):
            await self._request(wire.TMUX_KILL, done=_("Killed %s") % s["name"], session=s["id"])

    @background('Rename', group="tmux-action")
    async def action_rename(self):
        s = self._session_of(self.selected)
        if s is None:
            return
        answer = await self.app.push_screen_wait(JobScreen(N_("Rename session"), name=s["name"], rename=True))
        if answer:
            await self._request(wire.TMUX_RENAME, done=_("Renamed to %s") % answer["name"],
                                session=s["id"], name=answer["name"])

    @background('Move into tmux', group="tmux-action")
    async def action_move(self):
        jobs = self.box.state.unprotected()
        if not jobs or not (self.box.state.jobs or {}).get("reptyr"):
            self.app.notify(_("Nothing to move (no unprotected job, or reptyr is not on the box)"))
            return
        pid = jobs[0]["pid"]
        if await self.app.push_screen_wait(ConfirmScreen(
                _("Move pid %d (`%s`) into a new tmux session with reptyr? reptyr attaches with "
                  "ptrace; the job keeps running, now safe from disconnects.") % (pid, jobs[0]["cmd"][:50]))):
            await self._request(wire.TMUX_NEW, done=_("Moving pid %d into tmux") % pid,
                                name="moved-%d" % pid, command="reptyr %d" % pid)

    @background('Release when done', group="tmux-action")
    async def action_release_when_done(self):
        from tui.ui.job_flows import release_when_done
        await release_when_done(self.app, self.box, self.box.state.watch_for_pane(self.selected))

    @background('Install tmux', group="tmux-action")
    async def action_install(self):
        install = ((self.box.state.jobs or {}).get("tmux") or {}).get("install") or {}
        if not install.get("argv") or not install.get("can_run"):
            return
        if await self.app.push_screen_wait(ConfirmScreen(
                _("Run `%s` on the box?") % paste.join(install["argv"]))):
            self.app.notify(_("Installing tmux…"), timeout=5)
            await self._request(wire.TMUX_INSTALL, done=_("tmux installed"))
