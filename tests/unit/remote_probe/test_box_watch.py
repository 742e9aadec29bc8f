"""The box's watch, unit by unit: autostop's decisions with "release when this job ends"
and a job that appears just before the deadline (issue 20), the no-compute rule on MIG,
hung jobs counted idle only when opted in, the notifier (one message per event, queue
survives a restart, secrets never logged or echoed), and the watch's small helpers."""

import logging
import os
import stat

import pytest

from remote_probe.autostop.policy import Autostop, decide
from remote_probe.watch.loop import gpu_inputs, new_lines, runtime_text
from remote_probe.notify.notifier import Notifier, templates_of
from remote_probe.wire import check_request, clean

IDLE = {"idle_seconds": 60, "deadline": None, "grace": 30}
DEADLINE = {"idle_seconds": None, "deadline": 1000, "grace": 30}
DONE = {"idle_seconds": None, "deadline": None, "grace": 30, "when_job_done": "tmux:%3"}


@pytest.mark.parametrize("name, armed, t, idle_since, grace_until, reason, kw, expected", [
    # issue 20: a job started within the last sample before the deadline cancels it...
    ("deadline-job-just-before", DEADLINE, 1000.4, None, None, None, {"appeared": 999.5},
     ("cancel_deadline", "a job started just before the deadline")),
    # ...one started earlier (a sample showed it) does not: the deadline is hard
    ("deadline-job-earlier", DEADLINE, 1000.4, None, None, None, {"appeared": 990.0},
     ("start_grace", "deadline")),
    # ...nor one that started long after a deadline the daemon missed while down
    ("deadline-job-after", DEADLINE, 1010.0, None, None, None, {"appeared": 1005.0},
     ("start_grace", "deadline")),
    ("deadline-wider-sample", DEADLINE, 1001.0, None, None, None,
     {"appeared": 998.5, "sample_s": 2.0}, ("cancel_deadline", "a job started just before the deadline")),
    # the release moment itself: a job too new for any sample cancels the countdown
    ("fire-job-just-before", IDLE, 140.3, 50, 140, "idle", {"appeared": 139.6},
     ("cancel_grace", "a job started")),
    ("fire-deadline-job-just-before", DEADLINE, 1030.2, None, 1030, "deadline",
     {"appeared": 1029.5}, ("cancel_grace", "a job started just before the release")),
    ("fire-deadline-old-job", DEADLINE, 1030.2, None, 1030, "deadline", {"appeared": 1001.0},
     ("fire", "deadline")),
    ("idle-job-started-in-grace", IDLE, 120, 50, 140, "idle", {"appeared": 115.0},
     ("cancel_grace", "a job started")),
    # release when this job ends: after it ended, only with no other GPU job, then grace
    ("done-running", DONE, 100, None, None, None, {"job_done_since": None}, (None, None)),
    ("done-ended", DONE, 100, None, None, None, {"job_done_since": 99.0}, ("start_grace", "job_done")),
    ("done-other-job", DONE, 100, None, None, None, {"job_done_since": 99.0, "other_jobs": True},
     (None, None)),
    ("done-grace-other-job", DONE, 110, None, 130, "job_done", {"job_done_since": 99.0, "other_jobs": True},
     ("cancel_grace", "another GPU job runs")),
    ("done-fire", DONE, 130, None, 130, "job_done", {"job_done_since": 99.0}, ("fire", "job_done")),
    ("no-job-configured", IDLE, 100, None, None, None, {"job_done_since": 99.0}, (None, None)),
])
def test_decide_watch_rows(name, armed, t, idle_since, grace_until, reason, kw, expected):
    assert decide(armed, t, idle_since, grace_until, reason, **kw) == expected


class Box:
    def __init__(self, tmp_path):
        self.t = 1000.0
        self.messages = []
        self.auto = Autostop(str(tmp_path), clock=lambda: self.t, notify=self.messages.append)

    def run(self, seconds, gpus, **kw):
        events = []
        for _ in range(seconds):
            self.t += 1
            e = self.auto.observe(None, None, t=self.t, gpus=gpus, **kw)
            if e:
                events.append(e["event"])
        return events


def test_mig_without_utilization_is_idle_when_no_compute_process(tmp_path):
    box = Box(tmp_path)
    marker = tmp_path / "released"
    box.auto.arm("touch %s" % marker, idle_seconds=5, grace=2)
    assert box.run(3, [(None, 1)]) == []  # a process on the slice: busy
    assert box.auto.status()["rule"] == "no_compute"
    assert box.run(9, [(None, 0)]) == ["grace", "fired"]
    assert marker.exists()


