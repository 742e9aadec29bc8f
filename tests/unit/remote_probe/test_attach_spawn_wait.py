"""How long `probe attach` waits for the daemon it starts.

On a box whose cores are all busy the daemon's imports and first bind can take longer than
the 10 s that attach waits for a daemon it cannot see; the one it started is waited for while
it lives, and one that exits with an error is reported at once, with its log."""

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

from remote_probe import attach
from remote_probe.paths import socket_path
from remote_probe.wire import config_key

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

# a stand-in daemon that binds its socket only after `delay` seconds (a slow start), then
# says hello with the config attach asks for
SLOW_DAEMON = textwrap.dedent("""
    import json, os, socket, sys, time
    path, delay, config = sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3])
    time.sleep(delay)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    s = socket.socket(socket.AF_UNIX)
    s.bind(path)
    s.listen(4)
    c, _ = s.accept()
    c.sendall(json.dumps({"type": "hello", "role": "probe", "protocol": 1, "version": "x",
                          "config": config}).encode() + b"\\n")
    time.sleep(5)
""")


@pytest.fixture
def short_waits(monkeypatch):
    monkeypatch.setattr(attach, "SPAWN_WAIT", 0.3)
    monkeypatch.setattr(attach, "SPAWN_PATIENCE", 4.0)


def spawn_with(monkeypatch, argv):
    started = []

    def spawn(state_dir, simulate):
        started.append(subprocess.Popen(argv(state_dir), stdin=subprocess.DEVNULL))
        return started[-1]

    monkeypatch.setattr(attach, "spawn_daemon", spawn)
    return started


def reap(children):
    for c in children:
        if c.poll() is None:
            c.kill()
        c.wait()


def timed_attach(state, monkeypatch, argv):
    """run_attach with the daemon spawned as `argv(state_dir)`: (exit code, seconds it took)."""
    kids = spawn_with(monkeypatch, argv)
    try:
        t0 = time.time()
        code = attach.run_attach(state, None)
        return code, time.time() - t0
    finally:
        reap(kids)


def test_a_daemon_slower_than_the_short_wait_is_still_waited_for(tmp_path, monkeypatch, short_waits):
    state = str(tmp_path / "state")
    kids = spawn_with(monkeypatch, lambda d: [sys.executable, "-c", SLOW_DAEMON, socket_path(d), "1.0",
                                             json.dumps(config_key(None))])
    try:
        t0 = time.time()
        sock, first = attach.daemon_connection(state, None)
        sock.close()
        assert b'"hello"' in first
        assert 0.9 < time.time() - t0 < 4.0  # past SPAWN_WAIT, on the daemon's own time
        assert len(kids) == 1  # started once, not again and again
    finally:
        reap(kids)


def test_a_daemon_that_exits_with_an_error_is_reported_at_once_with_its_log(tmp_path, monkeypatch,
                                                                             short_waits, capsys):
    state = str(tmp_path / "state")
    monkeypatch.setattr(attach, "SPAWN_WAIT", 3.0)

    def argv(d):
        log = os.path.join(d, "daemon.log")
        return [sys.executable, "-c", "open(%r, 'a').write('cannot start: NVML says no [b]\\\\n');"
                "raise SystemExit(4)" % log]
    code, took = timed_attach(state, monkeypatch, argv)
    out = capsys.readouterr()
    assert code == attach.wire.EXIT_DAEMON_UNREACHABLE
    assert took < 2.0  # not the whole wait: it is not coming
    assert "the daemon exited (status 4) before it answered" in out.err
    assert "Its log ends: cannot start: NVML says no [b]" in out.err
    line = json.loads(out.out.splitlines()[-1])  # also as the error line the laptop reads
    assert line["type"] == "error" and "status 4" in line["error"]


def test_a_daemon_that_never_binds_is_given_up_on_after_the_patience(tmp_path, monkeypatch, short_waits,
                                                                      capsys):
    state = str(tmp_path / "state")
    code, took = timed_attach(state, monkeypatch, lambda d: ["sleep", "30"])
    assert code == attach.wire.EXIT_DAEMON_UNREACHABLE
    assert 3.9 < took < 6.0
    assert "the daemon did not start within 4 s" in capsys.readouterr().err


class Child:
    def __init__(self, code):
        self.returncode = code

    def poll(self):
        return self.returncode


@pytest.mark.parametrize("child, now, waits", [
    (None, 5.0, True),            # before the deadline: wait
    (None, 11.0, False),          # past it, nothing of ours to wait for
    (Child(None), 11.0, True),    # ours still starting: wait on
    (Child(None), 36.0, False),   # ...up to the patience
    (Child(0), 5.0, True),        # ours found another daemon's lock: wait for that one
    (Child(0), 11.0, False),      # ...until the deadline only
    (Child(3), 1.0, False),       # ours failed: stop now
])
def test_keep_waiting(child, now, waits):
    assert attach.keep_waiting(child, 0.0, 10.0, now=now)[1] is waits
