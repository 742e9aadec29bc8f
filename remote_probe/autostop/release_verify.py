"""Is a release real? (issue 36) A box that still answers on the same boot after its release
command ran is an alarm, not "released": a command that exits 0 without stopping anything
is a silent money leak.

When a release command has run (autostop's fire, or the app's release), the daemon keeps
what ran (time, command, exit, boot id) in ``release.json`` in its state dir, so a daemon
restart keeps it. RELEASE_VERIFY_S after it ran, a daemon still alive on that boot logs the
autostop event "release_unverified" (the notifier sends it once); a box that released
really is gone and says nothing. The decisions are plain functions, table-tested.
Stdlib only.
"""

import json
import os
import time

from remote_probe import procfs

RELEASE_FILE = "release.json"
RELEASE_VERIFY_S = 90.0  # the release command ran this long ago and we still run: an alarm
ENV_VERIFY_S = "GPUTUI_RELEASE_VERIFY_S"


def boot_key(boot_id, instance_start):
    """This boot of this box: the kernel's boot id and PID 1's start. A container stopped and
    started again on the same host keeps the host's boot id but not PID 1: a release that
    stopped it worked, and the daemon started in the new container must not cry wolf."""
    if not boot_id:
        return None
    return "%s@%d" % (boot_id, int(instance_start)) if instance_start else boot_id


def verify_window(*candidates):
    """The first usable window among candidates (the request's, the watch settings'), then
    $GPUTUI_RELEASE_VERIFY_S, then RELEASE_VERIFY_S."""
    for value in candidates + (os.environ.get(ENV_VERIFY_S),):
        try:
            value = float(value)
        except (TypeError, ValueError):
            continue
        if 0 < value < 1e7:
            return value
    return RELEASE_VERIFY_S


def new_record(command, code, ran_at, boot_id, verify_s, via):
    return {"ran_at": round(ran_at, 3), "command": command[:8192], "exit": code,
            "boot_id": boot_id, "verify_s": float(verify_s), "via": via, "told": False}


def verified(record, now, boot_id):
    """-> (present, verified): present False when no release ran this boot (no record, or a
    record of another boot: the box did go down); verified None while the window runs,
    False once the box is still up past it."""
    if not isinstance(record, dict) or not boot_id or record.get("boot_id") != boot_id:
        return False, None
    if now - record.get("ran_at", now) >= record.get("verify_s", RELEASE_VERIFY_S):
        return True, False
    return True, None


def alarm_due(record, now, boot_id):
    """Whether to raise the alarm now: a release ran this boot, its window is over and the
    alarm was not raised yet (told is kept in the file: one message, across restarts)."""
    present, ok = verified(record, now, boot_id)
    return present and ok is False and not record.get("told")


def status_of(record, now, boot_id):
    """The `release` block of the daemon's status replies, or None (no release this boot)."""
    present, ok = verified(record, now, boot_id)
    if not present:
        return None
    return {"ran_at": record.get("ran_at"), "command": record.get("command"),
            "exit": record.get("exit"), "verified": ok, "via": record.get("via")}


def clock_hm(t):
    """HH:MM in the box's local time."""
    return time.strftime("%H:%M", time.localtime(t))


def evidence(record, uptime_s):
    """What shows the release did not happen, in words."""
    code = record.get("exit")
    ran = "exited %s" % code if code is not None else "did not finish"
    up = ("; same boot, uptime %s" % duration(uptime_s)) if uptime_s is not None else "; same boot"
    return "`%s` %s%s" % (record.get("command"), ran, up)


def duration(seconds):
    seconds = int(max(0, seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    if h:
        return "%dh %02dm" % (h, m)
    return "%dm %02ds" % (m, s) if m else "%ds" % s


def read_uptime(proc=None):
    try:
        with open(os.path.join(procfs.PROC if proc is None else proc, "uptime")) as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def load(state_dir):
    try:
        with open(os.path.join(state_dir, RELEASE_FILE)) as f:
            data = json.load(f)
        return data if isinstance(data, dict) and isinstance(data.get("ran_at"), (int, float)) else None
    except (OSError, ValueError):
        return None


def save(state_dir, record):
    path = os.path.join(state_dir, RELEASE_FILE)
    tmp = path + ".tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(record, f)
        os.replace(tmp, path)
    except OSError:
        pass
