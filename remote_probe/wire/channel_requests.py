"""Notification requests: an Apprise-style channel URL plus (title, body) -> the HTTP
requests the service expects (method, URL, headers, body bytes). Pure: nothing is sent
here (remote_probe/notify/send.py sends). What it builds is held to the Apprise library's
own requests by tests (the oracle test), so a user's URL means on the box what it means in
Apprise. Part of the wire so the laptop can check a URL exactly as the box will use it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time
import urllib.parse

from remote_probe.wire.channel_urls import (_BARK_LEVELS, _BARK_SOUNDS, _COLORS, _JSON_METHODS,
                                            _NTFY_PRIORITIES, _HOST_RE, APP_ID, AUTODL_URL, KINDS, NTFY_CLOUD,
                                            NotifyURLError, _hostport, _Parts, _token, redact_url)

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing stays off the box's import path
    import typing
    _Built = typing.List[typing.Tuple[str, str, typing.Dict[str, str], bytes]]

class OutRequest:
    """One HTTP request a channel sends. ``shown`` is the redacted channel URL."""

    __slots__ = ("method", "url", "headers", "body", "shown", "scheme")

    def __init__(self, method: str, url: str, headers: dict[str, str], body: bytes, shown: str,
                 scheme: str) -> None:
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.shown = shown
        self.scheme = scheme

    def __repr__(self) -> str:
        return "<OutRequest %s %s>" % (self.method, self.shown)

    __str__ = __repr__


# ---------------------------------------------------------------- text helpers

def _json(payload: object, ascii_only: bool = True) -> bytes:
    return json.dumps(payload, ensure_ascii=ascii_only).encode("utf-8")


def _escape_html(text: str, quotes: bool = True) -> str:
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if quotes:
        text = text.replace('"', "&quot;").replace("'", "&apos;")
    return text


def _text_to_html(text: str) -> str:
    """Apprise's plain text -> HTML (escape, spaces as &nbsp;, new lines as <br/>)."""
    return _escape_html(text).replace("\t", "&emsp;").replace(" ", "&nbsp;").replace("\n", "<br/>")


def _telegram_html(title: str, body: str) -> str:
    """What Apprise hands Telegram for a plain-text title and body: escaped HTML, bold
    title, CRLF line breaks with the blanks around them and empty lines dropped, a tab
    as three spaces."""
    html = ""
    if title:
        html = "<b>%s</b>\r\n" % _escape_html(title, quotes=False)
    text = re.sub(r"[ \t]*\n\s*", "\r\n", _escape_html(body, quotes=False))
    return re.sub(r"\r*\n[\r\n]+", "\r\n", html + text.replace("\t", "   "))


def _slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _joined(title: str, body: str, sep: str) -> str:
    return "%s%s%s" % (title, sep, body) if title else body


# ---------------------------------------------------------------- builders

def _headers(content_type: str) -> dict[str, str]:
    return {"User-Agent": APP_ID, "Content-Type": content_type}


def _basic(user: str | None, password: str | None) -> str:
    raw = ("%s:%s" % (user, password or "")).encode("latin-1", "replace")
    return "Basic " + base64.b64encode(raw).decode("ascii")


def _build_ntfy(p: _Parts, title: str, body: str, kind: str, now: float) -> _Built:
    topics = list(p.path)
    token = p.query.get("token")
    user, password = p.user, p.password
    cloud = bool(re.search(r"ntfy\.sh", p.host or "", re.I))
    mode = (p.query.get("mode") or "").lower()
    if mode not in ("cloud", "private"):
        # Apprise's rule: a host and a topic path make a server URL (ntfys://ntfy.sh/t
        # included); a bare name is a topic on ntfy.sh.
        mode = "private" if topics and _HOST_RE.match(p.host or "") else "cloud"
    if mode == "cloud":
        if not cloud and p.host:
            topics.insert(0, p.host)
        base = NTFY_CLOUD
    else:
        base = "%s://%s/" % ("https" if p.scheme == "ntfys" else "http", _hostport(p))
    if not topics:
        raise NotifyURLError("%s:// needs a topic" % p.scheme)
    for t in topics:
        _token(t, r"^[a-z0-9_-]{1,64}$", "topic", p.scheme)
    headers = _headers("application/json")
    auth = (p.query.get("auth") or "").lower()
    if mode == "private":  # Apprise sends credentials to a private server only
        if token or auth == "token" or (user and not password and re.match(r"tk_\S+", user, re.I)):
            token = token or (password if password else user)
            headers["Authorization"] = "Bearer %s" % token
        elif user:
            headers["Authorization"] = _basic(user, password)
    priority = p.query.get("priority")
    if priority:
        value = priority.strip().lower()
        level = next((v for k, v in _NTFY_PRIORITIES if value.startswith(k)), "default")
        if level != "default":
            headers["X-Priority"] = level
    out = []
    for topic in topics:
        data = {"topic": topic}
        if title:
            data["title"] = title
        if body:
            data["message"] = body
        out.append(("POST", base, dict(headers), _json(data)))
    return out


