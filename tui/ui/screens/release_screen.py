"""The Release screen of one box: the shutdown checklist, its fixes, and the release itself."""

import json
import os
from typing import Optional

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import (
    DataTable,
    Input,
    Label,
    LoadingIndicator,
    ProgressBar,
    Static,
)

from tui.core import providers
from tui.core.text import format as fmt
from tui.core.checks.checklist import outside_tmux, release_blockers, release_headline, verdict
from tui.core.i18n import N_, _, ngettext
from tui.core.layout import cell_len, clip
from tui.core.state import short_cmd
from tui.core.checks.release_actions import Release, needs_choice, release_choices
from tui.ui.background import background
from tui.ui.box_context import BoxContext
from tui.ui.widgets.footer import Footer
from tui.ui.boxtext_rich import box_text, join
from tui.ui.flows import choose_release_action
from tui.ui.screens.modals import ConfirmScreen, FormScreen
from tui.ui.screens.release_choice import ActionChoiceScreen
from tui.ui.screens.tmux_screen import TmuxScreen
from tui.ui.translate import Translated
from tui.ui.help_key import help_binding

MARK = {"pass": ("✓", "green"), "warn": ("!", "yellow"), "fail": ("✗", "bold red")}


class TypeToConfirm(FormScreen):
    """Release: shows the command and wants the host name typed."""

    OK_ID = "go"
    CANCELLED = False
    BINDINGS = [Binding("escape", "cancel", N_("Cancel"), id="release.cancel")]
    DEFAULT_CSS = """
    TypeToConfirm { align: center middle; }
    TypeToConfirm > Vertical { width: 84; max-width: 100%; height: auto; border: thick $error; background: $surface; padding: 1 2; }
    """

    def __init__(self, host, command, problems, action=None, warning=None):
        super().__init__()
        self.host, self.command, self.problems = host, command, problems
        self.action, self.warning = action, warning  # the provider action it performs (issue 22)

    def question(self, mismatch: bool = False) -> Text:
        """What will run and what to type; a wrong name adds a line and keeps the command."""
        text = join(_("This runs on the box:\n\n"), box_text("  %s" % self.command, style="bold"), "\n\n")
        text.append_text(self.action_text())
        if self.problems:
            text.append_text(box_text(_("Waived or open items: %s") % ", ".join(self.problems),
                                      style="yellow"))
            text.append("\n\n")
        if mismatch:
            text.append_text(box_text(_("The name does not match %r.") % self.host, style="bold red"))
            text.append("\n")
        text.append_text(box_text(_("Type the host name (%s) to confirm:") % self.host))
        return text

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(box_text(_("Release %s") % self.host, style="bold red"))
            yield Static(self.question(), id="what")
            yield Input(id="confirm-name")
            yield from self.form_buttons(_("Release"), ok_variant="error")

    def action_text(self) -> Text:
        """The provider action this release performs and its warning, above the name prompt."""
        t = Text()
        if self.action:
            t.append_text(box_text(_("Action: %s") % self.action, style="bold"))
            t.append("\n\n")
        if self.warning:
            t.append_text(box_text("⚠ " + self.warning, style="bold red"))
            t.append("\n\n")
        return t

    def submit(self) -> None:
        if self.query_one("#confirm-name", Input).value.strip() == self.host:
            self.dismiss(True)
        else:
            self.query_one("#what", Static).update(self.question(mismatch=True))


def in_config(app) -> str:
    """" (PATH)" of the config file a refusal asks to edit, when there is one."""
    path = getattr(getattr(app, "config", None), "path", None)
    return " (%s)" % path if path else ""


