"""The wire protocol between gputui and the probe: defined once, used by both sides.

Newline-delimited JSON, one object per line, both ways. The first message each way
is ``hello``. Requests carry an ``id`` that the reply echoes; streams (samples) are
pushed with a monotonically increasing ``seq``.

Samples are columnar: per-GPU and per-process rows are lists whose column order is
given by ``GPU_FIELDS`` and ``PROC_FIELDS`` below. Static facts (GPU names, memory
totals, process command lines) are sent once in ``inventory`` / ``proc_meta`` instead
of every second, which keeps an 8-GPU sample under 2 KB.
"""

import heapq
import json
import math

PROTOCOL = 1
# A line longer than this is dropped unread: a sample is ~2 KB, a backlog reply is
# streamed sample by sample, so nothing legitimate comes near it.
MAX_LINE = 1 << 20
# Bounds every message is held to on receipt (see clean()). Deeper or longer is cut.
MAX_DEPTH = 24  # nesting of lists/objects; a legitimate message is < 8 deep
MAX_ITEMS = 20000  # elements of one list or object
MAX_STR = 256 * 1024  # characters of one string (a tmux capture is the longest)
# Per-sample rows: the daemon sends at most this many, biggest GPU memory first, and
# says how many more there were in "procs_more"; the client cuts to the same bound.
MAX_PROC_ROWS = 500
MAX_GPU_ROWS = 64
MAX_META_ROWS = 2000  # rows of one proc_meta message
MAX_DL_ROWS = 256  # dataloader hook stats per sample

# Message types. Requests (client -> probe) get a reply of type "reply" or "error".
HELLO = "hello"
SUBSCRIBE = "subscribe"  # {since_seq}: backlog after since_seq, then live samples
UNSUBSCRIBE = "unsubscribe"
SNAPSHOT = "snapshot"  # one reply with inventory + latest sample
PING = "ping"
SHUTDOWN = "shutdown"  # stop the daemon (demo exit, version upgrade)
AUTOSTOP_ARM = "autostop_arm"  # {command, idle_seconds, deadline, grace, threshold}
AUTOSTOP_DISARM = "autostop_disarm"  # {reason}
AUTOSTOP_STATUS = "autostop_status"
PREFLIGHT = "preflight"  # {python, smoke, urls}: facts for `gputui doctor`
CHECKLIST = "checklist"  # {roots, artifact_paths}: facts for the shutdown checklist
SHA256 = "sha256"  # {paths}
KILL = "kill"  # {pid}
DELETE = "delete"  # {paths, allowed}
ENV_CAPTURE = "env_capture"  # {python}
RELEASE = "release"  # {command}
TMUX_LIST = "tmux_list"
TMUX_CAPTURE = "tmux_capture"  # {pane, lines}
TMUX_NEW = "tmux_new"  # {name, command, cwd}
TMUX_INTERRUPT = "tmux_interrupt"  # {pane}: Ctrl-C
TMUX_KILL = "tmux_kill"  # {session}
TMUX_RENAME = "tmux_rename"  # {session, name}
TMUX_INSTALL = "tmux_install"
TMUX_REQUESTS = frozenset({TMUX_LIST, TMUX_CAPTURE, TMUX_NEW, TMUX_INTERRUPT, TMUX_KILL,
                           TMUX_RENAME, TMUX_INSTALL})
REPLY = "reply"
ERROR = "error"
SAMPLE = "sample"
INVENTORY = "inventory"  # pushed when the GPU inventory changes
PROC_META = "proc_meta"  # pushed when new processes appear
AUTOSTOP = "autostop"  # pushed: {event, status} when autostop arms, warns, fires

# A chunk of a file, for boxes without SFTP: the attach bridge answers it, or the daemon
# itself when the client came through the socket (see filexfer).
FILE_READ = "file_read"