def _build_json(p: _Parts, title: str, body: str, kind: str, now: float) -> _Built:
    host = p.need_host()
    method = (p.query.get("method") or "POST").upper()
    if method not in _JSON_METHODS:
        raise NotifyURLError("json:// method must be one of %s" % ", ".join(_JSON_METHODS))
    headers = _headers("application/json")
    params = []
    payload = {"version": "1.0", "title": title, "message": body, "attachments": [],
               "type": kind}
    for prefix, key, value in p.extras:
        if prefix == "+":
            headers[key] = value
        elif prefix == "-":
            params.append((key, value))
        elif key in payload:  # :field=newname renames, :field= drops (Apprise's rule)
            moved = payload.pop(key)
            if value:
                payload[value] = moved
        else:
            payload[key] = value
    if p.user:
        headers["Authorization"] = _basic(p.user, p.password)
    url = "%s://%s%s%s" % ("https" if p.scheme == "jsons" else "http", host,
                           ":%d" % p.port if p.port else "", p.fullpath or "")
    if params:
        url += "?" + urllib.parse.urlencode(params)
    return [(method, url, headers, _json(payload))]


def _build_slack(p: _Parts, title: str, body: str, kind: str, now: float) -> _Built:
    tokens = [p.host] + list(p.path)
    if tokens[0].startswith("xo"):
        raise NotifyURLError("slack:// bot tokens (xoxb-...) are not supported on the box; "
                             "use an incoming webhook URL (slack://TokenA/TokenB/TokenC)")
    if p.flag("blocks", False):
        raise NotifyURLError("slack:// ?blocks=yes is not supported on the box")
    if len(tokens) < 3:
        raise NotifyURLError("slack:// needs the three webhook tokens TokenA/TokenB/TokenC")
    a = _token(tokens[0], r"^[A-Z0-9]+$", "first token", "slack")
    b = _token(tokens[1], r"^[A-Z0-9]+$", "second token", "slack")
    c = _token(tokens[2], r"^[A-Za-z0-9]+$", "third token", "slack")
    channels: list[str | None] = list(tokens[3:])
    if p.query.get("to"):
        channels += [x for x in re.split(r"[ \t\r\n,#\\/]+", p.query["to"]) if x]
    attachment: dict[str, object] = {"title": _slack_escape(title), "text": _slack_escape(body),
                  "color": _COLORS.get(kind, "#888888")}
    if p.flag("footer", True):
        attachment["footer"] = APP_ID
        if p.flag("timestamp", True):
            attachment["ts"] = now
    payload = {"mrkdwn": False, "attachments": [attachment]}
    if p.user:
        payload["username"] = p.user
    url = "https://hooks.slack.com/services/%s/%s/%s" % (a, b, c)
    headers = {"User-Agent": APP_ID, "Accept": "application/json",
               "Content-Type": "application/json; charset=utf-8"}
    out = []
    for channel in channels or [None]:
        item = dict(payload)
        if channel is not None:
            if channel[0] == "+":
                item["channel"] = channel[1:]
            elif channel[0] == "@":
                item["channel"] = channel
            else:
                item["channel"] = channel if channel[0] == "#" else "#" + channel
        out.append(("POST", url, dict(headers), _json(item)))
    return out


def _build_tgram(p: _Parts, title: str, body: str, kind: str, now: float) -> _Built:
    netloc = p.netloc if p.user is None else "%s@%s" % (p.user, p.netloc)
    m = re.match(r"^(bot)?(?P<key>[0-9]+:[A-Za-z0-9_-]+)$", netloc)
    if not m:
        raise NotifyURLError("tgram:// needs the bot token (tgram://123456:ABC.../CHAT_ID)")
    chats = list(p.path)
    if p.query.get("to"):
        chats += [x for x in re.split(r"[ \t\r\n,\\/]+", p.query["to"]) if x]
    if not chats:
        raise NotifyURLError("tgram:// needs a chat id (tgram://BOT_TOKEN/CHAT_ID)")
    payload = {"disable_notification": p.flag("silent", False),
               "disable_web_page_preview": not p.flag("preview", False),
               "parse_mode": "HTML", "text": _telegram_html(title, body)}
    url = "https://api.telegram.org/bot%s/sendMessage" % m.group("key")
    out = []
    for chat in chats:
        item = dict(payload)
        if re.match(r"^-?[0-9]+$", chat):
            item["chat_id"] = int(chat)
        elif re.match(r"^@?[A-Za-z][A-Za-z0-9_]{3,}$", chat):
            item["chat_id"] = chat if chat.startswith("@") else "@" + chat
        else:
            raise NotifyURLError("tgram:// chat id is neither a number nor a @channel")
        out.append(("POST", url, _headers("application/json"), _json(item)))
    return out


