"""Where each box's probe daemon listens, remembered between runs.

With the daemon's socket path known, the next connect opens it directly over the SSH
connection (a direct-streamlocal channel, what `ssh -L local:/remote.sock` uses): no shell,
no python started on the box, no bridge process kept there (issue 12). sshd runs a command
in ~250 ms on a loaded box; it opens a socket channel in a few.

An entry is keyed by the box's host key fingerprint, the login name and the state dir the
user asked for, so an alias that now points elsewhere never reaches another box's daemon.
A box whose sshd forbids socket forwarding (`AllowStreamLocalForwarding no`,
`DisableForwarding yes`) is remembered as refused for a week, so it costs one try, not one
per connect. The file is a cache: unreadable or corrupt means empty.
"""

import json
import os
import tempfile
import time
from typing import Any, Dict, Iterable, List, Optional

from remote_probe import wire
from tui.core import config
from tui.core.private import make_private_dir

Entry = Dict[str, Any]

FILE = "probe-sockets.json"
MAX_ENTRIES = 256
REFUSAL_KEPT = 7 * 86400.0
MAX_FILE_BYTES = 4 << 20  # 256 entries are ~100 KB; a bigger file is not ours to parse
MAX_SOCKET_BYTES = 107  # sun_path: sshd cannot open a longer one (the daemon keeps to 100)


def cache_path() -> str:
    return os.path.join(config.state_dir(), FILE)


def cache_key(fingerprint: str, username: Optional[str], remote_dir: Optional[str]) -> str:
    return "%s %s %s" % (fingerprint, username or "", remote_dir or "~/.cache/gputui")


def _when(entry: Entry) -> float:
    try:
        return float(entry.get("t") or 0)
    except (TypeError, ValueError):
        return 0.0


def usable_socket(path: object) -> bool:
    """An absolute path of printable characters that fits a unix socket address: what the
    box says in its hello is data, and any other path is nothing a daemon listens on (a
    longer one would fail to open and read as a box that refuses socket channels)."""
    return (isinstance(path, str) and path.startswith("/") and path.isprintable()
            and len(os.fsencode(path)) <= MAX_SOCKET_BYTES)


def _load() -> Dict[str, Any]:
    try:
        with open(cache_path(), encoding="utf-8") as f:
            if os.fstat(f.fileno()).st_size > MAX_FILE_BYTES:
                return {}
            data = json.load(f)
    except (OSError, ValueError, RecursionError):  # deep nesting raises RecursionError
        return {}
    return data if isinstance(data, dict) else {}


def _save(data: Dict[str, Any]) -> None:
    if len(data) > MAX_ENTRIES:  # keep the most recently used
        keep = sorted(data.items(), key=lambda kv: -_when(kv[1]) if isinstance(kv[1], dict) else 0)
        data = dict(keep[:MAX_ENTRIES])
    path = cache_path()
    try:
        make_private_dir(os.path.dirname(path))  # 0700; mkstemp's file is 0600
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".probe-sockets-")
    except OSError:
        return  # a cache that cannot be written costs speed, never a connect
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=0, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        try:  # e.g. the cache path is a directory: leave no temp file per connect
            os.unlink(tmp)
        except OSError:
            pass


def _fresh_refusal(entry: Entry, now: Optional[float] = None) -> bool:
    now = time.time() if now is None else now
    return bool(entry.get("refused")) and now - _when(entry) < REFUSAL_KEPT


def recall(key: str, now: Optional[float] = None) -> Optional[Entry]:
    """-> the entry for this box: {"socket", "remote_dir", "notes"} to try, {"refused": why}
    while a refusal is fresh, or None."""
    entry = _load().get(key)
    if not isinstance(entry, dict):
        return None
    if entry.get("refused"):
        return {"refused": str(entry["refused"])} if _fresh_refusal(entry, now) else None
    if not usable_socket(entry.get("socket")):
        return None
    if not wire.challenge.is_hex(entry.get("secret"), wire.challenge.SECRET_BYTES):
        return None  # nothing to check the daemon there against: the command path
    notes = entry.get("notes")
    return {"socket": entry["socket"], "remote_dir": str(entry.get("remote_dir") or ""),
            "notes": [str(n) for n in notes] if isinstance(notes, list) else [],
            "daemon": _daemon(entry.get("daemon")), "secret": entry["secret"]}


def _daemon(value: object) -> Optional[List[int]]:
    """A daemon's identity as [pid, binds] (how often it bound its socket), or None."""
    if isinstance(value, list) and len(value) == 2 and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        return value
    return None


def remember(key: str, socket: object, remote_dir: str, notes: Iterable[str] = (),
             daemon: object = None, secret: object = None) -> None:
    """`daemon`: [pid, binds] from its hello, so that a socket that would not open while
    that same daemon kept listening there can be told from a daemon that had gone or had
    to bind its socket again (see session). `secret`: the daemon's key from a hello that
    came over the command path only (attach checked that daemon's uid): on the direct path
    the daemon must prove it holds it (wire/challenge.py). Without one, nothing is kept."""
    data = _load()
    old = data.get(key)
    if isinstance(old, dict) and _fresh_refusal(old):
        return  # refused recently: the exec path works, no need to try the socket again
    if not usable_socket(socket) or not wire.challenge.is_hex(secret, wire.challenge.SECRET_BYTES):
        if data.pop(key, None) is not None:  # the daemon moved somewhere unusable
            _save(data)
        return
    data[key] = {"socket": socket, "remote_dir": remote_dir, "notes": list(notes), "t": time.time(),
                 "daemon": _daemon(daemon), "secret": secret}
    _save(data)


def refused(key: str, why: str) -> None:
    data = _load()
    data[key] = {"refused": why, "t": time.time()}
    _save(data)


def forget(key: str) -> None:
    data = _load()
    if data.pop(key, None) is not None:
        _save(data)
