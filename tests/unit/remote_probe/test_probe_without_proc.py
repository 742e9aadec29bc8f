"""The probe's decisions where there is no /proc (macOS runs the demo's probe, issue 23):
liveness by signal 0 and flock, tmux panes judged from tmux's own state, no process job
judged at all, the job's interpreter "cannot be read" rather than "no job uses python"."""

import ast
import fcntl
import json
import os
import pathlib
import subprocess
import sys
import threading
import time

import pytest

from remote_probe import daemon, dataloader, procfs
from remote_probe.autostop import supervise
from remote_probe.files import checklist_facts
from remote_probe import tmux_control as tmux
from remote_probe.watch import loop as watch_loop
from remote_probe.watch.loop import JobWatch

from tests.support.sshd import REPO

# where a literal "/proc" may stay: the proc root itself, and a mount-point prefix
ALLOWED = {("procfs/reader.py", "/proc"), ("procfs/disks.py", "/proc")}


def test_every_proc_path_goes_through_the_proc_root():
    """A hard-coded "/proc/..." is read on Linux even with GPUTUI_PROC_ROOT hidden, so no test
    could show it fail on macOS: every /proc path is built from procfs.PROC."""
    found = []
    root = pathlib.Path(REPO) / "remote_probe"
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and n.body and isinstance(n.body[0], ast.Expr)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and node.value.startswith("/proc") and id(node) not in docs
                    and (path.relative_to(root).as_posix(), node.value) not in ALLOWED):
                found.append("%s:%d %r" % (path.relative_to(root), node.lineno, node.value))
    assert found == []


def _dead_pid():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.mark.parametrize("pid, alive", [
    ("self", True), (1, True), (0, False), (-1, False), (None, False), ("12", False),
])
def test_pid_alive_table(pid, alive):
    pid = os.getpid() if pid == "self" else pid  # the same test ids in every xdist worker
    assert procfs.pid_alive(pid) is alive


def test_pid_alive_of_a_reaped_child_is_false():
    assert procfs.pid_alive(_dead_pid()) is False


