"""Idle GPU seconds of this boot, counted by the daemon (issue 20).

The daemon sees every sample, laptop or not, so it keeps the count: apps that reconnect,
restart, or run side by side (two apps and the fleet) all read the same figure from each
sample (`idle_s`) instead of each rebuilding its own from the ledger and losing the
seconds it did not see. Kept per boot in the state dir, so a daemon restart keeps it.

The rule of one interval is the laptop's old one (tui.core.billing.rates.IdleMeter): idle when
both ends are idle and they are at most MAX_GAP apart (a longer gap: the daemon was not
running, unknown). Stdlib only.
"""

import json
import os
import time

from remote_probe import wire

IDLE_FILE = "idle-seconds.json"
MAX_GAP = 10.0
SAVE_EVERY = 5.0  # seconds between writes of the count (a kill -9 loses at most this)


def sample_idle(sample, threshold=wire.DEFAULT_THRESHOLD):
    """Is this sample idle? The one call the count makes, so a smarter rule (MIG-aware,
    remote_probe/autostop/idle_rules.py) swaps in here. A sample whose GPU reading failed is not."""
    if sample.get("gpu_error"):
        return False
    utils, compute = wire.idle_inputs(sample)
    return wire.all_idle(utils, compute, threshold)


def count_interval(last_t, last_idle, t, idle, max_gap=MAX_GAP):
    """Seconds the interval (last_t, t] adds to the count. Plain function, table-tested."""
    if last_t is None or not last_idle or not idle or t <= last_t or t - last_t > max_gap:
        return 0.0
    return t - last_t


class IdleCount:
    def __init__(self, state_dir, boot_id, clock=time.time):
        self.path = os.path.join(state_dir, IDLE_FILE)
        self.boot_id = boot_id or "unknown"
        self.clock = clock
        self.seconds, self.last_t, self.last_idle = 0.0, None, None
        self._saved_at = 0.0
        self._load()

    def _load(self):
        try:
            with open(self.path) as f:
                data = json.load(f)
        except (OSError, ValueError):
            return
        if not isinstance(data, dict) or data.get("boot_id") != self.boot_id:
            return  # another boot: a new rental session, a new count
        seconds, last_t = data.get("seconds"), data.get("last_t")
        if wire.is_num(seconds) and seconds >= 0:
            self.seconds = float(seconds)
        if wire.is_num(last_t):
            self.last_t = float(last_t)
            self.last_idle = bool(data.get("last_idle"))

    def add(self, sample):
        t = sample.get("t")
        if not wire.is_num(t) or (self.last_t is not None and t <= self.last_t):
            return self.seconds
        idle = sample_idle(sample)
        self.seconds += count_interval(self.last_t, self.last_idle, t, idle)
        self.last_t, self.last_idle = t, idle
        self.save()
        return self.seconds

    def save(self, force=False):
        now = self.clock()
        if not force and now - self._saved_at < SAVE_EVERY:
            return
        self._saved_at = now
        tmp = self.path + ".tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump({"boot_id": self.boot_id, "seconds": round(self.seconds, 3),
                           "last_t": self.last_t, "last_idle": self.last_idle}, f)
            os.replace(tmp, self.path)
        except OSError:
            pass  # a full disk costs the count across a restart, never a sample
