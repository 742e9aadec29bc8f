"""The daemon's outbox: dedup, rate limits, backoff, quiet hours, and a queue on disk that
survives a restart, all with a fake clock and a fake sender."""

import json
import os
import stat

import pytest

from remote_probe.notify import queue as nq

DAY = 86400.0
# 2026-12-01 00:00 UTC; quiet hours below are in UTC+8 (Beijing).
MIDNIGHT_UTC = 1796083200.0
CN = 480


def at_local(hhmm, offset=CN):
    minutes = nq.parse_hhmm(hhmm)
    return MIDNIGHT_UTC + (minutes - offset) * 60.0 + DAY


class Clock:
    def __init__(self, t):
        self.t = t

    def __call__(self):
        return self.t


class Result:
    def __init__(self, ok, retryable=False, reason="HTTP 200"):
        self.ok, self.retryable, self.reason = ok, retryable, reason


class Sender:
    """Records deliveries; answers from a script (default: success)."""

    def __init__(self, answers=()):
        self.calls = []
        self.answers = list(answers)

    def __call__(self, url, title, body, kind):
        self.calls.append((url, title, kind))
        return self.answers.pop(0) if self.answers else Result(True)


URL_A = "ntfy://gputui_a"
URL_B = "json://127.0.0.1:9/hook"


def outbox(tmp_path, clock, sender, urls=(URL_A,), quiet=None):
    box = nq.Outbox(str(tmp_path / "notify"), send=sender, clock=clock)
    box.configure(list(urls), quiet)
    return box


# ---- pure decisions

@pytest.mark.parametrize("local,start,end,quiet", [
    ("23:30", "23:00", "07:00", True), ("03:00", "23:00", "07:00", True),
    ("07:00", "23:00", "07:00", False), ("22:59", "23:00", "07:00", False),
    ("12:00", "12:00", "13:00", True), ("13:00", "12:00", "13:00", False),
    ("12:00", "08:00", "08:00", False),  # start == end: no quiet hours
])
def test_is_quiet(local, start, end, quiet):
    q = {"start": start, "end": end, "utc_offset_minutes": CN}
    assert nq.is_quiet(at_local(local), q) is quiet


def test_quiet_hours_use_the_users_offset_not_the_boxs():
    q = {"start": "23:00", "end": "07:00", "utc_offset_minutes": CN}
    # 16:00 UTC is midnight in Beijing: quiet, though the UTC box thinks it is afternoon.
    assert nq.is_quiet(MIDNIGHT_UTC + 16 * 3600, q)
    assert not nq.is_quiet(MIDNIGHT_UTC + 16 * 3600, dict(q, utc_offset_minutes=0))


@pytest.mark.parametrize("q", [None, {}, {"start": "25:00", "end": "07:00"}, {"start": "x", "end": "y"}])
def test_no_or_bad_quiet_hours_mean_never_quiet(q):
    assert not nq.is_quiet(at_local("03:00"), q)


def test_quiet_ends():
    q = {"start": "23:00", "end": "07:30", "utc_offset_minutes": CN}
    assert nq.quiet_ends(at_local("03:00"), q) == pytest.approx(at_local("07:30"))
    assert nq.quiet_ends(at_local("23:10"), q) == pytest.approx(at_local("07:30") + DAY)
    assert nq.quiet_ends(at_local("12:00"), q) == at_local("12:00")


@pytest.mark.parametrize("kind,allowed", [
    ("crashed", True), ("hung", True), ("budget_100", True), ("balance_low", True),
    ("finished", False), ("idle", False), ("budget_80", False), ("checkpoint_stale", False),
    ("autostop_countdown", False), ("autostop_done", False),
])
def test_quiet_allows_urgent_kinds(kind, allowed):
    assert nq.quiet_allows(kind, {"start": "23:00", "end": "07:00"}) is allowed


def test_quiet_allow_list_is_the_users():
    q = {"start": "23:00", "end": "07:00", "allow": ["finished"]}
    assert nq.quiet_allows("finished", q) and not nq.quiet_allows("crashed", q)


@pytest.mark.parametrize("failures,delay", [(0, 0), (1, 15), (2, 30), (3, 60), (7, 960), (8, 1800), (30, 1800)])
def test_backoff_delay(failures, delay):
    assert nq.backoff_delay(failures) == delay


@pytest.mark.parametrize("sent,now,limits,wait", [
    ([], 100, ((5, 60),), 0),
    ([10, 20, 30, 40], 100, ((5, 60),), 0),
    ([50, 60, 70, 80, 90], 100, ((5, 60),), 10),   # the oldest of the last 5 leaves at 110
    ([0, 1, 2, 3, 4], 100, ((5, 60),), 0),         # all older than the window
    ([float(i) for i in range(50)], 100, ((5, 60), (50, 86400)), 86300),
])
def test_rate_wait(sent, now, limits, wait):
    assert nq.rate_wait(sent, now, limits) == pytest.approx(wait)