class ReleaseScreen(Translated, Screen):
    # The footer's order is what 80 columns keep: back, the screen's purpose (R), the fixes a
    # failing check names (r g k w t), then ? (the way to every other key); Release and Help
    # fell off the end at 80 columns before
    BINDINGS = [
        Binding("escape", "app.pop_screen", N_("Back"), id="rel.back"),
        Binding("R", "release", N_("Release"), id="rel.release", tooltip=N_("Run the provider's release command")),
        Binding("r", "recheck", N_("Re-check"), id="rel.recheck", tooltip=N_("Look at the box again")),
        Binding("g", "download", N_("Download"), id="rel.download", tooltip=N_("Download missing artifacts (resumable, sha256-verified)")),
        Binding("k", "kill", N_("Kill"), id="rel.kill",
                tooltip=N_("Kill the GPU process, or else a job running outside tmux (confirm)")),
        Binding("w", "waive", N_("Waive"), id="rel.waive", tooltip=N_("Accept the selected failing item knowingly (recorded)")),
        Binding("t", "tmux", "tmux", id="rel.tmux", tooltip=N_("tmux panel: stop jobs, commit code")),
        help_binding("rel.help"),
        Binding("v", "verify", N_("Verify"), id="rel.verify", tooltip=N_("Compare sha256 of every downloaded artifact with the box")),
        Binding("e", "capture_env", N_("Env"), id="rel.env", tooltip=N_("Save pip freeze / conda env of the training environment")),
        Binding("x", "delete_temp", N_("Clean"), id="rel.delete", tooltip=N_("Delete the listed caches and leftovers (confirm)")),
        Binding("c", "choose_action", N_("Action"), id="rel.action",
                tooltip=N_("Choose the provider's release action (stop, terminate, …): what it keeps and bills")),
        Binding("m", "manual", N_("By hand"), id="rel.manual",
                tooltip=N_("I'll release it in the provider console: close the billing session")),
    ]
    DEFAULT_CSS = """
    ReleaseScreen #items { height: 1fr; border: round $primary-darken-1; }
    ReleaseScreen #details { height: 30%; min-height: 5; border: round $primary-darken-1; }
    ReleaseScreen #rel-head { height: auto; padding: 0 1; }
    ReleaseScreen #rel-action { height: auto; max-height: 9; padding: 0 1; }
    ReleaseScreen #progress { height: auto; display: none; padding: 0 1; }
    ReleaseScreen #progress.shown { display: block; }
    ReleaseScreen LoadingIndicator { height: 2; }
    """

    def __init__(self, box: BoxContext) -> None:
        super().__init__()
        self.box = box
        self.release: Optional[Release] = None
        self.items = []
        self.selected = None
        self.action_chosen_here = False  # the user picked the provider action on this screen
        self.released = False  # the headline stops offering R once it is done

    def compose(self) -> ComposeResult:
        yield Static(id="rel-head")
        yield Static(id="rel-action")
        yield LoadingIndicator(id="rel-busy")
        with Vertical(id="progress"):
            yield Label("", id="file-label")
            yield ProgressBar(id="file-progress", show_eta=True)
            yield Label(_("total"), id="total-label")
            yield ProgressBar(id="total-progress", show_eta=True)
        yield DataTable(id="items", cursor_type="row")
        with VerticalScroll(id="details"):
            yield Static(id="details-text")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self):
        table = self.query_one("#items", DataTable)
        table.add_columns("", _("CHECK"), _("RESULT"), _("FIX"))
        box = self.box
        table.border_title = box_text(_("Before releasing %s") % box.label)
        self.release = Release(box.host, box.session, box.cfg, box.billing.preset,
                               box.billing.session_key(box.state.inventory))
        self.show_action()
        self.action_recheck()
        self.set_interval(2.0, self.refresh_items)  # jobs and VRAM follow the live samples

    # -- display -----------------------------------------------------------------
    def refresh_items(self):
        if self.release is None or self.release.facts is None or self not in self.app.screen_stack:
            return
        st = self.box.state
        procs = [{"pid": r.pid, "gpu": r.gpu, "gpu_mem": r.gpu_mem, "kind": r.kind, "cmd": r.cmd}
                 for r in st.proc_rows()]
        self.items = self.release.items(st.gpus, procs, st.tmux_sessions(),
                                        self.box.autostop, self.box.billing.figures(),
                                        st.job_model.watch)
        table = self.query_one("#items", DataTable)
        row = table.cursor_row
        table.clear()
        # RESULT and FIX share what CHECK leaves; the details pane below has the full text.
        name_w = max([cell_len(i.name) for i in self.items] or [10])
        rest = max(20, (table.size.width or 120) - name_w - 12)
        result_w, fix_w = rest - rest * 9 // 20, rest * 9 // 20
        for i in self.items:
            mark, style = MARK[i.verdict]
            if i.waived:
                mark, style = "~", "dim"
            table.add_row(Text(mark, style=style), box_text(i.name),
                          box_text(i.reason + (_(" (waived)") if i.waived else ""),
                                   style=style if i.verdict != "pass" else "", limit=result_w),
                          box_text(i.fix or "", style="dim", limit=fix_w), key=i.key)
        if row is not None and row < table.row_count:
            table.move_cursor(row=row)
        head, v = release_headline(self.items, released=self.released)
        self.query_one("#rel-head", Static).update(Text(head, style=MARK[v][1]))
        self.show_details()

    def show_details(self):
        table = self.query_one("#items", DataTable)
        if not self.items or table.cursor_row is None or table.cursor_row >= len(self.items):
            return
        item = self.items[table.cursor_row]
        self.selected = item
        t = box_text(item.name + ": ", style="bold")
        t.append_text(box_text(item.reason))
        t.append("\n")
        if item.fix:
            t.append(_("fix: "), style="bold")
            t.append_text(box_text(item.fix, style="cyan"))
            t.append("\n")
        for d in item.details:  # paths, argv, tmux names from the box
            t.append_text(box_text("  " + d))
            t.append("\n")
        self.query_one("#details-text", Static).update(t)

    @on(DataTable.RowHighlighted)
    def highlighted(self, _e):
        self.show_details()

    def busy(self, on, text=None):
        self.query_one("#rel-busy").display = on
        if text:
            self.query_one("#rel-head", Static).update(box_text(text))

    # -- actions -----------------------------------------------------------------
    def action_tmux(self) -> None:
        self.app.push_screen(TmuxScreen(self.box))

    @background('Checklist', group="release")
    async def action_recheck(self):
        self.busy(True, _("Looking at the box: artifacts, repos, temp files…"))
        try:
            await self.release.gather()
        finally:
            self.busy(False)
        self.refresh_items()

    @background('Download (g resumes; partial files are kept)', group="release")
    async def action_download(self):
        todo = self.release.to_download()
        if not todo:
            self.app.notify(_("Nothing to download"))
            return
        box = self.query_one("#progress")
        box.add_class("shown")
        file_bar = self.query_one("#file-progress", ProgressBar)
        total_bar = self.query_one("#total-progress", ProgressBar)

        def progress(i, n, path, done, size, total_done, total):
            self.query_one("#file-label", Label).update(
                box_text(_("file %d of %d: %s") % (i + 1, n, path), limit=200))
            file_bar.update(total=max(1, size), progress=done)
            total_bar.update(total=max(1, total), progress=total_done)
        try:
            results = await self.release.download_missing(progress)
        finally:
            box.remove_class("shown")
        problem = self.release.space_problem() if results else None
        if problem:
            self.app.notify(problem, severity="warning", timeout=20)
        bad = [r for r in results if r.status not in ("downloaded", "resumed", "up to date")]
        for r in bad:  # each failure says how to resume or remove its .part (transfer.Result)
            self.app.notify("%s: %s — %s" % (r.remote, _(r.status), r.detail), severity="warning",
                            timeout=20)
        done = len(results) - len(bad)
        self.app.notify(ngettext("Downloaded %d file to %s", "Downloaded %d files to %s", done)
                        % (done, self.release.base), timeout=10)
        await self.release.gather()
        self.refresh_items()

    @background('Verify', group="release")
    async def action_verify(self):
        self.busy(True, _("Comparing sha256 of every downloaded artifact with the box…"))
        try:
            bad = await self.release.verify()
        finally:
            self.busy(False)
        self.app.notify(ngettext("%d corrupt local copy", "%d corrupt local copies", len(bad)) % len(bad) if bad
                        else _("Every downloaded artifact matches the box"), severity="warning" if bad else "information")
        self.refresh_items()

    @background('Capture env', group="release")
    async def action_capture_env(self):
        saved = await self.release.capture_env(job_pids=[r.pid for r in self.box.state.proc_rows() if r.local])
        self.app.notify(_("Saved %s in %s") % (", ".join(saved), os.path.join(self.release.base, "env"))
                        + " — " + self.release.env_frozen, markup=False)
        self.refresh_items()

    @background('Kill', group="release")
    async def action_kill(self):
        rows = [r for r in self.box.state.proc_rows() if r.local]
        # no GPU process left: the checklist's next blocker is a job outside tmux (nohup)
        jobs, kernels = outside_tmux(self.box.state.job_model.watch)
        if not rows and not (jobs or kernels):
            self.app.notify(_("No GPU process or job outside tmux to kill"))
            return
        if self.release.kill_refused():
            self.app.notify(self.release.kill_refused() + in_config(self.app),
                            severity="warning", timeout=15, markup=False)
            return
        if rows:
            pid = rows[0].pid
            question = _("Kill pid %d `%s` (GPU %s, %s of VRAM)?") % (
                pid, clip(rows[0].cmd, 50), rows[0].gpu, fmt.mib(rows[0].gpu_mem))
        else:
            job = (jobs or kernels)[0]
            pid = job.pid
            question = _("Kill pid %d `%s` (running outside tmux)?") % (pid, clip(short_cmd(job.name), 50))
        if not await self.app.push_screen_wait(ConfirmScreen(question)):
            return
        result = await self.release.kill(pid)
        self.app.notify("pid %d %s" % (pid, result))

    @background('Delete temp files', group="release")
    async def action_delete_temp(self):
        paths = self.release.temp_paths()
        if not paths:
            self.app.notify(_("No temp files listed"))
            return
        if self.release.delete_refused():
            self.app.notify(self.release.delete_refused() + in_config(self.app),
                            severity="warning", timeout=15, markup=False)
            return
        if not await self.app.push_screen_wait(ConfirmScreen(_("Delete on the box:\n  ") + "\n  ".join(paths))):
            return
        deleted = await self.release.delete_temp(paths)
        self.app.notify(ngettext("Deleted %d path", "Deleted %d paths", len(deleted)) % len(deleted))
        await self.release.gather()
        self.refresh_items()

    def action_waive(self):
        item = self.selected
        if item is None or item.verdict == "pass":
            return
        if item.key in self.release.waived:
            self.release.waived.discard(item.key)
        else:
            self.release.waived.add(item.key)
        self.refresh_items()

    def _summary(self):
        return {"items": self.release.summary(self.items), "verdict": verdict(self.items),
                "downloads": self.release.base}

    # -- the provider's release action (issue 22) ---------------------------------------
    def provider_facts(self):
        return ((self.box.state.inventory or {}).get("host") or {}).get("provider") or {}

    def show_action(self):
        """Before anything runs: which action R performs, what it keeps, wipes and bills, its warning."""
        preset = self.release.preset if self.release else None
        if preset is None or preset.chosen is None:
            self.query_one("#rel-action", Static).update("")
            return
        lines = providers.action_lines(preset)
        t = box_text(lines[0] + (_("  (c: choose)") if preset.has_choice else ""), style="bold")
        for line in lines[1:]:
            t.append("\n")
            t.append_text(box_text("  " + line, style="dim"))
        warning = providers.release_warning(preset, self.provider_facts())
        if warning:
            t.append("\n")
            t.append_text(box_text("⚠ " + warning, style="bold red"))
        self.query_one("#rel-action", Static).update(t)

    async def choose_action(self) -> bool:
        """Ask which of the provider's actions to take; the checklist, billing and autostop follow."""
        preset = self.release.preset
        key = await self.app.push_screen_wait(ActionChoiceScreen(
            preset.name, release_choices(preset, self.provider_facts())))
        if key is None:
            return False
        choose_release_action(self.box, key)
        self.release.preset = self.box.billing.preset
        self.action_chosen_here = True
        self.show_action()
        self.refresh_items()
        return True

    @background('Release action', group="release")
    async def action_choose_action(self):
        if self.release is None or self.release.preset is None or not self.release.preset.actions:
            self.app.notify(_("No provider actions known for this box: set provider in the config"))
            return
        await self.choose_action()

    @background('Release', group="release")
    async def action_release(self):
        if needs_choice(self.release.preset, self.box.cfg, self.action_chosen_here) and \
                not await self.choose_action():
            return
        command = self.release.preset.release_command if self.release.preset else None
        if not command:
            self.app.notify(_("No release command for this provider: set release_command in the config, "
                              "or press m after releasing in the provider console"), severity="warning", timeout=15)
            return
        blockers = release_blockers(self.items)
        if blockers:
            self.app.notify(_("Not released: %s still failing. Fix or waive (w) each first.")
                            % ", ".join(blockers), severity="error", timeout=15, markup=False)
            return
        open_items = [i.name for i in self.items if i.verdict != "pass"]
        preset = self.release.preset
        chosen = preset.chosen if preset.chosen is not None and command == preset.chosen.command else None
        if not await self.app.push_screen_wait(TypeToConfirm(
                self.box.host, command, open_items,
                action="%s %s" % (preset.name, _(chosen.label)) if chosen else None,
                warning=providers.release_warning(preset, self.provider_facts()))):
            return
        confirmed = self._summary()  # the checklist the user released on, not one read after
        result = await self.release.release()
        self.box.billing.persist(force=True, ended_how="released (exit %s)" % result.get("exit"),
                                 checklist=json.dumps(confirmed))
        self.released = result.get("exit") == 0
        self.refresh_items()
        self.app.notify(_("Release command exited with %s: %s") % (result.get("exit"), (result.get("output") or "").strip()[-200:]),
                        severity="information" if result.get("exit") == 0 else "error", timeout=30)

    @background('Close billing session', group="release")
    async def action_manual(self):
        if await self.app.push_screen_wait(ConfirmScreen(
                _("Close the billing session of %s? (You release it in the provider console.)") % self.box.host)):
            self.box.billing.persist(force=True, ended_how="released in the provider console",
                                     checklist=json.dumps(self._summary()))
            self.released = True
            self.refresh_items()
            self.app.notify(_("Billing session closed"))
