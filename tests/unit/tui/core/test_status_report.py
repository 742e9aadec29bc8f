"""`status` text says autostop, `status --json` carries the dataloaders (issue 23)."""

import time

from tui.core import report


def reply(autostop=None):
    return {"inventory": {"backend": "sim", "driver": "550", "cuda_driver": "12.4", "gpus": [],
                          "host": {"ncpu": 8}},
            "sample": {"t": 1000.0, "seq": 1, "gpus": [], "procs": [], "host": {}},
            "proc_meta": [],
            "jobs": {"tmux": {"sessions": []}, "unprotected": [],
                     "loaders": {"trainers": [{"pid": 4100, "workers": [
                         {"pid": 4101, "cpu": 97.0, "rss": 900, "state": "R"}]}]}},
            "autostop": autostop}


def test_json_has_the_dataloaders():
    doc = report.status_json(reply(), "box")
    assert doc["dataloaders"] == [{"pid": 4100, "workers": [
        {"pid": 4101, "cpu": 97.0, "rss": 900, "state": "R"}]}]
    assert report.status_json(dict(reply(), jobs=None), "box")["dataloaders"] == []


def test_text_says_autostop(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    try:
        off = report.status_text(report.status_json(reply(), "box"))
        assert "autostop off" in off
        armed = report.status_text(report.status_json(reply(
            {"armed": {"idle_seconds": 1800, "deadline": 86400 * 2 + 7 * 3600}, "idle_for": 300}), "box"))
        assert "autostop armed: idle 30:00 (now 5:00), at 01-03 07:00" in armed
        # the way to cancel it on the box, for this probe's directory (README: "the path is in status")
        cancel = "sh '/home/u/~/.cache/gputui x/cancel-autostop'"
        armed = report.status_text(report.status_json(reply(
            {"armed": {"idle_seconds": 60}, "cancel_command": cancel}), "box"))
        assert "cancel on the box: %s" % cancel in armed
        assert "cancel on the box" not in report.status_text(report.status_json(reply(
            {"armed": None, "cancel_command": cancel}), "box"))
        grace = report.status_text(report.status_json(reply({"armed": {"idle_seconds": 60},
                                                               "grace_left": 42}), "box"))
        assert "AUTOSTOP in 42s" in grace
    finally:
        monkeypatch.undo()
        time.tzset()


def test_a_box_without_proc_says_so_in_status_and_json():
    """The jobs block's no_proc: `status` warns that jobs outside tmux cannot be seen, the
    JSON carries it, and a box with /proc says nothing of the kind."""
    from tui.core.jobs.tmux_rows import no_proc_notice
    bare = reply()
    bare["jobs"] = dict(bare["jobs"], no_proc=True)
    doc = report.status_json(bare, "box")
    assert doc["no_proc"] is True
    assert "⚠ " + no_proc_notice(True) in report.status_text(doc).splitlines()
    normal = report.status_json(reply(), "box")
    assert normal["no_proc"] is False and "/proc" not in report.status_text(normal)