REQUEST_TYPES = frozenset({HELLO, SUBSCRIBE, UNSUBSCRIBE, SNAPSHOT, PING, SHUTDOWN,
                           AUTOSTOP_ARM, AUTOSTOP_DISARM, AUTOSTOP_STATUS, FILE_READ,
                           PREFLIGHT, CHECKLIST, SHA256, KILL, DELETE, ENV_CAPTURE, RELEASE}) | TMUX_REQUESTS
PUSH_TYPES = frozenset({SAMPLE, INVENTORY, PROC_META, AUTOSTOP})
REPLY_TYPES = frozenset({REPLY, ERROR})

# Per-GPU dynamic columns, sent every sample. None means "not available on this GPU".
GPU_FIELDS = (
    "util",  # GPU utilization %
    "mem_util",  # memory controller utilization %
    "mem_used",  # MiB
    "temp",  # degrees C
    "power",  # W
    "clock_sm",  # MHz
    "clock_mem",  # MHz
    "pstate",  # 0..15
    "fan",  # %
    "throttle",  # list of reason names
    "ecc_errors",  # volatile uncorrected ECC errors
)
# Per-GPU static facts, sent in the inventory.
GPU_STATIC_FIELDS = (
    "index", "name", "uuid", "pci_bus_id", "minor", "mem_total", "power_limit",
    "clock_sm_max", "clock_mem_max", "mig_mode", "virt_mode", "mig_devices",
)
# Per GPU-process columns, sent every sample. What cannot change while a process
# lives (user, command, start, the host pid it was mapped from) is in PROC_META_FIELDS.
PROC_FIELDS = (
    "pid",
    "gpu",  # GPU index
    "gpu_mem",  # MiB, None when the driver hides it (containers, MIG)
    "cpu",  # % of one core, integer
    "rss",  # MiB
    "flags",  # PROC_* bits below; 0 = a compute process visible in this /proc
)
PROC_HOST_PID = 1  # pid from the host namespace, not visible in this container's /proc
PROC_GRAPHICS = 2  # a graphics (not compute) context
PROC_FD_ONLY = 4  # found through an open /dev/nvidiaN, not reported by the driver
# Per-process facts that do not change while the process lives (sent in proc_meta).
PROC_META_FIELDS = ("pid", "user", "cmd", "start", "host_pid")

# Exit codes of the bootstrap stub and the probe (like sshuttle: distinct codes so the
# client can say exactly what went wrong instead of "exit status 1").
EXIT_OK = 0
EXIT_NO_PYTHON = 97
EXIT_PYTHON_TOO_OLD = 98
EXIT_PROBE_MISSING = 96
EXIT_PROBE_CRASHED = 70
EXIT_DAEMON_UNREACHABLE = 75
EXIT_DAEMON_IN_USE = 74  # a daemon of other settings serves a live session: not replaced
MIN_PYTHON = (3, 8)


class ProtocolError(ValueError):
    """A line that is not a valid protocol message."""