def _build_feishu(p: _Parts, title: str, body: str, kind: str, now: float) -> _Built:
    token = _token(p.query.get("token") or p.host, r"^[A-Z0-9_-]+$", "token", "feishu")
    payload = {"msg_type": "text", "content": {"text": _joined(title, body, "\r\n")}}
    return [("POST", "https://open.feishu.cn/open-apis/bot/v2/hook/%s/" % token,
             _headers("application/json"), _json(payload, ascii_only=False))]


def _build_lark(p: _Parts, title: str, body: str, kind: str, now: float) -> _Built:
    token = _token(p.query.get("token") or p.host, r"^[a-z0-9-]+$", "token", "lark")
    payload = {"msg_type": "text", "content": {"text": _joined(title, body, "\n")}}
    return [("POST", "https://open.larksuite.com/open-apis/bot/v2/hook/%s" % token,
             _headers("application/json"), _json(payload, ascii_only=False))]


def dingtalk_sign(secret: str, timestamp_ms: str) -> str:
    """DingTalk's signature: base64(HMAC-SHA256(key=secret, msg="<ts>\\n<secret>"))."""
    digest = hmac.new(secret.encode("utf-8"), ("%s\n%s" % (timestamp_ms, secret)).encode("utf-8"),
                      digestmod=hashlib.sha256).digest()
    return base64.b64encode(digest).decode("ascii")


def _build_dingtalk(p: _Parts, title: str, body: str, kind: str, now: float) -> _Built:
    token = _token(p.query.get("token") or p.host, r"^[a-z0-9]+$", "access token", "dingtalk")
    secret = p.query.get("secret") or p.user
    if secret:
        _token(secret, r"^[a-z0-9]+$", "secret", "dingtalk")
    phones = []
    for target in list(p.path) + ([p.query["to"]] if p.query.get("to") else []):
        digits = "".join(re.findall(r"\d+", target))
        if re.match(r"^\+?[0-9\s)(+-]+\s*$", target) and 11 <= len(digits) <= 14:
            phones.append(digits)
        else:
            raise NotifyURLError("dingtalk:// targets are phone numbers to @-mention")
    payload = {"msgtype": "text", "at": {"atMobiles": phones, "isAtAll": False},
               "text": {"content": _joined(title, body, "\r\n")}}
    query = [("access_token", token)]
    if secret:
        stamp = str(int(round(now * 1000)))
        # Sent once URL-encoded, as DingTalk documents (Apprise encodes it twice).
        query += [("timestamp", stamp), ("sign", dingtalk_sign(secret, stamp))]
    url = "https://oapi.dingtalk.com/robot/send?" + urllib.parse.urlencode(query)
    return [("POST", url, _headers("application/json"), _json(payload))]


def _build_wecombot(p: _Parts, title: str, body: str, kind: str, now: float) -> _Built:
    key = _token(p.query.get("key") or p.host, r"^[a-z0-9_-]+$", "webhook key", "wecombot")
    payload = {"msgtype": "text", "text": {"content": _joined(title, body, "\r\n")}}
    return [("POST", "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=%s" % key,
             _headers("application/json; charset=utf-8"), _json(payload))]


def _build_schan(p: _Parts, title: str, body: str, kind: str, now: float) -> _Built:
    token = _token(p.host, r"^[A-Za-z0-9]+$", "SendKey", "schan")
    form = urllib.parse.urlencode([("title", title), ("desp", body)]).encode("ascii")
    return [("POST", "https://sctapi.ftqq.com/%s.send" % token,
             {"Content-Type": "application/x-www-form-urlencoded"}, form)]


