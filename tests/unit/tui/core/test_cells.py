"""The one padder (tui.core.text.cells): tables line up in terminal columns, whatever the text."""

import pytest

from tui.core import layout, report
from tui.core.billing import ledger
from tui.core.fleet import rows as fleet
from tui.core.text.cells import cell_len, columns, line_breaks, pad


@pytest.mark.parametrize("text,width,right,want", [
    ("GPU", 6, False, "GPU   "),
    ("GPU", 6, True, "   GPU"),
    ("显存", 6, False, "显存  "),            # CJK: two columns a character
    ("显存", 6, True, "  显存"),
    ("无保护", 4, False, "无保护"),           # wider than the column: never cut
    ("e\u0301cole", 7, False, "e\u0301cole  "),  # a combining mark takes no column
    ("a\x1bb", 6, False, "a\\x1bb"),          # ESC shown as \x1b (6 columns), not sent
    ("a\x1bb", 8, False, "a\\x1bb  "),
    ("x\u202ey", 8, True, "x\\u202ey"),        # bidi override shown, not obeyed
    (3, 4, True, "   3"),                     # numbers are text too
    (None, 2, False, "  "),
])
def test_pad(text, width, right, want):
    got = pad(text, width, right)
    assert got == want
    assert cell_len(got) == max(width, cell_len(got))


def test_columns_align_left_and_right_in_columns():
    row = columns((("ID", -4), ("主机", -6), ("费用", 6), ("", 0)))
    assert row == "ID   主机   " + "  费用 "
    assert cell_len(columns((("主机", -6),))) == 6


def test_every_table_uses_the_one_padder():
    """layout, the fleet table, the ledger table and the status report all pad with it."""
    assert layout.pad is pad and fleet.pad is pad
    assert ledger.columns is columns and report.columns is columns


def test_fleet_table_line_lines_up_with_cjk_and_control_text():
    line = fleet.table_line(("盒子\x07", "LIVE", "1x H100", 1, 0, "5m", "¥1", "¥2/h", "¥0", ""))
    assert "\x07" not in line and "盒子\\x07" in line
    assert cell_len(line[:line.index("LIVE")]) == fleet.TABLE_WIDTHS[0] + 1  # columns, not chars


def test_status_text_columns_line_up_with_a_chinese_user_and_gpu_name():
    """`gputui status`: a CJK user name or GPU name no longer pushes the columns after it."""
    doc = {"host": "box", "driver": None, "backend": "sim", "no_gpu_reason": None, "gpu_error": None,
           "time": 1000.0, "gpus": [
               {"index": 0, "name": "H100", "util": 5, "mem_used": 1, "mem_total": 2, "temp": 40,
                "power": 1, "power_limit": 2},
               {"index": 1, "name": "显卡一号", "util": 5, "mem_used": 1, "mem_total": 2, "temp": 40,
                "power": 1, "power_limit": 2}],
           "processes": [
               {"pid": 5, "user": "root", "gpu": 0, "gpu_mem": 10, "cmd": "a", "local": True, "start": 900},
               {"pid": 6, "user": "张三", "gpu": 0, "gpu_mem": 9, "cmd": "b", "local": True, "start": 900}]}
    lines = report.status_text(doc).splitlines()
    gpu_rows = [line for line in lines if line.startswith(("0 ", "1 "))]
    proc_rows = [line for line in lines if line.startswith("  5 ") or line.startswith("  6 ")]
    assert len(gpu_rows) == 2 and len(proc_rows) == 2
    for rows, marker in ((gpu_rows, "5%"), (proc_rows, "GPU")):
        assert len({cell_len(r[:r.index(marker)]) for r in rows}) == 1, rows  # same column


def pieces(text, width):
    cuts = [0] + line_breaks(text, width) + [len(text)]
    return [text[a:b].rstrip() for a, b in zip(cuts, cuts[1:])]


@pytest.mark.parametrize("text,width,expected", [
    ("new job, attach, Ctrl-C, kill, rename", 18, ["new job, attach,", "Ctrl-C, kill,", "rename"]),
    ("fits", 10, ["fits"]),
    ("abcdefghij", 4, ["abcd", "efgh", "ij"]),  # a word wider than the line: cut where it must
    # Chinese has no spaces: cut between characters, two columns each
    ("关机清单然后释放实例", 8, ["关机清单", "然后释放", "实例"]),
    # never a closing mark first on a line, nor an opening one last
    ("任务、显存", 4, ["任", "务、", "显存"]),
    ("运行（空闲时）", 6, ["运行", "（空闲", "时）"]),
    ("tmux 会话：新任务", 11, ["tmux 会话：", "新任务"]),
])
def test_line_breaks(text, width, expected):
    got = pieces(text, width)
    assert got == expected
    assert all(cell_len(p) <= width for p in got if len(p) > 1)
