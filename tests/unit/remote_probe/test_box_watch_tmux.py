"""The job watch over a real tmux server and the real /proc: a pane whose process exits
keeps its exit status (remain-on-exit), a job typed into a shell that dies of a traceback
is judged crashed, a killed pane leaves the list, a clean exit is finished."""

import os
import shlex
import shutil
import signal
import sys
import time

import pytest

from remote_probe import procfs, tmux_control as tmux
from remote_probe.watch.loop import JobWatch

from tests.unit.tui.core.test_tmux import tmux_server, wait_for  # noqa: F401  (fixture)

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")

PY = shlex.quote(sys.executable)


@pytest.fixture(autouse=True)
def reaping_tmux():
    """The tmux server inherits this process's signal mask; under `timeout` SIGCHLD is
    blocked and tmux never learns a pane's exit status (the daemon unblocks it too)."""
    old = signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGCHLD])
    yield
    signal.pthread_sigmask(signal.SIG_SETMASK, old)


def scan(watch, clock):
    clock[0] += 5.0
    return watch.scan(tmux.status(), procfs.ProcScan(), now=clock[0])


def judged(watch, clock, job_id, state, timeout=40):
    end = time.time() + timeout
    events = []
    while time.time() < end:
        events += scan(watch, clock)
        row = [r for r in watch.rows() if r["id"] == job_id]
        if row and row[0]["state"] == state:
            return row[0], events
        time.sleep(0.3)
    raise AssertionError((state, watch.rows()))


def test_exec_job_keeps_its_exit_status_and_is_crashed(tmux_server):  # noqa: F811
    clock = [time.time()]
    watch = JobWatch(clock=lambda: clock[0])
    code = "import time, sys; time.sleep(2); print('NCCL error: unhandled system error'); sys.exit(3)"
    job = tmux.new_job("ddp", "exec %s -c %s" % (PY, shlex.quote(code)))
    job_id = "tmux:" + job["pane"]
    judged(watch, clock, job_id, "waiting")
    row, events = judged(watch, clock, job_id, "crashed")
    # judged from its last lines at once; tmux's exit status may come seconds later
    assert row["exit"] in (3, None) and row["cause"] == "nccl_error"
    assert [(e["kind"], e["job"]) for e in events] == [("crashed", job_id)]
    # remain-on-exit: the pane stays, dead, with its exit status once tmux has one (a tmux
    # server started from an xdist worker sometimes never fills #{pane_dead_status} in: that
    # is tmux's; the watch judges without it, above)
    panes = lambda: tmux.list_sessions()[0]["windows"][0]["panes"]  # noqa: E731
    pane = wait_for(lambda: panes()[0] if panes()[0]["dead"] else None, 30)
    time.sleep(1)
    assert panes()[0]["dead_status"] in (3, None), pane
    tmux.kill_session(job["session"])
    scan(watch, clock)
    assert [r for r in watch.rows() if r["id"] == job_id] == []


def test_job_typed_into_a_shell_that_raises_is_crashed(tmux_server):  # noqa: F811
    clock = [time.time()]
    watch = JobWatch(clock=lambda: clock[0])
    code = "import time; time.sleep(2); raise ValueError('bad batch shape')"
    job = tmux.new_job("train", "%s -c %s" % (PY, shlex.quote(code)))
    job_id = "tmux:" + job["pane"]
    judged(watch, clock, job_id, "waiting")
    row, events = judged(watch, clock, job_id, "crashed")
    assert row["cause"] == "traceback" and "ValueError: bad batch shape" in row["evidence"][0]
    assert len(events) == 1 and "ValueError" in events[0]["fields"]["evidence"]
    for _ in range(3):  # judged once: more scans say nothing new
        assert scan(watch, clock) == []


def test_clean_exit_is_finished(tmux_server, monkeypatch):  # noqa: F811
    from remote_probe.watch import loop as watch_loop
    monkeypatch.setattr(watch_loop, "MIN_NEWS_S", 1.0)  # a 2 s job counts as one here
    clock = [time.time()]
    watch = JobWatch(clock=lambda: clock[0])
    job = tmux.new_job("ok", "exec %s -c 'import time; time.sleep(2)'" % PY)
    job_id = "tmux:" + job["pane"]
    judged(watch, clock, job_id, "waiting")
    row, events = judged(watch, clock, job_id, "finished")
    # exit 0 once tmux has reaped the process; on a loaded box that can take longer than
    # the watch waits (SETTLE_S), and the job is then "finished, exit status unknown"
    assert (row["exit"], row["cause"]) in ((0, "exit_0"), (None, "exited"))
    assert [e["kind"] for e in events] == ["finished"]