def test_hung_job_counts_idle_only_when_opted_in(tmp_path):
    box = Box(tmp_path)
    box.auto.arm("true", idle_seconds=3, grace=1)
    assert box.run(6, [(99.0, 1)], hung_gpus={0}) == []
    box.auto.arm("true", idle_seconds=3, grace=1, hung_counts_idle=True)
    assert box.run(6, [(99.0, 1)], hung_gpus={0}) == ["grace", "fired"]


def test_release_when_done_runs_once(tmp_path):
    box = Box(tmp_path)
    marker = tmp_path / "released"
    box.auto.arm("echo x >> %s" % marker, grace=2, when_job_done="tmux:%1")
    assert box.auto.status()["when_job_done"] == "tmux:%1"
    assert box.run(3, [(90.0, 1)]) == []
    events = box.run(10, [(0.0, 0)], job_done_since=1003.5)
    assert events == ["grace", "fired"]
    assert marker.read_text() == "x\n"
    assert box.auto.armed is None


def test_deadline_with_a_job_just_started_keeps_the_idle_window(tmp_path):
    box = Box(tmp_path)
    box.auto.arm("true", idle_seconds=100, deadline=1003.0, grace=1)
    assert box.run(3, [(90.0, 1)], appeared=1002.5) == ["grace_cancelled"]
    assert box.auto.armed["deadline"] is None and box.auto.armed["idle_seconds"] == 100


def test_fire_looks_for_a_new_job_first(tmp_path):
    box = Box(tmp_path)
    box.auto.arm("true", deadline=1002.0, grace=2)
    box.auto.appeared_probe = lambda: box.t - 0.3  # started since the last jobs scan
    assert box.run(5, [(90.0, 1)]) == ["grace", "disarmed"]


# ---------------------------------------------------------------- notifier

class Sent:
    def __init__(self, ok=True, retryable=False, reason="HTTP 200"):
        self.ok, self.retryable, self.reason = ok, retryable, reason


URL = "json://gt:Pa55word-xyz@127.0.0.1:9/hook/T0ken-abcdef"


def notifier(tmp_path, sent, clock=None):
    pushes = []

    def send(url, title, body, kind):
        sent.append((url, title, body, kind))
        return Sent()
    n = Notifier(str(tmp_path), push=pushes.append, send=send, clock=clock or (lambda: 1e9))
    return n, pushes


def test_one_message_per_event_in_the_users_language(tmp_path, caplog):
    sent = []
    n, pushes = notifier(tmp_path, sent)
    caplog.set_level(logging.INFO, logger="gputui.probe")
    reply = n.configure({"channels": [URL, "bogus://x"], "box": "a100-box",
                         "templates": {"crashed": {"title": "%(job)s 在 %(box)s 上崩溃: %(cause)s",
                                                   "body": "%(evidence)s"}},
                         "causes": {"cuda_oom": "显存不足"}})
    assert reply["channels"] == ["json://****@127.0.0.1:9/****"] and len(reply["problems"]) == 1
    for _ in range(3):  # the watch may report the same crash on several scans
        n.emit("crashed", {"job": "train:0.0", "cause": "cuda_oom", "evidence": "OOM\x1b[31m!"},
               job="tmux:%1", run="42@100")
        n.step()
    assert len(sent) == 1
    assert sent[0][1] == "train:0.0 在 a100-box 上崩溃: 显存不足"
    assert "\x1b" not in sent[0][2]
    assert [p["kind"] for p in pushes] == ["crashed"] and pushes[0]["job"] == "tmux:%1"
    text = caplog.text + repr(reply) + repr(pushes)
    assert "Pa55word-xyz" not in text and "T0ken-abcdef" not in text
    assert n.test()["results"][0]["channel"] == "json://****@127.0.0.1:9/****"


def test_queue_and_settings_survive_a_restart_and_are_private(tmp_path):
    sent = []

    def down(url, title, body, kind):
        sent.append(title)
        return Sent(ok=False, retryable=True, reason="URLError: network unreachable")
    n = Notifier(str(tmp_path), send=down, clock=lambda: 1e9)
    n.configure({"channels": [URL], "box": "b", "watch": {"hung_after_s": 30}})
    n.emit("hung", {"job": "ddp", "evidence": "stuck"}, job="pid:7", run="7@1")
    n.step()
    assert len(sent) == 1
    for name in ("channels.json", "settings.json"):
        path = os.path.join(str(tmp_path), "notify", name)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    # the daemon restarts; the network is back
    later = []
    n2, _ = notifier(tmp_path, later, clock=lambda: 1e9 + 120)
    assert n2.watch_settings() == {"hung_after_s": 30}
    n2.step()
    assert [t for _, t, _, _ in later] == ["ddp looks hung on b"]


