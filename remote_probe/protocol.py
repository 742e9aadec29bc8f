"""The wire protocol between gputui and the probe: defined once, used by both sides.

Newline-delimited JSON, one object per line, both ways. The first message each way
is ``hello``. Requests carry an ``id`` that the reply echoes; streams (samples) are
pushed with a monotonically increasing ``seq``.

Samples are columnar: per-GPU and per-process rows are lists whose column order is
given by ``GPU_FIELDS`` and ``PROC_FIELDS`` below. Static facts (GPU names, memory
totals, process command lines) are sent once in ``inventory`` / ``proc_meta`` instead
of every second, which keeps an 8-GPU sample under 2 KB.
"""

import json

PROTOCOL = 1
# A line longer than this is dropped unread: a sample is ~2 KB, a backlog reply is
# streamed sample by sample, so nothing legitimate comes near it.
MAX_LINE = 1 << 20

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

REQUEST_TYPES = frozenset({HELLO, SUBSCRIBE, UNSUBSCRIBE, SNAPSHOT, PING, SHUTDOWN,
                           AUTOSTOP_ARM, AUTOSTOP_DISARM, AUTOSTOP_STATUS,
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
MIN_PYTHON = (3, 8)


class ProtocolError(ValueError):
    """A line that is not a valid protocol message."""


def encode(msg):
    """One message as a line of bytes. Compact separators: every byte is on the wire."""
    return (json.dumps(msg, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")


def decode(line):
    """Parse and validate one line; raise ProtocolError with a short reason if bad."""
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
        msg = json.loads(line)
    except ValueError as exc:
        raise ProtocolError("not JSON: %s" % exc)
    validate(msg)
    return msg


def _require(cond, why):
    if not cond:
        raise ProtocolError(why)


def validate(msg):
    """Check the shape of a message; the fields each side relies on must be there."""
    _require(isinstance(msg, dict), "not an object")
    kind = msg.get("type")
    _require(isinstance(kind, str), "missing type")
    if kind == HELLO:
        _require(isinstance(msg.get("protocol"), int), "hello without protocol")
        _require(isinstance(msg.get("version"), str), "hello without version")
        _require(isinstance(msg.get("capabilities", []), list), "bad capabilities")
    elif kind == SAMPLE:
        _require(isinstance(msg.get("seq"), int), "sample without seq")
        _require(isinstance(msg.get("t"), (int, float)), "sample without time")
        gpus = msg.get("gpus", [])
        _require(isinstance(gpus, list), "sample gpus not a list")
        for row in gpus:
            _require(isinstance(row, list) and len(row) == len(GPU_FIELDS), "bad gpu row")
        procs = msg.get("procs", [])
        _require(isinstance(procs, list), "sample procs not a list")
        for row in procs:
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
    flags = d.get("flags") or 0
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
                  if not row[5] & (PROC_GRAPHICS | PROC_FD_ONLY))
    return utils, compute


def throttle_names(mask):
    if not mask:
        return []
    return [name for bit, name in THROTTLE_REASONS if mask & bit]
