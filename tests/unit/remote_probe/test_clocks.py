"""Clocks that delete data or stop the job (issue 36): the metadata services' recorded
answers parsed, the poller asking only the cloud the box is, the balance counted down, and
the box watch's one "clock" notification per notice with the save signal sent."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from remote_probe.watch import clocks
from remote_probe.watch.box_watch import BoxWatch, clock_action

NOW = 1796585700.0  # 2026-12-06T19:35:00Z
AWS_NOTICE = b'{"action": "terminate", "time": "2026-12-06T19:37:00Z"}'
AZURE_EVENTS = json.dumps({
    "DocumentIncarnation": 2,
    "Events": [
        {"EventId": "A1", "EventStatus": "Scheduled", "EventType": "Preempt",
         "ResourceType": "VirtualMachine", "Resources": ["gpu-vm-1"],
         "NotBefore": "Sun, 06 Dec 2026 19:35:30 GMT", "Description": "spot eviction",
         "EventSource": "Platform", "DurationInSeconds": -1},
        {"EventId": "A2", "EventStatus": "Scheduled", "EventType": "Freeze",
         "ResourceType": "VirtualMachine", "Resources": ["gpu-vm-1"],
         "NotBefore": "Sun, 06 Dec 2026 19:40:00 GMT"},
        {"EventId": "A3", "EventStatus": "Scheduled", "EventType": "Terminate",
         "ResourceType": "VirtualMachine", "Resources": ["other-vm"],
         "NotBefore": "Sun, 06 Dec 2026 19:50:00 GMT"},
    ]}).encode()


def test_aws_notice_is_a_clock_with_seconds_left():
    c = clocks.parse_aws(200, AWS_NOTICE, NOW)
    assert c == {"kind": "spot_notice", "source": "aws", "action": "terminate",
                 "at": NOW + 120, "seconds_left": 120.0,
                 "what": "AWS spot interruption (terminate)"}
    stop = clocks.parse_aws(200, b'{"action": "stop", "time": "2026-12-06T19:35:30.000Z"}', NOW)
    assert stop["action"] == "stop" and stop["seconds_left"] == 30.0


def test_aws_no_notice_and_garbage_are_no_clock():
    assert clocks.parse_aws(404, b"<html>Not Found</html>", NOW) is None
    assert clocks.parse_aws(None, b"", NOW) is None  # unreachable
    for body in (b"not json", b"[]", b'{"action": "reboot", "time": "2026-12-06T19:37:00Z"}',
                 b'{"action": "terminate", "time": "soon"}', b'{"action": "terminate"}', b"\xff\xfe"):
        assert clocks.parse_aws(200, body, NOW) is None, body


def test_gce_true_is_30_s_from_first_seen_false_is_none():
    c = clocks.parse_gce(200, b"TRUE", NOW + 10, first_seen=NOW)
    assert c["source"] == "gce" and c["action"] == "preempt" and c["at"] == NOW + 30
    assert c["seconds_left"] == 20.0 and c["what"] == "GCE preemption (preempt)"
    assert clocks.parse_gce(200, b"FALSE", NOW) is None
    assert clocks.parse_gce(404, b"TRUE", NOW) is None
    assert clocks.parse_gce(200, b"<garbage>", NOW) is None


def test_azure_preempt_for_this_vm_only():
    out = clocks.parse_azure(200, AZURE_EVENTS, NOW, vm_name="gpu-vm-1")
    assert [(c["source"], c["action"], c["seconds_left"]) for c in out] == [("azure", "preempt", 30.0)]
    # another VM's Terminate is not this box's clock; a Freeze is not a clock at all
    assert len(clocks.parse_azure(200, AZURE_EVENTS, NOW, vm_name="other-vm")) == 1
    assert clocks.parse_azure(200, b'{"DocumentIncarnation": 1, "Events": []}', NOW) == []
    assert clocks.parse_azure(200, b"garbage", NOW) == []
    assert clocks.parse_azure(404, AZURE_EVENTS, NOW) == []
    # an event with no NotBefore yet: due now
    now_ev = json.dumps({"Events": [{"EventType": "Terminate", "NotBefore": ""}]}).encode()
    assert clocks.parse_azure(200, now_ev, NOW)[0]["seconds_left"] == 0.0


def test_balance_zero_counted_down_from_budget_facts():
    facts = {"balance": 2.0, "balance_read_at": NOW - 1800, "spend_per_hour": 1.0}
    c = clocks.balance_clock(facts, NOW)  # 2.00 read half an hour ago at 1.00/h: 1.5 h left
    assert c["kind"] == "balance_zero" and c["seconds_left"] == 5400.0 and c["at"] == NOW + 5400
    assert clocks.balance_clock({"balance": 2.0}, NOW) is None  # no spend known
    assert clocks.balance_clock({"balance": 500.0, "spend_per_hour": 1.0, "balance_read_at": NOW}, NOW) is None
    assert clocks.balance_clock(None, NOW) is None
    gone = clocks.balance_clock({"balance": 0.1, "spend_per_hour": 1.0, "balance_read_at": NOW - 3600}, NOW)
    assert gone["seconds_left"] == 0.0


def test_words():
    assert clocks.left_words(95) == "95 s" and clocks.left_words(130) == "2 min"
    assert clocks.left_words(3 * 3600 + 600) == "3 h 10 min"
    assert clocks.at_words(NOW + 60) == "19:36 UTC"


def test_looks_like_reads_dmi(tmp_path):
    dmi = tmp_path / "class" / "dmi" / "id"
    dmi.mkdir(parents=True)
    assert clocks.looks_like(str(tmp_path)) == []
    (dmi / "sys_vendor").write_text("Amazon EC2\n")
    assert clocks.looks_like(str(tmp_path)) == ["aws"]
    (dmi / "sys_vendor").write_text("Google\n")
    assert clocks.looks_like(str(tmp_path)) == ["gce"]
    (dmi / "sys_vendor").write_text("Microsoft Corporation\n")
    assert clocks.looks_like(str(tmp_path)) == ["azure"]


class FakeIMDS:
    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def __call__(self, method, url, headers, timeout=None):
        self.calls.append((method, url, dict(headers)))
        for suffix, answer in self.answers.items():
            if url.endswith(suffix):
                return answer(method, headers) if callable(answer) else answer
        return 404, b""


def test_poller_asks_nothing_on_a_box_that_is_no_cloud(tmp_path):
    fetch = FakeIMDS({})
    w = clocks.ClockWatch(str(tmp_path), sys_root=str(tmp_path), environ={}, fetch=fetch)
    assert w.poll_once(NOW) == {} and fetch.calls == []
    assert w.clocks(NOW) == []


def test_poller_aws_imdsv2_token_then_notice(tmp_path):
    def token(method, headers):
        assert method == "PUT" and headers["X-aws-ec2-metadata-token-ttl-seconds"] == "21600"
        return 200, b"TOKEN123"

    def notice(method, headers):
        return (200, AWS_NOTICE) if headers.get("X-aws-ec2-metadata-token") == "TOKEN123" else (401, b"")
    fetch = FakeIMDS({"/latest/api/token": token, "/spot/instance-action": notice})
    w = clocks.ClockWatch(str(tmp_path), sys_root=str(tmp_path),
                          environ={"GPUTUI_IMDS_AWS": "http://127.0.0.1:9"}, fetch=fetch)
    w.poll_once(NOW)
    assert [c["what"] for c in w.clocks(NOW + 60)] == ["AWS spot interruption (terminate)"]
    assert w.clocks(NOW + 60)[0]["seconds_left"] == 60.0
    assert fetch.calls[1][1] == "http://127.0.0.1:9/latest/meta-data/spot/instance-action"
    w.poll_once(NOW + 5)  # the token is kept
    assert [m for m, *_ in fetch.calls] == ["PUT", "GET", "GET"]


def test_poller_override_file_must_be_private(tmp_path):
    path = tmp_path / clocks.OVERRIDE_FILE
    path.write_text(json.dumps({"gce": "http://127.0.0.1:9", "evil": "file:///etc"}))
    os.chmod(path, 0o600)
    assert clocks.overrides(str(tmp_path), {}) == {"gce": "http://127.0.0.1:9"}
    os.chmod(path, 0o666)
    assert clocks.overrides(str(tmp_path), {}) == {}


def test_poller_does_not_hang_on_an_unreachable_service(tmp_path):
    w = clocks.ClockWatch(str(tmp_path), sys_root=str(tmp_path),
                          environ={"GPUTUI_IMDS_GCE": "http://127.0.0.1:9"})
    t0 = time.monotonic()
    assert w.poll_once() == {"gce": []}
    assert time.monotonic() - t0 < 2 * clocks.TIMEOUT_S + 0.5


def watch_with_notice(tmp_path, save_signal=None):
    bw = BoxWatch(str(tmp_path), _Autostop())
    bw.clock_watch = clocks.ClockWatch(str(tmp_path), sys_root=str(tmp_path),
                                       environ={"GPUTUI_IMDS_AWS": "http://x"},
                                       fetch=FakeIMDS({"/spot/instance-action": (200, AWS_NOTICE)}))
    bw.clock_watch.poll_once(NOW)
    emitted = []
    bw.notifier.emit = lambda kind, fields, job=None, run=None: emitted.append((kind, fields, run))
    bw.notifier.can_send = lambda: True
    bw.notifier.settings = {"watch": {"save_signal": save_signal} if save_signal else {}}
    return bw, emitted


class _Autostop:
    armed = None
    sample_s = 1.0
    appeared_probe = None

    def __init__(self):
        self.listeners = []


def test_box_watch_tells_a_notice_once_with_what_to_do(tmp_path):
    bw, emitted = watch_with_notice(tmp_path)
    for t in (NOW, NOW + 1, NOW + 2):
        bw.on_clock(t)
    assert len(emitted) == 1
    kind, fields, run = emitted[0]
    assert kind == "clock" and run == "spot_notice:aws:%d" % (NOW + 120)
    assert fields["clock"] == "AWS spot interruption (terminate)" and fields["left"] == "2 min"
    assert fields["at"] == "19:37 UTC" and fields["source"] == "aws"
    assert "will be deleted" in fields["action"] and "SIG" not in fields["action"]


def test_box_watch_sends_the_save_signal_to_running_jobs(tmp_path):
    child = subprocess.Popen([sys.executable, "-c",
                              "import signal,sys,time\n"
                              "signal.signal(signal.SIGUSR1, lambda *a: (print('saved', flush=True), sys.exit(0)))\n"
                              "print('up', flush=True)\ntime.sleep(30)"], stdout=subprocess.PIPE)
    try:
        assert child.stdout.readline() == b"up\n"
        bw, emitted = watch_with_notice(tmp_path, save_signal="USR1")
        bw.jobs.rows = lambda: [{"id": "tmux:train", "name": "train", "kind": "tmux",
                                 "pid": child.pid, "state": "running"},
                                {"id": "tmux:old", "name": "old", "kind": "tmux", "pid": 1,
                                 "state": "finished"}]
        bw.on_clock(NOW)
        bw.on_clock(NOW + 1)
        assert child.wait(10) == 0 and child.stdout.read() == b"saved\n"
        assert len(emitted) == 1
        assert emitted[0][1]["action"].endswith(
            "gputui sent SIGUSR1 to train (pid %d)." % child.pid)
        # the daemon restarts with the notice still up: the jobs are not signalled again
        again, emitted2 = watch_with_notice(tmp_path, save_signal="USR1")
        again.send_save_signal = lambda: pytest.fail("signalled twice")
        again.on_clock(NOW + 3)
        assert emitted2[0][1]["action"] == emitted[0][1]["action"]
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
            child.wait()


def test_balance_zero_told_an_hour_before(tmp_path):
    bw, emitted = watch_with_notice(tmp_path)
    bw.clock_watch.spot = {}
    bw.budget.facts = {"start": NOW - 100, "balance": 3.0, "balance_read_at": NOW, "spend_per_hour": 1.0}
    bw.on_clock(NOW)
    assert emitted == []  # 3 h left: a clock in the snapshot, not yet a message
    assert [c["kind"] for c in bw.clocks(NOW)] == ["balance_zero"]
    bw.on_clock(NOW + 2.5 * 3600)
    bw.on_clock(NOW + 2.6 * 3600)
    emitted = [e for e in emitted if e[0] == "clock"]  # budget_watch's balance_low goes too
    assert len(emitted) == 1 and emitted[0][2] == "balance_zero:%d" % (NOW - 100) and emitted[0][1]["left"] == "30 min"
    assert "Top up" in emitted[0][1]["action"]
    assert clock_action({"kind": "spot_notice", "action": "stop"}).startswith("Save a checkpoint now")


def test_poller_aws_gets_a_fresh_token_after_a_401(tmp_path):
    tokens = iter([(500, b""), (200, b"T2")])
    fetch = FakeIMDS({"/latest/api/token": lambda m, h: next(tokens),
                      "/spot/instance-action": lambda m, h: (
                          (200, AWS_NOTICE) if h.get("X-aws-ec2-metadata-token") == "T2" else (401, b""))})
    w = clocks.ClockWatch(str(tmp_path), sys_root=str(tmp_path),
                          environ={"GPUTUI_IMDS_AWS": "http://x"}, fetch=fetch)
    assert w.poll_once(NOW)["aws"][0]["action"] == "terminate"  # a failed PUT is not for good


def test_poller_azure_matches_the_vm_name_the_service_gives(tmp_path):
    fetch = FakeIMDS({"compute/name?api-version=2020-09-01&format=text": (200, b"gpu-vm-1"),
                      "/metadata/scheduledevents?api-version=2020-07-01": (200, AZURE_EVENTS)})
    w = clocks.ClockWatch(str(tmp_path), sys_root=str(tmp_path),
                          environ={"GPUTUI_IMDS_AZURE": "http://x"}, fetch=fetch)
    w.poll_once(NOW)
    assert [c["what"] for c in w.clocks(NOW)] == ["Azure scheduled event (preempt)"]
    assert all(h == {"Metadata": "true"} for _m, _u, h in fetch.calls)
    w.poll_once(NOW + 5)
    assert sum("compute/name" in u for _m, u, _h in fetch.calls) == 1  # asked once


def test_a_cloud_looking_box_whose_service_never_answers_is_asked_once_a_minute(tmp_path):
    dmi = tmp_path / "class" / "dmi" / "id"
    dmi.mkdir(parents=True)
    (dmi / "sys_vendor").write_text("Microsoft Corporation\n")  # Hyper-V on a desk, not Azure
    calls = []

    def unreachable(method, url, headers, timeout=None):
        calls.append(url)
        return None, b""
    w = clocks.ClockWatch(str(tmp_path), sys_root=str(tmp_path), environ={}, fetch=unreachable)
    for i in range(3):
        w.poll_once(NOW + 5 * i)
    asked = len(calls)
    assert asked >= 3
    for i in range(3, 3 + clocks.SLOW_EVERY):  # the next minute of polls
        w.poll_once(NOW + 5 * i)
    assert len(calls) - asked <= 2  # once in that minute (its two requests), not 12 times
    assert w.clocks(NOW + 100) == []


def test_the_box_never_sends_kill_as_the_save_signal(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        bw, emitted = watch_with_notice(tmp_path, save_signal="KILL")
        bw.jobs.rows = lambda: [{"id": "tmux:t", "name": "t", "kind": "tmux", "pid": child.pid,
                                 "state": "running"}]
        bw.on_clock(NOW)
        assert child.poll() is None  # still alive
        assert "save_signal KILL is not one gputui sends" in emitted[0][1]["action"]
    finally:
        child.kill()
        child.wait()
