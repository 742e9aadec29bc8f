"""Downloads from the box over SFTP: resumable, verified, and never clobbering.

* Remote names are never trusted as local paths: `local_path_for` refuses anything
  that would escape the target folder (`..`, NUL); a backslash is renamed, never a separator.
* A remote name a local disk may not hold (over NAME_BYTES, not UTF-8, control
  characters) gets a safe local name: cut, plus a digest of the original, so two such
  names never collide; NAMES_FILE (`.gputui-names.json`) in the download folder maps it back.
* A download goes to `NAME.gputui-part` and continues from its size after an interruption.
  Free space is checked first; a failed download says how to resume or remove it.
* The result is checked against the box's sha256 before it replaces anything.
* A local file newer than the remote one is kept, and said so, never overwritten.
* Only regular files are read, on either side: a FIFO never blocks a download or a hash.
"""

import asyncio
import dataclasses
import errno
import hashlib
import inspect
import json
import os
import re
import shutil
import stat
from typing import Any, Awaitable, Callable, Dict, List, Optional, Tuple, Union

from tui.core.text.boxtext import is_unsafe, visible
from tui.core.i18n import N_, _
# The channel and request sizes (their reasons and the memory bound): tui.core.transfer.link_sizes.
from tui.core.transfer.link_sizes import (  # noqa: F401 - CHUNK, WINDOW... are read here as transfer's too
    BLOCK, CHUNK, MAX_PKTSIZE, MAX_REQUESTS, READS_IN_FLIGHT, SFTP_OPTIONS, SINK_BYTES, WINDOW)
from tui.core.private import make_private_dir, open_private, write_private_file
from tui.core.transfer.read_pipeline import blocks, reads_in_flight

# Result.status values (compared in code, so kept English; the UI translates them when shown)
STATUS_NAMES = (N_("downloaded"), N_("resumed"), N_("up to date"), N_("kept newer local"),
                N_("refused"), N_("no space"), N_("failed"), N_("corrupt"))

STATED_LIMIT_MIN = 16 << 10  # asyncssh's placeholder when the server states no read limit


def read_block(sftp: Any) -> int:
    """Bytes per SFTP read request: BLOCK, or less where the server states a smaller read limit
    (limits@openssh.com; OpenSSH's is 256 KiB - 1 KiB). A request above the limit comes back
    short and asyncssh asks again for the last KiB: twice the requests, half of them tiny."""
    limit = getattr(getattr(sftp, "limits", None), "max_read_len", 0) or 0
    return min(BLOCK, limit) if limit > STATED_LIMIT_MIN else BLOCK


STALL_SECONDS = 120  # no byte for this long: the download is given up (resumable)
NAME_BYTES = 200  # a local name at most: leaves room for PART_SUFFIX, OLD_SUFFIX + '.N', '.corrupt-<time>'
RESERVE_BYTES = 64 << 20  # free space left on the laptop's disk after a download
# gputui's own files in a download folder, named so that no file of the user's is taken for one
# (a walk-through's `notes.bin.part` was resumed as a partial download and deleted as corrupt; a
# pulled `names.json` got gputui's name map written into it). A box file with one of these names
# is given another local name, as a name the disk cannot hold is (local_name).
NAMES_FILE = ".gputui-names.json"
PART_SUFFIX = ".gputui-part"  # the bytes of a download so far, until verified (as push's on the box)
# a local copy a download replaced, kept beside it; not NAME.old, which a box has of its own (the
# box's g.txt.old, pulled after g.txt, pushed g.txt's backup on to g.txt.old.old)
OLD_SUFFIX = ".gputui-old"


class RefusedPath(ValueError):
    pass


def safe_component(text: str) -> str:
    return re.sub(r"[^\w.@+-]", "_", text)[:80] or "_"


