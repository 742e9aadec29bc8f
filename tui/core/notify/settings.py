"""Notification settings from the config: which channels (Apprise-style URLs) a box's
daemon sends through, which events, and the user's quiet hours.

    [notify]                       # every box
    urls = ["ntfys://ntfy.sh/my_gpu_alerts", "dingtalk://SECRET@TOKEN"]
    quiet_hours = "23:00-07:30"    # laptop local time; crashes and hangs still go out
    quiet_allow = ["crashed", "hung", "budget_100", "balance_low"]   # optional
    events = ["finished", "crashed", "hung", "idle", ...]            # optional: default all

    [hosts.mybox.notify]           # this box: its urls are added to the global ones
    urls = ["wecombot://KEY"]
    only_these = true              # use this box's urls only (no global ones)
    quiet_hours = "00:00-06:00"    # replaces the global window for this box
    enabled = false                # no notifications from this box at all
    save_signal = "USR1"           # a spot/preemption notice: this signal to each running job

Reads the dict tui/core/config.py loaded (``Config.data``). Every URL is checked with the
box's own parser (remote_probe.notify.send), so a URL accepted here is one the daemon can
send; a bad one is reported, without its secrets, and left out.
"""

import dataclasses
import time
from typing import Any, Dict, List, Mapping, Optional, Tuple

from remote_probe.wire import channel_requests, channel_urls, notify_kinds
from tui.core.i18n import _


@dataclasses.dataclass
class QuietHours:
    start: str  # "23:00", laptop local time
    end: str
    utc_offset_minutes: int  # the laptop's offset from UTC, so a UTC box keeps the user's clock
    allow: Optional[List[str]] = None  # kinds that still go out; None: notify_kinds.URGENT_KINDS

    def wire(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"start": self.start, "end": self.end, "utc_offset_minutes": self.utc_offset_minutes}
        if self.allow is not None:
            out["allow"] = list(self.allow)
        return out


@dataclasses.dataclass
class NotifySettings:
    urls: List[str] = dataclasses.field(default_factory=list)
    events: Optional[List[str]] = None  # None: every kind
    quiet: Optional[QuietHours] = None
    enabled: bool = True
    save_signal: Optional[str] = None  # issue 36: sent to each job on a spot notice ("USR1")

    def wants(self, kind: str) -> bool:
        return self.enabled and (self.events is None or kind in self.events or kind == "test")

    def shown_urls(self) -> List[str]:
        """The channels as they may be shown: secrets masked."""
        return [channel_urls.redact_url(u) for u in self.urls]

    def wire(self) -> Dict[str, Any]:
        """What the laptop pushes to the box's daemon (over the existing channel). It holds
        the secrets: never log it, show it, or put it in status output."""
        return {"urls": list(self.urls) if self.enabled else [],
                "events": None if self.events is None else list(self.events),
                "quiet": self.quiet.wire() if self.quiet else None}

    def __repr__(self) -> str:  # a dataclass repr would print the URLs and their secrets
        return "NotifySettings(urls=%r, events=%r, quiet=%r, enabled=%r)" % (
            self.shown_urls(), self.events, self.quiet, self.enabled)