def test_a_crash_between_two_scans_is_still_seen(tmux_server):  # noqa: F811
    clock = [time.time()]
    watch = JobWatch(clock=lambda: clock[0])
    job = tmux.new_job("quick", "")
    wait_for(lambda: "#" in tmux.capture(job["pane"]) or "$" in tmux.capture(job["pane"]))
    time.sleep(1.0)
    scan(watch, clock)  # an idle shell: not a job
    assert not [r for r in watch.rows() if r["kind"] == "tmux" and r["state"] == "crashed"]
    tmux.run("send-keys", "-t", job["pane"], "-l",
             "%s -c %s" % (PY, shlex.quote("raise MemoryError('CUDA out of memory. Tried')")))
    tmux.run("send-keys", "-t", job["pane"], "Enter")
    wait_for(lambda: "CUDA out of memory" in tmux.capture(job["pane"]).split("raise", 1)[-1]
             and "Traceback" in tmux.capture(job["pane"]))
    time.sleep(0.5)
    row, events = judged(watch, clock, "tmux:" + job["pane"], "crashed")
    assert row["cause"] == "cuda_oom" and [e["kind"] for e in events] == ["crashed"]


def test_a_new_pane_whose_job_crashed_before_the_first_scan(tmux_server):  # noqa: F811
    clock = [time.time()]
    watch = JobWatch(clock=lambda: clock[0])
    job = tmux.new_job("fast", "%s -c %s" % (PY, shlex.quote("raise SystemError('NCCL error: x')")))
    wait_for(lambda: "Traceback" in tmux.capture(job["pane"]))
    time.sleep(0.3)
    events = scan(watch, clock)
    assert [(e["kind"], e["fields"]["cause"]) for e in events] == [("crashed", "nccl_error")]


def test_a_second_job_in_a_ctrl_c_d_pane_is_not_called_interrupted(tmux_server, monkeypatch):  # noqa: F811
    """Ctrl-C a job, run another in the same pane, let it end by itself: its message said
    "stopped with Ctrl-C" (the earlier job's KeyboardInterrupt was still on the pane)."""
    from remote_probe.watch import loop as watch_loop
    monkeypatch.setattr(watch_loop, "MIN_NEWS_S", 1.0)
    clock = [time.time()]
    watch = JobWatch(clock=lambda: clock[0])
    job = tmux.new_job("train", "%s -c 'import time; time.sleep(60)'" % PY)
    job_id = "tmux:" + job["pane"]
    judged(watch, clock, job_id, "waiting")
    time.sleep(1.5)
    tmux.interrupt(job["pane"])
    row, events = judged(watch, clock, job_id, "finished")
    assert row["cause"] == "interrupted", row
    wait_for(lambda: "KeyboardInterrupt" in tmux.capture(job["pane"]))
    tmux.run("send-keys", "-t", job["pane"], "-l", "%s -c 'import time; time.sleep(3)'" % PY)
    tmux.run("send-keys", "-t", job["pane"], "Enter")
    end = time.time() + 40
    while time.time() < end:
        events += scan(watch, clock)
        if len([e for e in events if e["kind"] == "finished"]) >= 2:
            break
        time.sleep(0.3)
    finished = [e for e in events if e["kind"] == "finished"]
    assert len(finished) == 2, (events, watch.rows())
    assert finished[1]["fields"]["cause"] == "exited", finished[1]  # exit status unknown: a shell's job


def test_a_finished_job_follows_its_session_s_new_name(tmux_server, monkeypatch):  # noqa: F811
    """The Jobs panel kept a renamed session's old name for an ended job: the name the user
    looks for in `t` is the new one."""
    from remote_probe.watch import loop as watch_loop
    monkeypatch.setattr(watch_loop, "MIN_NEWS_S", 1.0)
    clock = [time.time()]
    watch = JobWatch(clock=lambda: clock[0])
    job = tmux.new_job("before", "exec %s -c 'import time; time.sleep(2)'" % PY)
    job_id = "tmux:" + job["pane"]
    row, _events = judged(watch, clock, job_id, "finished")
    assert row["name"].startswith("before:")
    tmux.rename_session(job["session"], "after")
    scan(watch, clock)
    (row,) = [r for r in watch.rows() if r["id"] == job_id]
    assert row["name"].startswith("after:") and row["state"] == "finished"


