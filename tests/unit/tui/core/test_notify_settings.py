"""Notification settings from the config dict: global [notify], per-box
[hosts.NAME.notify] merged with it, quiet hours, event filters, and clear messages for
bad URLs (never with their secrets)."""

import pytest

from tui.core import i18n
from tui.core.notify.settings import notify_settings, parse_quiet_hours, url_problem

NTFY = "ntfys://ntfy.sh/gpu_alerts"
DING = "dingtalk://SECabc123@a1b2c3d4e5f6"
WECOM = "wecombot://693a91f6-7xxx"


def data(glob=None, host=None, name="box1"):
    d = {}
    if glob is not None:
        d["notify"] = glob
    if host is not None:
        d["hosts"] = {name: {"rate": 2.0, "notify": host}}
    return d


@pytest.mark.parametrize("name,d,host,urls", [
    ("nothing", {}, "box1", []),
    ("global-only", data({"urls": [NTFY, DING]}), "box1", [NTFY, DING]),
    ("host-adds", data({"urls": [NTFY]}, {"urls": [WECOM]}), "box1", [NTFY, WECOM]),
    ("same-url-once", data({"urls": [NTFY]}, {"urls": [NTFY, WECOM]}), "box1", [NTFY, WECOM]),
    ("only-these", data({"urls": [NTFY]}, {"urls": [WECOM], "only_these": True}), "box1", [WECOM]),
    ("other-host", data({"urls": [NTFY]}, {"urls": [WECOM]}, name="box2"), "box1", [NTFY]),
    ("no-host-asked", data({"urls": [NTFY]}, {"urls": [WECOM]}), None, [NTFY]),
    ("single-string", data({"urls": NTFY}), "box1", [NTFY]),
    ("spaces-trimmed", data({"urls": ["  %s " % NTFY]}), "box1", [NTFY]),
])
def test_urls_merge(name, d, host, urls):
    settings, problems = notify_settings(d, host)
    assert settings.urls == urls
    assert problems == []


def test_disabled_box_sends_nothing():
    s, _ = notify_settings(data({"urls": [NTFY]}, {"enabled": False}), "box1")
    assert not s.enabled and s.wire()["urls"] == [] and not s.wants("crashed")


@pytest.mark.parametrize("url,needle", [
    ("mailto://me@example.com", "unknown notification scheme 'mailto'; supported: ntfy, ntfys, json, jsons, slack, tgram"),
    ("discord://1/2", "supported:"),
    ("hooks.slack.com/services/x", "expected scheme://"),
    ("", "not a URL"),
    ("ntfy://", "needs a topic"),
    ("slack://T1/B2", "three webhook tokens"),
])
def test_bad_urls_are_named_and_left_out(url, needle):
    s, problems = notify_settings(data({"urls": [url, NTFY]}), "box1")
    assert s.urls == [NTFY]
    assert len(problems) == 1 and needle in problems[0] and "notify.urls[0]" in problems[0]
    assert url_problem(url) is not None and needle in url_problem(url)


def test_bad_url_messages_never_show_secrets():
    bad = "slack://SECRETAAA/SECRETBBB"  # a token missing: invalid
    s, problems = notify_settings(data(None, {"urls": [bad, 42]}), "box1")
    assert s.urls == [] and len(problems) == 2
    assert "SECRETAAA" not in problems[0] and "SECRETBBB" not in problems[0]
    assert "slack://****" in problems[0]
    assert "NotifySettings" in repr(s) and "SECRET" not in repr(s)
    s, _ = notify_settings(data({"urls": [DING]}), "box1")
    assert "SECabc123" not in repr(s) and s.shown_urls() == ["dingtalk://****"]


def test_unknown_scheme_message_is_translated():
    i18n.set_language("zh")
    try:
        why = url_problem("mailto://x@example.com")
    finally:
        i18n.set_language("en")
    assert why.startswith("未知的通知协议 'mailto'") and "ntfy" in why


@pytest.mark.parametrize("text,window", [
    ("23:00-07:30", ("23:00", "07:30")), ("00:00 - 06:00", ("00:00", "06:00")),
    ("23:00", None), ("25:00-07:00", None), ("07:00-07:00", None), (None, None), ("a-b", None),
])
def test_parse_quiet_hours(text, window):
    assert parse_quiet_hours(text) == window


def test_quiet_hours_global_and_per_host():
    g = {"urls": [NTFY], "quiet_hours": "23:00-07:30", "quiet_allow": ["crashed"]}
    s, problems = notify_settings(data(g), "box1", now=0)
    assert (s.quiet.start, s.quiet.end, s.quiet.allow) == ("23:00", "07:30", ["crashed"])
    assert s.wire()["quiet"]["utc_offset_minutes"] == s.quiet.utc_offset_minutes
    s, _ = notify_settings(data(g, {"quiet_hours": "01:00-05:00"}), "box1")
    assert (s.quiet.start, s.quiet.end, s.quiet.allow) == ("01:00", "05:00", None)
    s, _ = notify_settings(data(g, {"quiet_hours": ""}), "box1")
    assert s.quiet is None  # this box: no quiet hours
    s, problems = notify_settings(data({"quiet_hours": "late"}), "box1")
    assert s.quiet is None and "quiet_hours" in problems[0] and "23:00-07:30" in problems[0]


def test_offset_is_the_laptops(monkeypatch):
    monkeypatch.setenv("TZ", "Asia/Shanghai")
    import time
    time.tzset()
    try:
        s, _ = notify_settings(data({"quiet_hours": "23:00-07:00"}), "box1")
        assert s.quiet.utc_offset_minutes == 480
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_events_filter():
    s, problems = notify_settings(data({"events": ["crashed", "hung", "party"]}), "box1")
    assert s.events == ["crashed", "hung"]
    assert "unknown event 'party'" in problems[0] and "finished" in problems[0]
    assert s.wants("crashed") and not s.wants("finished") and s.wants("test")
    s, _ = notify_settings(data({"events": ["crashed"]}, {"events": ["finished"]}), "box1")
    assert s.events == ["finished"]
    s, _ = notify_settings({}, "box1")
    assert s.events is None and s.wants("idle")


@pytest.mark.parametrize("d,needle", [
    ({"notify": "ntfy://x"}, "notify must be a table"),
    (data({"url": [NTFY]}), "unknown setting 'url'"),
    (data({"urls": 5}), "expected a list of URLs"),
    (data({"events": "crashed"}), "expected a list of event names"),
    (data({"enabled": "no"}), "enabled: expected true/false"),
    ({"hosts": {"box1": {"notify": []}}}, "hosts.box1.notify must be a table"),
])
def test_malformed_tables_are_reported(d, needle):
    _, problems = notify_settings(d, "box1")
    assert any(needle in p for p in problems), problems


def test_wire_has_what_the_daemon_needs():
    s, _ = notify_settings(data({"urls": [NTFY], "quiet_hours": "23:00-07:00"}, {"urls": [DING]}), "box1")
    w = s.wire()
    assert w["urls"] == [NTFY, DING] and w["events"] is None
    assert set(w["quiet"]) == {"start", "end", "utc_offset_minutes"}