def _build_pushplus(p: _Parts, title: str, body: str, kind: str, now: float) -> _Built:
    token = _token(p.query.get("token") or p.host, r"^[a-z0-9_-]{32,64}$", "token", "pushplus")
    fmt = (p.query.get("format") or "html").lower()
    if fmt.startswith("t"):
        template, content = "txt", body
    elif fmt.startswith("h"):
        template, content = "html", _text_to_html(body)
    else:
        raise NotifyURLError("pushplus:// ?format= must be html or text")
    base = {"token": token, "title": title[:100] if title else content, "content": content,
            "template": template, "channel": "wechat"}
    out = []
    topics: list[str | None] = list(p.path)
    for topic in topics or [None]:
        item = dict(base)
        if topic is not None:
            item["topic"] = topic
        out.append(("POST", "https://www.pushplus.plus/send", _headers("application/json"),
                    _json(item, ascii_only=False)))
    return out


def _build_bark(p: _Parts, title: str, body: str, kind: str, now: float) -> _Built:
    host = p.need_host()
    keys = list(p.path)
    if not keys:
        raise NotifyURLError("%s:// needs a device key (%s://HOST/DEVICE_KEY)" % (p.scheme, p.scheme))
    payload: dict[str, object] = {"title": title if title else APP_ID, "body": body}
    if p.query.get("icon"):
        payload["icon"] = p.query["icon"]
    sound = (p.query.get("sound") or "").strip().lower()
    if sound:
        if sound.endswith(".caf"):
            sound = sound[:-4]
        match = next((s for s in _BARK_SOUNDS if s == sound), None) or next(
            (s for s in _BARK_SOUNDS if s.startswith(sound)), None)
        if match:
            payload["sound"] = match + ".caf"
    if p.query.get("click"):
        payload["url"] = p.query["click"]
    badge = p.query.get("badge")
    if badge and badge.strip().isdigit():
        payload["badge"] = int(badge)
    level = (p.query.get("level") or "").strip().lower()
    if level:
        match = next((lv for lv in _BARK_LEVELS if lv.lower() == level), None) or next(
            (lv for lv in _BARK_LEVELS if lv.lower().startswith(level)), None)
        if match:
            payload["level"] = match
    if p.query.get("category"):
        payload["category"] = p.query["category"].strip()
    if p.query.get("group"):
        payload["group"] = p.query["group"].strip()
    headers = _headers("application/json; charset=utf-8")
    if p.user:
        headers["Authorization"] = _basic(p.user, p.password)
    url = "%s://%s%s/push" % ("https" if p.scheme == "barks" else "http", host,
                              ":%d" % p.port if p.port else "")
    out = []
    for key in keys:
        item: dict[str, object] = {"device_key": key}
        item.update(payload)
        out.append(("POST", url, dict(headers), _json(item)))
    return out


def _build_autodl(p: _Parts, title: str, body: str, kind: str, now: float) -> _Built:
    # AutoDL's documented call: POST JSON {title, name, content} with the account's
    # token as the bare Authorization header. No Apprise plugin exists for it.
    token = _token(p.netloc, r"^[A-Za-z0-9._-]+$", "token", "autodl")
    payload = {"title": title, "name": p.query.get("name") or APP_ID, "content": body}
    return [("POST", AUTODL_URL, {"User-Agent": APP_ID, "Content-Type": "application/json",
                                  "Authorization": token}, _json(payload, ascii_only=False))]


_BUILDERS = {
    "ntfy": _build_ntfy, "ntfys": _build_ntfy, "json": _build_json, "jsons": _build_json,
    "slack": _build_slack, "tgram": _build_tgram, "feishu": _build_feishu,
    "lark": _build_lark, "dingtalk": _build_dingtalk, "wecombot": _build_wecombot,
    "schan": _build_schan, "pushplus": _build_pushplus, "bark": _build_bark,
    "barks": _build_bark, "autodl": _build_autodl,
}


def validate_url(url: object) -> str | None:
    """None when the URL can be sent to; else the reason (safe to show)."""
    try:
        build_requests(url, "t", "b")
    except NotifyURLError as exc:
        return str(exc)
    return None


def build_requests(url: object, title: str | None, body: str | None, kind: str = "info",
                   now: float | None = None) -> list[OutRequest]:
    """The HTTP requests that deliver (title, body) through the channel URL.
    Raises NotifyURLError (message without secrets) for a URL that cannot be used."""
    parts = _Parts(url)
    if kind not in KINDS:
        kind = "info"
    now = time.time() if now is None else now
    built = _BUILDERS[parts.scheme](parts, title or "", body or "", kind, now)
    shown = redact_url(url)
    return [OutRequest(m, u, h, b, shown, parts.scheme) for m, u, h, b in built]
