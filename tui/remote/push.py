"""`gputui push`: local files and folders onto the box, resumable and verified.

One engine (`push`) over two ways of touching the box's files: SFTP where the box allows it
(`SftpBox`, here) and the probe channel on PTY-only or SFTP-less boxes (`ProbeBox`,
tui/remote/push_probe.py, whose `box_files(session, client)` picks the one that fits).

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
from typing import Any, Callable, Iterable, List, Optional

import asyncssh

from remote_probe import wire
from tui.core.i18n import N_
from tui.core.upload_plan import PART_SUFFIX, LocalEntry, RemoteStat, decide, remote_path_for

BLOCK = 256 << 10  # bytes per SFTP write: OpenSSH's sftp-server accepts 256 KiB
IN_FLIGHT = 64  # writes outstanding: 16 MiB in flight fills a 100 MB/s x 150 ms link;
# memory bound: IN_FLIGHT x BLOCK = 16 MiB of buffers per file being sent
SMALL_FILE = 1 << 20  # files under this go several at a time
SMALL_IN_FLIGHT = 8  # small files being sent at once (memory: 8 x 1 MiB at most)

Progress = Optional[Callable[[int], None]]


class PushRefused(Exception):
    """A name or a path on the box that push will not write through."""


@dataclasses.dataclass
class FileResult:
    rel: str
    status: str  # "sent" | "resumed" | "up to date" | "link" | "dir" | "unusual" | "failed"
    sent: int = 0
    detail: str = ""


@dataclasses.dataclass(frozen=True)
class Have:
    """What the box holds at one name: kind "none" | "file" | "dir" | "link" | "other",
    the final file's size/mtime, and the size of a part upload beside it (None: no part)."""
    kind: str
    final: Optional[RemoteStat] = None
    part: Optional[int] = None


