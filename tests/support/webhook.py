"""A loopback webhook for the box's notifications (tests/e2e/test_watch*.py): every request
with the time it arrived; its URL carries a password and a token that must never come back
from the box (logs, replies, status)."""

import http.server
import json
import threading
import time

import pytest

TOKEN = "s3cr3t-Tok3n-9f8e7d"  # the webhook's secret: must never come back from the box
USER_PASS = "hunter2-Pa55-0z"


class Receiver:
    """A loopback webhook: every request with the time it arrived."""

    def __init__(self):
        self.hits = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.hits.append((time.time(), self.path, dict(self.headers), body))
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self):
        return "json://gt:%s@127.0.0.1:%d/hook/%s" % (USER_PASS, self.port, TOKEN)

    def messages(self):
        return [json.loads(body) for _t, _p, _h, body in self.hits]

    def close(self):
        self.server.shutdown()


@pytest.fixture
def receiver():
    """A loopback webhook the box's notifications go to (tests/conftest.py loads this plugin)."""
    r = Receiver()
    yield r
    r.close()
