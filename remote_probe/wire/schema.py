"""What each message may carry, and the small validation library that says so.

validate() checks the shape a receiver routes on (a message that fails is dropped whole);
clean() holds every value to its schema (bad values become None, broken rows are
dropped, long lists cut), noting each change in a Report; check_request() is the
daemon's strict check of request parameters. Stdlib only: both sides use it.
"""

from __future__ import annotations

import math
from itertools import repeat

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing stays off the box's import path (attach runs on every connect)
    import typing

from remote_probe.wire.messages import (AUTOSTOP, AUTOSTOP_ARM, AUTOSTOP_DISARM, CHECKLIST, DELETE,
                                        ENV_CAPTURE, ERROR, FILE_CHMOD, FILE_COMMIT, FILE_LINK, FILE_LIST,
                                        FILE_MKDIR, FILE_STAT, FILE_WRITE, HELLO, INVENTORY, KILL, MAX_DEPTH,
                                        MAX_DL_ROWS, MAX_GPU_ROWS, MAX_CHUNK, MAX_ITEMS, MAX_META_ROWS,
                                        MAX_PROC_ROWS, MAX_STR, MAX_WATCH_JOBS, NOTIFY_BILLING, NOTIFY_CONFIG,
                                        NOTIFY_EVENT, NOTIFY_TEST, PREFLIGHT, PROC_META, PROVE,
                                        PROVIDER_PRICE, RELEASE, REPLY, REQUEST_TYPES, SAMPLE, SHA256,
                                        SUBSCRIBE, TMUX_CAPTURE, TMUX_INTERRUPT, TMUX_KILL, TMUX_NEW,
                                        TMUX_RENAME, ProtocolError)
from remote_probe.wire.rows import GPU_FIELDS, PROC_FIELDS, PROC_MIN_FIELDS, ProcCol

if TYPE_CHECKING:
    Msg = typing.Dict[str, typing.Any]
    # A spec: (value, path, report) -> the cleaned value (or _DROP). Paths are nested
    # (parent, key) pairs, spelled out only for a note (see path_text).
    Spec = typing.Callable[[typing.Any, typing.Any, "Report"], typing.Any]


def _require(cond: typing.Any, why: str) -> None:
    if not cond:
        raise ProtocolError(why)


def is_int(value: typing.Any) -> bool:
    """An integer that is not a bool (JSON's true is not a pid)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_num(value: typing.Any) -> bool:
    """An int or float that is not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def validate(msg: typing.Any) -> Msg:
    """Check the shape of a message; the fields each side relies on must be there.

    A message that fails is dropped whole. Values inside a valid shape that are out of
    range or of the wrong type are not this function's business: clean() clears them.
    """
    _require(isinstance(msg, dict), "not an object")
    kind = msg.get("type")
    _require(isinstance(kind, str), "missing type")
    if kind == HELLO:
        _require(is_int(msg.get("protocol")), "hello without protocol")
        _require(isinstance(msg.get("version"), str), "hello without version")
        _require(isinstance(msg.get("capabilities", []), list), "bad capabilities")
    elif kind == SAMPLE:
        _require(is_int(msg.get("seq")) and msg["seq"] >= 0, "sample without seq")
        _require(is_num(msg.get("t")) and 0 <= msg["t"] < 1e11, "sample without a sane time")
        gpus = msg.get("gpus", [])
        _require(isinstance(gpus, list), "sample gpus not a list")
        for row in gpus[:MAX_GPU_ROWS]:
            _require(isinstance(row, list) and len(row) == len(GPU_FIELDS), "bad gpu row")
        procs = msg.get("procs", [])
        _require(isinstance(procs, list), "sample procs not a list")
        for row in procs[:MAX_PROC_ROWS]:
            # columns are appended over time: an older probe's row is shorter, a newer one's longer
            _require(isinstance(row, list) and len(row) >= PROC_MIN_FIELDS, "bad proc row")
        _require(isinstance(msg.get("host", {}), dict), "bad host block")
    elif kind in (REPLY, ERROR):
        _require("id" in msg, "reply without id")
    elif kind == INVENTORY:
        _require(isinstance(msg.get("gpus"), list), "inventory without gpus")
    elif kind == PROC_META:
        _require(isinstance(msg.get("procs"), list), "proc_meta without procs")
    elif kind == AUTOSTOP:
        _require(isinstance(msg.get("status"), dict), "autostop without status")
    elif kind == NOTIFY_EVENT:
        _require(isinstance(msg.get("kind"), str), "notify_event without kind")
    elif kind in REQUEST_TYPES:
        pass
    else:
        raise ProtocolError("unknown message type %r" % kind)
    checked: Msg = msg
    return checked