def sha256_local(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _no_such(exc: Exception) -> bool:
    return isinstance(exc, asyncssh.SFTPNoSuchFile) or getattr(exc, "code", None) == 2


def _kind(attrs: Any) -> str:
    if attrs is None:
        return "none"
    mode = attrs.permissions or 0
    for test, name in ((stat.S_ISREG, "file"), (stat.S_ISDIR, "dir"), (stat.S_ISLNK, "link")):
        if test(mode):
            return name
    return "other"


class SftpBox:
    """The box's files through SFTP. Every parent folder inside DEST is lstat'ed before a
    write: a symlink there could point anywhere on the box."""

    def __init__(self, sftp: Any) -> None:
        self.sftp = sftp
        self.via = N_("SFTP")

    async def _lstat(self, path: str) -> Optional[Any]:
        try:
            return await self.sftp.lstat(path)
        except (asyncssh.SFTPError, OSError) as exc:
            if _no_such(exc):
                return None
            raise

    async def resolve(self, dest: str) -> str:
        if dest.startswith("~"):
            return (await self.sftp.realpath(".")) + dest[1:]
        if not dest.startswith("/"):
            return (await self.sftp.realpath(".")) + "/" + dest
        return dest

    async def free(self, dest: str) -> Optional[int]:
        try:
            v = await self.sftp.statvfs(dest.rsplit("/", 1)[0] or "/")
            return int(v.bavail * v.frsize)
        except (asyncssh.SFTPError, OSError, AttributeError):
            return None

    async def prefetch(self, dest: str, rels: Iterable[str]) -> None:
        """Nothing: SFTP asks per name (its requests are pipelined by asyncssh)."""

    async def _check_chain(self, dest: str, rel: str) -> None:
        here = dest
        for part in rel.split("/")[:-1]:
            here = posixpath.join(here, part)
            if _kind(await self._lstat(here)) == "link":
                raise PushRefused("%s is a symlink on the box: not writing through it" % here)

    async def have(self, dest: str, rel: str) -> Have:
        remote = remote_path_for(dest, rel)
        await self._check_chain(dest, rel)
        final, part = await self._lstat(remote), await self._lstat(remote + PART_SUFFIX)
        kind = _kind(final)
        stat_ = None if final is None else RemoteStat(final.size or 0, final.mtime or 0, kind == "file")
        return Have(kind, stat_, None if part is None else (part.size or 0))

    async def make_root(self, dest: str) -> None:
        await self.sftp.makedirs(dest, exist_ok=True)

    async def mkdir(self, dest: str, rel: str) -> None:
        remote = remote_path_for(dest, rel)
        await self._check_chain(dest, rel)
        kind = _kind(await self._lstat(remote))
        if kind == "none":
            await self.sftp.mkdir(remote)
        elif kind != "dir":
            raise PushRefused("%s exists on the box and is not a folder" % remote)

    async def symlink(self, dest: str, rel: str, target: str) -> None:
        remote = remote_path_for(dest, rel)
        await self._check_chain(dest, rel)
        if await self._lstat(remote) is None:
            await self.sftp.symlink(target, remote)

    async def write_part(self, dest: str, rel: str, entry: LocalEntry, offset: int,
                         progress: Progress) -> int:
        """entry's bytes from `offset` into the part, IN_FLIGHT writes at a time."""
        part = remote_path_for(dest, rel) + PART_SUFFIX
        sent = 0
        async with self.sftp.open(part, "r+b" if offset else "wb") as rf:
            with open(entry.path, "rb") as lf:
                lf.seek(offset)
                pending: "set[asyncio.Future[Any]]" = set()
                pos = offset
                while True:
                    data = lf.read(BLOCK)
                    if not data:
                        break
                    fut = asyncio.ensure_future(rf.write(data, pos))
                    if progress:  # counted when the box has it: what a cut loses is what was shown
                        fut.add_done_callback(_counted(progress, len(data)))
                    pending.add(fut)
                    pos += len(data)
                    sent += len(data)
                    if len(pending) >= IN_FLIGHT:
                        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                        for d in done:
                            d.result()
                if pending:
                    await asyncio.gather(*pending)
        return sent

    async def discard(self, dest: str, rel: str) -> None:
        await self.sftp.remove(remote_path_for(dest, rel) + PART_SUFFIX)

    async def commit(self, dest: str, rel: str, entry: LocalEntry) -> None:
        remote = remote_path_for(dest, rel)
        part = remote + PART_SUFFIX
        await self.sftp.chmod(part, entry.mode)
        await self.sftp.utime(part, (time.time(), entry.mtime))
        await self.sftp.posix_rename(part, remote)


def _counted(progress: Callable[[int], None], n: int) -> Callable[["asyncio.Future[Any]"], None]:
    def done(f: "asyncio.Future[Any]") -> None:
        if not f.cancelled() and f.exception() is None:
            progress(n)
    return done


async def push_file(box: Any, box_sha: Callable[[str], Any], entry: LocalEntry, dest: str,
                    progress: Progress = None) -> FileResult:
    have = await box.have(dest, entry.rel)
    if have.kind == "link":
        raise PushRefused("%s is a symlink on the box: not replacing it" % remote_path_for(dest, entry.rel))
    action, offset = decide(entry, have.final, have.part)
    if action == "skip":
        return FileResult(entry.rel, "up to date")
    if progress and offset:
        progress(offset)
    sent = await box.write_part(dest, entry.rel, entry, offset, progress)
    want = sha256_local(entry.path)
    got = await box_sha(remote_path_for(dest, entry.rel) + PART_SUFFIX)
    if got != want:
        await box.discard(dest, entry.rel)  # a resumed part that does not match: send it whole next time
        return FileResult(entry.rel, "failed", sent,
                          "sha256 differs on the box; the partial file was removed, push again")
    await box.commit(dest, entry.rel, entry)
    return FileResult(entry.rel, "resumed" if offset else "sent", sent)


async def push(box: Any, box_sha: Callable[[str], Any], entries: List[LocalEntry], dest: str,
               progress: Optional[Callable[[str, int], None]] = None) -> List[FileResult]:
    """Every entry under DEST (absolute, see box.resolve); one result each, in the entries'
    order. Folders are made as they come (scan_local lists a folder before what is in it);
    small files go SMALL_IN_FLIGHT at a time (each costs a few round trips of its own: on a
    300 ms link a code folder would take minutes one by one), a big file alone with all its
    writes in flight. Raises on a dropped link (the parts stay for the next push)."""
    results: List[Optional[FileResult]] = [None] * len(entries)
    await box.make_root(dest)
    await box.prefetch(dest, [e.rel for e in entries if e.kind == "file"])
    gate = asyncio.Semaphore(SMALL_IN_FLIGHT)
    tasks: "List[asyncio.Future[None]]" = []

    async def one(i: int, e: LocalEntry) -> None:
        async with gate:
            results[i] = await push_file(box, box_sha, e, dest,
                                         (lambda n, r=e.rel: progress(r, n)) if progress else None)

    async def drain() -> None:
        if tasks:
            await asyncio.gather(*tasks)
            tasks.clear()
    try:
        for i, e in enumerate(entries):
            if e.kind == "unusual":
                results[i] = FileResult(e.rel, "unusual", detail=e.why)
            elif e.kind == "dir":
                await box.mkdir(dest, e.rel)
                results[i] = FileResult(e.rel, "dir")
            elif e.kind == "symlink":
                await box.symlink(dest, e.rel, e.link)
                results[i] = FileResult(e.rel, "link", detail=e.link)
            elif e.size < SMALL_FILE:
                tasks.append(asyncio.ensure_future(one(i, e)))
            else:
                await drain()
                await one(i, e)
        await drain()
    finally:
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
    return [r for r in results if r is not None]


def probe_sha(session: Any) -> Callable[[str], Any]:
    """The box's sha256 of a path, through the probe (no shell, no sha256sum needed)."""
    async def sha(path: str) -> Optional[str]:
        reply = await session.request(wire.SHA256, timeout=600, paths=[path])
        return (reply.get("sha256") or {}).get(path)
    return sha

