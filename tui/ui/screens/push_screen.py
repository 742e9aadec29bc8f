"""The push screen of one box (`u` on the dashboard): pick local files or a folder, see what
sending them means (size, time at the measured rate, the GPUs' bill meanwhile, a disk the
release wipes, a disk too small), send them, and watch per-file and overall progress.

The moving is `tui.remote.transfer.push` (SFTP or the probe channel, whichever the box allows), the
plan and its words `tui.core.transfer.upload_plan`; this screen only displays them."""

import os
import time
from typing import Any, List, Optional

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DirectoryTree, Input, Static

from tui.core.i18n import N_, _, ngettext
from tui.core.transfer.upload_plan import LocalEntry, Plan, plan_for, plan_lines, progress_text, scan_local
from tui.ui.background import background
from tui.ui.box_context import BoxContext
from tui.ui.widgets.footer import Footer
from tui.ui.boxtext_rich import box_text
from tui.ui.translate import Translated

STYLE = {"info": "", "estimate": "", "warn": "yellow", "stop": "bold red"}
REDRAW_SECONDS = 0.25  # progress lines are redrawn at most this often


class PushScreen(Translated, Screen):
    BINDINGS = [
        Binding("escape", "back", N_("Back"), id="push.back",
                tooltip=N_("Stop the sending (it continues later from where it stopped), else back")),
        Binding("ctrl+g", "send", N_("Send"), id="push.send",
                tooltip=N_("Send the chosen file or folder to the destination on the box")),
    ]
    DEFAULT_CSS = """
    PushScreen #push-body { height: 1fr; }
    PushScreen DirectoryTree { width: 1fr; border: round $primary-darken-1; }
    PushScreen #push-side { width: 1fr; padding: 0 1; }
    PushScreen #push-plan, PushScreen #push-progress { height: auto; }
    """

    def __init__(self, box: BoxContext, start_dir: Optional[str] = None) -> None:
        super().__init__()
        self.box = box
        self.start_dir = start_dir or os.getcwd()
        self.chosen: Optional[str] = None
        self.entries: List[LocalEntry] = []
        self.plan: Optional[Plan] = None
        self.sending = False
        self.stopped = False  # escape stopped the send: late progress callbacks draw nothing
        self.done_text = ""

    def compose(self) -> ComposeResult:
        yield Static(id="push-head")
        with Horizontal(id="push-body"):
            yield DirectoryTree(self.start_dir, id="push-tree")
            with Vertical(id="push-side"):
                yield Static(_("Destination on the box:"))
                yield Input(value="~/", id="push-dest")
                yield Static(id="push-plan")
                yield Static(id="push-progress")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.query_one("#push-tree", DirectoryTree).border_title = box_text(_("Local files"))
        self.query_one("#push-head", Static).update(box_text(
            _("Push to %s: pick a file or folder, then ctrl+g") % self.box.label, style="bold"))
        self.show_plan()

    # -- choosing -----------------------------------------------------------------
    @on(DirectoryTree.FileSelected)
    @on(DirectoryTree.DirectorySelected)
    def picked(self, event: Any) -> None:
        if self.sending:
            return
        self.chosen = str(event.path)
        self.entries = scan_local([self.chosen])
        self.plan = self.local_plan()
        self.show_plan()

    def local_plan(self, free: Optional[int] = None, dest: str = "") -> Plan:
        price = self.box.billing.price()
        return plan_for(self.entries, dest or self.dest(), free, self.box.billing.preset, price.rate,
                        price.currency)

    def dest(self) -> str:
        return self.query_one("#push-dest", Input).value.strip() or "~/"

    def show_plan(self, bps: Optional[float] = None) -> None:
        t = Text()
        if self.chosen is None:
            t.append(_("Nothing chosen yet: select a file or folder on the left (enter)."), style="dim")
        else:
            lines = [(self.chosen, "bold")]
            lines += [(line, STYLE.get(level, "")) for level, line in
                      (plan_lines(self.plan, bps) if self.plan else ())]
            lines += [(_("  not sent: %s (%s)") % (rel, why), "yellow")
                      for rel, why in (self.plan.unusual if self.plan else ())[:10]]
            for line, style in lines:  # local names too may hold control characters: shown visibly
                t.append(box_text(line, style=style))
                t.append("\n")
        self.query_one("#push-plan", Static).update(t)

    def action_back(self) -> None:
        """While sending: stop it (the parts stay on the box) and say how to go on; else back."""
        if not self.sending:
            self.app.pop_screen()
            return
        self.workers.cancel_group(self, "push")
        self.stopped = True
        self.done_text = _("Stopped. What the box received is kept beside each file (NAME.gputui-part): "
                           "press ctrl+g to continue from there, escape to leave.")
        self.query_one("#push-progress", Static).update(box_text(self.done_text, style="yellow"))
        self.notify(self.done_text, severity="warning", markup=False)

    # -- sending ------------------------------------------------------------------
    def action_send(self) -> None:
        if self.sending:
            return
        if not self.entries:
            self.notify(_("Choose a file or folder first"), severity="warning")
            return
        self.sending, self.stopped = True, False
        self.send()

    @background(N_("push"))
    async def send(self) -> None:
        from tui.remote.transfer import push as pusher
        from tui.remote.transfer.push_probe import box_files
        session = self.box.session
        try:
            if session is None:
                raise RuntimeError(_("not connected to the box"))
            async with session.file_client() as client:
                box = box_files(session, client)
                dest = await box.resolve(self.dest())
                self.plan = self.local_plan(await box.free(dest), dest)
                self.show_plan()
                if not self.plan.fits:
                    return
                meter = Meter(self, self.plan.total)
                results = await pusher.push(box, pusher.probe_sha(session), self.entries, dest, meter.add)
            if self.stopped:  # escape came as the last bytes landed: "Stopped." stays the word
                return
            meter.draw(force=True)
            failed = [r for r in results if r.status == "failed"]
            done = [r for r in results if r.status in ("sent", "resumed")]
            same = [r for r in results if r.status == "up to date"]
            self.done_text = ngettext("Done: %(sent)d file sent, %(same)d up to date, %(failed)d failed "
                                      "(through %(via)s)",
                                      "Done: %(sent)d files sent, %(same)d up to date, %(failed)d failed "
                                      "(through %(via)s)", len(done)) % {"sent": len(done), "same": len(same),
                                                       "failed": len(failed), "via": _(box.via)}
            self.query_one("#push-progress", Static).update(box_text(
                meter.text() + "\n" + self.done_text, style="bold red" if failed else "green",
                keep_newlines=True))
            self.notify(self.done_text, severity="error" if failed else "information", markup=False)
        finally:
            self.sending = False


