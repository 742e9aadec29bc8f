"""The fleet in Chinese (issue 14): the fleet screen at 80x24 and 160x50 keeps its columns with
double-width text (titles and cells start where their column starts, nothing clipped), shows
no untranslated UI text, and `gputui fleet --check`'s plain table pads by terminal cells."""

import pytest
from rich.cells import cell_len
from textual.widgets import DataTable

from tui.core import i18n
from tui.core.fleet import rows as fleet
from tui.ui.screens.fleet_screen import COLUMNS

from tests.support.fleet_canned import HOSTS, RELEASED, canned_fleet_app
from tests.e2e.test_i18n_screens import english_left, screen_text, zh_recorded  # noqa: F401 - fixture


def cell_offset(line, text):
    """Terminal column where `text` starts in `line` (None if absent)."""
    i = line.find(text)
    return None if i < 0 else cell_len(line[:i])


@pytest.mark.parametrize("size", [(80, 24), (160, 50)], ids=lambda s: "%dx%d" % s)
async def test_fleet_screen_in_chinese_keeps_its_columns(size, zh_recorded):  # noqa: F811
    app = canned_fleet_app()
    async with app.run_test(size=size) as pilot:
        app.feed()
        await pilot.pause(1.5)
        text = screen_text(app)
        table = app.screen.query_one(DataTable)
        widths = [c.get_render_width(table) for c in table.ordered_columns]
        cells = {h: [c for c in table.get_row(h)] for h in app.screen.order}
        await app.action_quit()
    lines = text.splitlines()
    width = size[0]
    assert all(cell_len(l) <= width for l in lines), text
    # header: the box count, the states and the alarm in Chinese, on lines of their own
    assert lines[0].startswith(" gputui 机群 — 6 台机器：") and "按费用排序" in lines[0], text
    assert "4 在线" in lines[0] and "1 无法连接" in lines[0] and "1 已释放" in lines[0]
    assert lines[1].strip() == "⚠ 1 台机器空闲，正在白烧 ¥1.98/h", text
    head = next(l for l in lines if "主机" in l)
    # every column as wide as its widest cell (titles and cells measured in cells, not chars)
    for (key, title), w, i in zip(COLUMNS, widths, range(len(COLUMNS))):
        need = max([cell_len(i18n._(title))] + [cell_len(row[i].plain) for row in cells.values()])
        assert w >= need + 2 or key == "note", (key, w, need)  # 1 cell of padding each side
    # where the screen shows a column, its title and its cells start at the column's edge
    start, starts = 1, []  # the header has padding 0 1 and so has each cell
    for w in widths:
        starts.append(start)
        start += w
    shown = [k for k, s in enumerate(starts) if s + widths[k] <= width]
    assert len(shown) >= (6 if width == 80 else 11), (shown, widths)
    for k in shown:
        assert cell_offset(head, i18n._(COLUMNS[k][1])) == starts[k], (COLUMNS[k], head)
    for host in HOSTS:
        line = next(l for l in lines if l.startswith(" " + host))
        state = cells[host][1].plain
        assert state in ("在线", "无法连接") and cell_offset(line, state) == cell_offset(head, "状态"), line
    gone = next(l for l in lines if l.startswith(" " + RELEASED["host"]))
    assert cell_offset(gone, "已释放") == cell_offset(head, "状态"), gone
    if width >= 160:
        assert "空闲但仍在计费" in text and "倒计时 1:20" in text and "已开启" in text, text
        assert "警告" in text and "结束于" in text
    # nothing left in English but box data (names, the ledger's dates) and technical terms
    translations = {v for v in i18n.catalog_entries("zh").values() if isinstance(v, str)}
    missed = sorted(m for m in zh_recorded.missed if m not in translations)
    allowed = set(w for h in list(HOSTS) + [RELEASED["host"]] for w in h.split("-")) | {"sshd"}
    assert not missed and not english_left(text, allowed), (missed, english_left(text, allowed), text)


def test_check_table_pads_by_cells_in_chinese(zh_recorded):  # noqa: F811
    rows = [fleet.BoxRow("idle1", fleet.LIVE, gpus=[fleet.GpuBar(0, 300, 24564)], idle_for=600,
                         cost=3.0, rate=1.98, idle_cost=0.3, burning=True),
            fleet.BoxRow("deadbox", fleet.UNREACHABLE, reason="拒绝连接", rate=4.5),
            fleet.BoxRow("gone", fleet.RELEASED, reason="结束于 2026-11-28 23:10", cost=12.5)]
    lines = fleet.fleet_table(rows).splitlines()
    assert lines[0].split()[:3] == ["主机", "状态", "GPU"], lines[0]
    assert "空闲，仍在计费" in lines[1] and "无法连接" in lines[2] and "已释放" in lines[3]
    # each column starts at the same terminal cell on every line (CJK is two cells wide)
    col = cell_offset(lines[0], "状态")
    assert [cell_offset(l, w) for l, w in zip(lines[1:], ("在线", "无法连接", "已释放"))] == [col] * 3
    note = cell_offset(lines[0], "备注")
    assert cell_offset(lines[1], "空闲，仍在计费") == note and cell_offset(lines[2], "拒绝连接") == note
    assert fleet.alarm_text(rows) == "1 台机器空闲，正在白烧 ¥1.98/h"
    assert fleet.autostop_text("countdown 1:20") == "倒计时 1:20"
    assert fleet.autostop_text("armed") == "已开启" and fleet.autostop_text(None) is None


def test_row_values_stay_english_data():
    """States and autostop words are data (JSON keys and values, Prometheus labels): the
    language only changes how they are shown."""
    i18n.set_language("zh")
    try:
        assert fleet.LIVE == "live" and fleet.autostop_label({"armed": True}) == "armed"
        assert fleet.row_state("live", 1, False) == "live"
    finally:
        i18n.set_language("en")


def test_a_failure_report_in_chinese_marks_the_box_unreachable(zh_recorded):  # noqa: F811
    """The session sends its retry report in the UI language; the fleet must still see that
    the attempt failed (else the box shows "connecting" forever and --check waits it out)."""
    from tui.core.config import HostConfig
    report = i18n._("%s - attempt %d, next in %.0fs") % ("拒绝连接", 2, 4)
    assert "next in" not in report  # the Chinese text, not the English one
    assert fleet.retry_report(report) and fleet.retry_report("refused - attempt 1, next in 1s")
    assert not fleet.retry_report("正在连接") and not fleet.retry_report("")
    box = fleet.FleetBox(fleet.FleetHost("deadbox"), HostConfig())
    box.on_state("reconnecting", "正在连接")
    assert box.row().state == fleet.CONNECTING
    box.on_state("reconnecting", report)
    assert box.row().state == fleet.UNREACHABLE and box.row().reason == report
