"""The laptop's reading of the daemon's watched jobs (issue 21): the reader keeps hostile text as
data and turns bad types into "not available"; cost to finish counts the billing unit honestly;
the status document has per job state, progress.fraction, eta_seconds and cost_to_finish."""

import json

import pytest

from tui.core import from_wire
from tui.core.billing import rates as billing
from tui.core.jobs import lines as job_lines
from tui.core.model import JobState
from tui.core.report import jobs_json

from tests.support.watch_canned import NOW, TOKEN, jobs_block, watch_list


def test_reader_builds_the_contract_fields():
    jobs = from_wire.jobs(jobs_block()).watch
    assert [j.id for j in jobs] == ["tmux:%1", "tmux:%2", "pid:4300"]
    run, crash, hung = jobs
    assert run.state is JobState.RUNNING and run.pane == "%1" and run.pid == 4100
    assert run.progress.fraction == 0.42 and run.progress.eta_seconds == 7015.0
    assert run.progress.source == "tqdm" and run.checkpoint.stale and not run.checkpoint.wiped_disk
    assert crash.state is JobState.CRASHED and crash.cause == "cuda_oom" and crash.exit == 1
    assert crash.evidence[-1].startswith("torch.OutOfMemoryError")
    assert hung.name == "python prep.py [/red]"  # markup-looking text stays text
    assert hung.checkpoint.wiped_disk


@pytest.mark.parametrize("field,value,read", [
    ("state", "exploded", lambda j: j.state is None),
    ("state", 3, lambda j: j.state is None),
    ("pid", "4100", lambda j: j.pid is None),
    ("pid", True, lambda j: j.pid is None),
    ("exit", 1.5, lambda j: j.exit is None),
    ("name", ["x"], lambda j: j.name == ""),
    ("evidence", "one line", lambda j: j.evidence == ()),
    ("evidence", ["ok", 3, None, "\x1b[2Jboom"], lambda j: j.evidence == ("ok", "\x1b[2Jboom")),
    ("progress", "42%", lambda j: j.progress is None),
    ("progress", {"fraction": 1.7, "eta_seconds": -5}, lambda j: j.progress.fraction is None
     and j.progress.eta_seconds is None),
    ("progress", {"fraction": "0.5", "eta_seconds": float("nan")},
     lambda j: j.progress.fraction is None and j.progress.eta_seconds is None),
    ("checkpoint", {"age_s": 10}, lambda j: j.checkpoint is None),
    ("checkpoint", {"path": "/c.pt", "stale": "yes", "wiped_disk": 1},
     lambda j: j.checkpoint.stale is False and j.checkpoint.wiped_disk is False),
    ("since", "yesterday", lambda j: j.since is None),
])
def test_reader_bad_types_become_not_available(field, value, read):
    row = dict(watch_list()[0], **{field: value})
    (job,) = from_wire.job_watches([row])
    assert read(job), job


def test_reader_drops_rows_without_id_and_bounds_the_list():
    rows = [{"state": "running"}, {"id": 7}, "x", None] + [dict(watch_list()[0], id="pid:%d" % i)
                                                           for i in range(100)]
    jobs = from_wire.job_watches(rows)
    assert len(jobs) <= from_wire.MAX_WATCH and all(j.id.startswith("pid:") for j in jobs)
    assert from_wire.jobs({"watch": "nope"}).watch == ()
    assert from_wire.jobs(None).watch == ()


H = 3600.0


@pytest.mark.parametrize("eta,rate,gran,elapsed,want", [
    (1800, 10.0, "second", 0, 5.0),            # half an hour at 10/h
    (1800, 10.0, "second", 5 * H, 5.0),        # per second: elapsed does not matter
    (90, 6.0, "minute", 30, 0.1),              # 30 s + 90 s = 2 min billed, 1 already: 1 more minute
    (0.25 * H, 8.0, "hour", 1.5 * H, 0.0),     # ends inside the hour already charged
    (0.75 * H, 8.0, "hour", 1.5 * H, 8.0),     # crosses into hour 3: that whole hour
    (2.6 * H, 8.0, "hour", 1.5 * H, 24.0),     # ends at 4.1 h: hours 3, 4 and 5
    (0.5 * H, 8.0, "hour", None, 8.0),         # no session start: the ETA's own started hour
    (0, 8.0, "hour", 2 * H, 0.0),
    (None, 8.0, "second", 0, None),
    (100, None, "second", 0, None),
    (-5, 8.0, "second", 0, None),
])
def test_cost_to_finish(eta, rate, gran, elapsed, want):
    got = billing.cost_to_finish(eta, rate, gran, elapsed)
    assert got == (None if want is None else pytest.approx(want)), got


def test_job_lines_order_and_figures():
    jobs = from_wire.jobs(jobs_block()).watch
    lines = job_lines.job_lines(jobs, NOW, rate=11.96, granularity="second", elapsed=3723)
    assert [ln.job.state for ln in lines] == [JobState.CRASHED, JobState.HUNG, JobState.RUNNING]
    run = lines[2]
    assert run.finish_at == NOW + 7015 and run.cost_to_finish == pytest.approx(7015 / H * 11.96)
    assert lines[0].cost_to_finish is None  # a crashed job costs nothing more to finish
    assert run.checkpoint_warning and lines[1].checkpoint_warning  # stale; on a wiped disk
    assert job_lines.fleet_cell(lines) == ("crashed", "alarm")
    assert job_lines.fleet_cell([run]) == ("42% 1h56m", "run")
    assert job_lines.fleet_cell([]) == ("", "")


