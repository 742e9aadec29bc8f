"""`gputui push`: local files and folders onto the box over SFTP, resumable and verified.

Each file goes to ``NAME.gputui-part`` beside its final name and continues from the part's
size after a drop or a restart of the command; many writes are in flight at once so a
150-300 ms link is not latency-bound; the box's sha256 (the probe's SHA256 request) must
equal the local one before the part is renamed into place. Nothing is written outside
DEST: every name is checked (tui.core.upload_plan.remote_path_for) and a symlink on the box
inside DEST is never followed. What the plan cannot send (FIFOs, devices, names the box's
filesystem refuses) is listed, never silently dropped.
"""

import asyncio
import dataclasses
import hashlib
import posixpath
import stat
import time
from typing import Any, Callable, List, Optional

import asyncssh

from remote_probe import wire
from tui.core.upload_plan import PART_SUFFIX, LocalEntry, RemoteStat, decide, remote_path_for

BLOCK = 256 << 10  # bytes per SFTP write: OpenSSH's sftp-server accepts 256 KiB
IN_FLIGHT = 64  # writes outstanding: 16 MiB in flight fills a 100 MB/s x 150 ms link;
# memory bound: IN_FLIGHT x BLOCK = 16 MiB of buffers per file being sent


class PushRefused(Exception):
    """A name or a path on the box that push will not write through."""


@dataclasses.dataclass
class FileResult:
    rel: str
    status: str  # "sent" | "resumed" | "up to date" | "link" | "dir" | "unusual" | "failed"
    sent: int = 0
    detail: str = ""


def _no_such(exc: Exception) -> bool:
    return isinstance(exc, asyncssh.SFTPNoSuchFile) or getattr(exc, "code", None) == 2


async def _lstat(sftp: Any, path: str) -> Optional[Any]:
    try:
        return await sftp.lstat(path)
    except (asyncssh.SFTPError, OSError) as exc:
        if _no_such(exc):
            return None
        raise


async def check_chain(sftp: Any, dest: str, remote: str) -> None:
    """Refuse a write whose parent folders inside DEST include a symlink (it could point
    anywhere on the box)."""
    rel = posixpath.relpath(posixpath.dirname(remote), dest)
    here = dest
    for part in ([] if rel == "." else rel.split("/")):
        here = posixpath.join(here, part)
        attrs = await _lstat(sftp, here)
        if attrs is not None and attrs.permissions is not None and \
                stat.S_ISLNK(attrs.permissions):
            raise PushRefused("%s is a symlink on the box: not writing through it" % here)


def sha256_local(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


async def _write_from(sftp: Any, entry: LocalEntry, part: str, offset: int,
                      progress: Optional[Callable[[int], None]]) -> int:
    """Send entry's bytes from `offset` into `part`, IN_FLIGHT writes at a time."""
    sent = 0
    async with sftp.open(part, "r+b" if offset else "wb") as rf:
        with open(entry.path, "rb") as lf:
            lf.seek(offset)
            pending: "set[asyncio.Future[Any]]" = set()
            pos = offset
            while True:
                data = lf.read(BLOCK)
                if not data:
                    break
                pending.add(asyncio.ensure_future(rf.write(data, pos)))
                pos += len(data)
                sent += len(data)
                if len(pending) >= IN_FLIGHT:
                    done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                    for d in done:
                        d.result()
                if progress:
                    progress(len(data))
            if pending:
                await asyncio.gather(*pending)
    return sent


async def push_file(sftp: Any, box_sha: Callable[[str], Any], entry: LocalEntry, dest: str,
                    progress: Optional[Callable[[int], None]] = None) -> FileResult:
    remote = remote_path_for(dest, entry.rel)
    await check_chain(sftp, dest, remote)
    final = await _lstat(sftp, remote)
    if final is not None and final.permissions is not None and stat.S_ISLNK(final.permissions):
        raise PushRefused("%s is a symlink on the box: not replacing it" % remote)
    part = remote + PART_SUFFIX
    part_attrs = await _lstat(sftp, part)
    have = None if final is None else RemoteStat(final.size or 0, final.mtime or 0,
                                                  stat.S_ISREG(final.permissions or 0))
    action, offset = decide(entry, have, None if part_attrs is None else (part_attrs.size or 0))
    if action == "skip":
        return FileResult(entry.rel, "up to date")
    if progress and offset:
        progress(offset)
    sent = await _write_from(sftp, entry, part, offset, progress)
    want = sha256_local(entry.path)
    got = await box_sha(part)
    if got != want:
        await sftp.remove(part)  # a resumed part that does not match: send it whole next time
        return FileResult(entry.rel, "failed", sent,
                          "sha256 differs on the box; the partial file was removed, push again")
    await sftp.chmod(part, entry.mode)
    await sftp.utime(part, (time.time(), entry.mtime))
    await sftp.posix_rename(part, remote)
    return FileResult(entry.rel, "resumed" if offset else "sent", sent)


async def push(sftp: Any, box_sha: Callable[[str], Any], entries: List[LocalEntry], dest: str,
               progress: Optional[Callable[[str, int], None]] = None) -> List[FileResult]:
    """Every entry under DEST; one result each. Folders first (made as needed), then files
    and links in order. Raises on a dropped link (the parts stay for the next push)."""
    results: List[FileResult] = []
    await sftp.makedirs(dest, exist_ok=True)
    for e in entries:
        if e.kind == "unusual":
            results.append(FileResult(e.rel, "unusual", detail=e.why))
            continue
        remote = remote_path_for(dest, e.rel)
        await check_chain(sftp, dest, remote)
        if e.kind == "dir":
            attrs = await _lstat(sftp, remote)
            if attrs is None:
                await sftp.mkdir(remote)
            elif not stat.S_ISDIR(attrs.permissions or 0):
                raise PushRefused("%s exists on the box and is not a folder" % remote)
            results.append(FileResult(e.rel, "dir"))
        elif e.kind == "symlink":
            attrs = await _lstat(sftp, remote)
            if attrs is None:
                await sftp.symlink(e.link, remote)
            results.append(FileResult(e.rel, "link", detail=e.link))
        else:
            results.append(await push_file(sftp, box_sha, e, dest,
                                           (lambda n, r=e.rel: progress(r, n)) if progress else None))
    return results


def probe_sha(session: Any) -> Callable[[str], Any]:
    """The box's sha256 of a path, through the probe (no shell, no sha256sum needed)."""
    async def sha(path: str) -> Optional[str]:
        reply = await session.request(wire.SHA256, timeout=600, paths=[path])
        return (reply.get("sha256") or {}).get(path)
    return sha


async def free_on_box(sftp: Any, path: str) -> Optional[int]:
    try:
        v = await sftp.statvfs(path)
        return int(v.bavail * v.frsize)
    except (asyncssh.SFTPError, OSError, AttributeError):
        return None


def box_home(sftp: Any) -> Any:
    return sftp.realpath(".")

