"""Release screen wording (issue 23): waived rows said, the wrong-name message keeps the
command, no "R releases" once released, one job counted once, no "g: download" when all is
downloaded, no warning for a 0 MiB sparse file, small files in KiB."""

import pytest

from remote_probe import tmux_control
from tui.core.checks import checklist as cv
from tui.core.text import format as fmt
from tui.core.providers import resolve
from tui.core.config import HostConfig


def item(key, verdict, waived=False):
    return cv.Item(key, key, verdict, "r", waived=waived)


@pytest.mark.parametrize("items,released,says,not_says", [
    ([item("a", cv.PASS), item("b", cv.FAIL, True), item("c", cv.WARN, True)], False,
     "every check passes or is waived (2 waived", None),
    ([item("a", cv.PASS)], False, "every check passes (R releases)", "waived"),
    ([item("a", cv.WARN)], False, "then R releases", None),
    ([item("a", cv.WARN)], True, "Released", "R releases"),
    ([item("a", cv.FAIL)], False, "fix or waive", None),
])
def test_headline(items, released, says, not_says):
    text, _v = cv.release_headline(items, released)
    assert says in text
    if not_says:
        assert not_says not in text


def pane(pid, gpu_pids, running=True):
    return {"id": "%1", "pid": pid, "command": "python", "running": running, "gpu_pids": gpu_pids}


def test_a_job_in_tmux_counts_once():
    sessions = [{"name": "train", "windows": [{"panes": [pane(100, [4100, 4101])]}]}]
    procs = [{"pid": 4100, "gpu": 0, "cmd": "python train.py"},
             {"pid": 4101, "gpu": 1, "cmd": "python train.py"},
             {"pid": 5000, "gpu": 0, "cmd": "python other.py"}]
    it = cv.check_jobs(procs, sessions)
    assert it.reason == "2 still running"  # the pane, and the GPU process outside tmux
    assert any("5000" in d for d in it.details) and not any("4100" in d for d in it.details)


def test_probe_lists_the_gpu_pids_under_each_pane():
    children = {100: [101], 101: [4100, 4101], 1: [5000]}
    assert tmux_control.pane_tree(100, children) == {100, 101, 4100, 4101}


def test_no_download_offer_when_everything_is_here():
    preset = resolve({}, HostConfig(provider="runpod"))
    path = "/root/ckpt.pt"  # outside /workspace: wiped
    here = [{"path": path, "state": "same", "size": 10, "mtime": 0}]
    assert cv.check_ephemeral(here, preset).fix is None
    missing = [dict(here[0], state="missing")]
    assert cv.check_ephemeral(missing, preset).fix == "g: download"
    assert cv.check_ephemeral(here, preset).verdict == cv.WARN  # still said: it is wiped


@pytest.mark.parametrize("entry,warned", [
    ({"kind": "temp", "path": "/tmp/sparse.img", "size": 50 << 30, "on_disk": 0}, False),
    ({"kind": "temp", "path": "/tmp/x.bin", "size": 5 << 20, "on_disk": 5 << 20}, True),
    ({"kind": "cache", "path": "/root/.cache/pip", "size": 3 << 30, "on_disk": 3 << 30}, True),
    ({"kind": "cache", "path": "/root/.cache/pip", "size": 3 << 30, "on_disk": 1 << 20}, False),
])
def test_sparse_leftovers_holding_nothing_are_not_warned(entry, warned):
    assert (cv.check_temp([entry]).verdict == cv.WARN) is warned


@pytest.mark.parametrize("n,text", [(0, "0 B"), (500, "500 B"), (12 * 1024, "12 KiB"),
                                    (3 << 20, "3 MiB"), (int(1.5 * (1 << 30)), "1.5 GiB")])
def test_sizes(n, text):
    assert fmt.size(n) == text


def test_small_artifacts_in_kib():
    st = [{"path": "/root/log.txt", "state": "missing", "size": 2048, "mtime": 0}]
    it = cv.check_artifacts(st)
    assert "(2 KiB)" in it.details[0] and "0 MiB" not in it.reason


