"""Message names, limits and exit codes of the wire protocol between gputui and the probe.

Newline-delimited JSON, one object per line, both ways. The first message each way
is ``hello``. Requests carry an ``id`` that the reply echoes; streams (samples) are
pushed with a monotonically increasing ``seq``. See docs/architecture.md, "The wire
protocol".
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing stays off the box's import path (attach runs on every connect)
    from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Tuple

from remote_probe import __version__

PROTOCOL = 1
# A line longer than this is dropped unread: a sample is ~2 KB, a backlog reply is
# streamed sample by sample, so nothing legitimate comes near it.
MAX_LINE = 1 << 20
# Bounds every message is held to on receipt (see schema.clean()). Deeper or longer is cut.
MAX_DEPTH = 24  # nesting of lists/objects; a legitimate message is < 8 deep
MAX_ITEMS = 20000  # elements of one list or object
MAX_STR = 256 * 1024  # characters of one string (a tmux capture is the longest)
# Per-sample rows: the sampler sends at most this many, biggest GPU memory first, and
# says how many more there were in "procs_more" (rows.cap_procs); a receiver holds a
# sample to the same bound (schema.SAMPLE_MSG).
MAX_PROC_ROWS = 500
MAX_GPU_ROWS = 64
MAX_META_ROWS = 2000  # rows of one proc_meta message
MAX_DL_ROWS = 256  # dataloader hook stats per sample
# One file_read chunk (filexfer): its base64 stays well under MAX_LINE.
MAX_CHUNK = 512 << 10

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
PROVIDER_PRICE = "provider_price"  # {fresh}: price and balance read on the box (issue 22)
TMUX_LIST = "tmux_list"
TMUX_CAPTURE = "tmux_capture"  # {pane, lines}
TMUX_NEW = "tmux_new"  # {name, command, cwd}
TMUX_INTERRUPT = "tmux_interrupt"  # {pane}: Ctrl-C
TMUX_KILL = "tmux_kill"  # {session}
TMUX_RENAME = "tmux_rename"  # {session, name}
TMUX_INSTALL = "tmux_install"
# The box's watch (remote_probe/watch/loop.py, notify/notifier.py): the laptop's notification
# settings (channel URLs are secrets: stored 0600, never echoed), a test through every
# channel, and the push when the daemon queues a notification.
NOTIFY_CONFIG = "notify_config"  # {channels, quiet, templates, causes, box, enabled, watch}
NOTIFY_TEST = "notify_test"
NOTIFY_EVENT = "notify_event"  # pushed: {kind, job, title, body, t, sent}
MAX_WATCH_JOBS = 64  # jobs in the "watch" list of a jobs block
TMUX_REQUESTS: FrozenSet[str] = frozenset({
    TMUX_LIST, TMUX_CAPTURE, TMUX_NEW, TMUX_INTERRUPT, TMUX_KILL, TMUX_RENAME, TMUX_INSTALL})
REPLY = "reply"
ERROR = "error"
SAMPLE = "sample"
INVENTORY = "inventory"  # pushed when the GPU inventory changes
PROC_META = "proc_meta"  # pushed when new processes appear
AUTOSTOP = "autostop"  # pushed: {event, status} when autostop arms, warns, fires

# A chunk of a file, for boxes without SFTP: the attach bridge answers it, or the daemon
# itself when the client came through the socket (see filexfer).
FILE_READ = "file_read"
PROVE = "prove"  # {nonce}: the direct path's challenge (wire/challenge.py)

REQUEST_TYPES: FrozenSet[str] = frozenset({
    PROVE, HELLO, SUBSCRIBE, UNSUBSCRIBE, SNAPSHOT, PING, SHUTDOWN, AUTOSTOP_ARM, AUTOSTOP_DISARM,
    AUTOSTOP_STATUS, FILE_READ, PREFLIGHT, CHECKLIST, SHA256, KILL, DELETE, ENV_CAPTURE,
    RELEASE, NOTIFY_CONFIG, NOTIFY_TEST, PROVIDER_PRICE}) | TMUX_REQUESTS
PUSH_TYPES: FrozenSet[str] = frozenset({SAMPLE, INVENTORY, PROC_META, AUTOSTOP, NOTIFY_EVENT})
REPLY_TYPES: FrozenSet[str] = frozenset({REPLY, ERROR})

# Exit codes of the bootstrap stub, the attach bridge and the probe: every one the client
# reads, defined here only (like sshuttle: distinct codes so the client can say exactly
# what went wrong instead of "exit status 1"; tui/remote/bootstrap.explain_exit says them).
EXIT_OK = 0
EXIT_BAD_COMMAND = 2  # the probe's command line: no or an unknown subcommand (argparse's code)
EXIT_CANNOT_START = 2  # the daemon found no GPU backend to run
EXIT_USAGE = 64  # attach: bad or missing arguments (EX_USAGE)
EXIT_PROBE_CRASHED = 70  # an uncaught exception in the probe (EX_SOFTWARE)
EXIT_DAEMON_IN_USE = 74  # a daemon of other settings serves a live session: not replaced
EXIT_DAEMON_UNREACHABLE = 75  # attach could not reach (or start) the daemon
EXIT_NO_WRITABLE_DIR = 93  # bootstrap: no directory on the box to put the probe in
EXIT_UPLOAD_FAILED = 94  # bootstrap: the zipapp sent over stdin did not arrive whole
EXIT_PYTHON_NOT_FOUND = 95  # bootstrap: the python the user named is not there
EXIT_PROBE_MISSING = 96  # bootstrap: the probe is not deployed (yet)
EXIT_NO_PYTHON = 97  # bootstrap: no python at all on the box
EXIT_PYTHON_TOO_OLD = 98  # bootstrap and probe: python older than MIN_PYTHON
EXIT_COMMAND_NOT_FOUND = 127  # the shell's own: /bin/sh or the command is missing
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)
MIN_PYTHON = (3, 8)


class ProtocolError(ValueError):
    """A line that is not a valid protocol message."""


def hello(role: str, version: str, capabilities: Iterable[str], **extra: Any) -> Dict[str, Any]:
    msg: Dict[str, Any] = {"type": HELLO, "role": role, "protocol": PROTOCOL, "version": version,
                           "capabilities": list(capabilities)}
    msg.update(extra)
    return msg


def check_compatible(peer_hello: Dict[str, Any]) -> Optional[str]:
    """Return None if we can talk to this peer, else a one-line reason."""
    theirs = peer_hello.get("protocol")
    if theirs != PROTOCOL:
        return ("probe speaks protocol %s, gputui speaks %s; the probe will be redeployed"
                % (theirs, PROTOCOL))
    return None


def config_key(simulate: Optional[str]) -> Dict[str, str]:
    """What the client asked for (the hello's "config"); a daemon started for something
    else is replaced."""
    return {"backend": "sim:%s" % simulate if simulate else "auto", "version": __version__}


# NVML clock-event ("throttle") reason bits -> short names. The sample carries the
# mask; the UI decodes it with this table.
THROTTLE_REASONS: Tuple[Tuple[int, str], ...] = (
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


def throttle_names(mask: Any) -> List[str]:
    if not mask or not isinstance(mask, int) or isinstance(mask, bool):
        return []
    return [name for bit, name in THROTTLE_REASONS if mask & bit]

# What the box costs, pushed by the laptop (tui/core/notify_wire.billing_params) so the
# daemon can tell "80 % / 100 % of the budget" and "balance low" with the laptop closed
# (remote_probe/watch/budget_watch.py): {rate_per_hour, currency, granularity, start, budget,
# balance, balance_read_at, spend_per_hour, balance_low_hours}. No secret in it.
NOTIFY_BILLING = "notify_billing"
REQUEST_TYPES = REQUEST_TYPES | frozenset({NOTIFY_BILLING})


# Writing through the probe channel (`gputui push` on boxes without SFTP; remote_probe/files/filexfer_write.py):
# answered by the attach bridge like file_read, or by the daemon on a direct channel.
FILE_STAT = "file_stat"  # {root, paths}
FILE_MKDIR = "file_mkdir"  # {root, path, mode}
FILE_LINK = "file_link"  # {root, path, target}
FILE_WRITE = "file_write"  # {root, path, offset, data, sha256, truncate}
FILE_COMMIT = "file_commit"  # {root, path, to, size, mode, mtime, discard}
FILE_LIST = "file_list"  # {root}: regular files under root, for `gputui pull`
FILE_CHMOD = "file_chmod"  # {root, path, mode}: a file otherwise up to date (rsync -a carries it)
FILE_WRITE_REQUESTS: FrozenSet[str] = frozenset({FILE_STAT, FILE_MKDIR, FILE_LINK, FILE_WRITE,
                                                 FILE_COMMIT, FILE_LIST, FILE_CHMOD})
REQUEST_TYPES = REQUEST_TYPES | FILE_WRITE_REQUESTS
PART_SUFFIX = ".gputui-part"  # a partial upload beside its final name; the only name written to
