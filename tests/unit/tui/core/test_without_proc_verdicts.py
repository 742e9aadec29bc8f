"""What the laptop says of a box without /proc (the demo's probe on macOS, issue 23): a tmux
pane the probe cannot see into is "cannot check here", never a pass or an "idle shell"."""

import pytest

from tui.core import from_wire
from tui.core.checks.checklist import check_jobs, env_frozen_text
from tui.core.jobs.tmux_rows import no_proc_notice, pane_rows
from tui.core.checks.preflight import FAIL, PASS, WARN


def sessions(*panes):
    return [{"id": "$1", "name": "s", "windows": [{"index": 0, "name": "w", "panes": [
        dict({"id": "%%%d" % i, "command": "bash"}, **p) for i, p in enumerate(panes)]}]}]


@pytest.mark.parametrize("panes, procs, verdict", [
    ([{"running": None}], [], WARN),                    # a shell in front, no /proc: unknown
    ([{"running": None, "dead": True}], [], PASS),      # a dead pane runs nothing
    ([{"running": False}], [], PASS),                   # the tree says: an idle shell
    ([{}], [], PASS),                                   # an older probe without the field
    ([{"running": True, "command": "python3"}], [], FAIL),
    ([{"running": None}, {"running": True}], [], FAIL),  # a known job outweighs the unknown
    ([{"running": None}], [{"pid": 7, "gpu": 0, "cmd": "train.py"}], FAIL),
])
def test_check_jobs_with_unknown_panes(panes, procs, verdict):
    item = check_jobs(procs, sessions(*panes))
    assert item.verdict == verdict
    if verdict == WARN:
        assert "cannot check here" in item.reason and item.details and item.fix


@pytest.mark.parametrize("reply, words", [
    ({"python": "/usr/bin/python3", "python_source": "no_proc"}, "cannot be read"),
    ({"python": "/usr/bin/python3", "python_source": "default"}, "no running job uses python"),
    ({"python": "/v/bin/python", "python_source": "job", "python_pid": 9}, "PID 9"),
])
def test_env_frozen_text_says_why(reply, words):
    assert words in env_frozen_text(reply)


@pytest.mark.parametrize("pane, suffix", [
    ({"running": None}, "(cannot tell: no /proc)"),
    ({"running": False}, "(idle shell)"),
    ({"running": None, "dead": True}, "(idle shell)"),
    ({"running": True}, ""),
])
def test_pane_rows_say_unknown_not_idle(pane, suffix):
    row = pane_rows(sessions(pane), 0.0)[0]
    assert row["command"] == "bash" + (" " + suffix if suffix else "")


@pytest.mark.parametrize("block, no_proc", [
    ({"no_proc": True}, True), ({}, False), ({"no_proc": "yes"}, False), (None, False),
])
def test_jobs_block_no_proc_flag(block, no_proc):
    assert from_wire.jobs(block).no_proc is no_proc
    notice = no_proc_notice(from_wire.jobs(block).no_proc)
    assert (notice is not None and "No /proc" in notice) is no_proc


def test_the_no_proc_cause_reads_as_words():
    from tui.core.jobs.lines import cause_text
    assert "without /proc" in cause_text("no_proc")