async def test_wrong_name_keeps_the_command():
    from textual.app import App

    from tui.ui.screens.release_screen import TypeToConfirm

    class Host(App):
        def on_mount(self):
            self.push_screen(TypeToConfirm("box1", "shutdown -h now", []))
    app = Host()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.2)
        app.screen.query_one("#confirm-name").value = "box2"
        app.screen.submit()
        await pilot.pause(0.1)
        shown = str(app.screen.query_one("#what").render())
        assert "does not match" in shown and "shutdown -h now" in shown and "Type the host" in shown


def watched(pid, name, state="waiting", kind="python"):
    from tui.core.model import JobState, JobWatch
    return JobWatch(id="pid:%d" % pid, kind=kind, name=name, pid=pid, state=JobState(state))


def test_a_nohup_job_outside_tmux_is_still_running():
    """A CPU-only `nohup python preprocess.py &` is no GPU process and no tmux pane, but
    releasing the box kills it: the checklist fails on it (it passed before)."""
    it = cv.check_jobs([], [], [watched(7001, "python preprocess.py --shards 64")])
    assert it.verdict == cv.FAIL and it.reason == "1 still running"
    assert any("7001" in d and "preprocess.py" in d and "outside tmux" in d for d in it.details)
    # alive without a GPU is "no GPU use" here ("waiting" read as waiting for something); no
    # tmux pane is listed, so the fix is k alone
    assert "no GPU use" in it.details[0] and it.fix == "k: kill the process"


def test_the_fix_names_what_applies():
    sessions = [{"name": "train", "windows": [{"panes": [pane(100, [])]}]}]
    assert cv.check_jobs([], sessions).fix == "t: tmux panel (Ctrl-C a pane)"
    both = cv.check_jobs([{"pid": 5000, "gpu": 0, "cmd": "python x.py"}], sessions)
    assert both.fix == "t: tmux panel (Ctrl-C a pane) · k: kill the process"


def test_vram_on_a_box_without_a_gpu_says_so():
    assert cv.check_vram([], []).reason == "no GPU seen on this box"


def test_services_ended_jobs_and_gpu_processes_are_not_counted_again():
    jobs = [watched(7002, "/opt/conda/bin/python /opt/conda/bin/jupyter-lab --allow-root"),
            watched(7003, "python -m tensorboard.main --logdir runs"),
            watched(7009, "/usr/bin/python3 /root/.vscode-server/extensions/ms-python.python-2026.1/"
                          "python_files/run-jedi-language-server.py"),
            watched(7010, "/opt/conda/bin/python -m wandb service --port-fname /tmp/x"),
            watched(7011, "/usr/bin/python3 /usr/bin/supervisord -n"),
            watched(7004, "python train.py", state="finished"),
            watched(7005, "python eval.py", state="crashed"),
            watched(4100, "python train.py", state="running", kind="gpu")]
    it = cv.check_jobs([{"pid": 4100, "gpu": 0, "cmd": "python train.py"}], [], jobs)
    assert it.reason == "1 still running", it.details  # the GPU process, once
    assert cv.check_jobs([], [], jobs).verdict == cv.PASS


def test_a_notebook_kernel_is_a_warning_not_a_pass():
    kernel = watched(7006, "python -m ipykernel_launcher -f /root/.local/share/jupyter/runtime/k.json")
    it = cv.check_jobs([], [], [kernel])
    assert it.verdict == cv.WARN and "notebook kernel" in it.reason
    # next to a running job it is listed with it, the verdict the job's
    it = cv.check_jobs([], [], [kernel, watched(7007, "python train.py", state="hung")])
    assert it.verdict == cv.FAIL and len(it.details) == 2
    # the count is the jobs', and the kernel's line says it is only a warning (a user counted
    # "1 still running" against two lines)
    assert it.reason == "1 still running" and "warning only" in it.details[1]


def test_a_hostile_job_name_is_shown_as_text():
    it = cv.check_jobs([], [], [watched(7008, "python [bold]x[/]\x1b[31m.py")])
    assert "\x1b" not in " ".join(it.details)