def test_a_zombie_is_gone_with_proc_and_alive_without(monkeypatch, tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    for _ in range(200):  # exited, not reaped: a zombie
        if procfs.pid_state(child.pid) == "Z":
            break
        time.sleep(0.02)
    try:
        assert procfs.pid_gone(child.pid) is True
        monkeypatch.setattr(procfs.reader, "PROC", str(tmp_path))  # no /proc: cannot tell
        assert procfs.pid_state(child.pid) is None and procfs.pid_gone(child.pid) is False
    finally:
        child.wait()


@pytest.mark.parametrize("pane, running", [
    ({"dead": True, "running": False}, False),
    ({"dead": False, "running": True}, True),    # tmux shows a program in front
    ({"dead": False, "running": False}, None),   # a shell in front: a script may run below it
])
def test_running_without_tree(pane, running):
    assert tmux.running_without_tree(pane) is running


def _panes(**extra):
    pane = dict({"id": "%1", "index": 0, "pid": os.getpid(), "command": "python3", "path": "/",
                 "active": True, "dead": False, "running": True, "dead_status": None,
                 "dead_signal": None}, **extra)
    return [{"id": "$1", "name": "train", "attached": 0, "created": 0,
             "windows": [{"id": "@1", "index": 0, "name": "w", "panes": [pane]}]}]


def test_judge_panes_without_a_tree_keeps_tmux_state(tmp_path):
    scan = procfs.ProcScan(str(tmp_path))
    sessions = _panes(command="bash", running=False) + _panes(command="python3", running=True)
    tmux._judge_panes(sessions, scan, gpu_pids=[4242], tree_known=False)
    shell, job = [s["windows"][0]["panes"][0] for s in sessions]
    assert shell["running"] is None and job["running"] is True
    assert shell["gpu_pids"] == job["gpu_pids"] == [] and shell["started"] is None


@pytest.fixture
def blind_watch(tmp_path, monkeypatch):
    screen = {"text": "epoch 1\n"}
    monkeypatch.setattr(tmux, "capture", lambda pane, lines=80: screen["text"])
    clock = [1000.0]
    watch = JobWatch(clock=lambda: clock[0], proc_known=False)
    # the simulator's GPU processes: this machine's, but nothing tells their command
    watch.observe_sample({"t": clock[0], "gpus": [[0] * 12],
                          "procs": [[os.getpid() + 1, 0, 500, None, None, 0, None]]})
    scan = procfs.ProcScan(str(tmp_path))
    return watch, scan, clock, screen


def test_blind_watch_judges_a_live_pane_running_on_tmux_word(blind_watch):
    watch, scan, clock, screen = blind_watch
    for _ in range(3):
        clock[0] += 700  # longer than hung_after: silence must not read as "hung" here
        assert watch.scan({"sessions": _panes()}, scan, now=clock[0]) == []
    rows = watch.rows()
    assert [r["id"] for r in rows] == ["tmux:%1"]  # no process job for the GPU pid
    assert rows[0]["state"] == "running" and rows[0]["cause"] == watch_loop.NO_PROC_CAUSE
    assert "no /proc" in rows[0]["evidence"][0]


def test_blind_watch_ends_a_pane_job_by_tmux_exit_status(blind_watch):
    watch, scan, clock, screen = blind_watch
    watch.scan({"sessions": _panes()}, scan, now=clock[0])
    clock[0] += 60
    screen["text"] = "epoch 1\nTraceback (most recent call last):\nValueError: bad\n"
    events = watch.scan({"sessions": _panes(dead=True, running=False, dead_status=1)}, scan,
                        now=clock[0])
    assert [e["kind"] for e in events] == ["crashed"]
    assert watch.rows()[0]["state"] == "crashed" and watch.rows()[0]["exit"] == 1


def test_blind_watch_leaves_a_shell_pane_unjudged(blind_watch):
    watch, scan, clock, screen = blind_watch
    for _ in range(2):
        clock[0] += 5
        watch.scan({"sessions": _panes(command="bash", running=None)}, scan, now=clock[0])
    assert watch.rows() == []


@pytest.mark.parametrize("available, source", [(True, None), (False, "no_proc")])
def test_interpreter_unknown_source(available, source):
    assert checklist_facts.interpreter_unknown_source(available) == source


def test_env_capture_without_proc_says_the_interpreter_cannot_be_read(monkeypatch, tmp_path):
    monkeypatch.setattr(procfs, "PROC", str(tmp_path))
    monkeypatch.setattr(procfs.reader, "PROC", str(tmp_path))
    monkeypatch.setattr(checklist_facts.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(
        a, 0, b"six==1\n", b""))
    monkeypatch.setattr(checklist_facts.shutil, "which", lambda name, path=None: None)
    out = checklist_facts.env_capture(pids=[os.getpid()])
    assert out["python_source"] == "no_proc" and out["python_pid"] is None


def test_hook_stats_of_live_and_dead_pids_without_proc(tmp_path):
    now = time.time()
    for pid in (os.getpid(), _dead_pid()):
        (tmp_path / ("dl-%d.json" % pid)).write_text(json.dumps({"t": now, "batch": 8}))
    out = dataloader.read_hook_stats(str(tmp_path), now=now)  # default liveness: signal 0
    assert [s["pid"] for s in out] == [os.getpid()]
    assert sorted(os.listdir(str(tmp_path))) == ["dl-%d.json" % os.getpid()]


@pytest.mark.parametrize("comm, available, alive_and_locked, ours", [
    ("gputui-watch\n", True, False, True),
    (os.path.basename(sys.executable) + "\n", False, False, True),  # before it named itself
    ("bash\n", True, True, False),   # the pid was reused by something else
    (None, True, True, False),       # /proc has no such process: gone
    (None, False, True, True),       # no /proc: the lock the watcher holds says it is there
    (None, False, False, False),
])
def test_still_the_watcher(comm, available, alive_and_locked, ours):
    assert supervise.still_the_watcher(comm, available, lambda: alive_and_locked) is ours


def test_lock_held_by_another_open_file(tmp_path):
    lock = tmp_path / supervise.SUPERVISE_LOCK
    lock.write_text("{}")
    assert supervise.lock_held(str(lock)) is False
    with open(str(lock)) as holder:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert supervise.lock_held(str(lock)) is True
    assert supervise.lock_held(str(tmp_path / "missing")) is False


def test_terminate_without_proc_waits_for_the_daemon_by_signal_0(monkeypatch, tmp_path):
    monkeypatch.setattr(procfs.reader, "PROC", str(tmp_path / "no-proc"))
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    reaper = threading.Thread(target=child.wait)  # the daemon's parent reaps it
    reaper.start()
    state = tmp_path / "state"
    state.mkdir()
    (state / "daemon.lock").write_text(json.dumps({"pid": child.pid}))
    t0 = time.monotonic()
    daemon.terminate(str(state), timeout=10)
    reaper.join(10)
    assert child.returncode is not None and time.monotonic() - t0 < 5
