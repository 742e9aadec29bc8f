"""The Apprise oracle: for every scheme the box sends itself (remote_probe/notify/send.py),
the request it builds equals the one the Apprise library sends for the same URL, title and
body — URL (with query), the headers that matter (content type, auth, priority) and the
body parsed as JSON or form. Apprise's requests are captured in-process by replacing the
`requests` functions its plugins call; json:// and ntfy:// (which take the user's own host)
are also compared end to end at a loopback HTTP receiver, both senders really sending.

Known differences between Apprise and the services' own documentation (and what the box
does) are listed in DIVERGENCES and asserted, so a change on either side shows up here.
"""

import base64
import hashlib
import hmac
import http.server
import json
import sys
import threading
import time
import urllib.parse
from unittest import mock

import pytest

apprise = pytest.importorskip("apprise")
requests = pytest.importorskip("requests")

from remote_probe.notify import send as notify_send  # noqa: E402

NOW = 1700000000.123
TITLE = "gputui: train.py finished"
BODIES = [
    "job done: résumé <ok> & 42%\nloss 0.031",
    "Traceback (most recent call last):\n  File \"train.py\", line 9\n\n"
    "torch.OutOfMemoryError: CUDA out of memory. 'tried' *20 MiB*\t_x_",
    "a  b\n\n\n  c &quot; d\t\te  \n\tf \"q\" [/x]",
]
# Transport headers each HTTP client sets its own way; every other header must match.
TRANSPORT_HEADERS = ("content-length", "host", "accept-encoding", "connection")

# (id, url). Tokens are made up but have each service's real shape.
CASES = [
    ("ntfy-cloud", "ntfy://gputui_alerts"),
    ("ntfy-cloud-host", "ntfys://ntfy.sh/gputui_alerts/second"),
    ("ntfy-sh-token", "ntfys://tk_AbC123xyz@ntfy.sh/reserved_topic"),
    ("ntfy-sh-plain-http", "ntfy://ntfy.sh/gputui_alerts"),
    ("ntfy-private-token", "ntfys://tk_AbC123xyz@ntfy.example.com/t1/t2?priority=high"),
    ("ntfy-private-basic", "ntfy://alice:s3cret@127.0.0.1:8080/topic?priority=5"),
    ("json", "json://127.0.0.1:8081/hook"),
    ("json-extras", "jsons://bob:pw@hooks.example.com/p/a?+X-Api-Key=k9&-src=box&:message=msg&:type="),
    ("json-put", "json://hooks.example.com/x?method=put"),
    ("slack", "slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ"),
    ("slack-channels", "slack://gpubot@T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ/#general/+C0123/@ann"),
    ("slack-nofooter", "slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ?footer=no"),
    ("tgram", "tgram://123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/12345/-1001234567890"),
    ("tgram-channel", "tgram://bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/@gputui_ch?silent=yes"),
    ("feishu", "feishu://3a1b2c3d-4e5f-6789-abcd-ef0123456789"),
    ("lark", "lark://3a1b2c3d-4e5f-6789-abcd-ef0123456789"),
    ("dingtalk", "dingtalk://a1b2c3d4e5f60718293a4b5c6d7e8f90"),
    ("dingtalk-signed", "dingtalk://SEC1a2b3c4d5e6f@a1b2c3d4e5f60718293a4b5c6d7e8f90/13800138000"),
    ("wecombot", "wecombot://693a91f6-7xxx-4bc4-97a0-0ec2sifa5aaa"),
    ("schan", "schan://SCT123456TabcdefGHIJ"),
    ("pushplus", "pushplus://0123456789abcdef0123456789abcdef"),
    ("pushplus-topic-text", "pushplus://0123456789abcdef0123456789abcdef/mygroup?format=text"),
    ("bark", "bark://api.day.app/Xk3devicekey"),
    ("barks-options", "barks://u:p@bark.example.com:8443/k1/k2?sound=alarm&level=critical&group=gpu&badge=3&click=https://x.example/y"),
]

# Where Apprise and the service's documentation differ, and which the box follows.
DIVERGENCES = {
    "dingtalk-signed": "DingTalk documents sign=urlencode(base64(hmac)) once; Apprise "
                       "encodes it twice (requests re-encodes its already quoted value). "
                       "The box follows the documentation.",
}