# ---------------------------------------------------------------- value schemas
# What the client may rely on in each message, as small specs: a spec is a function
# (value, path, report) -> cleaned value. Values that fail become None ("not
# available", which every reader already handles); rows that cannot be used are
# dropped; over-long lists are cut. Each such change is noted in the Report, so the
# UI can say once that the probe sent bad data, instead of a traceback.

_DROP = object()  # a row/item too broken to keep: the enclosing list leaves it out


class Report:
    """What clean() changed: a count and the first few paths with the reason."""

    EXAMPLES = 5

    def __init__(self) -> None:
        self.count = 0
        self.examples: typing.List[str] = []

    def note(self, path: typing.Any, why: str) -> None:
        self.count += 1
        if len(self.examples) < self.EXAMPLES:
            self.examples.append("%s: %s" % (path_text(path), why))


def path_text(path: typing.Any) -> str:
    """("sample", ("gpus", 0), "util") -> "sample.gpus[0].util". Paths are built as
    nested (parent, key) pairs and spelled out only for a note: most values are fine."""
    parts = []
    while isinstance(path, tuple):
        path, key = path
        parts.append("[%d]" % key if isinstance(key, int) else "." + str(key)[:40])
    parts.append(str(path))
    return "".join(reversed(parts))


def _type_name(value: typing.Any) -> str:
    return "null" if value is None else type(value).__name__


def Num(lo: typing.Optional[float] = None, hi: typing.Optional[float] = None,
        integer: bool = False) -> Spec:
    """A finite number in [lo, hi] (an integer if asked); anything else -> None."""
    def clean(value: typing.Any, path: typing.Any, report: Report) -> typing.Any:
        if value is None:
            return None
        ok = is_int(value) if integer else is_num(value)
        if not ok:
            report.note(path, "expected %s, got %s" % ("an integer" if integer else "a number",
                                                       _type_name(value)))
            return None
        if isinstance(value, float) and not math.isfinite(value):
            report.note(path, "not finite")
            return None
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            report.note(path, "%r out of range" % (value if abs(value) < 1e15 else "huge",))
            return None
        return value
    if lo is not None and hi is not None and math.isfinite(lo) and math.isfinite(hi):
        clean.bounds = (lo, hi, integer)  # type: ignore[attr-defined]  # for _all_fine
    return clean


def _all_fine(values: typing.Any, bounds: typing.Iterable[typing.Any]) -> bool:
    """Whether every value already is what its Num spec (bounds = (lo, hi, integer), both
    finite) gives back unchanged: None, or an int (not a bool) or, where allowed, a float in
    [lo, hi] - a NaN or an infinity is in no such range. The 64 process rows of a sample
    are checked by this one loop instead of 450 spec calls; any other row takes the specs,
    which say what was wrong (tests/unit/remote_probe/wire/test_schema_fast.py)."""
    for value, (lo, hi, integer) in zip(values, bounds):
        if value is None:
            continue
        kind = type(value)
        if (kind is int or (kind is float and not integer)) and lo <= value <= hi:
            continue
        return False
    return True


def Str(max_len: int = 4096) -> Spec:
    """A string, cut to max_len characters; anything else -> None."""
    def clean(value: typing.Any, path: typing.Any, report: Report) -> typing.Any:
        if value is None:
            return None
        if not isinstance(value, str):
            report.note(path, "expected a string, got %s" % _type_name(value))
            return None
        if len(value) > max_len:
            report.note(path, "string of %d characters cut to %d" % (len(value), max_len))
            return value[:max_len]
        return value
    return clean


