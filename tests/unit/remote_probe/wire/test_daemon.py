"""The probe daemon and its attach bridge, run as real processes (no SSH)."""

import json
import os
import subprocess
import sys
import time

import pytest

from remote_probe import wire

from tests.support.sshd import REPO, stop_daemon


class Attach:
    """`probe attach` as a subprocess: what the SSH exec channel runs."""

    def __init__(self, state_dir, simulate="a100x2"):
        argv = [sys.executable, "-m", "remote_probe", "attach", "--state-dir", str(state_dir)]
        if simulate:
            argv += ["--simulate", simulate]
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=REPO))
        self.hello = self.read()

    def send(self, msg):
        self.p.stdin.write(msg if isinstance(msg, bytes) else wire.encode(msg))
        self.p.stdin.flush()

    def read(self):
        line = self.p.stdout.readline()
        assert line, self.p.stderr.read().decode()
        return json.loads(line)

    def read_until(self, pred, limit=50):
        for _ in range(limit):
            msg = self.read()
            if pred(msg):
                return msg
        raise AssertionError("message not seen")

    def close(self):
        self.p.stdin.close()
        self.p.wait(10)
        self.p.stdout.close()
        self.p.stderr.close()


@pytest.fixture
def state(tmp_path):
    yield tmp_path
    stop_daemon(str(tmp_path))


def alive(pid):
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return open("/proc/%d/stat" % pid).read().split()[2] != "Z"


def test_daemon_outlives_the_bridge_and_is_shared(state):
    a = Attach(state)
    pid = a.hello["pid"]
    assert a.hello["protocol"] == wire.PROTOCOL
    a.close()  # the SSH channel dies
    assert alive(pid)
    b = Attach(state)
    assert b.hello["pid"] == pid  # one daemon per user per box
    b.close()
    assert oct(os.stat(state / "run").st_mode & 0o777) == "0o700"


def test_samples_arrive_every_second_and_backfill_has_no_gap(state):
    a = Attach(state)
    a.send({"type": "subscribe", "id": 1, "since_seq": 0})
    reply = a.read_until(lambda m: m["type"] == "reply")
    assert reply["inventory"]["gpus"][0]["name"] == "NVIDIA A100-SXM4-80GB"
    first = a.read_until(lambda m: m["type"] == "sample")
    t0 = time.time()
    second = a.read_until(lambda m: m["type"] == "sample")
    assert second["seq"] == first["seq"] + 1
    assert 0.5 < time.time() - t0 < 1.6
    a.close()
    time.sleep(2.2)  # the laptop is away; the daemon keeps sampling
    b = Attach(state)
    b.send({"type": "subscribe", "id": 1, "since_seq": second["seq"]})
    reply = b.read_until(lambda m: m["type"] == "reply")
    assert reply["backlog"] >= 2
    seqs = [b.read_until(lambda m: m["type"] == "sample")["seq"] for _ in range(reply["backlog"] + 1)]
    assert seqs == list(range(second["seq"] + 1, second["seq"] + 2 + reply["backlog"]))
    b.close()


def test_malformed_and_unknown_requests_do_not_break_the_connection(state):
    a = Attach(state)
    a.send(b"this is not json\n")
    err = a.read_until(lambda m: m["type"] == "error")
    assert "malformed" in err["error"]
    a.send({"type": "frobnicate", "id": 7})
    err = a.read_until(lambda m: m["type"] == "error")
    assert "frobnicate" in err["error"] and err["id"] is None or err["id"] == 7
    a.send({"type": "ping", "id": 8})
    assert a.read_until(lambda m: m["type"] == "reply")["id"] == 8
    a.close()


def test_incompatible_client_is_told_so(state):
    a = Attach(state)
    a.send({"type": "hello", "protocol": wire.PROTOCOL + 5, "version": "9", "capabilities": []})
    err = a.read_until(lambda m: m["type"] == "error")
    assert "protocol" in err["error"]
    a.close()


def test_a_daemon_of_another_config_is_replaced(state):
    a = Attach(state, simulate="a100x2")
    old = a.hello["pid"]
    a.close()
    b = Attach(state, simulate="idle")
    assert b.hello["pid"] != old and b.hello["config"]["backend"] == "sim:idle"
    b.close()
    time.sleep(0.3)
    assert not alive(old)


def test_shutdown_stops_daemon_and_simulated_jobs(state):
    a = Attach(state)
    pid = a.hello["pid"]
    a.send({"type": "snapshot", "id": 1})
    snap = a.read_until(lambda m: m["type"] == "reply")
    if snap["sample"] is None:
        time.sleep(1.2)
        a.send({"type": "snapshot", "id": 2})
        snap = a.read_until(lambda m: m["type"] == "reply")
    jobs = [row[0] for row in snap["sample"]["procs"]]
    assert jobs and all(alive(j) for j in jobs)
    a.send({"type": "shutdown", "id": 3})
    assert a.read_until(lambda m: m["type"] == "reply")["stopping"]
    a.close()
    deadline = time.time() + 5
    while time.time() < deadline and (alive(pid) or any(alive(j) for j in jobs)):
        time.sleep(0.05)
    assert not alive(pid)
    assert not any(alive(j) for j in jobs)
    assert not os.path.exists(state / "run" / "probe.sock")


def test_gpu_error_mid_run_is_reported_then_recovers(state):
    a = Attach(state, simulate="nvml-error")
    a.send({"type": "subscribe", "id": 1, "since_seq": 0})
    bad = a.read_until(lambda m: m["type"] == "sample" and m.get("gpu_error"), limit=30)
    assert "GPU is lost" in bad["gpu_error"]
    good = a.read_until(lambda m: m["type"] == "sample" and not m.get("gpu_error"), limit=30)
    assert good["gpus"] and good["seq"] > bad["seq"]
    a.close()


def test_owner_pid_ties_a_demo_daemon_to_its_app(state, tmp_path):
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    env = dict(os.environ, PYTHONPATH=REPO, GPUTUI_OWNER_PID=str(owner.pid))
    p = subprocess.Popen([sys.executable, "-m", "remote_probe", "attach", "--state-dir", str(state),
                          "--simulate", "idle"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    pid = json.loads(p.stdout.readline())["pid"]
    p.stdin.close()
    p.wait(5)
    assert alive(pid)
    owner.kill()
    owner.wait()
    deadline = time.time() + 5
    while time.time() < deadline and alive(pid):
        time.sleep(0.1)
    assert not alive(pid)


def test_shutdown_from_a_client_that_hangs_up_at_once_still_stops_the_daemon(state):
    a = Attach(state, simulate="idle")
    pid = a.hello["pid"]
    a.send({"type": "shutdown", "id": 1})
    a.close()  # no waiting for the reply
    deadline = time.time() + 5
    while time.time() < deadline and alive(pid):
        time.sleep(0.05)
    assert not alive(pid)