# Where the box follows Apprise although a service documents more (listed, not asserted):
# - ntfy: a JSON body over 8000 bytes makes Apprise upload it as an attachment; the box's
#   messages stay far below (evidence is capped at 1500 characters), so neither does.
# - ntfy on ntfy.sh by bare topic (ntfy://topic) sends no credentials, as in Apprise; a
#   reserved topic needs ntfys://tk_TOKEN@ntfy.sh/topic (a case above).
# - Feishu/Lark signed webhooks (timestamp + sign in the body) and ServerChan Turbo keys
#   (sctp..., served from <uid>.push.ft07.com) are not in Apprise and not on the box.
# - PushPlus: Apprise turns plain text into HTML (template "html"); ?format=text sends
#   the text as is (template "txt"). Telegram: Apprise drops the blanks around line
#   breaks and empty lines; the box does the same.


def _asset():
    # No icons (they point at Apprise's own image host) and our name as the app id, the
    # same asset the laptop side uses when it sends through Apprise.
    return apprise.AppriseAsset(app_id="gputui", app_desc="gputui", image_url_mask="",
                                image_path_mask="", image_url_logo="")


class _Reply:
    status_code = 200
    content = b'{"ok": true, "code": 0, "errcode": 0}'
    headers = {}

    def json(self):
        return json.loads(self.content)


def apprise_requests(url, title, body):
    """Every HTTP request Apprise makes to deliver (title, body) to url, as
    (method, url, headers, body bytes), captured before anything leaves the process."""
    captured = []

    def request(method, target, **kw):
        prepared = requests.Request(method.upper(), target, data=kw.get("data"),
                                    params=kw.get("params"), headers=kw.get("headers"),
                                    auth=kw.get("auth")).prepare()
        data = prepared.body
        captured.append((prepared.method, prepared.url, dict(prepared.headers),
                         data.encode("utf-8") if isinstance(data, str) else (data or b"")))
        return _Reply()

    def verb(method):
        return lambda target, **kw: request(method, target, **kw)

    a = apprise.Apprise(asset=_asset())
    assert a.add(url), url
    plugin = sys.modules[type(a[0]).__module__]
    # Apprise sleeps up to 5.5 s between a plugin's requests (its politeness throttle); the
    # requests themselves do not depend on it, and nothing leaves the process here.
    a[0].request_rate_per_sec = 0
    # Freeze the clock on Apprise's side too (Slack's ts, DingTalk's signed timestamp);
    # some plugins hold `time` itself, bound at import.
    frozen = [mock.patch("time.time", lambda: NOW)]
    if getattr(plugin, "time", None) is time.time:
        frozen.append(mock.patch.object(plugin, "time", lambda: NOW))
    with mock.patch("requests.post", verb("post")), mock.patch("requests.get", verb("get")), \
            mock.patch("requests.request", request), frozen[0], \
            (frozen[1] if len(frozen) > 1 else mock.patch.object(plugin, "__name__", plugin.__name__)):
        a.notify(body=body, title=title, body_format=apprise.NotifyFormat.TEXT)
    assert captured, "Apprise sent nothing for %s" % url
    return captured


def normalise(method, url, headers, body, case=None):
    """What must match: method; URL with its query decoded into sorted pairs; the
    headers that matter (names case-folded); the body parsed."""
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    if case == "apprise:dingtalk-signed":
        # See DIVERGENCES: undo Apprise's second encoding of the signature.
        query = [(k, urllib.parse.unquote(v) if k == "sign" else v) for k, v in query]
    path = parts.path or "/"
    hdrs = {k.lower(): v for k, v in headers.items() if k.lower() not in TRANSPORT_HEADERS}
    if hdrs.get("accept") == "*/*":  # requests' default, meaning the same as none
        del hdrs["accept"]
    ctype = hdrs.get("content-type", "")
    if "json" in ctype:
        parsed = json.loads(body.decode("utf-8"))
    elif "x-www-form-urlencoded" in ctype:
        parsed = sorted(urllib.parse.parse_qsl(body.decode("ascii"), keep_blank_values=True))
    else:
        parsed = body
    return (method.upper(), parts.scheme, parts.netloc, path, sorted(query), hdrs, parsed)


def _key(item):
    return json.dumps(item, sort_keys=True, default=str)


MESSAGES = [(TITLE, BODIES[0]), (TITLE, BODIES[1]),
            ("box <a100> & \"co\" 'x' 训练完成", BODIES[2]), ("", BODIES[0])]