def Bool() -> Spec:
    def clean(value: typing.Any, path: typing.Any, report: Report) -> typing.Any:
        if value is None or isinstance(value, bool):
            return value
        if value in (0, 1) and is_int(value):
            return bool(value)
        report.note(path, "expected true/false, got %s" % _type_name(value))
        return None
    return clean


def List(item: Spec, max_items: int = MAX_ITEMS,
         empty: typing.Callable[[], typing.Any] = list) -> Spec:
    """A list of `item`, at most max_items long; not a list -> empty()."""
    bounds = getattr(item, "bounds", None)

    def clean(value: typing.Any, path: typing.Any, report: Report) -> typing.Any:
        if value is None:
            return empty()
        if not isinstance(value, list):
            report.note(path, "expected a list, got %s" % _type_name(value))
            return empty()
        if len(value) > max_items:
            report.note(path, "%d items cut to %d" % (len(value), max_items))
            value = value[:max_items]
        elif bounds is not None and _all_fine(value, repeat(bounds)):
            return list(value)  # what the item spec would give, item by item (a Num's: itself)
        out = []
        for i, v in enumerate(value):
            c = item(v, (path, i), report)
            if c is not _DROP:
                out.append(c)
        return out
    return clean


def Row(columns: typing.Sequence[typing.Tuple[str, Spec]],
        required: typing.Sequence[int] = (), min_len: typing.Optional[int] = None) -> Spec:
    """A columnar row; a required column that is None drops the row.

    With `min_len` the row may be shorter (an older peer's: its missing columns become None,
    so a cleaned row always has every column) or longer (a newer peer's columns, cut);
    without it the length is fixed."""
    shortest = len(columns) if min_len is None else min_len
    longest = len(columns) if min_len is None else (1 << 30)
    bounds: typing.Optional[typing.List[typing.Any]] = [getattr(spec, "bounds", None) for _name, spec in columns]
    if any(b is None for b in bounds or ()):
        bounds = None  # a column that is not a bounded Num: every value through its spec

    def clean(value: typing.Any, path: typing.Any, report: Report) -> typing.Any:
        if not isinstance(value, list) or not shortest <= len(value) <= longest:
            report.note(path, "not a row of %d columns" % len(columns))
            return _DROP
        value = value[:len(columns)] + [None] * (len(columns) - len(value))
        if bounds is not None and _all_fine(value, bounds):
            out = value  # every column as its spec gives it back (a fresh list already)
        else:
            out = [spec(v, (path, name), report) for (name, spec), v in zip(columns, value)]
        for i in required:
            if out[i] is None:
                report.note(path, "row without %s" % columns[i][0])
                return _DROP
        return out
    return clean


def Obj(fields: typing.Optional[typing.Dict[str, Spec]] = None,
        required: typing.Sequence[str] = (), drop_if_bad: bool = False) -> Spec:
    """An object: known keys cleaned by their spec, other keys kept if bounded (Any).

    Not an object -> None (or dropped from its list when drop_if_bad); a required key
    that ends up None drops the object the same way.
    """
    fields = fields or {}

    def clean(value: typing.Any, path: typing.Any, report: Report) -> typing.Any:
        if value is None and not drop_if_bad:
            return None
        if not isinstance(value, dict):
            report.note(path, "expected an object, got %s" % _type_name(value))
            return _DROP if drop_if_bad else None
        if len(value) > MAX_ITEMS:
            report.note(path, "object of %d keys dropped" % len(value))
            return _DROP if drop_if_bad else None
        out = {}
        for key, v in value.items():
            spec = fields.get(key)
            sub = (path, key)
            out[key] = spec(v, sub, report) if spec is not None else _any(v, sub, report, 1)
        for key in required:
            if out.get(key) is None:
                report.note(path, "missing %s" % key)
                return _DROP if drop_if_bad else None
        return out
    return clean


