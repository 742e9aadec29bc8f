"""Reading files through the probe channel, for boxes that refuse SFTP.

A PTY-only proxy (RunPod's basic SSH) offers no SFTP and no second channel, so the
checklist's downloads travel as chunks inside the NDJSON stream. The ``attach`` bridge
answers these requests itself, before they reach the daemon; a client connected to the
daemon's socket directly (direct-streamlocal, no bridge) is answered by the daemon with
the same handle() (handlers.on_file_read). A read is a plain ``pread`` of the user's own
file, the same reach an SFTP session would have.

Request:  {"type": "file_read", "id": N, "path": P, "offset": O, "size": S}
Reply:    {"type": "reply", "id": N, "data": base64, "eof": bool, "file_size": int}
Errors:   {"type": "error", "id": N, "error": "..."}
"""

import base64
import errno
import json
import os
import stat

from remote_probe.files import filexfer_write
from remote_probe.wire import FILE_READ, FILE_WRITE_REQUESTS, MAX_CHUNK

FILE_REQUESTS = frozenset({FILE_READ}) | FILE_WRITE_REQUESTS
REQUEST_MARK = b'"type":"file_'


def local_path(path):
    """Relative paths are relative to home, as in an SFTP session."""
    path = os.path.expanduser(path)
    if not os.path.isabs(path):
        path = os.path.join(os.path.expanduser("~"), path)
    return path


def read_chunk(path, offset, size):
    """-> (bytes, eof, file size) of one chunk; OSError if the file cannot be read."""
    size = max(0, min(int(size), MAX_CHUNK))
    offset = max(0, int(offset))
    # O_NONBLOCK: a FIFO would block the open until a writer came (and hold a daemon
    # thread); only regular files are read.
    fd = os.open(local_path(path), os.O_RDONLY | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        total = st.st_size
        data = os.pread(fd, size, offset)
    finally:
        os.close(fd)
    return data, offset + len(data) >= total, total


def handle(msg):
    """The reply to one file request (a dict), errors included."""
    if msg.get("type") in FILE_WRITE_REQUESTS:
        return filexfer_write.handle(msg)
    rid = msg.get("id")
    try:
        path = msg.get("path")
        if not isinstance(path, str) or not path or "\x00" in path:
            raise ValueError("bad path")
        data, eof, total = read_chunk(path, msg.get("offset", 0), msg.get("size", MAX_CHUNK))
    except (OSError, ValueError, TypeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        return {"type": "error", "id": rid, "error": "cannot read %s: %s" % (msg.get("path"), reason)}
    return {"type": "reply", "id": rid, "data": base64.b64encode(data).decode("ascii"),
            "eof": eof, "file_size": total}


def parse_request(line):
    """The request dict if this line is a file request, else None (it goes to the daemon).

    Cheap for the daemon's traffic: only lines that mention a file type are parsed.
    """
    if REQUEST_MARK not in line[:64]:
        return None
    try:
        msg = json.loads(line.decode("utf-8"))
    except ValueError:
        return None
    if isinstance(msg, dict) and msg.get("type") in FILE_REQUESTS:
        return msg
    return None


def encode(msg):
    return (json.dumps(msg, separators=(",", ":")) + "\n").encode("utf-8")
