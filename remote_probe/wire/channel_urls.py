"""Notification channel URLs, Apprise's notation (``ntfy://``, ``dingtalk://``, ...): the
schemes gputui sends to, how a URL is split, and how it is shown without its secrets.

Part of the wire: the laptop validates and shows the URLs the user configured with this
code, and the daemon on the box sends with it, so a URL means the same on both sides.
Stdlib only, Python 3.8. See docs/architecture.md, "Notifications".
"""

from __future__ import annotations

import re
import urllib.parse

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing stays off the box's import path
    import typing

APP_ID = "gputui"

# Apprise's notify types; the colour table is Apprise's default asset's.
KINDS = ("info", "success", "warning", "failure")
_COLORS = {"info": "#3AA3E3", "success": "#3AA337", "failure": "#A32037",
           "warning": "#CACF29"}

SCHEMES = ("ntfy", "ntfys", "json", "jsons", "slack", "tgram", "feishu", "lark",
           "dingtalk", "wecombot", "schan", "pushplus", "bark", "barks", "autodl")

AUTODL_URL = "https://www.autodl.com/api/v1/wechat/message/send"
NTFY_CLOUD = "https://ntfy.sh/"

_BARK_SOUNDS = (
    "alarm", "anticipate", "bell", "birdsong", "bloom", "calypso", "chime", "choo",
    "descent", "electronic", "fanfare", "glass", "gotosleep", "healthnotification",
    "horn", "ladder", "mailsent", "minuet", "multiwayinvitation", "newmail",
    "newsflash", "noir", "paymentsuccess", "shake", "sherwoodforest", "silence",
    "spell", "suspense", "telegraph", "tiptoes", "typewriters", "update")
_BARK_LEVELS = ("active", "timeSensitive", "passive", "critical")
_NTFY_PRIORITIES = (  # Apprise's prefix table: the first key the value starts with wins
    ("l", "low"), ("mo", "low"), ("n", "default"), ("h", "high"), ("e", "max"),
    ("mi", "min"), ("ma", "max"), ("d", "default"), ("1", "min"), ("2", "low"),
    ("3", "default"), ("4", "high"), ("5", "max"))
_JSON_METHODS = ("POST", "GET", "DELETE", "PUT", "HEAD", "PATCH")
_TRUE = ("1", "yes", "true", "on", "y", "t", "enable", "enabled", "+")
_FALSE = ("0", "no", "false", "off", "n", "f", "disable", "disabled", "-", "never")

_HOST_RE = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)$")


class NotifyURLError(ValueError):
    """A channel URL that cannot be used; the message is safe to show (no secrets)."""


# ---------------------------------------------------------------- URL parsing

def _query_pairs(query: str) -> typing.Iterator[tuple[str, str]]:
    """Apprise's query reading: '&' or ';' between pairs, '+' kept in values (tokens
    and passwords use it) and as a key's first character (json's +Header)."""
    for pair in re.split(r"[&;]", query):
        if not pair:
            continue
        key, _, value = pair.partition("=")
        key = key[:1] + key[1:].replace("+", " ")
        yield urllib.parse.unquote(key).strip(), urllib.parse.unquote(value).strip()


class _Parts:
    """An Apprise-style URL split the way Apprise splits it, without lowercasing
    (tokens live in the host part and are case-sensitive)."""

    def __init__(self, url: object) -> None:
        if not isinstance(url, str) or "://" not in url:
            raise NotifyURLError("not a channel URL (expected scheme://...); supported: %s"
                                 % ", ".join(SCHEMES))
        scheme, rest = url.split("://", 1)
        self.scheme = scheme.strip().lower()
        if self.scheme not in SCHEMES:
            raise NotifyURLError("unknown notification scheme %r; supported: %s"
                                 % (self.scheme[:20], ", ".join(SCHEMES)))
        rest, _, query = rest.partition("?")
        netloc, slash, path = rest.partition("/")
        self.query: dict[str, str] = {}
        self.extras: list[tuple[str, str, str]] = []  # (prefix, key, value) for json's +header / -param / :payload
        for key, value in _query_pairs(query):
            if key[:1] in "+-:" and len(key) > 1:
                self.extras.append((key[0], key[1:], value))
            else:
                self.query[key.lower()] = value
        user = password = None
        if "@" in netloc:
            userinfo, netloc = netloc.rsplit("@", 1)
            user, colon, pw = userinfo.partition(":")
            user = urllib.parse.unquote(user)
            password = urllib.parse.unquote(pw) if colon else None
        self.user = user or None
        self.password = password
        self.netloc = urllib.parse.unquote(netloc)
        host: str = netloc
        port: int | None = None
        m = re.match(r"^(.*):(\d+)$", netloc)
        if m:
            host, port = m.group(1), int(m.group(2))
        self.host = urllib.parse.unquote(host)
        self.port = port
        self.fullpath = "/" + path if slash else ""
        self.path = [urllib.parse.unquote(p) for p in path.split("/") if p]

    def flag(self, name: str, default: bool) -> bool:
        value = self.query.get(name)
        if value is None or value == "":
            return default
        value = value.strip().lower()
        if value in _TRUE or value.startswith(("y", "t", "e", "on")):
            return True
        if value in _FALSE or value.startswith(("n", "f", "d", "of")):
            return False
        return default

    def need_host(self) -> str:
        if not _HOST_RE.match(self.host or ""):
            raise NotifyURLError("%s:// needs a host name" % self.scheme)
        return self.host


def _token(value: str | None, pattern: str, what: str, scheme: str) -> str:
    if not value or not re.match(pattern, value, re.I):
        raise NotifyURLError("%s:// has no valid %s" % (scheme, what))
    return value


def _hostport(parts: _Parts) -> str:
    return parts.host + (":%d" % parts.port if parts.port else "")


# ---------------------------------------------------------------- redaction

def _mask(text: str | None) -> str:
    return "****" if text else ""


def redact_url(url: object) -> str:
    """The channel URL as it may be shown (UI, logs, status): scheme and, for services on
    the user's own host, the host; every token, key, password and query value masked."""
    try:
        p = _Parts(url)
    except NotifyURLError:
        scheme = url.split("://", 1)[0][:20] if isinstance(url, str) and "://" in url else "?"
        return "%s://****" % scheme
    if p.scheme in ("json", "jsons", "bark", "barks") or (
            p.scheme in ("ntfy", "ntfys") and p.path and _HOST_RE.match(p.host or "")):
        auth = "****@" if p.user or p.password else ""
        return "%s://%s%s/****" % (p.scheme, auth, _hostport(p))
    return "%s://****" % p.scheme


def secrets_of(url: object) -> list[str]:
    """The secret strings inside a channel URL (for scrubbing error text)."""
    try:
        p = _Parts(url)
    except NotifyURLError:
        return [url] if isinstance(url, str) else []
    found = [p.user, p.password, p.netloc] + p.path + list(p.query.values())
    found += [v for _, _, v in p.extras]
    return [s for s in found if s and len(s) >= 4]


def scrub(text: str, secrets: typing.Iterable[str]) -> str:
    """Replace every secret inside text by ****."""
    for s in sorted(set(secrets), key=len, reverse=True):
        text = text.replace(s, "****")
        quoted = urllib.parse.quote(s, safe="")
        if quoted != s:
            text = text.replace(quoted, "****")
    return text
