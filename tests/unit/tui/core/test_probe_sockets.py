"""The cache of daemon sockets: a cache, so a corrupt file is empty, refusals expire."""

import json
import os

from tui.core.session import probe_sockets as ps

SECRET = "ab" * 32  # the daemon key a command-path hello gave (wire/challenge.py)


def test_remember_and_recall_round_trip():
    key = ps.cache_key("SHA256:abc", "root", None)
    assert ps.recall(key) is None
    ps.remember(key, "/root/.cache/gputui/run/probe.sock", "/root/.cache/gputui",
                ["note [b]x[/b]"], secret=SECRET)
    assert ps.recall(key) == {"socket": "/root/.cache/gputui/run/probe.sock",
                              "remote_dir": "/root/.cache/gputui", "notes": ["note [b]x[/b]"],
                              "daemon": None, "secret": SECRET}
    # another login or another state dir on the same box is another daemon
    assert ps.recall(ps.cache_key("SHA256:abc", "alice", None)) is None
    assert ps.recall(ps.cache_key("SHA256:abc", "root", "/data/gputui")) is None
    ps.forget(key)
    assert ps.recall(key) is None


def test_a_corrupt_or_foreign_file_is_an_empty_cache():
    key = ps.cache_key("SHA256:abc", "root", None)
    os.makedirs(os.path.dirname(ps.cache_path()), exist_ok=True)
    for junk in ("{not json", "[1, 2]", json.dumps({key: "x"}),
                 json.dumps({key: {"socket": "relative/probe.sock"}}),
                 json.dumps({key: {"refused": "x", "t": "soon"}})):
        with open(ps.cache_path(), "w") as f:
            f.write(junk)
        assert ps.recall(key) is None
    ps.remember(key, "/s.sock", "/d", secret=SECRET)
    assert ps.recall(key)["socket"] == "/s.sock"


def test_a_refusal_is_kept_for_a_week_and_not_overwritten_meanwhile():
    key = ps.cache_key("SHA256:abc", "root", None)
    ps.refused(key, "administratively prohibited")
    assert ps.recall(key) == {"refused": "administratively prohibited"}
    ps.remember(key, "/s.sock", "/d", secret=SECRET)  # the exec path worked: still not the socket
    assert ps.recall(key) == {"refused": "administratively prohibited"}
    later = json.load(open(ps.cache_path()))[key]["t"] + ps.REFUSAL_KEPT + 1
    assert ps.recall(key, now=later) is None  # sshd settings change: try again after a week


def test_the_cache_keeps_the_most_recent_boxes(monkeypatch):
    monkeypatch.setattr(ps, "MAX_ENTRIES", 3)
    clock = iter(range(1000, 2000))
    monkeypatch.setattr(ps.time, "time", lambda: float(next(clock)))
    for i in range(5):
        ps.remember(ps.cache_key("SHA256:%d" % i, "root", None), "/s%d.sock" % i, "/d",
                    secret=SECRET)
    kept = json.load(open(ps.cache_path()))
    assert sorted(v["socket"] for v in kept.values()) == ["/s2.sock", "/s3.sock", "/s4.sock"]


def test_an_unwritable_cache_costs_nothing_but_speed(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("GPUTUI_STATE_DIR", str(blocker / "state"))  # a dir under a file
    key = ps.cache_key("SHA256:abc", "root", None)
    ps.remember(key, "/s.sock", "/d", secret=SECRET)  # no exception
    assert ps.recall(key) is None


def test_no_daemon_key_no_direct_path():
    """A socket remembered without the daemon's key (an older cache, a probe that sends
    none) is never opened directly: there is nothing to check the daemon there against."""
    key = ps.cache_key("SHA256:abc", "root", None)
    ps.remember(key, "/s.sock", "/d")
    assert ps.recall(key) is None
    ps.remember(key, "/s.sock", "/d", secret=SECRET)
    data = json.load(open(ps.cache_path()))
    del data[key]["secret"]  # a cache written before the proof existed
    with open(ps.cache_path(), "w") as f:
        json.dump(data, f)
    assert ps.recall(key) is None