def _any(value: typing.Any, path: typing.Any, report: "Report", depth: int) -> typing.Any:
    """Any JSON value, bounded: depth, list/object size and string length."""
    if isinstance(value, str):
        if len(value) > MAX_STR:
            report.note(path, "string of %d characters cut" % len(value))
            return value[:MAX_STR]
        return value
    if isinstance(value, (list, dict)):
        if depth >= MAX_DEPTH:
            report.note(path, "nested deeper than %d" % MAX_DEPTH)
            return None
        if len(value) > MAX_ITEMS:
            report.note(path, "%d items cut to %d" % (len(value), MAX_ITEMS))
        if isinstance(value, list):
            return [_any(v, (path, i), report, depth + 1)
                    for i, v in enumerate(value[:MAX_ITEMS])]
        out = {}
        for i, (k, v) in enumerate(value.items()):
            if i >= MAX_ITEMS:
                break
            out[k] = _any(v, (path, k), report, depth + 1)
        return out
    if isinstance(value, float) and not math.isfinite(value):
        report.note(path, "not finite")
        return None
    return value


def Any() -> Spec:
    def clean(value: typing.Any, path: typing.Any, report: Report) -> typing.Any:
        return _any(value, path, report, 1)
    return clean


# Upper bounds are generous (ten times any card on the market): only nonsense is cut.
PCT = Num(0, 100)
MIB = Num(0, 1 << 40)
EPOCH = Num(0, 1e11)  # seconds since 1970 until the year 5138
PID = Num(0, 1 << 31, integer=True)
COUNT = Num(0, 1 << 53, integer=True)
NAME = Str(1024)
PATH = Str(8192)

GPU_ROW = Row(tuple(zip(GPU_FIELDS, (
    PCT, PCT, MIB, Num(-100, 250), Num(0, 100000), Num(0, 100000), Num(0, 100000),
    Num(0, 32, integer=True), Num(0, 200), Num(0, 1 << 64, integer=True), COUNT))))
PROC_ROW = Row(tuple(zip(PROC_FIELDS, (
    PID, Num(0, 4096, integer=True), MIB, Num(0, 1e6), MIB, Num(0, 255, integer=True), PID))),
    required=(ProcCol.PID,), min_len=PROC_MIN_FIELDS)
PROC_META_ROW = Obj({"pid": PID, "user": NAME, "cmd": Str(4096), "start": EPOCH,
                     "host_pid": PID}, required=("pid",), drop_if_bad=True)
DISK_ROW = Obj({"mount": PATH, "fstype": NAME, "total": MIB, "used": MIB, "free": MIB},
               drop_if_bad=True)
HOST_BLOCK = Obj({
    "cpu": PCT, "cores": List(PCT, 4096), "iowait": PCT, "load": List(Num(0, 1e7), 3),
    "mem_total": MIB, "mem_used": MIB, "swap_total": MIB, "swap_used": MIB,
    "disks": List(DISK_ROW, 256), "rx_bps": Num(0, 1e13), "tx_bps": Num(0, 1e13),
})
DL_ROW = Obj({"pid": PID, "t": EPOCH}, required=("pid",), drop_if_bad=True)
LOADER_ROW = Obj({"pid": PID, "cpu": Num(0, 1e6), "rss": MIB, "state": Str(8)},
                 required=("pid",), drop_if_bad=True)
# One job as the box's watch judges it (remote_probe/watch/loop.py; WATCH_CONTRACT).
WATCH_STATES = ("running", "finished", "crashed", "hung", "waiting")
PROGRESS_BLOCK = Obj({"fraction": Num(0, 1), "done": Num(0, 1e18), "total": Num(0, 1e18),
                      "unit": Str(40), "rate": Num(0, 1e15), "eta_seconds": Num(0, 1e10),
                      "source": Str(20), "at": EPOCH})
CHECKPOINT_BLOCK = Obj({"path": PATH, "age_s": Num(0, 1e11), "stale": Bool(),
                        "wiped_disk": Bool()})
WATCH_JOB = Obj({
    "id": NAME, "kind": Str(10), "name": Str(200), "pid": PID, "pane": NAME,
    "state": Str(10), "cause": Str(40), "evidence": List(Str(300), 20), "since": EPOCH,
    "exit": Num(-1 << 31, 1 << 31, integer=True), "progress": PROGRESS_BLOCK,
    "checkpoint": CHECKPOINT_BLOCK,
    # a hung job: which GPUs / ranks are stuck and how (spinning in a collective, or idle)
    "stuck": List(Obj({"gpu": COUNT, "pid": PID, "rank": COUNT, "how": Str(10)}), 64)},
    required=("id", "state"), drop_if_bad=True)
