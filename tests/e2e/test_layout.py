"""The dashboard fits every terminal from 80×24 to 300×80 with 1 to 16 GPUs (issue 11)."""

import pytest

from tui.core.layout import clip, cmd_width, fit, gpu_plan, proc_columns
from tui.core.state import PROC_COLUMNS
from tui.remote.demo_box import DemoBox
from tui.ui.demo import demo_app, local_dirs_inside
from tui.ui.widgets.gpu_panel import GpuPanel
from tui.ui.widgets.process_table import ProcessTable

from tests.e2e.test_app import wait_for


def regions(app):
    """Each part of the screen's height and text: what a layout failure needs to be read."""
    return "\n".join("%s: %d rows (outer %d) %r" % (w.id, w.region.height, w.outer_size.height,
                                                     str(w.render())[:300])
                     for w in app.screen.query("*") if w.id or w.__class__.__name__ == "Footer")


async def planned_with_laid_out_rows(app, pilot):
    """The GPU panel was planned with the rows the other parts really take (once laid out: a
    refresh just before this check is a frame ahead of the layout)."""
    def laid_out():
        # the region, not outer_size: a hidden widget keeps the size of its last layout (a notice
        # shown once under CI load, then hidden, still had outer_size 1 and failed this check)
        return sum(app.screen.query_one(w).region.height
                   for w in ("#status", "#notice", "#summary", "#loaders", "Footer"))
    try:
        await wait_for(pilot, lambda: app.screen.other_rows() == laid_out(), timeout=10)
    except AssertionError:
        raise AssertionError("planned %d rows, laid out %d\n%s"
                             % (app.screen.other_rows(), laid_out(), regions(app))) from None


@pytest.mark.parametrize("n,size,lines", [
    (1, (80, 24), 5), (2, (80, 24), 3), (8, (80, 24), 1), (16, (80, 24), 0),
    (2, (160, 50), 5), (8, (160, 50), 2), (16, (160, 50), 1), (8, (300, 80), 3), (16, (300, 80), 2),
])
def test_gpu_rows_per_gpu_by_terminal_size(n, size, lines):
    plan = gpu_plan(n, size[0], size[1])
    assert plan.lines == lines
    # whatever the mode, the process table keeps its minimum rows
    assert plan.rows + 2 + 2 + 3 + 5 <= size[1]