def local_name(component: str) -> str:
    """The local file name for one remote path component.

    Unchanged when a local disk can hold it as it is; otherwise a readable safe part,
    '~', 12 hex digits of the sha256 of the original bytes, and the original extension.
    Deterministic: the same remote name always maps to the same local name."""
    raw = component.encode("utf-8", "surrogateescape")
    fits = len(raw) <= NAME_BYTES
    reserved = component == NAMES_FILE or component.endswith(PART_SUFFIX) or OLD_SUFFIX in component
    slash = "\\" in component  # a folder separator to Windows: `..\\x` would climb there
    if fits and not reserved and not slash and not any(is_unsafe(ch) for ch in component):
        return component
    digest = hashlib.sha256(raw).hexdigest()[:12]
    stem, ext = os.path.splitext(component)
    if reserved or len(ext) > 16 or "\\" in ext or any(is_unsafe(ch) for ch in ext):
        stem, ext = component, ""  # the digest last: the new name does not end as the reserved one
    stem = "".join("_" if is_unsafe(ch) or ch == "\\" else ch for ch in stem)
    room = NAME_BYTES - len(ext.encode()) - len(digest) - 1
    cut = stem.encode("utf-8")[:room].decode("utf-8", "ignore")  # never half a character
    return "%s~%s%s" % (cut, digest, ext)


def local_path_for(base: str, remote_path: object, link: bool = False) -> str:
    """Where a remote file lands under `base`; RefusedPath if it could escape. `link`: where
    a link is made (place_link), so only its folder is resolved, never what it points to."""
    if not isinstance(remote_path, str) or not remote_path or "\x00" in remote_path:
        raise RefusedPath("refusing remote name %r" % (remote_path,))
    parts = [p for p in remote_path.split("/") if p not in ("",)]
    if not parts or any(p in (".", "..") for p in parts):
        raise RefusedPath("refusing remote name %r: it would escape the download folder" % remote_path)
    local = os.path.join(base, *[local_name(p) for p in parts])
    real_base = os.path.realpath(base)
    resolved = (os.path.join(os.path.realpath(os.path.dirname(local)), os.path.basename(local)) if link
                else os.path.realpath(local))
    if not resolved.startswith(real_base + os.sep):
        raise RefusedPath("refusing remote name %r: it resolves outside %s" % (remote_path, base))
    return local


def place_link(base: str, remote_path: str, target: str) -> Tuple[str, str]:
    """A symlink from the box made here as a link, as rsync -a does (a HuggingFace cache is
    links from snapshots/ into blobs/: skipped, its models were missing). -> (status, detail).
    The target is kept as it is and never followed; the link's own folder must be inside
    `base`; a local file or folder at that name is never replaced."""
    if "\x00" in target:
        return "refused", "refusing the link target of %r" % remote_path
    try:
        local = local_path_for(base, remote_path, link=True)
    except RefusedPath as exc:
        return "refused", str(exc)
    if os.path.islink(local):
        if os.readlink(local) == target:
            return "up to date", ""
        tmp = local + PART_SUFFIX
        if os.path.islink(tmp):
            os.unlink(tmp)
        os.symlink(target, tmp)
        os.replace(tmp, local)  # replaces the link itself, never what it points to
        return "link", ""
    if os.path.lexists(local):
        return "kept local", _("a local file or folder has this name: not replaced by a link")
    make_private_dir(os.path.dirname(local))
    os.symlink(target, local)
    if renamed(remote_path):
        remember_name(base, local, remote_path)
    return "link", ""


def renamed(remote_path: str) -> bool:
    """Was this remote path given a different local name?"""
    parts = [p for p in remote_path.split("/") if p]
    return any(local_name(p) != p for p in parts)


def remember_name(base: str, local: str, remote_path: str) -> None:
    """names.json in the download folder: local path (relative) -> the box's path, shown
    visibly and as the original bytes in hex (it may not be UTF-8)."""
    path = os.path.join(base, NAMES_FILE)
    names: Dict[str, Any]
    try:
        with open(path) as f:
            names = json.load(f)
    except (OSError, ValueError):
        names = {}
    names[os.path.relpath(local, base)] = {
        "remote": visible(remote_path),
        "remote_bytes_hex": remote_path.encode("utf-8", "surrogateescape").hex()}
    write_private_file(path, json.dumps(names, indent=1, sort_keys=True), fsync=False)


def remote_for(base: str, local: str) -> Optional[str]:
    """The box's path (as str, surrogateescape) of a renamed local file, or None."""
    try:
        with open(os.path.join(base, NAMES_FILE)) as f:
            entry = json.load(f).get(os.path.relpath(local, base))
    except (OSError, ValueError):
        return None
    if not entry:
        return None
    return bytes.fromhex(entry["remote_bytes_hex"]).decode("utf-8", "surrogateescape")


