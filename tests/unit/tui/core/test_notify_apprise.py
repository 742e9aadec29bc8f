"""The laptop's sender (through Apprise): one result per channel, with a reason that
names no secret; really sent at a loopback receiver."""

import http.server
import json
import threading

import pytest

pytest.importorskip("apprise")

from tui.core.notify.send import send_all  # noqa: E402


class _Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.got.append((self.path, self.headers.get("Authorization"), json.loads(body)))
        status = 500 if "fail" in self.path else 200
        self.send_response(status)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


@pytest.fixture
def hook():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    srv.got = []
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()


def test_each_channel_gets_its_own_verdict(hook):
    port = hook.server_address[1]
    urls = ["json://bob:Hunter2pw@127.0.0.1:%d/ok" % port,
            "json://bob:Hunter2pw@127.0.0.1:%d/fail" % port,
            "mailto://nope@example.com",
            "ntfy://tk_SecretTok9@127.0.0.1:1/topic"]  # nothing listens on port 1
    results = send_all(urls, "gputui test", "hello from the laptop", kind="info")
    assert [r.ok for r in results] == [True, False, False, False]
    assert results[0].reason == "sent"
    assert "500" in results[1].reason or "Internal Server Error" in results[1].reason
    assert "unknown notification scheme 'mailto'" in results[2].reason
    assert results[3].reason
    for r in results:
        assert "Hunter2pw" not in r.reason + r.shown and "tk_SecretTok9" not in r.reason + r.shown
    assert results[0].shown == "json://****@127.0.0.1:%d/****" % port
    paths = [g[0] for g in hook.got]
    assert paths == ["/ok", "/fail"]
    assert hook.got[0][2]["title"] == "gputui test" and hook.got[0][2]["message"] == "hello from the laptop"