def _finite(value):
    """A copy of `value` with NaN/Infinity replaced by None (strict JSON has no such thing)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def encode(msg):
    """One message as a line of bytes; NaN and undecodable file names do not make it raise.

    Compact separators: every byte is on the wire. Strict JSON: a NaN from a driver
    becomes null. A file name that is not valid UTF-8 arrives here as a str with lone
    surrogates (Python's surrogateescape); then the line is written with \\udcXX escapes,
    which json.loads on the other side turns back into the same str, so the laptop can
    show it escaped and ask for exactly that path again.
    """
    try:
        text = json.dumps(msg, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:  # NaN/Infinity somewhere
        msg = _finite(msg)
        text = json.dumps(msg, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: escape them, byte-exact round trip
        return (json.dumps(msg, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
                + "\n").encode("ascii")


def _parse_hooks(report):
    """json.loads hooks: NaN, Infinity and numbers too big for a float (1e999) are not
    JSON numbers we can use; they read as None ("not available"), noted in `report`."""
    def parse_float(text):
        value = float(text)
        if math.isfinite(value):
            return value
        if report is not None:
            report.note("line", "%s is not a finite number" % text[:20])
        return None

    def parse_constant(name):
        if report is not None:
            report.note("line", "%s is not a number" % name)
        return None
    return parse_float, parse_constant


def decode(line, report=None):
    """Parse and validate one line; raise ProtocolError with a short reason if bad.

    Never raises anything else: a line nested deeper than the parser can follow is a
    malformed line like any other, not a crash of the reader.
    """
    if isinstance(line, bytes):
        if len(line) > MAX_LINE:
            raise ProtocolError("line too long (%d bytes)" % len(line))
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolError("not UTF-8")
    elif len(line) > MAX_LINE:
        raise ProtocolError("line too long (%d chars)" % len(line))
    line = line.strip()
    if not line:
        raise ProtocolError("empty line")
    try:
        parse_float, parse_constant = _parse_hooks(report)
        msg = json.loads(line, parse_float=parse_float, parse_constant=parse_constant)
    except RecursionError:
        raise ProtocolError("nested too deeply")
    except ValueError as exc:  # includes ints too long to convert
        raise ProtocolError("not JSON: %s" % str(exc)[:200])
    try:
        validate(msg)
    except RecursionError:
        raise ProtocolError("nested too deeply")
    return msg


def _require(cond, why):
    if not cond:
        raise ProtocolError(why)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_num(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def validate(msg):
    """Check the shape of a message; the fields each side relies on must be there.

    A message that fails is dropped whole. Values inside a valid shape that are out of
    range or of the wrong type are not this function's business: clean() clears them.
    """
    _require(isinstance(msg, dict), "not an object")
    kind = msg.get("type")
    _require(isinstance(kind, str), "missing type")
    if kind == HELLO:
        _require(_is_int(msg.get("protocol")), "hello without protocol")
        _require(isinstance(msg.get("version"), str), "hello without version")
        _require(isinstance(msg.get("capabilities", []), list), "bad capabilities")
    elif kind == SAMPLE:
        _require(_is_int(msg.get("seq")) and msg["seq"] >= 0, "sample without seq")
        _require(_is_num(msg.get("t")) and 0 <= msg["t"] < 1e11, "sample without a sane time")
        gpus = msg.get("gpus", [])
        _require(isinstance(gpus, list), "sample gpus not a list")
        for row in gpus[:MAX_GPU_ROWS]:
            _require(isinstance(row, list) and len(row) == len(GPU_FIELDS), "bad gpu row")
        procs = msg.get("procs", [])
        _require(isinstance(procs, list), "sample procs not a list")
        for row in procs[:MAX_PROC_ROWS]:
            _require(isinstance(row, list) and len(row) == len(PROC_FIELDS), "bad proc row")
        _require(isinstance(msg.get("host", {}), dict), "bad host block")
    elif kind in (REPLY, ERROR):
        _require("id" in msg, "reply without id")
    elif kind == INVENTORY:
        _require(isinstance(msg.get("gpus"), list), "inventory without gpus")
    elif kind == PROC_META:
        _require(isinstance(msg.get("procs"), list), "proc_meta without procs")
    elif kind == AUTOSTOP:
        _require(isinstance(msg.get("status"), dict), "autostop without status")
    elif kind in REQUEST_TYPES:
        pass
    else:
        raise ProtocolError("unknown message type %r" % kind)
    return msg


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

    def __init__(self):
        self.count = 0
        self.examples = []

    def note(self, path, why):
        self.count += 1
        if len(self.examples) < self.EXAMPLES:
            self.examples.append("%s: %s" % (path_text(path), why))


def path_text(path):
    """("sample", ("gpus", 0), "util") -> "sample.gpus[0].util". Paths are built as
    nested (parent, key) pairs and spelled out only for a note: most values are fine."""
    parts = []
    while isinstance(path, tuple):
        path, key = path
        parts.append("[%d]" % key if isinstance(key, int) else "." + str(key)[:40])
    parts.append(str(path))
    return "".join(reversed(parts))


def _type_name(value):
    return "null" if value is None else type(value).__name__


def Num(lo=None, hi=None, integer=False):
    """A finite number in [lo, hi] (an integer if asked); anything else -> None."""
    def clean(value, path, report):
        if value is None:
            return None
        ok = _is_int(value) if integer else _is_num(value)
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
    return clean


def Str(max_len=4096):
    """A string, cut to max_len characters; anything else -> None."""
    def clean(value, path, report):
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


def Bool():
    def clean(value, path, report):
        if value is None or isinstance(value, bool):
            return value
        if value in (0, 1) and _is_int(value):
            return bool(value)
        report.note(path, "expected true/false, got %s" % _type_name(value))
        return None
    return clean


def List(item, max_items=MAX_ITEMS, empty=list):
    """A list of `item`, at most max_items long; not a list -> empty()."""
    def clean(value, path, report):
        if value is None:
            return empty()
        if not isinstance(value, list):
            report.note(path, "expected a list, got %s" % _type_name(value))
            return empty()
        if len(value) > max_items:
            report.note(path, "%d items cut to %d" % (len(value), max_items))
            value = value[:max_items]
        out = []
        for i, v in enumerate(value):
            c = item(v, (path, i), report)
            if c is not _DROP:
                out.append(c)
        return out
    return clean


def Row(columns, required=()):
    """A fixed-length list (a columnar row); a required column that is None drops the row."""
    def clean(value, path, report):
        if not isinstance(value, list) or len(value) != len(columns):
            report.note(path, "not a row of %d columns" % len(columns))
            return _DROP
        out = [spec(v, (path, name), report) for (name, spec), v in zip(columns, value)]
        for i in required:
            if out[i] is None:
                report.note(path, "row without %s" % columns[i][0])
                return _DROP
        return out
    return clean


def Obj(fields=None, required=(), drop_if_bad=False):
    """An object: known keys cleaned by their spec, other keys kept if bounded (Any).

    Not an object -> None (or dropped from its list when drop_if_bad); a required key
    that ends up None drops the object the same way.
    """
    fields = fields or {}

    def clean(value, path, report):
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


def _any(value, path, report, depth):
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


def Any():
    def clean(value, path, report):
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
    PID, Num(0, 4096, integer=True), MIB, Num(0, 1e6), MIB, Num(0, 255, integer=True)))),
    required=(0,))
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
JOBS_BLOCK = Obj({
    "tmux": Obj({"sessions": List(Obj({
        "id": NAME, "name": NAME, "attached": COUNT, "created": EPOCH,
        "windows": List(Obj({"id": NAME, "index": COUNT, "name": NAME, "panes": List(Obj({
            "id": NAME, "index": COUNT, "pid": PID, "command": NAME, "path": PATH,
            "started": EPOCH, "active": Bool(), "dead": Bool(), "running": Bool()},
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
    "disks": List(DISK_ROW, 256),
})
SAMPLE_MSG = Obj({
    "gpus": List(GPU_ROW, MAX_GPU_ROWS), "procs": List(PROC_ROW, MAX_PROC_ROWS),
    "procs_more": COUNT, "host": HOST_BLOCK, "gpu_error": Str(2000),
    "dl": List(DL_ROW, MAX_DL_ROWS), "jobs": JOBS_BLOCK,
})
PROC_META_MSG = Obj({"procs": List(PROC_META_ROW, MAX_META_ROWS)})
AUTOSTOP_STATUS_BLOCK = Obj({
    "armed": Obj({"command": Str(8192), "idle_seconds": Num(0, 1e8), "deadline": EPOCH,
                  "grace": Num(0, 1e6), "threshold": Num(0, 100), "armed_at": EPOCH}),
    "idle_for": Num(0, 1e10), "grace_left": Num(0, 1e8), "grace_reason": Str(2000),
    "cancel_command": PATH,
})
AUTOSTOP_MSG = Obj({"status": AUTOSTOP_STATUS_BLOCK, "event": Any()})
# Replies carry these blocks under these keys (snapshot, subscribe); the rest is Any.
REPLY_MSG = Obj({"inventory": INVENTORY_BLOCK, "sample": SAMPLE_MSG,
                 "proc_meta": List(PROC_META_ROW, MAX_META_ROWS), "jobs": JOBS_BLOCK,
                 "error": Str(20000), "backlog": COUNT, "last_seq": COUNT, "first_seq": COUNT,
                 "autostop": AUTOSTOP_STATUS_BLOCK,
                 # a file_read chunk: base64 of up to 512 KiB (filexfer.MAX_CHUNK), longer
                 # than MAX_STR - cut there, every chunk came back a quarter short
                 "data": Str(4 * ((512 << 10) + 2) // 3)})
HELLO_MSG = Obj({"pid": PID, "started": EPOCH, "last_seq": COUNT, "sessions": COUNT, "socket": PATH,
                 "binds": COUNT,
                 "version": Str(200)})
MESSAGE_SCHEMAS = {SAMPLE: SAMPLE_MSG, INVENTORY: INVENTORY_BLOCK, PROC_META: PROC_META_MSG,
                   REPLY: REPLY_MSG, ERROR: REPLY_MSG, AUTOSTOP: AUTOSTOP_MSG, HELLO: HELLO_MSG}


# Request parameters, checked strictly (a bad one is refused with a reason, not cleared):
# by the daemon before a handler runs, and by the client before it sends.
STRINGS = List(PATH, 100000)
REQUEST_SCHEMAS = {
    SUBSCRIBE: Obj({"since_seq": COUNT}),
    AUTOSTOP_ARM: Obj({"command": Str(8192), "idle_seconds": Num(0, 1e8), "deadline": EPOCH,
                       "grace": Num(0, 1e6), "threshold": Num(0, 100)}),
    AUTOSTOP_DISARM: Obj({"reason": Str(1000)}),
    PREFLIGHT: Obj({"python": PATH, "smoke": Bool(), "urls": List(Str(4096), 100)}),
    CHECKLIST: Obj({"roots": STRINGS, "artifact_paths": STRINGS, "temp_dirs": STRINGS,
                    "cache_dirs": STRINGS}),
    SHA256: Obj({"paths": STRINGS}),
    KILL: Obj({"pid": PID}),
    DELETE: Obj({"paths": STRINGS, "allowed": STRINGS}),
    ENV_CAPTURE: Obj({"python": PATH}),
    RELEASE: Obj({"command": Str(8192)}),
    TMUX_CAPTURE: Obj({"pane": NAME, "lines": Num(1, 100000, integer=True)}),
    TMUX_NEW: Obj({"name": NAME, "command": Str(65536), "cwd": PATH, "env": Obj(),
                   "dlhook": Bool()}),
    TMUX_INTERRUPT: Obj({"pane": NAME}),
    TMUX_KILL: Obj({"session": NAME}),
    TMUX_RENAME: Obj({"session": NAME, "name": NAME}),
}


def check_request(msg):
    """None if a request's parameters fit its schema, else a one-line reason."""
    spec = REQUEST_SCHEMAS.get(msg.get("type"))
    if spec is None:
        return None
    report = Report()
    spec(msg, msg["type"], report)
    if report.count:
        return "bad %s request: %s" % (msg["type"], report.examples[0])
    return None


def clean(msg, report=None):
    """A decoded message with every value held to its schema (see above). -> new dict.

    `msg` has passed validate(): the fields the receiver needs to route it are there.
    """
    report = report if report is not None else Report()
    spec = MESSAGE_SCHEMAS.get(msg.get("type"), Any())
    out = spec(msg, msg.get("type") or "message", report)
    return out if isinstance(out, dict) else msg


def decode_clean(line, report=None):
    """decode() then clean(): what a receiver of untrusted lines calls."""
    report = report if report is not None else Report()
    msg = decode(line, report)
    try:
        return clean(msg, report)
    except RecursionError:  # cannot happen with MAX_DEPTH this small; belt and braces
        raise ProtocolError("nested too deeply")


def cap_procs(sample, limit=MAX_PROC_ROWS):
    """Keep the `limit` process rows with the most GPU memory; count the rest.

    Sets "procs_more" (rows left out) so the UI can say "and N more". In place.
    """
    procs = sample.get("procs") or []
    if len(procs) <= limit:
        return sample
    sample["procs"] = heapq.nlargest(limit, procs, key=lambda r: r[2] or 0)
    sample["procs_more"] = (sample.get("procs_more") or 0) + len(procs) - limit
    return sample


def gpu_row(values):
    """A GPU dict -> its columnar row."""
    return [values.get(k) for k in GPU_FIELDS]


def gpu_dict(row):
    return dict(zip(GPU_FIELDS, row))


def proc_row(values):
    """A process dict (with "local" and "kind") -> its columnar row."""
    flags = (0 if values.get("local", 1) else PROC_HOST_PID)
    kind = values.get("kind", "C")
    flags |= PROC_GRAPHICS if kind == "G" else (PROC_FD_ONLY if kind == "?" else 0)
    cpu = values.get("cpu")
    return [values.get("pid"), values.get("gpu"), values.get("gpu_mem"),
            None if cpu is None else int(round(cpu)), values.get("rss"), flags]


def proc_dict(row):
    """A columnar row -> dict, with the derived "local" and "kind" spelled out."""
    d = dict(zip(PROC_FIELDS, row))
    flags = d.get("flags") if _is_int(d.get("flags")) else 0
    d["local"] = 0 if flags & PROC_HOST_PID else 1
    d["kind"] = "G" if flags & PROC_GRAPHICS else ("?" if flags & PROC_FD_ONLY else "C")
    return d


def hello(role, version, capabilities, **extra):
    msg = {"type": HELLO, "role": role, "protocol": PROTOCOL, "version": version,
           "capabilities": list(capabilities)}
    msg.update(extra)
    return msg


def check_compatible(peer_hello):
    """Return None if we can talk to this peer, else a one-line reason."""
    theirs = peer_hello.get("protocol")
    if theirs != PROTOCOL:
        return ("probe speaks protocol %s, gputui speaks %s; the probe will be redeployed"
                % (theirs, PROTOCOL))
    return None


# NVML clock-event ("throttle") reason bits -> short names. The sample carries the
# mask; the UI decodes it with this table.
THROTTLE_REASONS = (
    (0x1, "idle"),
    (0x2, "app clocks"),
    (0x4, "power cap"),
    (0x8, "hw slowdown"),
    (0x10, "sync boost"),
    (0x20, "sw thermal"),
    (0x40, "hw thermal"),
    (0x80, "power brake"),
    (0x100, "display clocks"),
)


def idle_inputs(sample):
    """(GPU utilizations, number of compute processes) of a sample: what idle is judged on.

    Graphics contexts and processes seen only through /dev/nvidia* fds are not compute jobs.
    """
    utils = [row[0] for row in sample.get("gpus", ())]
    compute = sum(1 for row in sample.get("procs", ())
                  if not (row[5] or 0) & (PROC_GRAPHICS | PROC_FD_ONLY))
    return utils, compute + (sample.get("procs_more") or 0)


def throttle_names(mask):
    if not mask or not _is_int(mask):
        return []
    return [name for bit, name in THROTTLE_REASONS if mask & bit]
