"""Files and directories gputui writes on the laptop: 0600 and 0700 whatever the umask.

Downloaded checkpoints, the ledger, logs, the config and the probe-sockets cache say what a
user rents, pays and trains; other accounts on the laptop have no business reading them.
The mode is given at creation (never created wider and narrowed later) and, for a
directory that already existed, narrowed when it is ours.
"""

from __future__ import annotations

import os
import stat

FILE_MODE = 0o600
DIR_MODE = 0o700


def make_private_dir(path: str) -> str:
    """mkdir -p with 0700 for every directory it creates; `path` itself is made 0700 if it
    already existed and belongs to us. Returns path."""
    path = os.path.abspath(path)
    missing = []
    head = path
    while head and not os.path.isdir(head):
        missing.append(head)
        parent = os.path.dirname(head)
        if parent == head:
            break
        head = parent
    for d in reversed(missing):
        try:
            os.mkdir(d, DIR_MODE)
        except FileExistsError:
            pass
        else:
            os.chmod(d, DIR_MODE)  # mkdir's mode is masked by the umask; 0700 is not widened
    try:
        st = os.lstat(path)
        # An existing dir of ours is narrowed, but never a shared one (/tmp is sticky) nor
        # the home itself, should a GPUTUI_*_DIR point there.
        if (st.st_uid == os.getuid() and st.st_mode & 0o077 and not missing
                and not st.st_mode & stat.S_ISVTX and path != os.path.expanduser("~")):
            os.chmod(path, DIR_MODE)
    except OSError:
        pass
    return path


def open_private(path: str, flags: int = os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                 mode: int = FILE_MODE) -> int:
    """os.open with 0600 at creation; an existing file is narrowed to 0600 too."""
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), mode)
    try:
        os.fchmod(fd, mode)
    except OSError:
        pass
    return fd


def write_private_file(path: str, data: str | bytes, fsync: bool = True) -> None:
    """Write bytes (or text, as UTF-8) to `path` atomically: a 0600 temp file beside it,
    then rename. The directory is made private if missing."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    make_private_dir(os.path.dirname(path) or ".")
    tmp = "%s.tmp-%d" % (path, os.getpid())
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = open_private(tmp, flags)
    except FileExistsError:  # left by a crashed run that had our pid
        os.unlink(tmp)
        fd = open_private(tmp, flags)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
