"""remote_probe/provider/api.py against loopback HTTP servers answering the providers' shapes (issue 22)."""

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from remote_probe.provider import api as provider_api

KEY = "sk-test-0123456789"


class Api:
    """A loopback server: routes map (method, path) -> (status, json body); requests are recorded."""

    def __init__(self, routes, delay=0.0):
        self.routes, self.delay, self.seen = routes, delay, []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                api.seen.append((self.command, self.path, self.headers.get("Authorization"), body))
                time.sleep(api.delay)
                status, doc = api.routes.get((self.command, self.path), (404, {"error": "not found"}))
                raw = json.dumps(doc).encode() if not isinstance(doc, bytes) else doc
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
            do_GET = do_POST = _answer

            def log_message(self, *a):
                pass
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def api():
    made = []

    def make(routes, delay=0.0):
        made.append(Api(routes, delay))
        return made[-1]
    yield make
    for a in made:
        a.close()


# the shape of runpodctl user / GraphQL myself (https://docs.runpod.io/runpodctl/reference/runpodctl-user.md)
RUNPOD_MYSELF = {"data": {"myself": {"clientBalance": 435.85, "currentSpendPerHr": 0.89, "pods": [
    {"id": "other", "costPerHr": 2.0, "adjustedCostPerHr": 2.0},
    {"id": "pod9x", "costPerHr": 0.79, "adjustedCostPerHr": 0.69}]}}}


def test_runpod_price_and_balance(api, monkeypatch):
    a = api({("POST", "/graphql"): (200, RUNPOD_MYSELF)})
    monkeypatch.setenv("GPUTUI_RUNPOD_API", a.url)
    r = provider_api.read_runpod("pod9x", KEY)
    assert r["ok"] and r["rate_per_hour"] == 0.69 and r["balance"] == 435.85 and r["spend_per_hour"] == 0.89
    assert r["source"] == "RunPod API" and r["fallback"] is None
    method, path, auth, body = a.seen[0]
    assert auth == "Bearer " + KEY and KEY not in path  # the key in a header, never in the URL
    assert "clientBalance" in json.loads(body)["query"]
    assert KEY not in repr(r)


def test_runpod_cost_without_a_discount(api, monkeypatch):
    doc = {"data": {"myself": {"clientBalance": 5, "currentSpendPerHr": 1.2,
                               "pods": [{"id": "p", "costPerHr": 1.2, "adjustedCostPerHr": None}]}}}
    a = api({("POST", "/graphql"): (200, doc)})
    monkeypatch.setenv("GPUTUI_RUNPOD_API", a.url)
    assert provider_api.read_runpod("p", KEY)["rate_per_hour"] == 1.2


@pytest.mark.parametrize("status, doc, reason", [
    (401, {"error": "unauthorized"}, "the key was refused (HTTP 401)"),
    (403, {"error": "forbidden"}, "the key was refused (HTTP 403)"),
    (500, {"error": "x"}, "HTTP 500"),
    (200, {"errors": [{"message": "Not authorized for pod-scoped key"}]}, "pod-scoped"),
    (200, b"<html>login</html>", "not JSON"),
])
def test_runpod_refusals_fall_back_to_the_typed_rate(api, monkeypatch, status, doc, reason):
    a = api({("POST", "/graphql"): (status, doc)})
    monkeypatch.setenv("GPUTUI_RUNPOD_API", a.url)
    r = provider_api.read_runpod("pod9x", KEY)
    assert not r["ok"] and r["fallback"] == "typed rate" and reason in r["reason"]
    assert KEY not in repr(r)


# GET /api/v0/instances/{id}/ and /api/v0/users/current/ (Vast.ai REST, base https://console.vast.ai/api/v0)
VAST_INSTANCE = {"instances": {"id": 4242, "dph_total": 0.4123, "storage_cost": 0.15, "actual_status": "running"}}


def test_vast_price_storage_and_credit(api, monkeypatch):
    a = api({("GET", "/api/v0/instances/4242/"): (200, VAST_INSTANCE),
             ("GET", "/api/v0/users/current/"): (200, {"id": 1, "credit": 12.5, "email": "x@y"})})
    monkeypatch.setenv("GPUTUI_VAST_API", a.url)
    r = provider_api.read_vast("4242", KEY)
    assert r["ok"] and r["rate_per_hour"] == 0.4123 and r["storage_per_hour"] == 0.15 and r["balance"] == 12.5
    assert all(auth == "Bearer " + KEY for _m, _p, auth, _b in a.seen)
    assert KEY not in repr(r)


def test_vast_price_without_the_credit(api, monkeypatch):
    a = api({("GET", "/api/v0/instances/7/"): (200, VAST_INSTANCE),
             ("GET", "/api/v0/users/current/"): (403, {"error": "scoped key"})})
    monkeypatch.setenv("GPUTUI_VAST_API", a.url)
    r = provider_api.read_vast("7", KEY)
    assert r["ok"] and r["rate_per_hour"] == 0.4123 and r["balance"] is None


def test_vast_unknown_instance(api, monkeypatch):
    a = api({})
    monkeypatch.setenv("GPUTUI_VAST_API", a.url)
    r = provider_api.read_vast("4242", KEY)
    assert not r["ok"] and r["reason"] == "HTTP 404"


def test_no_network_is_a_clear_fallback(monkeypatch):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there: connection refused
    monkeypatch.setenv("GPUTUI_VAST_API", "http://127.0.0.1:%d" % port)
    r = provider_api.read_vast("1", KEY)
    assert not r["ok"] and r["fallback"] == "typed rate" and r["reason"].startswith("no network")


def test_a_slow_api_times_out_short(api, monkeypatch):
    a = api({("POST", "/graphql"): (200, RUNPOD_MYSELF)}, delay=3.0)
    monkeypatch.setenv("GPUTUI_RUNPOD_API", a.url)
    t0 = time.monotonic()
    r = provider_api.read_runpod("pod9x", KEY, timeout=0.5)
    assert time.monotonic() - t0 < 2.5 and not r["ok"] and r["reason"].startswith("no network")


def test_read_picks_the_provider_from_pid1(api, monkeypatch, tmp_path):
    a = api({("GET", "/api/v0/instances/55/"): (200, VAST_INSTANCE)})
    monkeypatch.setenv("GPUTUI_VAST_API", a.url)
    for var in ("RUNPOD_POD_ID", "CONTAINER_ID", "CONTAINER_API_KEY", "VAST_CONTAINERLABEL"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "1").mkdir()
    (tmp_path / "1" / "environ").write_bytes(b"CONTAINER_ID=55\0CONTAINER_API_KEY=" + KEY.encode() + b"\0")
    r = provider_api.read(proc=str(tmp_path))
    assert r["provider"] == "vast" and r["rate_per_hour"] == 0.4123
    none = tmp_path / "empty"
    (none / "1").mkdir(parents=True)
    (none / "1" / "environ").write_bytes(b"PATH=/bin\0")
    r = provider_api.read(proc=str(none))
    assert not r["ok"] and r["reason"] == "no provider API key on this box"


def test_no_key_never_calls(api, monkeypatch):
    a = api({})
    monkeypatch.setenv("GPUTUI_RUNPOD_API", a.url)
    assert provider_api.read_runpod("p", None)["reason"] == "no RUNPOD_API_KEY on the box" and not a.seen
