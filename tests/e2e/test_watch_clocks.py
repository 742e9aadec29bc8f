"""A spot interruption notice with the laptop closed (issue 36), end to end: real sshd, real
tmux, the real daemon. A loopback HTTP server imitates the AWS metadata service (IMDSv2:
the token PUT, then spot/instance-action, 404 until the notice); the daemon finds it through
the private ``<state dir>/imds.json`` override (sshd does not pass the test's environment).
The app configures a webhook and the save signal, starts a job that saves on SIGUSR1, and
goes away; then the notice appears. The webhook gets exactly one "clock" message, the job
got its signal, and the next snapshot's `clocks` counts the notice down."""

import asyncio
import http.server
import json
import os
import shlex
import subprocess
import sys
import threading
import time

import pytest

from remote_probe import wire
from tui.remote import session as session_mod
from tui.remote import ssh

pytestmark = pytest.mark.timeout(180)

SCENARIO = "adopt"
LEAD_S = 600.0  # the notice says: terminated in 10 minutes


class FakeIMDS:
    """AWS's instance metadata service, as far as a spot notice goes."""

    def __init__(self):
        self.notice = None  # the instance-action JSON once AWS has decided
        self.requests = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_PUT(self):
                outer.requests.append(("PUT", self.path, dict(self.headers)))
                if self.path == "/latest/api/token" and self.headers.get(
                        "X-aws-ec2-metadata-token-ttl-seconds"):
                    self._answer(200, b"AQAEAtoken==")
                else:
                    self._answer(400, b"")

            def do_GET(self):
                outer.requests.append(("GET", self.path, dict(self.headers)))
                if self.headers.get("X-aws-ec2-metadata-token") != "AQAEAtoken==":
                    self._answer(401, b"")
                elif self.path == "/latest/meta-data/spot/instance-action" and outer.notice:
                    self._answer(200, outer.notice)
                else:
                    self._answer(404, b"<?xml version='1.0'?><Error>Not Found</Error>")

            def _answer(self, code, body):
                self.send_response(code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


SAVE_JOB = r'''
import signal, sys, time
def save(*_):
    open(sys.argv[1], "w").write(repr(time.time()))
signal.signal(signal.SIGUSR1, save)
while True:
    print("step", flush=True)
    time.sleep(0.5)
'''


@pytest.fixture
def imds():
    m = FakeIMDS()
    yield m
    m.close()


async def session(box):
    s = session_mod.RemoteSession(ssh.Target.parse("testbox", ssh_config=box.ssh_config),
                                  simulate=SCENARIO, remote_dir=box.remote_dir)
    await s.open()
    return s


def clock_messages(receiver):
    return [m for m in receiver.messages() if "spot interruption" in m["title"]]


async def test_spot_notice_is_told_once_signalled_and_counted_down(sshbox, imds, receiver, tmp_path):
    os.makedirs(sshbox.remote_dir, mode=0o700, exist_ok=True)
    override = os.path.join(sshbox.remote_dir, "imds.json")
    fd = os.open(override, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, json.dumps({"aws": imds.url}).encode())
    os.close(fd)
    saved = tmp_path / "saved_at"
    job = tmp_path / "job.py"
    job.write_text(SAVE_JOB)

    s = await session(sshbox)
    await s.request(wire.NOTIFY_CONFIG, channels=[receiver.url], box="testbox", enabled=True,
                    quiet=None, templates={}, watch={"save_signal": "USR1"})
    await s.request(wire.TMUX_NEW, name="train", cwd=str(tmp_path),
                    command="%s %s %s" % (shlex.quote(sys.executable), shlex.quote(str(job)),
                                          shlex.quote(str(saved))))
    for _ in range(60):  # the job watch has the job (its pid) before the notice comes
        reply = await s.request(wire.SNAPSHOT)
        if any(r["kind"] == "tmux" and r.get("pid") and r["state"] in ("running", "waiting")
               for r in reply["jobs"].get("watch") or []):
            break
        await asyncio.sleep(0.5)
    else:
        raise AssertionError("the job never showed: %r" % reply["jobs"])
    assert reply["clocks"] == []  # no notice yet: no clock, no message
    await s.close()  # the laptop goes away

    await asyncio.sleep(6)  # the daemon has polled and seen 404s meanwhile
    assert any(p == "/latest/meta-data/spot/instance-action" for _m, p, _h in imds.requests)
    assert receiver.hits == []
    at = int(time.time() + LEAD_S)
    imds.notice = json.dumps({"action": "terminate", "time": time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))}).encode()
    noticed = time.time()
    while time.time() < noticed + 30 and not receiver.hits:
        await asyncio.sleep(0.1)
    assert receiver.hits, "no clock message within 30 s of the notice"
    delay = receiver.hits[0][0] - noticed
    print("spot notice -> clock message: %.1f s" % delay)
    assert delay < 5 + 1 + 5  # a poll, a tick and a send
    await asyncio.sleep(7)  # more polls and ticks: still one message
    msgs = clock_messages(receiver)
    assert len(receiver.hits) == 1 and len(msgs) == 1, receiver.messages()
    msg = msgs[0]
    assert msg["title"].startswith("testbox: AWS spot interruption (terminate) in ")
    assert msg["title"].endswith(" min")
    assert "at %s (aws)" % time.strftime("%H:%M UTC", time.gmtime(at)) in msg["message"]
    assert "will be deleted" in msg["message"] and "gputui sent SIGUSR1 to train" in msg["message"]
    assert msg["type"] == "failure"  # urgent
    assert saved.exists() and float(saved.read_text()) >= noticed  # the job saved on the notice

    s = await session(sshbox)
    try:
        reply = await s.request(wire.SNAPSHOT)
    finally:
        await s.close()
    (clock,) = reply["clocks"]
    assert [c["kind"] for c in reply["jobs"]["clocks"]] == ["spot_notice"]  # the app's countdown source
    assert clock["kind"] == "spot_notice" and clock["source"] == "aws"
    assert clock["action"] == "terminate" and clock["at"] == at
    assert LEAD_S - 60 < clock["seconds_left"] < LEAD_S
    assert clock["seconds_left"] == pytest.approx(at - time.time(), abs=3)

    # what the user reads: `gputui status --json` carries it, the text says it loudly
    box = ["--ssh-config", sshbox.ssh_config, "--remote-dir", sshbox.remote_dir, "--simulate", SCENARIO]
    r = subprocess.run([sys.executable, "-m", "tui", "status", "testbox", "--json", *box],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=90,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    (shown,) = json.loads(r.stdout)["clocks"]
    assert shown["what"] == "AWS spot interruption (terminate)" and shown["at"] == at
    assert 0 < shown["seconds_left"] < clock["seconds_left"]  # counted down since
    r = subprocess.run([sys.executable, "-m", "tui", "status", "testbox", *box],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=90,
                       stdin=subprocess.DEVNULL)
    assert "!! AWS spot interruption (terminate) in " in r.stdout, r.stdout
