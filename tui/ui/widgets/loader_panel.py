"""Dataloader stats per training process, with the starvation diagnosis."""

from typing import Sequence

from rich.text import Text

from tui.core.text import format as fmt
from tui.core.text.boxtext import visible
from tui.core.checks.diagnosis import fit_diagnosis
from tui.core.i18n import _
from tui.core.model import LoaderView, Worker
from tui.ui.widgets.live import LinePanel, update_text

VERDICT_STYLE = {"starved": "bold red", "waiting": "yellow", "ok": "green", "unknown": "dim"}


def render_compact(views: Sequence[LoaderView], orphans: Sequence[Worker], width: int) -> Text:
    """Two lines per training process (small terminals): the figures, then the verdict."""
    t = Text()
    for v in views:
        st = v.stats
        wf = st.wait_fraction if st else None
        head = Text()
        head.append("pid %s " % visible(v.pid), style="bold")
        if v.gpu is not None:
            head.append("GPU %s " % visible(v.gpu), style="dim")
        head.append(_("%s batch/s ") % fmt.na(st.batches_per_s if st else None, "%.1f"))
        head.append(_("waiting %s ") % fmt.pct(None if wf is None else wf * 100),
                    style=fmt.level_style(None if wf is None else wf * 100, 10, 20))
        room = width - head.cell_len
        if v.cmd and room > 8:
            head.append(visible(v.cmd, limit=room), style="cyan")
        t.append_text(head)
        d = v.diagnosis
        t.append("\n  → " + fit_diagnosis(visible(d.line), max(0, width - 4)) + "\n",
                 style=VERDICT_STYLE.get(d.verdict, ""))
    for o in orphans:
        t.append(visible(_("orphaned DataLoader worker pid %s (trainer gone) holds %s%% CPU") % (
            o.pid, fmt.na(o.cpu, "%.0f")), limit=width) + "\n", style="bold yellow")
    t.rstrip()
    return t


def render_loaders(views: Sequence[LoaderView], orphans: Sequence[Worker] = (), width: int = 80) -> Text:
    t = Text()
    for v in views:
        st = v.stats
        t.append("pid %s " % visible(v.pid), style="bold")
        if v.cmd:
            t.append(visible(v.cmd, limit=40) + " ", style="cyan")
        if v.gpu is not None:
            t.append("GPU %s " % visible(v.gpu), style="dim")
        if st is not None:
            t.append(_(" %s batch/s  %s samples/s  ") % (fmt.na(st.batches_per_s, "%.1f"),
                                                      fmt.na(st.samples_per_s, "%.0f")))
            wf = st.wait_fraction
            t.append(_("waiting %s") % fmt.pct(None if wf is None else wf * 100),
                     style=fmt.level_style(None if wf is None else wf * 100, 10, 20))
            t.append("  p50 %s p95 %s max %s ms" % (fmt.na(st.wait_p50_ms, "%.0f"),
                                                    fmt.na(st.wait_p95_ms, "%.0f"),
                                                    fmt.na(st.wait_max_ms, "%.0f")), style="dim")
            t.append(visible("\n  num_workers=%s pin_memory=%s prefetch_factor=%s persistent_workers=%s" % (
                st.num_workers, st.pin_memory, st.prefetch_factor,
                st.persistent_workers), keep_newlines=True), style="dim")
        t.append("\n")
        if v.workers:
            t.append(_("  workers: ") + "  ".join(
                "%s %s%% %s" % (visible(w.pid), fmt.na(w.cpu, "%.0f"), visible(w.state or "?"))
                for w in v.workers[:12]) + "\n", style="dim")
        if v.wait_history:
            half = max(10, (width - 16) // 2)
            t.append(_("  wait "), style="dim")
            t.append(fmt.graph([x * 100 for x in v.wait_history], half, 1)[0], style="red")
            if v.gpu_history:
                t.append("  gpu ", style="dim")
                t.append(fmt.graph(v.gpu_history, half, 1)[0], style="green")
            t.append("\n")
        d = v.diagnosis
        t.append("  → " + visible(d.line) + "\n", style=VERDICT_STYLE.get(d.verdict, ""))
    for o in orphans:
        t.append(_("orphaned DataLoader worker pid %s (trainer gone) holds %s%% CPU, %s\n") % (
            visible(o.pid), fmt.na(o.cpu, "%.0f"), fmt.mib(o.rss)), style="bold yellow")
    t.rstrip()
    return t


class LoaderPanel(LinePanel):
    MAX_HEIGHT = 14  # the dashboard plans the GPU panel with it
    DEFAULT_CSS = """
    LoaderPanel { border: round $primary-darken-1; padding: 0 1; height: auto; max-height: %d; display: none; }
    LoaderPanel.shown { display: block; }
    """ % MAX_HEIGHT

    def show(self, views: Sequence[LoaderView], orphans: Sequence[Worker], compact: bool = False) -> None:
        self.set_class(bool(views or orphans), "shown")
        if views or orphans:
            width = max(40, self.size.width - 4)
            update_text(self, render_compact(views, orphans, width) if compact
                        else render_loaders(views, orphans, width))
