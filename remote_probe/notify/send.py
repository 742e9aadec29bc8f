"""Notification senders for the box: Apprise-style URLs turned into HTTP requests with
urllib only (the probe is stdlib-only, Python 3.8).

Two halves, so both can be tested:
- ``build_requests(url, title, body, kind, now)`` (remote_probe/wire/channel_requests.py) is pure: it parses the URL and returns
  the ``OutRequest`` objects (method, URL, headers, body bytes) the service expects. What
  it builds is checked against the Apprise library itself (tests/unit/remote_probe/test_notify_oracle.py),
  so a user's URL means on the box what it means in Apprise.
- ``send_request(req)`` performs one request and judges the service's answer
  (``SendResult``: ok, retryable, reason).

Secrets (tokens, webhook keys, passwords) never leave through repr/str: ``redact_url`` is
the one way a channel URL is shown, and ``OutRequest.__repr__`` uses it.
"""

import json
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request

from remote_probe.wire.channel_requests import OutRequest, build_requests, validate_url  # noqa: F401
from remote_probe.wire.channel_urls import (APP_ID, KINDS, SCHEMES, NotifyURLError, redact_url,  # noqa: F401
                                            scrub, secrets_of)


class SendResult:
    __slots__ = ("ok", "retryable", "reason", "status")

    def __init__(self, ok, retryable, reason, status=None):
        self.ok = ok
        self.retryable = retryable
        self.reason = reason
        self.status = status

    def __repr__(self):
        return "<SendResult ok=%r retryable=%r %s>" % (self.ok, self.retryable, self.reason)


# ---------------------------------------------------------------- sending

def judge_response(scheme, status, content):
    """(ok, retryable, reason) from the service's HTTP status and body. Services that
    answer 200 with an error code in the body are judged by that code."""
    if status == 429 or status >= 500:
        return False, True, "HTTP %d" % status
    if not 200 <= status < 300:
        return False, False, "HTTP %d" % status
    try:
        data = json.loads(content.decode("utf-8", "replace")) if content else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return True, False, "HTTP %d" % status
    code = None
    if scheme in ("feishu", "lark"):
        code = data.get("code") or data.get("StatusCode")
    elif scheme in ("dingtalk", "wecombot"):
        code = data.get("errcode")
    elif scheme == "schan":
        code = data.get("code")
    elif scheme == "pushplus":
        code = None if data.get("code") in (200, None) else data.get("code")
    elif scheme == "tgram" and data.get("ok") is False:
        code = data.get("error_code", "not ok")
    elif scheme == "autodl" and data.get("code") not in (None, "Success"):
        code = data.get("code")
    if code:
        msg = data.get("msg") or data.get("errmsg") or data.get("message") or data.get("description")
        return False, False, "service error %s%s" % (code, ": %s" % str(msg)[:120] if msg else "")
    return True, False, "HTTP %d" % status


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None  # a webhook that redirects is answered as its status, never followed


def send_request(req, timeout=15.0, secrets=(), opener=None):
    """Send one OutRequest; never raises for network trouble. Error text is scrubbed of
    the channel's secrets."""
    data = req.body if req.method not in ("GET", "HEAD") else None
    request = urllib.request.Request(req.url, data=data, headers=req.headers, method=req.method)
    if opener is None:
        opener = urllib.request.build_opener(
            _NoRedirect, urllib.request.HTTPSHandler(context=ssl.create_default_context()))
    try:
        with opener.open(request, timeout=timeout) as resp:
            ok, retry, reason = judge_response(req.scheme, resp.status, resp.read(65536))
            return SendResult(ok, retry, reason, resp.status)
    except urllib.error.HTTPError as exc:
        try:
            content = exc.read(65536)
        except OSError:
            content = b""
        ok, retry, reason = judge_response(req.scheme, exc.code, content)
        return SendResult(ok, retry, reason, exc.code)
    except (urllib.error.URLError, socket.timeout, OSError, ValueError) as exc:
        cause = getattr(exc, "reason", exc)
        text = "%s: %s" % (type(cause).__name__, cause)
        return SendResult(False, True, scrub(text, list(secrets) + [req.url])[:200])


def send(url, title, body, kind="info", timeout=15.0, now=None, opener=None):
    """Deliver through every request of one channel. Returns one SendResult: ok when all
    requests went through; retryable when any failure was."""
    try:
        requests = build_requests(url, title, body, kind, now)
    except NotifyURLError as exc:
        return SendResult(False, False, str(exc))
    secrets = secrets_of(url)
    results = [send_request(r, timeout, secrets, opener) for r in requests]
    bad = [r for r in results if not r.ok]
    if not bad:
        return results[0]
    return SendResult(False, any(r.retryable for r in bad), bad[0].reason, bad[0].status)