def local_utc_offset_minutes(now: Optional[float] = None) -> int:
    """The laptop's UTC offset now (DST included), in minutes."""
    t = time.localtime(time.time() if now is None else now)
    return int((t.tm_gmtoff or 0) // 60)


def parse_quiet_hours(text: object) -> Optional[Tuple[str, str]]:
    """("23:00", "07:30") from "23:00-07:30"; None when it is not that shape."""
    if not isinstance(text, str) or "-" not in text:
        return None
    start, _sep, end = text.replace(" ", "").partition("-")
    if notify_kinds.parse_hhmm(start) is None or notify_kinds.parse_hhmm(end) is None:
        return None
    if start == end:
        return None
    return start, end


def _kinds(value: object, where: str, key: str, problems: List[str]) -> Optional[List[str]]:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.append(_("%s.%s: expected a list of event names (ignored)") % (where, key))
        return None
    unknown = [v for v in value if v not in notify_kinds.KINDS]
    if unknown:
        problems.append(_("%s.%s: unknown event %s (known: %s)")
                        % (where, key, ", ".join(repr(v) for v in unknown),
                           ", ".join(notify_kinds.KINDS)))
    return [v for v in value if v in notify_kinds.KINDS]


def url_problem(url: object) -> Optional[str]:
    """Why a channel URL cannot be used (safe to show: no secret in it), or None."""
    if not isinstance(url, str) or not url.strip():
        return _("not a URL")
    url = url.strip()
    supported = ", ".join(channel_urls.SCHEMES)
    if "://" not in url:
        return _("not a channel URL (expected scheme://...); supported: %s") % supported
    scheme = url.split("://", 1)[0].strip().lower()
    if scheme not in channel_urls.SCHEMES:
        return _("unknown notification scheme %r; supported: %s") % (scheme[:20], supported)
    # The box's own reason (its parser is the one that will send): technical, in English.
    return channel_requests.validate_url(url)


_KEYS = ("urls", "quiet_hours", "quiet_allow", "events", "only_these", "enabled", "save_signal")
# the signals a job may be asked to save on (issue 36); never one that cannot be caught
SAVE_SIGNALS = ("USR1", "USR2", "TERM", "INT", "HUP")


def _save_signal(value: object, where: str, problems: List[str]) -> Optional[str]:
    if value is None or value == "":
        return None
    name = value.upper().replace("SIG", "", 1) if isinstance(value, str) else None
    if name not in SAVE_SIGNALS:
        problems.append(_("%s.save_signal: %r is not one of %s (ignored)")
                        % (where, value, ", ".join(SAVE_SIGNALS)))
        return None
    return name


def _table(data: object, where: str, problems: List[str]) -> Dict[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        problems.append(_("%s must be a table (ignored)") % where)
        return {}
    for key in data:
        if key not in _KEYS:
            problems.append(_("%s: unknown setting %r (ignored)") % (where, key))
    return data


def _urls(table: Dict[str, Any], where: str, problems: List[str]) -> List[str]:
    urls = table.get("urls", [])
    if isinstance(urls, str):
        urls = [urls]
    if not isinstance(urls, list):
        problems.append(_("%s.urls: expected a list of URLs (ignored)") % where)
        return []
    good = []
    for i, url in enumerate(urls):
        why = url_problem(url)
        if why:
            shown = channel_urls.redact_url(url) if isinstance(url, str) else repr(url)
            problems.append(_("%s.urls[%d] (%s): %s (left out)") % (where, i, shown, why))
            continue
        good.append(url.strip())
    return good


def _quiet(table: Dict[str, Any], where: str, problems: List[str], offset: int) -> Optional[QuietHours]:
    raw = table.get("quiet_hours")
    if raw is None or raw == "":
        return None
    window = parse_quiet_hours(raw)
    if window is None:
        problems.append(_("%s.quiet_hours: %r is not a window such as \"23:00-07:30\" (ignored)")
                        % (where, raw))
        return None
    allow = _kinds(table.get("quiet_allow"), where, "quiet_allow", problems)
    return QuietHours(window[0], window[1], offset, allow)


def notify_settings(data: Optional[Mapping[str, Any]], host: Optional[str] = None,
                    now: Optional[float] = None) -> Tuple[NotifySettings, List[str]]:
    """(NotifySettings, problems) for `host` (None: the global settings only), from the
    config dict as tui/core/config.py loads it."""
    problems: List[str] = []
    data = data or {}
    offset = local_utc_offset_minutes(now)
    glob = _table(data.get("notify"), "notify", problems)
    host_table: Dict[str, Any] = {}
    if host is not None:
        hosts = data.get("hosts")
        entry = hosts.get(host) if isinstance(hosts, dict) else None
        if isinstance(entry, dict):
            host_table = _table(entry.get("notify"), "hosts.%s.notify" % host, problems)
    where = "hosts.%s.notify" % host
    settings = NotifySettings()
    own = _urls(host_table, where, problems) if host_table else []
    only = host_table.get("only_these") is True
    shared = [] if only else _urls(glob, "notify", problems)
    settings.urls = list(dict.fromkeys(shared + own))  # the same channel once
    settings.quiet = (_quiet(host_table, where, problems, offset) if "quiet_hours" in host_table
                      else _quiet(glob, "notify", problems, offset))
    events = host_table.get("events") if "events" in host_table else glob.get("events")
    settings.events = _kinds(events, where if "events" in host_table else "notify", "events", problems)
    for table, name in ((glob, "notify"), (host_table, where)):
        if "enabled" in table and not isinstance(table["enabled"], bool):
            problems.append(_("%s.enabled: expected true/false (ignored)") % name)
    enabled = host_table.get("enabled", glob.get("enabled", True))
    settings.enabled = enabled if isinstance(enabled, bool) else True
    settings.save_signal = (_save_signal(host_table["save_signal"], where, problems) if "save_signal" in host_table
                            else _save_signal(glob.get("save_signal"), "notify", problems))
    return settings, list(dict.fromkeys(problems))
