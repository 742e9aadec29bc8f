"""Sorting and filtering processes (issue 23): `s` cycles only through the columns shown at
this width, the sorting column shows ▲/▼ even when narrow, `/` filters by command, user, pid."""

import pytest

from tui.core.model import ProcRow
from tui.core.state import SORT_KEYS, filter_procs, next_sort_key
from tui.ui.widgets.process_table import sorted_title

from tests.support.snapshot_app import canned_app


@pytest.mark.parametrize("current,visible,nxt", [
    ("cpu", ("pid", "gpu", "gpu_mem", "cpu", "elapsed", "cmd"), "elapsed"),  # rss hidden: skipped
    ("gpu", ("pid", "gpu", "gpu_mem", "cpu", "elapsed", "cmd"), "gpu_mem"),   # user hidden
    ("pid", ("pid", "gpu", "gpu_mem", "cpu", "elapsed", "cmd"), "gpu"),
    ("cmd", ("pid", "gpu", "cmd"), "pid"),
    ("rss", ("pid", "gpu", "cmd"), "pid"),  # sorted by a column now hidden: start over
    ("pid", SORT_KEYS, "user"),
])
def test_s_cycles_visible_columns(current, visible, nxt):
    assert next_sort_key(current, visible) == nxt


@pytest.mark.parametrize("title,width,reverse,shown", [
    ("GPU", 3, True, "G…▼"), ("GPU MEM", 9, True, "GPU MEM ▼"), ("CPU%", 5, False, "CPU%▲"),
    ("PID", 8, False, "PID ▲"),
])
def test_the_arrow_always_fits(title, width, reverse, shown):
    assert sorted_title(title, width, reverse) == shown


def row(pid, user, cmd):
    return ProcRow(pid=pid, gpu=0, gpu_mem=1.0, kind="C", cpu=1.0, rss=1.0, local=True,
                   host_pid=None, unprotected=False, user=user, cmd=cmd, elapsed=1.0)


def test_filter_by_command_user_pid():
    rows = [row(4100, "alice", "python train.py --bs 256"), row(4200, "bob", "python eval.py"),
            row(777, "root", "jupyter")]
    assert [r.pid for r in filter_procs(rows, "train")] == [4100]
    assert [r.pid for r in filter_procs(rows, "BOB")] == [4200]
    assert [r.pid for r in filter_procs(rows, "42")] == [4200]
    assert [r.pid for r in filter_procs(rows, "python bs")] == [4100]  # every word
    assert filter_procs(rows, "") == rows


# h100x8's simulated box: eight ranks of `python3 worker.py --rank N`, pids 29024-29039
RANKS = [row(29024 + i, "root", "python3 worker.py --rank %d" % (i // 2)) for i in range(16)]


@pytest.mark.parametrize("query,pids", [
    ("rank 3", [29030, 29031]),      # every row had a "3" (python3, pid 29039): nothing was left out
    ("3 RANK", [29030, 29031]),      # any order, any case
    ("2903", list(range(29030, 29040))),  # the start of a pid
    ("29039", [29039]),
    ("039", []),                     # not inside a pid
    ("ython", []),                   # not inside a word
    ("worker.py --rank 7", [29038, 29039]),
    (".py", [r.pid for r in RANKS]),  # a word that starts with punctuation: anywhere
])
def test_every_word_of_the_filter_starts_a_word(query, pids):
    assert [r.pid for r in filter_procs(RANKS, query)] == pids


def test_a_filter_word_may_start_after_an_underscore_or_in_chinese():
    rows = [row(1, "root", "python train.py --model vit_l16"), row(2, "root", "训练任务 resnet")]
    assert [r.pid for r in filter_procs(rows, "l16")] == [1]
    assert [r.pid for r in filter_procs(rows, "任务")] == [2]


async def test_filter_and_sort_in_the_dashboard():
    app = canned_app(2)
    async with app.run_test(size=(80, 30)) as pilot:  # narrow: USER and RSS hidden
        app.feed()
        await pilot.pause(0.3)
        table = app.query_one("#procs")
        seen = set()
        for _ in range(len(SORT_KEYS)):
            await pilot.press("s")
            seen.add(app.box.state.sort_key)
        assert seen == set(table.columns) and not {"user", "rss"} & seen
        await pilot.press("slash")
        await pilot.pause(0.2)
        app.screen.query_one("#filter").value = "rank 3"
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert table.row_count == 1 and str(table.get_row_at(0)[0]) == "4103"  # --rank 3
        assert "filter: rank 3" in table.border_title
        await pilot.press("slash")
        await pilot.pause(0.2)
        app.screen.query_one("#filter").value = ""
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert table.row_count == 6


async def test_a_two_word_filter_typed_into_the_dashboard():
    """The user's steps on h100x8: `/`, then `rank 3` typed key by key (space included)."""
    from tui.ui.app import _AppListener
    app = canned_app(8)
    async with app.run_test(size=(120, 40)) as pilot:
        app.feed()
        # h100x8's commands: python3, and a "3" in most pids (4100-4123)
        _AppListener(app).on_proc_meta([{"pid": 4100 + i, "user": "root", "start": 0,
                                         "cmd": "python3 worker.py --rank %d" % (i // 3)}
                                        for i in range(24)])
        await pilot.pause(0.3)
        table = app.query_one("#procs")
        assert table.row_count == 24
        await pilot.press("slash")
        await pilot.pause(0.2)
        await pilot.press(*"rank", "space", "3", "enter")
        await pilot.pause(0.3)
        assert app.box.state.proc_filter == "rank 3"
        assert sorted(str(table.get_row_at(i)[0]) for i in range(table.row_count)) == ["4109", "4110", "4111"]