# A clock that deletes data or stops the job (remote_probe/watch/clocks.py)
CLOCK_ROW = Obj({"kind": Str(20), "source": Str(20), "action": Str(20), "at": EPOCH,
                 "seconds_left": Num(0, 1e10), "what": Str(200)}, drop_if_bad=True)
JOBS_BLOCK = Obj({
    "watch": List(WATCH_JOB, MAX_WATCH_JOBS),
    "clocks": List(CLOCK_ROW, 20),  # the same clocks, with every jobs block: the app counts them down
    "no_proc": Bool(),  # the box has no /proc (the demo on macOS): no process facts at all
    "tmux": Obj({"sessions": List(Obj({
        "id": NAME, "name": NAME, "attached": COUNT, "created": EPOCH,
        "windows": List(Obj({"id": NAME, "index": COUNT, "name": NAME, "panes": List(Obj({
            "id": NAME, "index": COUNT, "pid": PID, "command": NAME, "path": PATH,
            "started": EPOCH, "active": Bool(), "dead": Bool(), "running": Bool(),
            "gpu_pids": List(PID, 1024)},
            drop_if_bad=True), 256)}, drop_if_bad=True), 1024)},
        required=("id",), drop_if_bad=True), 1024), "error": Str(2000)}),
    "loaders": Obj({"trainers": List(Obj({"pid": PID, "workers": List(LOADER_ROW, 1024)},
                                         required=("pid",), drop_if_bad=True), 1024),
                    "orphans": List(LOADER_ROW, 4096)}),
    "unprotected": List(Obj({"pid": PID, "cmd": Str(4096), "gpu": Bool(), "reason": Str(500)},
                            required=("pid",), drop_if_bad=True), 1024),
})
INVENTORY_BLOCK = Obj({
    "gpus": List(Obj({"index": Num(0, 4096, integer=True), "name": NAME, "uuid": NAME,
                      "mem_total": MIB, "power_limit": Num(0, 100000),
                      "clock_sm_max": Num(0, 100000), "clock_mem_max": Num(0, 100000),
                      "minor": Num(0, 1 << 20, integer=True)},
                     required=("index",), drop_if_bad=True), MAX_GPU_ROWS),
    "host": Obj({"ncpu": Num(1, 1 << 20, integer=True), "cpu_limit": Num(0, 1 << 20),
                 "boot_time": EPOCH, "instance_start": EPOCH, "hostname": NAME}),
    "disks": List(DISK_ROW, 256), "idle_threshold": Num(0, 100),
})
SAMPLE_MSG = Obj({
    "gpus": List(GPU_ROW, MAX_GPU_ROWS), "procs": List(PROC_ROW, MAX_PROC_ROWS),
    "procs_more": COUNT, "host": HOST_BLOCK, "gpu_error": Str(2000),
    "dl": List(DL_ROW, MAX_DL_ROWS), "jobs": JOBS_BLOCK,
    "idle_s": Num(0, 1e10),  # idle GPU seconds of this boot, counted by the daemon
})
PROC_META_MSG = Obj({"procs": List(PROC_META_ROW, MAX_META_ROWS)})
AUTOSTOP_STATUS_BLOCK = Obj({
    "armed": Obj({"command": Str(8192), "idle_seconds": Num(0, 1e8), "deadline": EPOCH,
                  "grace": Num(0, 1e6), "threshold": Num(0, 100), "armed_at": EPOCH,
                  "when_job_done": NAME, "hung_counts_idle": Bool(), "action": Str(100),
                  "verify_s": Num(0, 1e7)}),
    "idle_for": Num(0, 1e10), "grace_left": Num(0, 1e8), "grace_reason": Str(2000),
    "cancel_command": PATH, "rule": Str(20), "when_job_done": NAME,
    # the last release command of this boot (remote_probe/autostop/release_verify.py); verified False:
    # the box is still up past the verify window, None: the window is not over yet
    "release": Obj({"ran_at": EPOCH, "command": Str(8192), "exit": Num(-1e6, 1e6, integer=True),
                    "verified": Bool(), "via": Str(20)}),
})
AUTOSTOP_MSG = Obj({"status": AUTOSTOP_STATUS_BLOCK, "event": Any()})
NOTIFY_EVENT_MSG = Obj({"kind": Str(40), "job": NAME, "title": Str(2000), "body": Str(8000),
                        "t": EPOCH, "sent": Bool()})
