"""The help screen at 80x24 (a new user's report): a wrapped description goes on under the
description column, not at the left edge under the keys, and the help's scrollbar sits against
its frame instead of in the text's right margin, where its thumb's end read as stray "▆▆"."""

import pytest

from tui.core.text.cells import cell_len
from tui.ui.widgets.key_help import KEY_COLUMN, help_text

from tests.support.screen import screen_lines
from tests.support.snapshot_app import canned_app

BLOCKS = set("▁▂▃▄▅▆▇█▔▀▐▌▍▎▏")
TMUX = ("t", "tmux", "tmux sessions on the box: new job, attach, Ctrl-C, kill, rename")


@pytest.mark.parametrize("width", [40, 70, 74])
def test_a_wrapped_description_is_indented_to_its_column(width):
    lines = help_text([TMUX, ("q", "Quit", None)], "about", width).plain.split("\n")
    row = lines[2:lines.index(" q          Quit")]
    assert len(row) >= 2  # it wraps at these widths
    assert row[0].startswith(" t          tmux  — ")
    for line in row[1:]:
        assert line[:KEY_COLUMN].strip() == "" and line[KEY_COLUMN] != " ", lines
    assert all(len(line) <= width for line in lines)


def test_a_long_key_name_and_a_narrow_help_still_show_every_word():
    text = help_text([("shift+ctrl+tab", "Switch", "to the other box"), TMUX], "about", 24).plain
    assert "shift+ctrl+tab" in text and "Ctrl-C," in text and "rename" in text
    assert all(len(line) <= 24 for line in text.split("\n"))


def test_a_chinese_description_wraps_between_characters():
    """Rich wraps at spaces only: "释放  —" stood alone and the whole tooltip went below it."""
    lines = help_text([("R", "释放", "关机清单：任务、显存、下载、代码、临时文件、账单；然后释放实例")],
                      "about", 50).plain.split("\n")[2:-4]
    assert lines[0].startswith(" R          释放  — 关机清单：")
    assert [cell_len(ln) <= 50 for ln in lines] == [True] * len(lines) and len(lines) == 2


async def test_help_at_80x24_wraps_under_descriptions_and_keeps_its_scrollbar_at_the_frame():
    app = canned_app(2)
    async with app.run_test(size=(80, 24)) as pilot:
        app.feed()
        await pilot.pause(0.3)
        await pilot.press("question_mark")
        await pilot.pause(0.5)
        lines = screen_lines(app)
        frame = app.screen.query_one("VerticalScroll")
        assert frame.show_vertical_scrollbar  # 80x24 shows about half of the keys
        # the description column: where "tmux" starts in t's row
        t_row = next(i for i, ln in enumerate(lines) if " t          tmux" in ln)
        column = lines[t_row].index(" t          tmux") + KEY_COLUMN
        after = lines[t_row + 1]
        assert after[column - KEY_COLUMN:column].strip() == "" and after[column] != " ", lines
        # inside the frame, left of its last column (the scrollbar's), nothing but text
        region = frame.region
        for y in range(region.y + 1, region.bottom - 1):
            inside = lines[y][region.x + 1:region.right - 2]
            assert not BLOCKS & set(inside), "row %d: %r" % (y, lines[y])
