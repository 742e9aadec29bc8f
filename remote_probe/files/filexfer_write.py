"""Writing files through the probe channel, for boxes that refuse SFTP (`gputui push`).

The laptop names a root (DEST) and paths relative to it; nothing is written outside the
root. DEST itself is the user's choice and may lie behind a symlink (an AutoDL data disk
often does); every name *below* it is opened one component at a time relative to its
parent's file descriptor with O_NOFOLLOW, so a symlink on the box inside DEST is never
followed, whatever it points at. Bytes only ever go into a part file (its name ends in
PART_SUFFIX), written at the offset the laptop names, never past the part's end (no
holes), each chunk checked against its sha256 before it is written. ``file_commit``
renames a complete part over its final name, or discards it when the laptop found its
sha256 wrong. Like filexfer's reads, these are answered by the attach bridge (no daemon
state needed) or by the daemon on a direct channel (handlers.on_file_write).

Requests (all carry "root"; "path" is '/'-separated, relative, no '.' or '..'):
  file_stat   {paths}                -> {root, home, free, entries: {path: {kind, size, mtime, mode, part}}}
  file_mkdir  {path, mode}           -> {}            ("" makes the root itself, like mkdir -p)
  file_link   {path, target}         -> {made: bool}  (an existing entry is left alone)
  file_write  {path, offset, data, sha256, truncate} -> {size}   (path ends in PART_SUFFIX)
  file_commit {path, to, size, mode, mtime, discard} -> {}
  file_chmod  {path, mode}           -> {}            (a file otherwise up to date; never through a link)
  file_list   {}                     -> {root, files: [[rel, size, mtime]], skipped: [rel],
                                        links: [[rel, target]], unlisted: [[rel, why]]}
"""

import base64
import errno
import hashlib
import os
import posixpath
import stat
import time

from remote_probe.wire.messages import (FILE_CHMOD, FILE_COMMIT, FILE_LINK, FILE_LIST, FILE_MKDIR, FILE_STAT,
                                        FILE_WRITE, MAX_CHUNK, PART_SUFFIX)
from remote_probe.wire.schema import check_request

STAT_BATCH = 2000  # paths per file_stat: the reply stays far under MAX_LINE
LIST_LIMIT = 20000  # entries per file_list reply
NOFOLLOW = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class Refused(ValueError):
    """A request push will not carry out (a symlink in the way, a bad name)."""


def root_path(root):
    if not isinstance(root, str) or not root or "\x00" in root:
        raise Refused("bad root")
    root = os.path.expanduser(root)
    if not os.path.isabs(root):
        root = os.path.join(os.path.expanduser("~"), root)
    return os.path.normpath(root)


def split_rel(rel):
    if not isinstance(rel, str) or not rel or rel.startswith("/") or "\x00" in rel:
        raise Refused("refusing name %r" % (rel,))
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise Refused("refusing name %r: it would leave the destination" % (rel,))
    return parts