def test_autodl_gets_its_documented_limits():
    assert nq.limits_for("autodl") == ((5, 60.0), (50, 86400.0))
    assert nq.limits_for("ntfy") == nq.DEFAULT_RATE


# ---- the outbox

def test_one_message_per_event(tmp_path):
    clock, send = Clock(1000.0), Sender()
    box = outbox(tmp_path, clock, send, urls=(URL_A, URL_B))
    assert box.enqueue("crashed", "crashed:job1:run7", "train.py crashed", "CUDA OOM")
    assert not box.enqueue("crashed", "crashed:job1:run7", "train.py crashed", "again")
    results = box.pump()
    assert sorted(c[0] for c in send.calls) == sorted([URL_A, URL_B])
    assert all(ok for _, _, ok, _ in results)
    clock.t += 3600
    assert not box.enqueue("crashed", "crashed:job1:run7", "x", "y")  # sent already
    assert box.pump() == [] and len(send.calls) == 2
    assert send.calls[0][2] == "failure"


def test_dedup_forgets_after_a_week(tmp_path):
    clock, send = Clock(1000.0), Sender()
    box = outbox(tmp_path, clock, send)
    box.enqueue("finished", "k", "t", "b")
    box.pump()
    clock.t += nq.DEDUP_KEEP_S + 1
    box = nq.Outbox(str(tmp_path / "notify"), send=send, clock=clock)
    assert box.enqueue("finished", "k", "t", "b")


def test_network_down_retries_with_backoff_then_delivers(tmp_path):
    clock = Clock(1000.0)
    down = Result(False, True, "URLError: [Errno 101] Network is unreachable")
    send = Sender([down, down, down])
    box = outbox(tmp_path, clock, send)
    box.enqueue("crashed", "k1", "t", "b")
    tried_at = []
    for _ in range(200):
        if box.pump():
            tried_at.append(clock.t)
        if not box.messages:
            break
        clock.t += 1
    # First try at once, then 15 s, 30 s, 60 s later; the fourth try succeeds.
    assert [t - 1000 for t in tried_at] == [0, 15, 45, 105]
    assert not box.messages and len(send.calls) == 4


def test_permanent_failure_is_not_retried(tmp_path):
    clock = Clock(1000.0)
    send = Sender([Result(False, False, "HTTP 404")])
    box = outbox(tmp_path, clock, send)
    box.enqueue("crashed", "k1", "t", "b")
    assert box.pump()[0][2:] == (False, "HTTP 404")
    clock.t += 3600
    assert box.pump() == [] and not box.messages
    assert box.last_errors


def test_gives_up_after_a_day(tmp_path):
    clock = Clock(1000.0)
    send = Sender([Result(False, True, "down")] * 1000)
    box = outbox(tmp_path, clock, send)
    box.enqueue("crashed", "k1", "t", "b")
    for _ in range(100):
        box.pump()
        clock.t += 1800
    assert not box.messages
    assert len(send.calls) < 60


def test_rate_limit_delays_not_drops(tmp_path):
    clock, send = Clock(1000.0), Sender()
    box = outbox(tmp_path, clock, send, urls=("autodl://tok",))
    for i in range(8):
        box.enqueue("finished", "job%d" % i, "t%d" % i, "b")
    box.pump()
    assert len(send.calls) == 5  # AutoDL: 5 a minute
    clock.t += 30
    box.pump()
    assert len(send.calls) == 5
    assert box.next_wakeup() == pytest.approx(1060.0)
    clock.t = 1060.0
    box.pump()
    assert len(send.calls) == 8
    assert [c[1] for c in send.calls] == ["t%d" % i for i in range(8)]  # in order


def test_quiet_hours_hold_routine_messages_and_pass_crashes(tmp_path):
    quiet = {"start": "23:00", "end": "07:00", "utc_offset_minutes": CN}
    clock, send = Clock(at_local("02:00")), Sender()
    box = outbox(tmp_path, clock, send, quiet=quiet)
    box.enqueue("finished", "f1", "finished", "b")
    box.enqueue("crashed", "c1", "crashed", "b")
    box.pump()
    assert [c[1] for c in send.calls] == ["crashed"]
    assert box.next_wakeup() == pytest.approx(at_local("07:00"))
    clock.t = at_local("06:59")
    box.pump()
    assert len(send.calls) == 1
    clock.t = at_local("07:00")
    box.pump()
    assert [c[1] for c in send.calls] == ["crashed", "finished"]