class Meter:
    """Per-file and overall bytes, drawn onto the screen's progress lines a few times a second."""

    def __init__(self, screen: PushScreen, total: int) -> None:
        self.screen, self.total = screen, total
        self.done, self.t0, self.drawn = 0, time.monotonic(), 0.0
        self.rel, self.file_done, self.file_t0 = "", 0, self.t0
        self.sizes = {e.rel: e.size for e in screen.entries if e.kind == "file"}

    def add(self, rel: str, n: int) -> None:
        now = time.monotonic()
        if rel != self.rel:
            self.rel, self.file_done, self.file_t0 = rel, 0, now
        self.done += n
        self.file_done += n
        self.draw()

    def text(self) -> str:
        now = time.monotonic()
        size = self.sizes.get(self.rel, self.file_done)
        return "%s\n  %s\n%s\n  %s" % (
            _("this file: %s") % self.rel, progress_text(self.file_done, size, now - self.file_t0),
            _("overall:"), progress_text(self.done, self.total, now - self.t0))

    def draw(self, force: bool = False) -> None:
        if self.screen.stopped:  # a chunk acknowledged after escape must not hide "Stopped."
            return
        now = time.monotonic()
        if not force and now - self.drawn < REDRAW_SECONDS:
            return
        self.drawn = now
        elapsed = now - self.t0
        if elapsed > 2 and self.done:
            self.screen.show_plan(self.done / elapsed)  # the estimate at the measured rate
        self.screen.query_one("#push-progress", Static).update(box_text(self.text(), keep_newlines=True))
