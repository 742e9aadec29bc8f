"""The fleet row's watched jobs (issue 21): the JOBS column carries the running job's progress and
ETA ('42% 1h56m') or a crashed/hung job's state in place of the GPU job count, and the screen still shows its first six
columns whole at 80x24; `fleet --check`'s table puts it in the note."""

import pytest
from rich.cells import cell_len
from textual.widgets import DataTable

from tui.core.fleet import rows as fleet

from tests.support.fleet_canned import canned_fleet_app
from tests.e2e.test_i18n_screens import screen_text
from tests.support.watch_canned import NOW, watch_list


def feed_watched(app):
    app.feed()
    boxes = {b.host: b for b in app.fleet.boxes}
    boxes["a100-train"].on_jobs({"unprotected": [], "watch": [watch_list(NOW)[0]]})
    boxes["h100-sweep"].on_jobs({"unprotected": [], "watch": watch_list(NOW)})


@pytest.mark.parametrize("size", [(80, 24), (160, 50)], ids=lambda s: "%dx%d" % s)
async def test_fleet_jobs_column(size):
    app = canned_fleet_app()
    async with app.run_test(size=size) as pilot:
        feed_watched(app)
        await pilot.pause(1.5)
        text = screen_text(app)
        table = app.screen.query_one(DataTable)
        widths = [c.get_render_width(table) for c in table.ordered_columns]
        cells = {h: [c.plain for c in table.get_row(h)] for h in app.screen.order}
        await app.action_quit()
    assert cells["a100-train"][3] == "42% 1h56m", cells["a100-train"]
    assert cells["h100-sweep"][3] == "crashed", cells["h100-sweep"]
    assert cells["4090-forgot"][3] == "0"  # no watched job: the count alone
    lines = text.splitlines()
    assert all(cell_len(line) <= size[0] for line in lines)
    assert widths[3] >= cell_len("42% 1h56m") + 2
    shown = 0
    start = 1
    for w in widths:
        if start + w <= size[0]:
            shown += 1
        start += w
    assert shown >= 6, widths  # host, state, GPUs, jobs, unprotected, idle still fit at 80
    assert any("42% 1h56m" in line and "a100-train" in line for line in lines), text
    if size[0] >= 160:  # the note column: what finishing costs at the box's rate (9.8/h)
        assert cells["a100-train"][-1] == "¥19.10 to finish", cells["a100-train"]


def test_check_table_notes_the_progress():
    rows = [fleet.BoxRow("a100-train", fleet.LIVE, jobs=2, progress="42% 1h56m", rate=9.8,
                         cost_to_finish=19.1)]
    assert fleet.fleet_table(rows).splitlines()[1].rstrip().endswith("42% 1h56m  ¥19.10 to finish")


def test_a_box_without_proc_says_so_in_the_fleet_note():
    bare = fleet.BoxRow("mac-demo", fleet.LIVE, jobs=0, rate=1.0, no_proc=True)
    normal = fleet.BoxRow("a100", fleet.LIVE, jobs=0, rate=1.0)
    assert fleet.fleet_table([bare]).splitlines()[1].rstrip().endswith(
        "no /proc: jobs outside tmux not seen")
    assert "/proc" not in fleet.fleet_table([normal])
    # a watched job's progress says more than that and keeps the note
    busy = fleet.BoxRow("mac-demo", fleet.LIVE, progress="42% 1h56m", no_proc=True)
    assert fleet.finish_note(busy) == "42% 1h56m"


async def test_the_fleet_row_of_a_box_without_proc():
    app = canned_fleet_app()
    async with app.run_test(size=(160, 50)) as pilot:
        app.feed()
        boxes = {b.host: b for b in app.fleet.boxes}
        boxes["a100-train"].on_jobs({"unprotected": [], "no_proc": True})
        await pilot.pause(1.5)
        table = app.screen.query_one(DataTable)
        cells = {h: [c.plain for c in table.get_row(h)] for h in app.screen.order}
        await app.action_quit()
    assert cells["a100-train"][-1] == "no /proc: jobs outside tmux not seen", cells["a100-train"]
    assert "/proc" not in cells["h100-sweep"][-1]


def test_the_check_table_shows_the_watched_jobs_progress_as_the_screen_does():
    from tui.core.fleet.rows import BoxRow, LIVE, fleet_table
    rows = [BoxRow(host="a", state=LIVE, jobs=2, progress="42% 1h56m", unprotected=1),
            BoxRow(host="b", state=LIVE, jobs=3, unprotected=5)]
    head, a, b = fleet_table(rows).splitlines()
    end = head.index("JOBS") + len("JOBS")  # right-aligned under their title, the rest not pushed
    assert a[:end].endswith("42% 1h56m") and b[:end].endswith(" 3")
    assert a.index("    1 ") == b.index("    5 ") == head.index("UNPR") - 1