def test_idle_while_billing_once_per_spell_with_autostop_time(tmp_path):
    sent = []
    n, _ = notifier(tmp_path, sent)
    n.configure({"channels": [URL], "box": "b", "watch": {"idle_notify_s": 60}})
    status = {"armed": {"idle_seconds": 600}}
    for t in range(0, 200, 10):
        n.observe_idle(1e9 + t, True, status)
    n.step()
    assert len(sent) == 1 and "Autostop releases the box in 9 min" in sent[0][2]
    n.observe_idle(1e9 + 300, False, status)
    for t in range(310, 400, 10):
        n.observe_idle(1e9 + t, True, None)
    n.step()
    assert len(sent) == 2 and "not armed" in sent[1][2]


def test_templates_from_the_wire():
    assert templates_of({"hung": {"title": "a", "body": "b"}, "x": 5, "idle": ["c", "d"]}) == {
        "hung": ("a", "b"), "idle": ("c", "d")}


# ---------------------------------------------------------------- helpers, schema

def test_new_lines_after_the_pane_scrolled():
    assert new_lines(["$ a", "1", "2", ""], ["1", "2", "Traceback", "$"]) == ["Traceback", "$"]
    assert new_lines(["x"], ["y", "z"]) == ["y", "z"]
    assert new_lines([], ["a"]) == ["a"]


def test_gpu_inputs_per_gpu():
    sample = {"gpus": [[None] + [0] * 10, [50.0] + [0] * 10],
              "procs": [[10, 1, 100, 0, 0, 0], [11, 1, 100, 0, 0, 2]]}  # the second is graphics
    assert gpu_inputs(sample) == [(None, 0), (50.0, 1)]
    assert gpu_inputs(dict(sample, procs_more=3))[0] == (None, 3)


def test_runtime_text():
    assert [runtime_text(s) for s in (5, 600, 7300)] == ["5 s", "10 min", "2 h 01 min"]


def test_wire_schema_for_the_watch():
    row = {"id": "tmux:%1", "kind": "tmux", "name": "t:0.0", "pid": 5, "pane": "%1",
           "state": "running", "cause": None, "evidence": ["x"], "since": 1.0, "exit": None,
           "progress": {"fraction": 2.0, "eta_seconds": 10.0, "source": "tqdm", "at": 1.0},
           "checkpoint": None}
    msg = clean({"type": "reply", "id": 1, "jobs": {"watch": [row, {"bad": 1}]}})
    assert len(msg["jobs"]["watch"]) == 1
    assert msg["jobs"]["watch"][0]["progress"]["fraction"] is None  # out of range: cleared
    assert check_request({"type": "notify_config", "channels": [URL], "watch": {"hung_after_s": 4}}) is None
    assert check_request({"type": "notify_config", "channels": "x"}) is not None
    assert check_request({"type": "autostop_arm", "command": "x", "when_job_done": "tmux:%1",
                          "hung_counts_idle": True}) is None


def test_checkpoint_guard_flags_a_run_without_a_recent_checkpoint(tmp_path):
    from remote_probe.watch.loop import JobWatch, Tracked
    now = 1e9
    watch = JobWatch(stale_after=3600, clock=lambda: now)
    old = tmp_path / "out" / "model_step100.pt"
    old.parent.mkdir()
    old.write_bytes(b"x")
    os.utime(str(old), (now - 7200, now - 7200))
    j = Tracked("tmux:%1", "tmux", "train:0.0", 5, "%1", now - 10000, now - 10000)
    j.state, j.cwd, j.seen_alive = "running", str(tmp_path), True
    watch.jobs[j.id] = j
    events = watch._checkpoints(now)
    assert j.checkpoint["stale"] and j.checkpoint["path"].endswith("model_step100.pt")
    assert j.checkpoint["age_s"] == pytest.approx(7200, abs=1)
    assert [e["kind"] for e in events] == ["checkpoint_stale"]
    assert events[0]["fields"]["age"] == "2 h 00 min"
    assert watch._checkpoints(now + 1) == []  # said once, not every scan
    new = tmp_path / "out" / "model_step200.pt"
    new.write_bytes(b"y")
    os.utime(str(new), (now, now))
    assert watch._checkpoints(now + 2) == [] and not j.checkpoint["stale"]


def test_a_crash_message_says_what_the_run_cost():
    from remote_probe.watch.box_watch import job_cost_text
    facts = {"rate_per_hour": 6.0, "currency": "CNY"}
    assert job_cost_text(facts, 2 * 3600 + 600) == "¥13.00 so far"
    assert job_cost_text({"rate_per_hour": None}, 60) is None  # no rate pushed: nothing made up
    assert job_cost_text(None, 60) is None
