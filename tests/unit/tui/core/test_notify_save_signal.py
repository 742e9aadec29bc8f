"""`save_signal` in [notify] / [hosts.X.notify] reaches the box's watch (issue 36): on a spot
notice the daemon sends it to each running job (remote_probe/watch/box_watch.py)."""

from remote_probe import wire
from remote_probe.wire import schema
from tui.core.notify.wire import notify_config

URL = "ntfys://ntfy.sh/gpu_alerts"


def params(data, host="box"):
    p, problems = notify_config(data, host)
    return dict(p), problems


def test_save_signal_goes_to_the_box_as_a_watch_setting():
    p, problems = params({"notify": {"urls": [URL], "save_signal": "SIGUSR1"}})
    assert problems == [] and p["watch"] == {"save_signal": "USR1"}
    assert schema.check_request(dict(p, type=wire.NOTIFY_CONFIG)) is None


def test_per_host_save_signal_replaces_the_global_one_and_none_sends_no_watch():
    data = {"notify": {"urls": [URL], "save_signal": "USR1"},
            "hosts": {"box": {"notify": {"save_signal": "usr2"}}}}
    assert params(data)[0]["watch"] == {"save_signal": "USR2"}
    assert params(data, "other")[0]["watch"] == {"save_signal": "USR1"}
    p, _ = params({"notify": {"urls": [URL]}})
    assert p["watch"] is None
    assert schema.check_request(dict(p, type=wire.NOTIFY_CONFIG)) is None


def test_a_signal_that_cannot_be_caught_is_refused_with_a_reason():
    p, problems = params({"notify": {"urls": [URL], "save_signal": "KILL"}})
    assert p["watch"] is None
    assert problems == ["notify.save_signal: 'KILL' is not one of USR1, USR2, TERM, INT, HUP (ignored)"]
