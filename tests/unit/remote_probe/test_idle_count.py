"""The daemon's idle-seconds count (remote_probe/autostop/idle_count.py) and the laptop taking it."""

import pytest

from remote_probe.autostop.idle_count import IdleCount, count_interval
from tui.core.billing.clock import BillingClock
from tui.core.config import HostConfig

IDLE_GPU = [0, 1.0] + [None] * 9  # index, util 1 %
BUSY_GPU = [0, 90.0] + [None] * 9


def sample(t, gpu=IDLE_GPU, **extra):
    return dict({"t": t, "gpus": [list(gpu)], "procs": []}, **extra)


@pytest.mark.parametrize("last_t, last_idle, t, idle, want", [
    (None, None, 10.0, True, 0.0),  # the first sample: nothing before it
    (10.0, True, 11.0, True, 1.0),
    (10.0, True, 11.0, False, 0.0),  # busy at the end
    (10.0, False, 11.0, True, 0.0),  # busy at the start
    (10.0, True, 25.0, True, 0.0),  # a gap (the daemon was not running): unknown
    (10.0, True, 10.0, True, 0.0),  # the same sample again
])
def test_count_interval(last_t, last_idle, t, idle, want):
    assert count_interval(last_t, last_idle, t, idle) == want


def test_the_count_survives_a_daemon_restart_on_the_same_boot_only(tmp_path):
    now = [0.0]
    first = IdleCount(str(tmp_path), "boot-1", clock=lambda: now[0])
    for i in range(6):
        now[0] = 100.0 + i
        first.add(sample(100.0 + i))
    first.add(sample(106.0, BUSY_GPU, gpu_error="hung"))  # an unreadable GPU is not idle
    assert first.seconds == 5.0
    first.save(force=True)
    again = IdleCount(str(tmp_path), "boot-1")
    assert again.seconds == 5.0
    again.add(sample(110.0))
    again.add(sample(111.0))
    assert again.seconds == 6.0
    assert IdleCount(str(tmp_path), "boot-2").seconds == 0.0  # another boot: a new session


def test_the_laptop_shows_the_box_count_and_never_goes_backwards():
    clock = BillingClock("box", HostConfig(rate=3.6), None, clock=lambda: 1000.0)
    clock.on_inventory({"gpus": [], "host": {}, "idle_threshold": 5.0})
    clock.on_sample(sample(1000.0, idle_s=40.0))
    assert clock.figures().idle_seconds == 40.0  # seconds before this app ever connected
    clock.on_sample(sample(1001.0, idle_s=41.0))
    clock.on_sample(sample(1002.0, idle_s=12.0))  # a daemon that lost its count
    assert clock.figures().idle_seconds == 41.0
    other = BillingClock("box", HostConfig(rate=3.6, idle_threshold=20.0), None, clock=lambda: 1000.0)
    other.on_inventory({"gpus": [], "host": {}, "idle_threshold": 5.0})
    other.on_sample(sample(1000.0, idle_s=40.0))
    other.on_sample(sample(1001.0, idle_s=41.0))
    assert other.figures().idle_seconds == 1.0  # its own threshold: counts what it sees