def test_eta_counts_from_the_reading():
    row = dict(watch_list()[0])
    row["progress"] = dict(row["progress"], eta_seconds=600.0, at=NOW - 30)
    (job,) = from_wire.job_watches([row])
    (ln,) = job_lines.job_lines([job], NOW, rate=6.0, granularity="second", elapsed=0)
    assert ln.eta == 570.0 and ln.finish_at == NOW + 570 and ln.cost_to_finish == pytest.approx(0.95)
    late = job_lines.job_lines([job], NOW + 900, rate=6.0, granularity="second", elapsed=0)[0]
    assert late.eta == 0.0  # overdue: not negative


def test_status_json_per_job():
    reply = {"jobs": jobs_block()}
    bill = {"start": NOW - 3723, "elapsed_s": 3723, "rate": 11.96, "currency": "CNY",
            "granularity": "hour"}
    docs = jobs_json(reply, bill, now=NOW)
    by_id = {d["id"]: d for d in docs}
    run = by_id["tmux:%1"]
    assert run["state"] == "running" and run["progress"]["fraction"] == 0.42
    assert run["eta_seconds"] == 7015.0
    # per started hour: 1:02:03 in (2 hours charged), ends at 2:58:58 -> hour 3 only
    assert run["cost_to_finish"] == pytest.approx(11.96)
    assert by_id["tmux:%2"]["state"] == "crashed" and by_id["tmux:%2"]["cost_to_finish"] is None
    assert by_id["tmux:%2"]["progress"] is None and by_id["tmux:%2"]["cause"] == "cuda_oom"
    text = json.dumps(docs)
    assert TOKEN not in text
    assert jobs_json({}, bill, now=NOW) == [] and jobs_json({"jobs": jobs_block()}, None, now=NOW)[0][
        "cost_to_finish"] is None


@pytest.mark.parametrize("status,want", [
    ({"armed": {}, "rule": "utilization"}, "idle rule: GPU utilization"),
    ({"armed": {}, "rule": "no_compute", "when_job_done": "tmux:%1"},
     "idle rule: no compute process (utilization not reported); releases when train vit-l16:0.0 ends"),
    ({"armed": {}, "when_job_done": "pid:99"}, "releases when pid:99 ends"),
    ({"armed": {"when_job_done": "tmux:%2"}, "rule": "no_gpu"},
     "idle rule: no GPU, never idle; releases when eval:0.0 ends"),
    ({"armed": {}, "rule": 5}, None),
    ({"armed": {}}, None),
    (None, None),
])
def test_autostop_rule_words(status, want):
    jobs = from_wire.jobs(jobs_block()).watch
    assert job_lines.autostop_rule(status, jobs) == want


def test_hostile_job_text_renders_as_data():
    """Names, causes and evidence from the box: markup stays literal, control codes visible."""
    from rich.console import Console

    from tui.ui.widgets.jobs_panel import pane_job_cell, render_jobs
    rows = watch_list()
    rows[1] = dict(rows[1], name="[bold red]x[/] \x1b[2J\x07", cause="[@click=app.quit]",
                   evidence=["\x1b]0;pwned\x07 [link=http://e]y[/link]"])
    rows[0] = dict(rows[0], name="a" * 500)
    jobs = from_wire.jobs({"watch": rows}).watch
    lines = job_lines.job_lines(jobs, NOW, 11.96, "second", 3723)
    for width in (40, 76, 116):
        text = render_jobs(lines, width, NOW, "CNY")
        plain = text.plain
        assert "\x1b" not in plain and "\x07" not in plain
        assert "[bold red]x[/]" in plain or width < 60
        assert all(len(line) <= width for line in plain.splitlines()), plain
        Console(width=200, file=open("/dev/null", "w")).print(text)  # no MarkupError
    cell = pane_job_cell(lines[0], NOW, "CNY")
    assert "[@click=app.quit]" in cell.plain and "\x1b" not in cell.plain


def test_jobs_panel_in_one_line_keeps_the_first_job_and_counts_the_rest():
    """A short terminal leaves the jobs panel one line: the first job stays readable and the
    rest are counted, within the width."""
    from tui.ui.widgets.jobs_panel import render_jobs
    jobs = from_wire.jobs({"watch": watch_list()}).watch
    lines = job_lines.job_lines(jobs, NOW, 11.96, "second", 3723)
    whole = render_jobs(lines, 76, NOW, "CNY").plain.splitlines()
    assert len(whole) > 1
    one = render_jobs(lines, 76, NOW, "CNY", max_lines=1).plain
    assert "\n" not in one and len(one) <= 76
    assert one.startswith(whole[0][:20]) and one.endswith("%d more lines" % (len(whole) - 1)), one


def test_status_json_names_the_stuck_ranks_of_a_hung_job():
    row = {"id": "tmux:%1", "kind": "tmux", "name": "ddp:0.0", "state": "hung", "cause": "progress_stalled",
           "evidence": ["no new step for 3 min (its steps take 3.0 s), GPUs at idle power: GPU 1 (rank 1) idle"],
           "since": NOW - 60, "stuck": [{"gpu": 1, "pid": 4101, "rank": 1, "how": "idle"},
                                        {"pid": 7}, "junk"]}
    doc = jobs_json({"jobs": {"watch": [row]}}, None, now=NOW)[0]
    assert (doc["state"], doc["cause"]) == ("hung", "progress_stalled")
    assert doc["stuck"] == [{"gpu": 1, "pid": 4101, "rank": 1, "how": "idle"}]  # a row without a GPU is dropped
    assert job_lines.cause_text("progress_stalled") == "no new step for many times its step time"