@pytest.mark.parametrize("title,body", MESSAGES, ids=["short", "traceback", "odd-title", "no-title"])
@pytest.mark.parametrize("case,url", CASES, ids=[c[0] for c in CASES])
def test_box_request_equals_apprise_request(case, url, title, body):
    theirs = [normalise(*r, case="apprise:" + case) for r in apprise_requests(url, title, body)]
    ours = [normalise(r.method, r.url, r.headers, r.body)
            for r in notify_send.build_requests(url, title, body, "info", now=NOW)]
    # Multi-target channels send one request per target; Apprise pops targets from the end.
    assert sorted(ours, key=_key) == sorted(theirs, key=_key)


def test_every_supported_scheme_is_checked_against_apprise_or_its_own_docs():
    checked = {url.split("://")[0] for _, url in CASES} | {"autodl"}
    assert checked == set(notify_send.SCHEMES)


def test_dingtalk_divergence_is_real_and_the_box_follows_the_docs():
    url = dict(CASES)["dingtalk-signed"]
    (theirs,) = apprise_requests(url, TITLE, BODIES[0])
    (ours,) = notify_send.build_requests(url, TITLE, BODIES[0], now=NOW)
    their_sign = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(theirs[1]).query))["sign"]
    our_sign = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(ours.url).query))["sign"]
    # DingTalk's documented recipe, written out independently of either sender.
    stamp = str(round(NOW * 1000))
    secret = "SEC1a2b3c4d5e6f"
    digest = hmac.new(secret.encode(), ("%s\n%s" % (stamp, secret)).encode(), hashlib.sha256).digest()
    documented = base64.b64encode(digest).decode()
    assert our_sign == documented
    assert their_sign != documented and urllib.parse.unquote(their_sign) == documented
    assert "sign" in DIVERGENCES["dingtalk-signed"]


def test_autodl_request_is_the_documented_one():
    # AutoDL's docs (autodl.com/docs/msg): requests.post(".../api/v1/wechat/message/send",
    # json={"title": ..., "name": ..., "content": ...}, headers={"Authorization": TOKEN}).
    token = "eyJhbGciOiJFUzI1NiJ9.eyJ1aWQiOjF9.Zm9v-bar_baz"
    (req,) = notify_send.build_requests("autodl://%s?name=ImageNet run" % token, TITLE,
                                        BODIES[0], now=NOW)
    assert (req.method, req.url) == ("POST", "https://www.autodl.com/api/v1/wechat/message/send")
    assert req.headers["Authorization"] == token
    assert req.headers["Content-Type"] == "application/json"
    assert json.loads(req.body) == {"title": TITLE, "name": "ImageNet run", "content": BODIES[0]}
    (plain,) = notify_send.build_requests("autodl://%s" % token, TITLE, "x", now=NOW)
    assert json.loads(plain.body)["name"] == "gputui"


# ---------------------------------------------------------------- loopback, both senders

class _Receiver(http.server.BaseHTTPRequestHandler):
    def _any(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.server.got.append((self.command, self.path, dict(self.headers), self.rfile.read(length)))
        reply = b'{"id": "x", "event": "message"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    do_POST = do_PUT = _any

    def log_message(self, *args):
        pass


@pytest.fixture
def receiver():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    server.got = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _received(server, count, timeout=5.0):
    deadline = time.monotonic() + timeout
    while len(server.got) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    got, server.got = list(server.got), []
    return got


@pytest.mark.parametrize("template", [
    "json://127.0.0.1:{port}/hook?+X-Api-Key=k9",
    "json://bob:pw@127.0.0.1:{port}/a/b",
    "ntfy://127.0.0.1:{port}/gputui_alerts?priority=max",
    "ntfy://tk_AbC123@127.0.0.1:{port}/t1/t2",
])
def test_loopback_both_senders_deliver_the_same_request(receiver, template):
    url = template.format(port=receiver.server_address[1])
    a = apprise.Apprise(asset=_asset())
    assert a.add(url)
    a[0].request_rate_per_sec = 0  # its throttle between the two topics' requests
    assert a.notify(body=BODIES[1], title=TITLE, body_format=apprise.NotifyFormat.TEXT)
    n = len(notify_send.build_requests(url, TITLE, BODIES[1]))
    theirs = _received(receiver, n)
    result = notify_send.send(url, TITLE, BODIES[1], timeout=5)
    assert result.ok, result.reason
    ours = _received(receiver, n)
    assert len(theirs) == len(ours) == n

    def norm(got):
        method, path, headers, body = got
        return normalise(method, "http://127.0.0.1%s" % path, headers, body)

    assert sorted(map(norm, ours), key=_key) == sorted(map(norm, theirs), key=_key)