def test_queue_survives_a_restart(tmp_path):
    clock = Clock(1000.0)
    send = Sender([Result(False, True, "down")])
    box = outbox(tmp_path, clock, send)
    box.enqueue("crashed", "k1", "train.py crashed", "CUDA OOM")
    box.pump()  # fails; retry in 15 s
    # The daemon restarts: a new Outbox on the same directory.
    send2 = Sender()
    clock.t += 20
    again = nq.Outbox(str(tmp_path / "notify"), send=send2, clock=clock)
    assert not again.enqueue("crashed", "k1", "x", "y")  # still one message per event
    again.pump()
    assert send2.calls == [(URL_A, "train.py crashed", "failure")]
    assert not again.messages


def test_files_are_private_and_hold_no_url_in_messages(tmp_path):
    clock, send = Clock(1000.0), Sender([Result(False, True, "down")])
    secret = "ntfys://tk_SeCrEt123@ntfy.example.com/alerts"
    box = outbox(tmp_path, clock, send, urls=(secret,))
    box.enqueue("crashed", "k1", "t", "b")
    box.pump()
    root = tmp_path / "notify"
    assert stat.S_IMODE(os.lstat(str(root)).st_mode) == 0o700
    files = [os.path.join(d, f) for d, _, fs in os.walk(str(root)) for f in fs]
    assert any(f.endswith("channels.json") for f in files)
    for f in files:
        assert stat.S_IMODE(os.lstat(f).st_mode) == 0o600, f
        if not f.endswith("channels.json"):
            assert "SeCrEt" not in open(f).read(), f


def test_planted_symlinks_are_not_followed(tmp_path):
    root = tmp_path / "notify"
    os.makedirs(str(root / "queue"))
    victim = tmp_path / "victim"
    precious = json.dumps({"urls": ["ntfy://planted_topic"]})
    victim.write_text(precious)
    os.symlink(str(victim), str(root / "channels.json"))
    os.symlink(str(victim), str(root / ("channels.json.tmp%d" % os.getpid())))
    box = nq.Outbox(str(root), send=Sender(), clock=Clock(1000.0))
    assert box.channels == {}  # the symlink was not read as config
    box.configure([URL_A])
    assert victim.read_text() == precious
    assert not os.path.islink(str(root / "channels.json"))


def test_symlinked_directory_is_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(str(real), str(tmp_path / "notify"))
    with pytest.raises(OSError):
        nq.Outbox(str(tmp_path / "notify"), send=Sender(), clock=Clock(1.0))


def test_corrupt_queue_file_is_dropped(tmp_path):
    box = outbox(tmp_path, Clock(1000.0), Sender())
    bad = tmp_path / "notify" / "queue" / "1-bad.json"
    bad.write_text("{not json")
    os.chmod(str(bad), 0o600)
    again = nq.Outbox(str(tmp_path / "notify"), send=Sender(), clock=Clock(1000.0))
    assert again.messages == {} and not bad.exists()
    assert box is not None


def test_removed_channel_drops_its_deliveries(tmp_path):
    clock, send = Clock(1000.0), Sender([Result(False, True, "down")])
    box = outbox(tmp_path, clock, send, urls=(URL_A,))
    box.enqueue("crashed", "k1", "t", "b")
    box.pump()
    box.configure([URL_B])
    clock.t += 100
    box.pump()
    assert not box.messages and len(send.calls) == 1


def test_no_channels_queues_nothing(tmp_path):
    box = outbox(tmp_path, Clock(1000.0), Sender(), urls=())
    assert not box.enqueue("crashed", "k", "t", "b")


def test_queue_is_bounded_and_keeps_urgent(tmp_path, monkeypatch):
    monkeypatch.setattr(nq, "MAX_QUEUED", 5)
    clock = Clock(1000.0)
    box = outbox(tmp_path, clock, Sender())
    box.enqueue("crashed", "c", "t", "b")
    for i in range(10):
        clock.t += 1
        box.enqueue("finished", "f%d" % i, "t", "b")
    kinds = sorted(m["kind"] for m in box.messages.values())
    assert len(kinds) == 5 and "crashed" in kinds
    assert len(os.listdir(str(tmp_path / "notify" / "queue"))) == 5


def test_state_file_is_json(tmp_path):
    box = outbox(tmp_path, Clock(1000.0), Sender())
    box.enqueue("finished", "k", "t", "b")
    box.pump()
    state = json.loads((tmp_path / "notify" / "state.json").read_text())
    assert "k" in state["sent_keys"] and len(state["sent_times"][nq.channel_id(URL_A)]) == 1


def test_event_filter_from_the_laptop_survives_restart(tmp_path):
    clock, send = Clock(1000.0), Sender()
    box = nq.Outbox(str(tmp_path / "notify"), send=send, clock=clock)
    box.configure([URL_A], None, events=["crashed"])
    assert not box.enqueue("finished", "f", "t", "b")
    again = nq.Outbox(str(tmp_path / "notify"), send=send, clock=clock)
    assert not again.enqueue("idle", "i", "t", "b")
    assert again.enqueue("crashed", "c", "t", "b") and again.enqueue("test", "x", "t", "b")
