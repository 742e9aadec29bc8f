"""Property tests (issue 10): random and hostile box text and numbers fed to every render
function the app and the CLI use. Nothing raises; nothing a terminal obeys comes out."""

import io

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from remote_probe import wire as protocol
from tui.core import from_wire
from tui.core.jobs.tmux_rows import pane_rows, unprotected_advice
from tui.core.model import Gpu, GpuFacts, GpuLive, HostFacts, MigSlice, ProcRow
from tui.core.report import status_text
from tui.ui.widgets.gpu_panel import detail_line, grid_cell, summary_line
from tui.ui.widgets.host_panel import render_host
from tui.ui.widgets.process_table import row_cells
from tui.ui.widgets.status_bar import render_status

from tests.support.hostile import BAD_UTF8, NAMES, assert_inert

box_text = st.one_of(
    st.sampled_from(NAMES + [BAD_UTF8.decode("utf-8", "surrogateescape"), "", "x" * 300]),
    st.text(max_size=60),
    st.binary(max_size=40).map(lambda b: b.decode("utf-8", "surrogateescape")),
)
number = st.one_of(st.none(), st.integers(-10, 10 ** 7), st.floats(allow_nan=True, allow_infinity=True))


def rendered(*renderables):
    console = Console(file=io.StringIO(), width=100, record=True, force_terminal=True, color_system="truecolor")
    for r in renderables:
        console.print(r)
    text = console.export_text(styles=False)
    assert_inert(text)
    return text


@settings(max_examples=150, deadline=None)
@given(box_text, box_text, number, number, number, number)
def test_gpu_panel(name, virt, util, used, total, temp):
    # through the same reader the app uses: what the box sends becomes the model
    static = from_wire.gpu_facts({"name": name, "virt_mode": virt, "mem_total": total,
                                  "mig_devices": [{"name": name}]}, 0)
    row = [None] * len(protocol.GPU_FIELDS)
    for field, value in (("util", util), ("mem_used", used), ("temp", temp), ("pstate", temp),
                         ("fan", util), ("ecc_errors", used)):
        row[protocol.GPU_FIELDS.index(field)] = value
    gpu = Gpu(0, static, from_wire.gpu_live(row))
    raw = Gpu(0, GpuFacts(0, name=name, virt_mode=virt, mem_total=total, mig_devices=(MigSlice(name, total),)),
              GpuLive(util=util, mem_used=used, temp=temp, pstate=temp, fan=util, ecc_errors=used))
    for g in (gpu, raw):  # and values straight into the model, unchecked
        rendered(summary_line(g, 100), summary_line(g, 40), detail_line(g), grid_cell(g))


@settings(max_examples=150, deadline=None)
@given(box_text, number, number, number, st.lists(number, max_size=8))
def test_host_panel(mount, cpu, used, total, cores):
    host = from_wire.host({"cpu": cpu, "iowait": cpu, "load": [cpu, cpu, cpu], "mem_used": used,
                           "mem_total": total, "cores": cores,
                           "disks": [{"mount": mount, "used": used, "total": total, "free": used}]})
    rendered(render_host(host, HostFacts(ncpu=4), [cpu]))


@settings(max_examples=150, deadline=None)
@given(box_text, box_text, box_text, box_text, number)
def test_status_bar_and_process_row(host, model, driver, cmd, mem):
    t = render_status(host, model, "live", 12.0, 1.0, driver, driver, model)
    row = ProcRow(pid=12, gpu=0, gpu_mem=mem, kind="C", cpu=mem, rss=mem, local=True, host_pid=None,
                  unprotected=True, user=driver, cmd=cmd, elapsed=mem)
    cells = row_cells(row)
    rendered(t, *cells)


@settings(max_examples=150, deadline=None)
@given(box_text, box_text, box_text)
def test_tmux_rows_and_advice(session, window, command):
    sessions = [{"id": "$1", "name": session, "attached": True, "windows": [
        {"index": 0, "name": window, "panes": [{"id": "%1", "command": command, "running": True,
                                                 "started": 1.0, "path": window}]}]}]
    rows = pane_rows(sessions, 100.0)
    from tui.ui.boxtext_rich import box_text as to_text
    rendered(*[to_text(r[k]) for r in rows for k in ("session", "window", "command")])
    assert_inert(unprotected_advice({"pid": 3, "cmd": command, "reason": session}))


@settings(max_examples=100, deadline=None)
@given(box_text, box_text, number, number)
def test_status_text(name, cmd, util, mem):
    doc = {"host": "box", "gpus": [{"index": 0, "name": name, "util": util, "mem_used": mem, "mem_total": mem,
                                    "temp": util, "power": mem, "power_limit": util}],
           "driver": name, "cuda_driver": name, "backend": name, "no_gpu_reason": name, "gpu_error": cmd,
           "time": 1000.0, "processes": [{"pid": 5, "user": name, "gpu": 0, "gpu_mem": mem, "cmd": cmd,
                                          "local": True, "start": util}],
           "unprotected_jobs": [{"pid": 5, "cmd": cmd, "reason": name}],
           "tmux": {"error": cmd, "sessions": [{"name": name, "attached": False, "windows": [
               {"panes": [{"command": cmd}]}]}]},
           "host_metrics": {"cpu": util, "disks": [{"mount": name, "free": mem, "total": mem}]},
           "box": {"ncpu": name}}
    assert_inert(status_text(doc))