class NotRegular(OSError):
    pass


def open_regular(path: str, flags: int = os.O_RDONLY) -> int:
    """Open a file only if it is a regular file: O_NONBLOCK so a FIFO cannot block the
    open itself, then fstat on what was opened (no race with a swap)."""
    fd = os.open(path, flags | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotRegular(errno.EINVAL, "not a regular file", path)
    os.set_blocking(fd, True)
    return fd


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with os.fdopen(open_regular(path), "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def free_bytes(path: str) -> int:
    """Free bytes on the disk that holds `path` (or its nearest existing parent)."""
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return shutil.disk_usage(path).free


def part_advice(part: str, done: int) -> str:
    """What the user can do with the partial file left behind (none when no byte came)."""
    if done <= 0 or not os.path.exists(part):
        return _("nothing was kept; download it again to retry")
    return (_("%s (%s so far) is kept: download it again (the same command, or g on the Release "
              "screen) to resume from there, or delete it to free the space") % (visible(part), size_text(done)))


def backup_path(local: str) -> str:
    """A free name beside `local` for the copy a download replaces: NAME.gputui-old, else
    .gputui-old.1, .2, ... (never over a file; no box file lands under such a name)."""
    candidate, n = local + OLD_SUFFIX, 0
    while os.path.lexists(candidate):
        n += 1
        candidate = "%s%s.%d" % (local, OLD_SUFFIX, n)
    return candidate


def size_text(n: float) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return "%.1f %s" % (n / size, unit)
    return "%d B" % n


@dataclasses.dataclass
class Result:
    remote: str
    local: str
    # "downloaded", "resumed", "up to date", "kept newer local", "corrupt", "refused",
    # "no space" (not started: the laptop's disk is too full), "failed" (the .part is kept)
    status: str
    bytes: int = 0
    detail: str = ""
    stalled: bool = False  # the box stopped sending: its SFTP channel may still be stuck


def _same_size(path: str, size: int) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size == size


def local_state(local: str, size: int, mtime: float) -> str:
    """'missing', 'same' (size equal, not older), 'newer local', 'stale' (differs, older)."""
    try:
        st = os.stat(local)
    except FileNotFoundError:
        return "missing"
    except OSError:  # a symlink loop, a name too long: nothing usable is here
        return "missing"
    if not stat.S_ISREG(st.st_mode):  # a folder or FIFO in the way: not a copy (download refuses)
        return "stale"
    if st.st_size == size and st.st_mtime >= mtime - 1:
        return "same"
    if st.st_mtime > mtime + 1:
        return "newer local"
    return "stale"


async def download(sftp: Any, remote: str, base: str, size: int, mtime: float,
                   expected_sha: Union[None, str, Callable[[], Awaitable[Optional[str]]]] = None,
                   **kw: Any) -> Result:
    """One artifact. Never raises for a problem with this file: the Result says what
    happened (and, for a failure, how to resume or remove the .part).

    expected_sha: the box's sha256, or a coroutine function that asks the box for it: it is
    started when the bytes start, so the box hashes while they flow, and awaited once they
    are all here, before the file is put in place. Not called at all when nothing moves."""
    started: List["asyncio.Future[Optional[str]]"] = []
    sha: Any = expected_sha
    if callable(expected_sha):
        def sha() -> "asyncio.Future[Optional[str]]":
            fut = asyncio.ensure_future(expected_sha())
            started.append(fut)
            return fut
    try:
        return await _download(sftp, remote, base, size, mtime, sha, **kw)
    finally:
        for fut in started:
            if not fut.done():
                fut.cancel()
            elif not fut.cancelled():
                fut.exception()  # retrieved: a failed hash on an early return is no warning


async def _download(sftp: Any, remote: str, base: str, size: int, mtime: float,
                    expected_sha: Any = None,
                    progress: Optional[Callable[[int, int], None]] = None, force: bool = False,
                    stall_seconds: float = STALL_SECONDS, reserve: int = RESERVE_BYTES) -> Result:
    try:
        local = local_path_for(base, remote)
    except RefusedPath as exc:
        return Result(remote, "", "refused", detail=str(exc))
    state = local_state(local, size, mtime)
    if state == "same" and not force:
        return Result(remote, local, "up to date")
    if state == "newer local" and not force:
        return Result(remote, local, "kept newer local",
                      detail=_("the local copy is newer than the box's; it was not overwritten"))
    if state == "stale" and not force and expected_sha is not None and _same_size(local, size):
        # an older copy of the same size (copied, touched, restored): the same bytes are not
        # fetched again when both sides hash alike, as rsync's delta would send nothing
        box_sha = expected_sha() if callable(expected_sha) else expected_sha
        here = await asyncio.get_running_loop().run_in_executor(None, sha256_file, local)
        try:
            box_sha = await box_sha if inspect.isawaitable(box_sha) else box_sha
        except Exception:  # noqa: BLE001 - the box cannot hash it: download as before
            box_sha = None
        if box_sha and box_sha == here:
            os.utime(local, (mtime, mtime))
            return Result(remote, local, "up to date")
        expected_sha = box_sha or expected_sha
    part = local + PART_SUFFIX
    for path in (local, part):
        if os.path.lexists(path) and not os.path.isfile(path):
            return Result(remote, local, "refused", detail=_("%s exists and is not a regular file; "
                                                             "move it away to download here") % visible(path))
    offset = os.path.getsize(part) if os.path.exists(part) else 0
    if offset > size:
        os.unlink(part)
        offset = 0
    need = size - offset
    free = free_bytes(os.path.dirname(local))
    if need + reserve > free:
        return Result(remote, local, "no space", 0, _("needs %s, only %s free on the disk of %s "
                                                      "(keeping %s spare); free some space and download again") % (
                          size_text(need), size_text(free), visible(base), size_text(reserve)))
    # SFTP gets the box's path as bytes: a name that is not UTF-8 arrives as it is on the box.
    # The probe channel (no SFTP: PTY-only boxes) has no stat and takes the str, surrogates
    # and all, which the probe turns back into the same bytes.
    is_sftp = hasattr(sftp, "stat")
    remote_arg = remote.encode("utf-8", "surrogateescape") if is_sftp else remote
    box_mode = 0
    try:
        if is_sftp:
            attrs = await asyncio.wait_for(sftp.stat(remote_arg), stall_seconds)
            box_mode = attrs.permissions or 0
            if attrs.permissions is not None and not stat.S_ISREG(attrs.permissions):
                return Result(remote, local, "refused", detail=_("not a regular file on the box any "
                                                                 "more (a FIFO or device would block the download)"))
        make_private_dir(os.path.dirname(local))  # checkpoints are the user's work: 0700/0600
        if renamed(remote):
            remember_name(base, local, remote)
        if callable(expected_sha):
            expected_sha = expected_sha()  # the box starts hashing now
        done, got = await _fetch(sftp, remote_arg, part, offset, size, progress, stall_seconds)
    except asyncio.TimeoutError:
        done = _getsize(part)
        return Result(remote, local, "failed", done - offset, _("no data from the box for %d s; %s") % (
            stall_seconds, part_advice(part, done)), stalled=True)
    except OSError as exc:  # the laptop's disk (ENOSPC, EDQUOT, EIO) or a name it refuses
        done = _getsize(part)
        why = _("the laptop's disk is full") if exc.errno in (errno.ENOSPC, errno.EDQUOT) else \
            (exc.strerror or str(exc))
        return Result(remote, local, "failed", done - offset, "%s; %s" % (
            visible(why), part_advice(part, done)))
    except Exception as exc:  # noqa: BLE001 - SFTP errors (asyncssh is not imported here)
        done = _getsize(part)
        return Result(remote, local, "failed", done - offset, "%s; %s" % (
            visible(getattr(exc, "reason", None) or exc), part_advice(part, done)))
    if done != size:
        return Result(remote, local, "corrupt", done, _("the box's file changed size during the "
                                                        "download; %s") % part_advice(part, done))
    if expected_sha is not None and inspect.isawaitable(expected_sha):
        try:
            expected_sha = await expected_sha
        except Exception as exc:  # noqa: BLE001 - the box could not hash it: keep the .part
            return Result(remote, local, "failed", done - offset, _("the box could not compute the "
                                                                  "sha256 (%s); %s") % (
                visible(str(exc) or type(exc).__name__), part_advice(part, done)))
    if expected_sha:
        if got != expected_sha:
            os.unlink(part)
            return Result(remote, local, "corrupt", done, _("sha256 mismatch (box %s…, local %s…): "
                                                            "the partial file was removed; download again") % (expected_sha[:12], got[:12]))
    kept = None
    if os.path.exists(local):  # stale or corrupt: keep it beside, never lose a file silently
        kept = backup_path(local)
        os.replace(local, kept)
    os.replace(part, local)
    os.utime(local, (mtime, mtime))
    if box_mode & 0o111:  # a script stays runnable (the file is private: 0600 -> 0700)
        os.chmod(local, 0o700)
    return Result(remote, local, "resumed" if offset else "downloaded", done - offset,
                  _("the earlier local copy is kept as %s") % visible(os.path.basename(kept)) if kept else "")


def write_all(fd: int, data: bytes) -> None:
    """os.write until all of `data` is written (a regular file takes it in one call; a
    partial write goes on from where it stopped, through a view, not a copy)."""
    n = os.write(fd, data)
    if n < len(data):
        view = memoryview(data)[n:]
        while view:
            view = view[os.write(fd, view):]


def _getsize(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


async def _fetch(sftp: Any, remote_arg: Union[str, bytes], part: str, offset: int, size: int,
                 progress: Optional[Callable[[int, int], None]],
                 stall_seconds: float) -> Tuple[int, str]:
    """Append the box's bytes from `offset` to `part`. -> (size reached, sha256 hex).

    The hash grows as the bytes arrive (after what a resumed .part already holds)
    instead of reading the whole file again afterwards."""
    done = offset
    digest = hashlib.sha256()
    if offset:
        with os.fdopen(open_regular(part), "rb") as held:
            for chunk in iter(lambda: held.read(1 << 20), b""):
                digest.update(chunk)
    if progress:
        progress(done, size)
    loop = asyncio.get_running_loop()
    t_open = loop.time()
    if hasattr(sftp, "stat"):
        # SFTP: opened with block_size=0, each read() is one FXP_READ request, answered by one
        # packet we keep as it is: asyncssh's parallel reader would copy every block into a
        # bytearray and again into bytes, and wait on all its tasks after each answer (a third
        # of the client's CPU on loopback, where the laptop's CPU is the limit)
        block = read_block(sftp)
        opener = sftp.open(remote_arg, "rb", block_size=0)
        in_flight = 0  # set from the open's round trip below
    else:  # the probe channel pipelines its own chunks within a read call
        block = CHUNK
        opener = sftp.open(remote_arg, "rb", **SFTP_OPTIONS)
        in_flight = READS_IN_FLIGHT
    # `async with`, entered by hand to bound the open: SFTP and the probe channel both
    # hand out an async context manager.
    f = await asyncio.wait_for(opener.__aenter__(), stall_seconds)
    if not in_flight:  # the open was one round trip: the link's RTT, or more (never less)
        in_flight = reads_in_flight(loop.time() - t_open, block)
    fd = -1
    try:
        fd = open_private(part, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        # Each block is written and hashed as it comes, here, and then dropped: the bytes held are
        # only the answers to the reads in flight (issue 38). A worker thread fed 1 MiB batches
        # held a batch gathering and one being written besides (+2 MiB, ~3 MB of the pull's peak
        # RSS), and each hand-off cost more CPU than the hashing it moved off the loop (both
        # release the GIL, but this loop is the only thing the pull runs meanwhile).
        reported = done
        async for data in blocks(f, done, size, block, in_flight, stall_seconds):
            write_all(fd, data)
            digest.update(data)
            done += len(data)
            if progress and (done - reported >= SINK_BYTES or done >= size):
                progress(done, size)
                reported = done
        if progress and reported != done:  # the file ended early (shrank): what came is kept
            progress(done, size)
    finally:
        if fd >= 0:
            os.close(fd)
        try:  # a stalled server may not answer the close either
            await asyncio.wait_for(opener.__aexit__(None, None, None), 5)
        except Exception:  # noqa: BLE001 - the download's own outcome is what matters
            pass
    return done, digest.hexdigest()