# provider_price's answer (remote_probe/provider/api.py): figures, never a key
PRICE_BLOCK = Obj({"provider": NAME, "ok": Bool(), "rate_per_hour": Num(0, 1e6), "currency": Str(16),
                   "balance": Num(-1e9, 1e12), "spend_per_hour": Num(0, 1e6),
                   "storage_per_hour": Num(0, 1e6), "source": NAME, "reason": Str(2000),
                   "fallback": NAME, "read_at": EPOCH, "cached": Bool()})
# Replies carry these blocks under these keys (snapshot, subscribe); the rest is Any.
REPLY_MSG = Obj({"clocks": List(CLOCK_ROW, 20),
                 "inventory": INVENTORY_BLOCK, "sample": SAMPLE_MSG,
                 "proc_meta": List(PROC_META_ROW, MAX_META_ROWS), "jobs": JOBS_BLOCK,
                 "error": Str(20000), "backlog": COUNT, "last_seq": COUNT, "first_seq": COUNT,
                 "autostop": AUTOSTOP_STATUS_BLOCK, "proof": Str(64), "price": PRICE_BLOCK,
                 # a file_read chunk: base64 of up to 512 KiB (filexfer.MAX_CHUNK), longer
                 # than MAX_STR - cut there, every chunk came back a quarter short
                 "data": Str(4 * ((512 << 10) + 2) // 3)})
HELLO_MSG = Obj({"pid": PID, "started": EPOCH, "last_seq": COUNT, "sessions": COUNT, "socket": PATH,
                 "binds": COUNT, "key": Str(64),
                 "version": Str(200)})
MESSAGE_SCHEMAS: typing.Dict[typing.Any, Spec] = {
    SAMPLE: SAMPLE_MSG, INVENTORY: INVENTORY_BLOCK, PROC_META: PROC_META_MSG, REPLY: REPLY_MSG,
    ERROR: REPLY_MSG, AUTOSTOP: AUTOSTOP_MSG, HELLO: HELLO_MSG, NOTIFY_EVENT: NOTIFY_EVENT_MSG}


# Request parameters, checked strictly (a bad one is refused with a reason, not cleared):
# by the daemon before a handler runs, and by the client before it sends.
STRINGS = List(PATH, 100000)
REQUEST_SCHEMAS: typing.Dict[typing.Any, Spec] = {
    SUBSCRIBE: Obj({"since_seq": COUNT}),
    PROVE: Obj({"nonce": Str(64)}),
    AUTOSTOP_ARM: Obj({"command": Str(8192), "idle_seconds": Num(0, 1e8), "deadline": EPOCH,
                       "grace": Num(0, 1e6), "threshold": Num(0, 100),
                       "when_job_done": NAME, "hung_counts_idle": Bool(), "action": Str(100),
                       "verify_s": Num(1, 1e7),  # the release's verify window (release_verify)
                       "at_budget": Bool()}),  # release once the session's or day's budget is spent
    AUTOSTOP_DISARM: Obj({"reason": Str(1000)}),
    PREFLIGHT: Obj({"python": PATH, "smoke": Bool(), "urls": List(Str(4096), 100)}),
    CHECKLIST: Obj({"roots": STRINGS, "artifact_paths": STRINGS, "temp_dirs": STRINGS,
                    "cache_dirs": STRINGS}),
    SHA256: Obj({"paths": STRINGS}),
    KILL: Obj({"pid": PID}),
    DELETE: Obj({"paths": STRINGS, "allowed": STRINGS}),
    ENV_CAPTURE: Obj({"python": PATH, "pids": List(PID, 1024)}),
    RELEASE: Obj({"command": Str(8192), "verify_s": Num(1, 1e7)}),
    PROVIDER_PRICE: Obj({"fresh": Bool()}),
    TMUX_CAPTURE: Obj({"pane": NAME, "lines": Num(1, 100000, integer=True)}),
    TMUX_NEW: Obj({"name": NAME, "command": Str(65536), "cwd": PATH, "env": Obj(),
                   "dlhook": Bool()}),
    TMUX_INTERRUPT: Obj({"pane": NAME}),
    NOTIFY_CONFIG: Obj({"channels": List(Str(4096), 50), "enabled": Bool(), "box": NAME,
                        "quiet": Obj({"start": Str(5), "end": Str(5),
                                      "utc_offset_minutes": Num(-1440, 1440, integer=True),
                                      "allow": List(Str(40), 50)}),
                        "templates": Obj(), "causes": Obj(),
                        "events": List(Str(40), 50),  # [notify] events: the kinds to send
                        # thresholds of the watch (seconds); tests make them short
                        "watch": Obj({"hung_after_s": Num(1, 1e7), "checkpoint_stale_s": Num(1, 1e8),
                                      "save_signal": Str(10),  # clocks.py: sent on a spot notice
                                      "idle_notify_s": Num(1, 1e8), "stall_min_s": Num(1, 1e7),
                                      "release_verify_s": Num(1, 1e7)})}),  # release_verify.py
    NOTIFY_TEST: Obj(),
    TMUX_KILL: Obj({"session": NAME}),
    TMUX_RENAME: Obj({"session": NAME, "name": NAME}),
    # `gputui push` through the probe channel (remote_probe/files/filexfer_write.py): every one names
    # the root (DEST); paths are relative (filexfer_write refuses '..' and absolute ones itself)
    FILE_STAT: Obj({"root": PATH, "paths": List(PATH, 2000)}),  # filexfer_write.STAT_BATCH
    FILE_MKDIR: Obj({"root": PATH, "path": PATH, "mode": Num(0, 0o7777, integer=True)}),
    FILE_LINK: Obj({"root": PATH, "path": PATH, "target": PATH}),
    FILE_WRITE: Obj({"root": PATH, "path": PATH, "offset": COUNT, "truncate": Bool(),
                     "data": Str(4 * ((MAX_CHUNK + 2) // 3)), "sha256": Str(64)}),
    FILE_COMMIT: Obj({"root": PATH, "path": PATH, "to": PATH, "size": COUNT,
                      "mode": Num(0, 0o7777, integer=True), "mtime": Num(-1e11, 1e11),
                      "discard": Bool()}),
    FILE_LIST: Obj({"root": PATH}),
    FILE_CHMOD: Obj({"root": PATH, "path": PATH, "mode": Num(0, 0o7777, integer=True)}),
}


def check_request(msg: Msg) -> typing.Optional[str]:
    """None if a request's parameters fit its schema, else a one-line reason."""
    spec = REQUEST_SCHEMAS.get(msg.get("type"))
    if spec is None:
        return None
    report = Report()
    spec(msg, msg["type"], report)
    if report.count:
        return "bad %s request: %s" % (msg["type"], report.examples[0])
    return None


def clean(msg: Msg, report: typing.Optional["Report"] = None) -> Msg:
    """A decoded message with every value held to its schema (see above). -> new dict.

    `msg` has passed validate(): the fields the receiver needs to route it are there.
    """
    report = report if report is not None else Report()
    spec = MESSAGE_SCHEMAS.get(msg.get("type"), Any())
    out = spec(msg, msg.get("type") or "message", report)
    return out if isinstance(out, dict) else msg


# What the box costs (the laptop's billing facts) for the daemon's budget watch
# (remote_probe/watch/budget_watch.py); strict like every request: a bad value is refused.
REQUEST_SCHEMAS[NOTIFY_BILLING] = Obj({
    "rate_per_hour": Num(0, 1e6), "currency": Str(16), "granularity": Str(10), "start": EPOCH,
    "budget": Num(0, 1e9), "balance": Num(-1e9, 1e12), "balance_read_at": EPOCH,
    "spend_per_hour": Num(0, 1e6), "balance_low_hours": Num(0, 1e4),
    "budget_day": Num(0, 1e9), "day_start": EPOCH, "day_other_cost": Num(0, 1e9)})
