"""The box's notification sender: URL validation, redaction, and how a service's answer is
judged (sent / retry later / give up). The request shapes themselves are checked against
Apprise in test_notify_oracle.py."""

import http.server
import json
import socket
import threading

import pytest

from remote_probe.notify import send as ns

SECRET_URLS = [
    ("ntfys://tk_S3cretTok@ntfy.example.com/topic9", ["tk_S3cretTok", "topic9"], "ntfy.example.com"),
    ("json://bob:hunter22@hooks.example.com/p/secretpath?+X-Key=k9zz", ["hunter22", "secretpath", "k9zz"], "hooks.example.com"),
    ("dingtalk://SECabcdef@a1b2c3d4e5f6", ["SECabcdef", "a1b2c3d4e5f6"], None),
    ("tgram://123456:AAHdqTcvCH1vGWJx/98765", ["AAHdqTcvCH1vGWJx", "98765"], None),
    ("autodl://eyJhbGciOiJ9.eyJ1aWQ.sig-_x", ["eyJhbGciOiJ9.eyJ1aWQ.sig-_x"], None),
    ("wecombot://693a91f6-7xxx", ["693a91f6-7xxx"], None),
    ("bark://api.day.app/devKEY123", ["devKEY123"], "api.day.app"),
]


@pytest.mark.parametrize("url,secrets,host", SECRET_URLS)
def test_no_secret_in_redacted_url_or_request_repr(url, secrets, host):
    shown = ns.redact_url(url)
    reqs = ns.build_requests(url, "t", "b")
    texts = [shown] + [repr(r) for r in reqs] + [str(r) for r in reqs]
    for text in texts:
        for secret in secrets:
            assert secret not in text, (secret, text)
    assert shown.startswith(url.split("://")[0] + "://")
    if host:
        assert host in shown  # the user can still tell their channels apart


def test_redacting_garbage_shows_nothing_of_it():
    assert ns.redact_url("mailto://me:pw@example.com") == "mailto://****"
    assert ns.redact_url("no scheme at all") == "?://****"


@pytest.mark.parametrize("url,message", [
    ("mailto://x@example.com", "unknown notification scheme 'mailto'; supported: ntfy, ntfys, json"),
    ("discord://a/b", "supported: "),
    ("not a url", "expected scheme://"),
    ("ntfy://", "needs a topic"),
    ("ntfy://bad topic!", "no valid topic"),
    ("slack://xoxb-123-456", "bot tokens"),
    ("slack://T1/B2", "three webhook tokens"),
    ("tgram://nottoken/1", "bot token"),
    ("tgram://123:ABC", "chat id"),
    ("dingtalk://tok/12", "phone numbers"),
    ("pushplus://short", "no valid token"),
    ("bark://api.day.app", "device key"),
    ("json://", "needs a host"),
    ("json://h.example/?method=FETCH", "method must be"),
    ("autodl://", "no valid token"),
])
def test_bad_urls_get_a_clear_message(url, message):
    reason = ns.validate_url(url)
    assert reason is not None and message in reason
    with pytest.raises(ns.NotifyURLError):
        ns.build_requests(url, "t", "b")


def test_every_scheme_has_a_valid_example():
    examples = {
        "ntfy": "ntfy://topic1", "ntfys": "ntfys://h.example/t", "json": "json://h.example",
        "jsons": "jsons://h.example/x", "slack": "slack://T1/B2/abc", "tgram": "tgram://1:A/2",
        "feishu": "feishu://tok", "lark": "lark://tok", "dingtalk": "dingtalk://tok",
        "wecombot": "wecombot://key", "schan": "schan://SCT1", "pushplus": "pushplus://" + "a" * 32,
        "bark": "bark://h.example/k", "barks": "barks://h.example/k", "autodl": "autodl://tok",
    }
    assert set(examples) == set(ns.SCHEMES)
    for scheme, url in examples.items():
        assert ns.validate_url(url) is None, scheme


@pytest.mark.parametrize("scheme,status,body,expect", [
    ("json", 200, b"", (True, False)),
    ("json", 204, b"", (True, False)),
    ("json", 500, b"", (False, True)),
    ("json", 503, b"oops", (False, True)),
    ("json", 429, b"", (False, True)),
    ("json", 404, b"", (False, False)),
    ("json", 401, b"", (False, False)),
    ("feishu", 200, b'{"code": 19001, "msg": "param invalid: incoming webhook access token invalid"}', (False, False)),
    ("feishu", 200, b'{"code": 0, "msg": "success"}', (True, False)),
    ("dingtalk", 200, b'{"errcode": 310000, "errmsg": "sign not match"}', (False, False)),
    ("dingtalk", 200, b'{"errcode": 0, "errmsg": "ok"}', (True, False)),
    ("wecombot", 200, b'{"errcode": 93000, "errmsg": "invalid webhook url"}', (False, False)),
    ("schan", 200, b'{"code": 40001, "message": "bad pushkey"}', (False, False)),
    ("pushplus", 200, b'{"code": 200, "msg": "ok"}', (True, False)),
    ("pushplus", 200, b'{"code": 903, "msg": "invalid token"}', (False, False)),
    ("tgram", 200, b'{"ok": false, "error_code": 400, "description": "chat not found"}', (False, False)),
    ("autodl", 200, b'{"code": "Success", "msg": ""}', (True, False)),
    ("autodl", 200, b'{"code": "AuthorizeFailed", "msg": "token"}', (False, False)),
    ("slack", 200, b"ok", (True, False)),
])
def test_judge_response(scheme, status, body, expect):
    ok, retryable, reason = ns.judge_response(scheme, status, body)
    assert (ok, retryable) == expect
    assert reason


class _Replies(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status, body = self.server.replies.pop(0)
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        if status in (301, 302):
            self.send_header("Location", "http://127.0.0.1:9/elsewhere")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Replies)
    srv.replies = []
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def test_send_over_the_network(server):
    url = "json://bob:hunter22@127.0.0.1:%d/hook" % server.server_address[1]
    server.replies = [(200, b"{}"), (500, b""), (400, b""), (302, b"")]
    assert ns.send(url, "t", "b").ok
    r = ns.send(url, "t", "b")
    assert (r.ok, r.retryable, r.status) == (False, True, 500)
    r = ns.send(url, "t", "b")
    assert (r.ok, r.retryable) == (False, False)
    r = ns.send(url, "t", "b")  # a redirect is not followed: the key would go elsewhere
    assert not r.ok and r.status == 302


def test_network_down_is_retryable_and_the_reason_has_no_secret():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    url = "ntfy://tk_Zq9SecretTok@127.0.0.1:%d/alerts" % port
    r = ns.send(url, "t", "b", timeout=2)
    assert (r.ok, r.retryable) == (False, True)
    assert "tk_Zq9SecretTok" not in r.reason and "Refused" in r.reason


def test_one_failing_target_fails_the_channel(server):
    url = "ntfy://127.0.0.1:%d/t1/t2" % server.server_address[1]
    server.replies = [(200, b"{}"), (500, b"")]
    r = ns.send(url, "t", "b")
    assert not r.ok and r.retryable


def test_scrub_removes_plain_and_quoted_secrets():
    text = "failed for https://x/a%2Fb?k=tok/en and tok/en"
    assert ns.scrub(text, ["tok/en", "a/b"]) == "failed for https://x/****?k=**** and ****"


def test_json_payload_is_json():
    (req,) = ns.build_requests("json://h.example/x", "T", "B", kind="failure")
    assert json.loads(req.body)["type"] == "failure"