TRAIN = ("import time\n"
         "for e in range(1, 101):\n"
         "    print('epoch %d/100 loss 0.5' % e, flush=True)\n"
         "    time.sleep(0.2 if e < 20 else 60)\n")


def pane_of_own_command(name, tmp_path, code):
    """A job started as the pane's own command, as users do (`tmux new -d -s train ./train.sh`):
    without remain-on-exit its pane, and its session, close when it ends."""
    script = tmp_path / ("%s.py" % name)
    script.write_text(code)
    out = tmux.run("new-session", "-d", "-P", "-F", "#{session_id} #{pane_id} #{pane_pid}", "-s", name,
                   "exec %s %s" % (PY, shlex.quote(str(script))))
    sid, pane, pid = out.split()
    return sid, "tmux:" + pane, int(pid)


def test_a_job_whose_pane_closes_with_it_is_told_not_dropped(tmux_server, tmp_path):  # noqa: F811
    """A job killed (kill -9, the OOM killer) in a pane that was its own command: the pane and
    the session go with it. It used to leave the list without a word; now it is a crash, at the
    progress it had reached, and it stays listed."""
    clock = [time.time()]
    watch = JobWatch(clock=lambda: clock[0])
    sid, job_id, pid = pane_of_own_command("train", tmp_path, TRAIN)
    wait_for(lambda: "epoch 20/100" in tmux.capture(job_id[5:], 50), 30)
    judged(watch, clock, job_id, "waiting")
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not any(s["id"] == sid for s in tmux.list_sessions()), 10)
    row, events = judged(watch, clock, job_id, "crashed")
    assert row["cause"] == "ended_early"
    assert row["evidence"][0] == "ended at 20% of its progress (its tmux pane closed with it)"
    assert "epoch 20/100 loss 0.5" in row["evidence"]
    assert [(e["kind"], e["job"]) for e in events] == [("crashed", job_id)]
    assert row["pane"] is None  # nothing to attach to any more
    scan(watch, clock)
    assert [r["state"] for r in watch.rows() if r["id"] == job_id] == ["crashed"]  # still listed


def test_a_session_gputui_kills_leaves_without_news(tmux_server, tmp_path):  # noqa: F811
    clock = [time.time()]
    watch = JobWatch(clock=lambda: clock[0])
    sid, job_id, pid = pane_of_own_command("train", tmp_path, TRAIN)
    judged(watch, clock, job_id, "waiting")
    watch.session_killed(sid)  # what the daemon's tmux kill request does first
    tmux.kill_session(sid)
    events = scan(watch, clock)
    assert events == [] and [r for r in watch.rows() if r["id"] == job_id] == []


def test_a_job_that_ends_without_progress_with_its_pane_is_finished_with_the_reason(tmux_server, tmp_path):  # noqa: F811
    clock = [time.time()]
    watch = JobWatch(clock=lambda: clock[0])
    sid, job_id, pid = pane_of_own_command("prep", tmp_path, "import time\nprint('done', flush=True)\ntime.sleep(3)\n")
    judged(watch, clock, job_id, "waiting")
    wait_for(lambda: not any(s["id"] == sid for s in tmux.list_sessions()), 15)
    row, _events = judged(watch, clock, job_id, "finished")
    assert row["cause"] == "exited"
    assert row["evidence"][0] == "its tmux pane closed with it, exit status unknown"


def test_a_tmux_that_does_not_answer_once_ends_no_job(tmux_server, tmp_path):  # noqa: F811
    clock = [time.time()]
    watch = JobWatch(clock=lambda: clock[0])
    sid, job_id, pid = pane_of_own_command("train", tmp_path, TRAIN)
    judged(watch, clock, job_id, "waiting")
    clock[0] += 5.0
    events = watch.scan({"sessions": [], "error": "tmux did not answer within 5 s"}, procfs.ProcScan(),
                        now=clock[0])
    assert events == [] and [r["state"] for r in watch.rows() if r["id"] == job_id] == ["waiting"]