def test_grid_mode_puts_several_gpus_on_a_line():
    plan = gpu_plan(16, 80, 24)
    assert plan.grid and plan.per_line >= 3 and plan.rows == -(-16 // plan.per_line)


def test_header_drops_optional_parts_first_and_keeps_the_money():
    parts = [("gputui ", 1), ("my-box ", 9), ("8× H100 ", 4), ("driver 560 ", 3), ("● live ", 10),
             ("rtt 3 ms ", 5), ("⏱ 1:02:03 ¥8.27", 10)]
    assert fit(parts, 200, keep=(10,)) == [t for t, _ in parts]
    narrow = fit(parts, 40, keep=(10, 9))
    assert "● live " in narrow and "⏱ 1:02:03 ¥8.27" in narrow and "my-box " in narrow
    assert "driver 560 " not in narrow and "gputui " not in narrow


def test_long_text_is_cut_visibly():
    assert clip("python train.py --bs 256", 21) == "python train.py --bs…"
    assert clip("short", 10) == "short"


def test_narrow_process_table_keeps_the_command_readable():
    narrow = proc_columns(PROC_COLUMNS, 80)
    assert [k for k, _ in narrow] == ["pid", "gpu", "gpu_mem", "cpu", "elapsed", "cmd"]
    assert cmd_width(narrow, 80) >= 24
    assert proc_columns(PROC_COLUMNS, 160) == PROC_COLUMNS


@pytest.mark.parametrize("scenario,size", [
    ("idle", (80, 24)), ("a100x2", (80, 24)), ("h100x8", (80, 24)), ("a10x16", (80, 24)),
    ("a100x2", (120, 40)), ("h100x8", (160, 50)), ("a10x16", (160, 50)), ("h100x8", (300, 80)),
])
async def test_dashboard_fits(scenario, size):
    b = await DemoBox().start()
    try:
        with local_dirs_inside(b.dir):
            app = demo_app(b, scenario)
            async with app.run_test(size=size) as pilot:
                await wait_for(pilot, lambda: app.box.state.samples_seen >= 2 and (
                    scenario == "idle" or app.box.state.proc_rows()), timeout=30)
                await pilot.pause(0.5)
                width, height = size
                header = str(app.query_one("#status").render())
                assert "live" in header and "¥" in header  # state and money always visible
                panel = app.query_one(GpuPanel)
                text = str(panel.render())
                n = len(app.box.state.gpus)
                lines = text.split("\n")
                assert all(len(line) <= panel.content_region.width for line in lines), text
                assert ("%2d " % (n - 1)) in text  # the last GPU is drawn, not cut off
                assert panel.region.height >= len(lines) + 2  # nothing scrolled away
                assert panel.region.bottom <= height
                table = app.query_one(ProcessTable)
                shown = table.region.height - 3
                assert shown >= 5, regions(app)
                await planned_with_laid_out_rows(app, pilot)
                footer = app.screen.query_one("Footer")
                keys = " ".join(str(k.render()) for k in footer.query("FooterKey")
                                if k.region.right <= width)
                for word in ("Quit", "Release", "Autostop", "Reconnect", "Help"):  # ? leads to the rest
                    assert word in keys, keys
                await app.action_quit()
    finally:
        await b.stop()


def test_cjk_text_is_cut_and_fitted_by_terminal_columns():
    from rich.cells import cell_len

    from tui.core.layout import pad
    # every Chinese character takes two columns: 10 characters are 20 columns
    text = "数据加载拖慢了显存利用率"
    cut = clip(text, 9)
    assert cut == "数据加载…" and cell_len(cut) == 9
    assert cell_len(clip(text, 10)) <= 10  # a character straddling the edge is left out
    assert clip("显存", 4) == "显存"
    assert pad("显存", 6) == "显存  " and cell_len(pad("显存", 6)) == 6
    parts = [("按量计费 ", 1), ("● 在线 ", 10), ("¥8.27", 10)]
    assert fit(parts, 13, keep=(10,)) == ["● 在线 ", "¥8.27"]  # 22 columns do not fit in 13


@pytest.mark.parametrize("scenario,size", [
    ("a100x2", (80, 24)), ("h100x8", (80, 24)), ("a10x16", (80, 24)),
    ("a100x2", (160, 50)), ("h100x8", (160, 50)),
])
async def test_dashboard_fits_in_chinese(scenario, size):
    """Issue 14: double-width text at 80×24 and 160×50 — the header keeps the state and the
    money, the footer's keys fit, no GPU panel line is wider than the panel (in columns)."""
    from rich.cells import cell_len

    from tui.core.i18n import set_language
    set_language("zh")
    b = await DemoBox().start()
    try:
        with local_dirs_inside(b.dir):
            app = demo_app(b, scenario)
            async with app.run_test(size=size) as pilot:
                await wait_for(pilot, lambda: app.box.state.samples_seen >= 2 and app.box.state.proc_rows(),
                               timeout=30)
                await pilot.pause(0.5)
                width, height = size
                header = str(app.query_one("#status").render())
                assert "在线" in header and "¥" in header, header
                assert cell_len(header) <= width
                panel = app.query_one(GpuPanel)
                lines = str(panel.render()).split("\n")
                assert all(cell_len(line) <= panel.content_region.width for line in lines), lines
                assert panel.region.height >= len(lines) + 2
                footer = app.screen.query_one("Footer")
                keys = " ".join(str(k.render()) for k in footer.query("FooterKey")
                                if k.region.right <= width)
                for word in ("退出", "释放", "自动关机", "重连", "帮助"):
                    assert word in keys, keys
                table = app.query_one(ProcessTable)
                assert table.region.height - 3 >= 5, regions(app)
                await planned_with_laid_out_rows(app, pilot)
                for line in str(app.query_one("#summary").render()).split("\n"):
                    assert cell_len(line) <= width
                await app.action_quit()
    finally:
        set_language("en")
        await b.stop()


@pytest.mark.parametrize("n,size,fixed,lines", [
    (16, (80, 24), 3, 3),    # header, footer, summary: three job lines fit
    (16, (80, 24), 5, 1),    # a two-line notice: one line, the table keeps its rows
    (16, (80, 24), 9, 1),    # no room at all: still one line (a job's state is never hidden)
    (2, (160, 50), 2, 5),
    (0, (80, 24), 3, 5),     # no GPU panel
])
def test_jobs_panel_gets_the_rows_the_gpus_and_the_table_leave(n, size, fixed, lines):
    from tui.core.layout import MIN_PROC_ROWS, PROC_CHROME, jobs_lines
    got = jobs_lines(n, size[0], size[1], fixed, wanted=5)
    assert got == lines
    if n and lines > 1:
        densest = gpu_plan(n, size[0], size[1], size[1]).rows + 2
        assert fixed + densest + got + 2 + PROC_CHROME + MIN_PROC_ROWS <= size[1]


async def test_jobs_on_a_short_terminal_leave_the_process_table_its_rows():
    """16 GPUs at 80×24 in Chinese with four tmux jobs on the box (CI's failure: the jobs panel
    and a wrapped notice squeezed the process table to 3 rows)."""
    import subprocess

    from tui.core.i18n import set_language
    set_language("zh")
    b = await DemoBox().start()
    try:
        with local_dirs_inside(b.dir):
            app = demo_app(b, "a10x16")
            async with app.run_test(size=(80, 24)) as pilot:
                await wait_for(pilot, lambda: app.box.state.samples_seen >= 2, timeout=30)
                for i in range(4):
                    subprocess.run(["tmux", "-S", b.tmux_socket(), "new-session", "-d", "-s", "训练%d" % i,
                                    "python3 -c 'import time\nwhile 1: time.sleep(1)'"], check=True)
                await wait_for(pilot, lambda: len(app.box.state.watched()) >= 4, timeout=30)
                await pilot.pause(1.5)
                jobs = app.query_one("#jobs")
                assert jobs.display and jobs.region.height >= 3, jobs.region
                # every line the panel was given is on screen (this machine is the demo box:
                # other tests' python jobs are listed too, so which jobs come first varies)
                shown = str(jobs.render()).split("\n")
                assert all(line.strip() for line in shown) and len(shown) == jobs.region.height - 2
                table = app.query_one(ProcessTable)
                assert table.region.height - 3 >= 5, regions(app)
                await app.action_quit()
    finally:
        set_language("en")
        await b.stop()


async def test_a_notice_that_goes_away_gives_its_rows_back():
    """A notice shown and then hidden (a reconnect that succeeded) leaves no blank row: the GPU
    panel and the process table get back the rows they had (CI's failure: a hidden notice still
    counted by its last size)."""
    from tui.core.session.conn_state import ConnState

    b = await DemoBox().start()
    try:
        with local_dirs_inside(b.dir):
            app = demo_app(b, "h100x8")
            async with app.run_test(size=(80, 24)) as pilot:
                st = app.box.state
                await wait_for(pilot, lambda: st.samples_seen >= 2 and st.proc_rows(), timeout=30)
                await planned_with_laid_out_rows(app, pilot)
                gpus, procs = app.query_one(GpuPanel), app.query_one(ProcessTable)
                before = (gpus.region.height, procs.region.height)
                st.set_connection(ConnState.RECONNECTING, "connection lost [b]x[/b]")
                app.screen.refresh_view()
                await wait_for(pilot, lambda: app.query_one("#notice").region.height >= 1)
                await planned_with_laid_out_rows(app, pilot)
                assert "[b]x[/b]" in str(app.query_one("#notice").render())  # box text, not markup
                assert gpus.region.height + procs.region.height < sum(before)
                st.set_connection(ConnState.LIVE)
                app.screen.refresh_view()
                await wait_for(pilot, lambda: app.query_one("#notice").region.height == 0)
                await planned_with_laid_out_rows(app, pilot)
                await wait_for(pilot, lambda: (gpus.region.height, procs.region.height) == before)
                await app.action_quit()
    finally:
        await b.stop()
