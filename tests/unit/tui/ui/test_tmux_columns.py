"""The tmux panel at 80x24 (a new user's report): the header was cut to "COMMAND  RUNNI", cells
like "train.s" were cut without a mark, and the table's sideways scrollbar left a stray "▍" in
an empty list. Now the columns fit the table: WINDOW, PANE and ATT go first, COMMAND, JOB and
then SESSION shrink with a visible '…', every header shown whole."""

import pytest
from rich.text import Text

from tui.core.jobs.tmux_rows import tmux_column_widths
from tui.ui.app import _AppListener
from tui.ui.screens.tmux_screen import COLUMNS, clipped

from tests.support.screen import screen_lines
from tests.support.snapshot_app import NOW, canned_app

HEADERS = [("session", 7), ("window", 6), ("pane", 4), ("command", 7), ("elapsed", 7),
           ("attached", 3), ("job", 3)]


def natural(**cells):
    return [(key, head, cells.get(key, 0)) for key, head in HEADERS]


def used(widths):
    return sum(w + 2 for w in widths.values())


@pytest.mark.parametrize("cells,width,expected", [
    # the canned box at 80 columns (38 inside the table): all of the session name
    (dict(session=13, window=8, pane=2, command=6, elapsed=5, attached=1, job=1), 38,
     {"session": 13, "command": 7, "elapsed": 7, "job": 3}),
    # at 120 (58): one column over, the session gives it
    (dict(session=13, window=8, pane=2, command=6, elapsed=5, attached=1, job=1), 58,
     {"session": 12, "window": 8, "pane": 4, "command": 7, "elapsed": 7, "attached": 3, "job": 3}),
    # wide: every column at its widest cell
    (dict(session=13, window=8, pane=2, command=6, elapsed=5, attached=1, job=1), 200,
     {"session": 13, "window": 8, "pane": 4, "command": 7, "elapsed": 7, "attached": 3, "job": 3}),
    # no sessions: the headers that fit, whole
    ({}, 38, {"session": 7, "command": 7, "elapsed": 7, "attached": 3, "job": 3}),
    # a long command and a watched job's ETA: the command gives first, the session last
    (dict(session=12, command=60, elapsed=5, job=35), 58,
     {"session": 12, "command": 12, "elapsed": 7, "attached": 3, "job": 14}),
])
def test_the_columns_fit_the_table(cells, width, expected):
    widths = tmux_column_widths(natural(**cells), width)
    assert widths == expected
    assert used(widths) <= width
    assert all(widths[k] >= head for k, head in HEADERS if k in widths)  # headers whole


def test_too_narrow_for_everything_keeps_the_session_and_scrolls():
    widths = tmux_column_widths(natural(session=30, command=30, job=30), 10)
    assert "session" in widths and "elapsed" not in widths


@pytest.mark.parametrize("text,width,middle,shown", [
    ("train.sh-10", 8, True, "trai…-10"),  # both ends: sessions often differ at the end
    ("train.sh-10", 8, False, "train.s…"),
    ("python", 8, True, "python"),
    ("训练任务一号", 7, True, "训练…号"),  # columns, not characters
])
def test_a_cut_cell_says_so(text, width, middle, shown):
    cut = clipped(Text(text), width, middle=middle)
    assert cut.plain == shown and cut.cell_len <= width


async def _tmux(app, pilot, sessions):
    app.feed()
    _AppListener(app).on_jobs({"tmux": {"sessions": sessions}, "unprotected": []})
    await pilot.pause(0.3)
    await pilot.press("t")
    await pilot.pause(0.8)


def session(i, name):
    return {"id": "$%d" % i, "name": name, "attached": False, "created": NOW - 900,
            "windows": [{"id": "@%d" % i, "index": 0, "name": "bash", "panes": [
                {"id": "%%%d" % i, "pid": 4100 + i, "command": "python3", "path": "/root",
                 "dead": False, "running": True, "active": True, "started": NOW - 5}]}]}


@pytest.mark.parametrize("sessions", [[], [session(1, "train.sh-0"), session(2, "train.sh-1"),
                                           session(3, "a-very-long-session-name-9")]],
                         ids=["empty", "three"])
async def test_the_tmux_table_fits_80x24(sessions):
    app = canned_app(1)
    async with app.run_test(size=(80, 24)) as pilot:
        await _tmux(app, pilot, sessions)
        table = app.screen.query_one("#panes")
        assert not table.show_horizontal_scrollbar
        lines = screen_lines(app)
        region = table.region
        header = lines[region.y + 1][region.x + 1:region.right - 1]
        shown = [str(table.columns[key].label) for key, _t in COLUMNS if key in table.columns]
        assert " ".join(header.split()) == " ".join(shown), header  # every header whole
        for y in range(region.y + 1, region.bottom - 1):
            inside = lines[y][region.x + 1:region.right - 1]
            assert not set("▁▂▃▄▅▆▇█▍▎▏▌▊▋▉") & set(inside), "row %d: %r" % (y, lines[y])
        text = "\n".join(lines)
        if sessions:  # names whole where they fit; a long one keeps both ends
            assert "train.sh-0" in text and "train.sh-1" in text and "a-very…name-9" in text, text

