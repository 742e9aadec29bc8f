"""`gputui notify test` without a host: the laptop sends through Apprise to the global
[notify] urls, one line per channel (ok / failed and why), exit 1 when one failed, and the
channels' secrets appear nowhere in the output. A loopback receiver stands for the service."""

import http.server
import json
import os
import socket
import threading

import pytest

from tui.cli import main
from tui.core.config import Config

from tests.support.watch_canned import TOKEN


@pytest.fixture
def receiver():
    got = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            got.append((self.path, self.headers.get("Authorization"), body.decode()))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], got
    server.shutdown()
    server.server_close()


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def write_config(urls):
    path = Config.load().path  # in the isolated config dir (conftest)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("[notify]\nurls = %s\n" % json.dumps(urls))


def test_laptop_test_says_which_channel_failed(receiver, capsys):
    port, got = receiver
    good = "json://gputui:%s@127.0.0.1:%d/hook" % (TOKEN, port)
    bad = "json://gputui:%s@127.0.0.1:%d/hook" % (TOKEN, closed_port())
    write_config([good, bad])
    code = main(["notify", "test"])
    out, err = capsys.readouterr()
    assert code == 1, (out, err)
    lines = out.splitlines()
    assert lines[0].startswith("✓ json://") and lines[1].startswith("✗ json://"), out
    assert "1 of 2 channels failed" in out
    assert TOKEN not in out and TOKEN not in err
    assert len(got) == 1 and got[0][0] == "/hook"
    assert "gputui test message from" in got[0][2]


def test_laptop_test_all_ok(receiver, capsys):
    port, got = receiver
    write_config(["json://127.0.0.1:%d/a" % port])
    assert main(["notify", "test"]) == 0
    assert "every channel works (1)" in capsys.readouterr().out and len(got) == 1


def test_no_channels_is_a_failure(capsys):
    assert main(["notify", "test"]) == 1
    assert "no channels" in capsys.readouterr().err