def open_parent(root, rel):
    """-> (fd of the folder that holds rel, rel's last name). Every folder below root is
    entered with O_NOFOLLOW: a symlink there is refused, never followed."""
    parts = split_rel(rel)
    fd = os.open(root_path(root), os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        for name in parts[:-1]:
            try:
                nxt = os.open(name, os.O_RDONLY | os.O_DIRECTORY | NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise Refused("%s is a symlink or not a folder on the box: not writing "
                                  "through it" % name)
                raise
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd, parts[-1]


def _lstat_at(fd, name):
    try:
        return os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _kind(st):
    if st is None:
        return "none"
    if stat.S_ISREG(st.st_mode):
        return "file"
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    if stat.S_ISLNK(st.st_mode):
        return "link"
    return "other"


def free_bytes(path):
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    try:
        v = os.statvfs(path)
    except OSError:
        return None
    return v.f_bavail * v.f_frsize


def entry_facts(root, rel):
    try:
        fd, name = open_parent(root, rel)
    except FileNotFoundError:
        return {"kind": "none", "part": None}
    except Refused as exc:
        return {"kind": "refused", "why": str(exc), "part": None}
    try:
        st = _lstat_at(fd, name)
        part = _lstat_at(fd, name + PART_SUFFIX)
    finally:
        os.close(fd)
    out = {"kind": _kind(st), "part": part.st_size if part is not None and stat.S_ISREG(part.st_mode) else None}
    if st is not None:
        out.update(size=st.st_size, mtime=st.st_mtime, mode=stat.S_IMODE(st.st_mode))
    return out


def on_stat(msg):
    root = root_path(msg.get("root"))
    paths = msg.get("paths") or []
    if not isinstance(paths, list) or len(paths) > STAT_BATCH:
        raise Refused("paths: a list of at most %d names" % STAT_BATCH)
    return {"root": root, "home": os.path.expanduser("~"), "free": free_bytes(root),
            "entries": {p: entry_facts(root, p) for p in paths if isinstance(p, str)}}


def on_mkdir(msg):
    rel = msg.get("path")
    if rel == "":
        os.makedirs(root_path(msg.get("root")), exist_ok=True)
        return {}
    mode = msg.get("mode")
    # the local folder's permissions (a 0700 folder stays private on a shared box), less umask
    mode = mode & 0o777 if isinstance(mode, int) and not isinstance(mode, bool) else 0o777
    fd, name = open_parent(msg.get("root"), rel)
    try:
        try:
            os.mkdir(name, mode, dir_fd=fd)
        except FileExistsError:
            kind = _kind(_lstat_at(fd, name))
            if kind == "link":
                raise Refused("%s is a symlink on the box: not writing through it" % rel)
            if kind != "dir":
                raise Refused("%s exists on the box and is not a folder" % rel)
    finally:
        os.close(fd)
    return {}


def on_link(msg):
    target = msg.get("target")
    if not isinstance(target, str) or not target or "\x00" in target:
        raise Refused("bad link target")
    fd, name = open_parent(msg.get("root"), msg.get("path"))
    try:
        if _lstat_at(fd, name) is not None:
            return {"made": False}
        os.symlink(target, name, dir_fd=fd)  # the link is made, never followed
    finally:
        os.close(fd)
    return {"made": True}


def _open_part(msg, flags):
    rel = msg.get("path")
    if not isinstance(rel, str) or not rel.endswith(PART_SUFFIX):
        raise Refused("only %s files are written" % PART_SUFFIX)
    return _open_regular(msg.get("root"), rel, flags)


def _open_regular(root, rel, flags):
    """-> (parent fd, fd, name, stat) of the regular file rel, never through a symlink."""
    pfd, name = open_parent(root, rel)
    try:
        # O_NONBLOCK: a FIFO put there would block the open; O_NOFOLLOW: a symlink is refused
        fd = os.open(name, flags | NOFOLLOW | os.O_NONBLOCK, 0o600, dir_fd=pfd)
    except OSError as exc:
        os.close(pfd)
        if exc.errno == errno.ELOOP:
            raise Refused("%s is a symlink on the box: not writing through it" % rel)
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        os.close(pfd)
        raise Refused("%s is not a regular file on the box" % rel)
    return pfd, fd, name, st


def on_write(msg):
    data = msg.get("data")
    offset = msg.get("offset")
    if not isinstance(data, str) or not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise Refused("bad chunk")
    raw = base64.b64decode(data.encode("ascii"), validate=True)
    if len(raw) > MAX_CHUNK or hashlib.sha256(raw).hexdigest() != msg.get("sha256"):
        raise Refused("a chunk arrived damaged (sha256 differs): send it again")
    pfd, fd, _name, st = _open_part(msg, os.O_WRONLY | os.O_CREAT)
    try:
        if msg.get("truncate"):
            os.ftruncate(fd, offset)
        elif offset > st.st_size:  # a gap would leave zeros the hash only finds at the end
            raise Refused("offset %d is past the part's end (%d)" % (offset, st.st_size))
        view = memoryview(raw)
        at = offset
        while view:
            n = os.pwrite(fd, view, at)
            view, at = view[n:], at + n
        size = os.fstat(fd).st_size
    finally:
        os.close(fd)
        os.close(pfd)
    return {"size": size}


def on_commit(msg):
    to = msg.get("to")
    pfd, fd, name, st = _open_part(msg, os.O_RDONLY)
    try:
        if msg.get("discard"):
            os.unlink(name, dir_fd=pfd)  # its sha256 was wrong: the next push sends it whole
            return {}
        if split_rel(to)[-1] + PART_SUFFIX != name or posixpath.dirname(to) != posixpath.dirname(msg["path"]):
            raise Refused("a part is only renamed to its own final name")
        if st.st_size != msg.get("size"):
            raise Refused("the part holds %d bytes, not %r" % (st.st_size, msg.get("size")))
        final = split_rel(to)[-1]
        if _kind(_lstat_at(pfd, final)) in ("link", "dir", "other"):
            raise Refused("%s is not a regular file on the box: not replacing it" % to)
        mode, mtime = msg.get("mode"), msg.get("mtime")
        if isinstance(mode, int) and not isinstance(mode, bool):
            os.fchmod(fd, mode & 0o7777)
        if isinstance(mtime, (int, float)) and not isinstance(mtime, bool):
            os.utime(fd, (time.time(), float(mtime)))
        os.rename(name, final, src_dir_fd=pfd, dst_dir_fd=pfd)
    finally:
        os.close(fd)
        os.close(pfd)
    return {}


def on_chmod(msg):
    """A file's permissions (one push found otherwise up to date). Opened without following
    a symlink, checked to be a regular file, then changed through its descriptor."""
    mode = msg.get("mode")
    if not isinstance(mode, int) or isinstance(mode, bool):
        raise Refused("no mode given")
    pfd, fd, _name, _st = _open_regular(msg.get("root"), msg.get("path"), os.O_RDONLY)
    try:
        os.fchmod(fd, mode & 0o7777)
    finally:
        os.close(fd)
        os.close(pfd)
    return {}


def on_list(msg):
    """Regular files under root (symlinks not followed), relative to root's parent as
    `rsync -a root` names them; symlinks with their targets (the laptop makes them as links);
    folders that cannot be listed, with why (their files are missing); anything else is
    listed as skipped."""
    root = root_path(msg.get("root"))
    parent = os.path.dirname(root.rstrip("/")) or "/"
    files, skipped, links, unlisted = [], [], [], []
    st = os.lstat(root)
    if stat.S_ISREG(st.st_mode):
        return {"root": root, "files": [[os.path.basename(root), st.st_size, st.st_mtime]], "skipped": []}
    if stat.S_ISLNK(st.st_mode):
        return {"root": root, "files": [], "skipped": [], "links": [[os.path.basename(root), os.readlink(root)]]}
    if not stat.S_ISDIR(st.st_mode):
        return {"root": root, "files": [], "skipped": [os.path.basename(root)]}

    def cannot_list(exc):
        unlisted.append([os.path.relpath(exc.filename, parent), exc.strerror or str(exc)])
    for top, dirs, names in os.walk(root, onerror=cannot_list):
        dirs.sort()
        for name in sorted(names) + [d for d in dirs if os.path.islink(os.path.join(top, d))]:
            path = os.path.join(top, name)
            rel = os.path.relpath(path, parent)
            try:
                est = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISREG(est.st_mode):
                files.append([rel, est.st_size, est.st_mtime])
            elif stat.S_ISLNK(est.st_mode):
                try:
                    links.append([rel, os.readlink(path)])
                except OSError:
                    skipped.append(rel)
            else:
                skipped.append(rel)
            if len(files) + len(skipped) + len(links) > LIST_LIMIT:
                raise Refused("more than %d entries under %s: pull fewer at a time" % (LIST_LIMIT, root))
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(top, d))]
    return {"root": root, "files": files, "skipped": skipped, "links": links, "unlisted": unlisted}


OPS = {FILE_STAT: on_stat, FILE_MKDIR: on_mkdir, FILE_LINK: on_link, FILE_WRITE: on_write,
       FILE_COMMIT: on_commit, FILE_LIST: on_list, FILE_CHMOD: on_chmod}


def handle(msg):
    """The reply to one write-side file request (a dict), errors included."""
    rid = msg.get("id")
    try:
        problem = check_request(msg)  # the bridge answers these without the daemon's check
        if problem:
            raise Refused(problem)
        result = OPS[msg.get("type")](msg)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        return {"type": "error", "id": rid, "error": "%s %s: %s" % (
            msg.get("type"), msg.get("path") or msg.get("root"), reason)}
    reply = {"type": "reply", "id": rid}
    reply.update(result)
    return reply
