"""`gputui push`: local files and folders onto the box, resumable and verified.

One engine (`push`) over two ways of touching the box's files: SFTP where the box allows it
(`SftpBox`, here) and the probe channel on PTY-only or SFTP-less boxes (`ProbeBox`,
tui/remote/transfer/push_probe.py, whose `box_files(session, client)` picks the one that fits).

Each file goes to ``NAME.gputui-part`` beside its final name and continues from the part's
size after a drop or a restart of the command; many writes are in flight at once so a
150-300 ms link is not latency-bound, and over SFTP a big file spreads over a few channels
of the connection (tui/remote/transfer/push_spread.py: one flow-control window each); the box's
sha256 (the probe's SHA256 request) must equal the local one before the part is renamed
into place. Nothing is written outside
DEST: every name is checked (tui.core.transfer.upload_plan.remote_path_for) and a symlink on the box
inside DEST is never followed. What the plan cannot send (FIFOs, devices, names the box's
filesystem refuses) is listed, never silently dropped.
"""

import asyncio
import dataclasses
import hashlib
import posixpath
import stat
import threading
import time
from typing import Any, Callable, Dict, Iterable, List, Optional

import asyncssh

from remote_probe import wire
from tui.core.i18n import N_
from tui.core.transfer.upload_plan import PART_SUFFIX, LocalEntry, RemoteStat, decide, remote_path_for
from tui.remote.transfer import push_spread as spread_
from tui.remote.transfer.tasks import all_or_none

BLOCK = 256 << 10  # bytes per SFTP write at most (the server's stated limit when lower)
IN_FLIGHT = 64  # writes outstanding: 16 MiB in flight fills a 100 MB/s x 150 ms link;
# memory bound: IN_FLIGHT x BLOCK = 16 MiB of buffers per file being sent
SMALL_FILE = 1 << 20  # files under this go several at a time
# small files being sent at once: each costs ~4 round trips of its own (open, writes, close with
# the box's sha256 and the times, rename), so a code folder on a 300 ms link goes in a few waves
# instead of one file after another. Memory: 32 x 1 MiB of writes in flight at most.
SMALL_IN_FLIGHT = 32
LSTAT_IN_FLIGHT = 256  # lstat requests outstanding while looking at what the box holds
STATED_LIMIT_MIN = 16 << 10  # asyncssh's placeholder when the server states no write limit

Progress = Optional[Callable[[int], None]]


def folder_mode(mode: int) -> int:
    """The mode a pushed folder is made with: the local one's permission bits, always
    writable and searchable by the owner (the push must fill it; rsync -a chmods afterwards)."""
    return (mode & 0o777) | 0o700


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


class HashingReader:
    """The local file read once: the bytes for the box and their sha256 come from the same
    reads (a second pass over a 100 GB dataset would cost as long as a fast link's send).
    The part the box already holds (a resume from `offset`) is hashed first, from disk."""

    def __init__(self, path: str, offset: int) -> None:
        self._f = open(path, "rb")
        self._digest = hashlib.sha256()
        left = offset
        while left > 0:
            chunk = self._f.read(min(1 << 20, left))
            if not chunk:
                break
            self._digest.update(chunk)
            left -= len(chunk)

    def read(self, n: int) -> bytes:
        data = self._f.read(n)
        self._digest.update(data)
        return data

    def hexdigest(self) -> str:
        return self._digest.hexdigest()

    def __enter__(self) -> "HashingReader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._f.close()


def write_block(sftp: Any) -> "tuple[int, int]":
    """(bytes per write call, block_size for asyncssh's open). Where the server states its
    write limit (limits@openssh.com: OpenSSH's is 256 KiB - 1 KiB), each call is one request
    of at most that size, sent as it is (block_size 0: no splitting). A 256 KiB call above the
    limit became two requests, the second 1 KiB: twice the requests, half of them tiny."""
    limit = getattr(getattr(sftp, "limits", None), "max_write_len", 0) or 0
    if limit > STATED_LIMIT_MIN:
        return min(BLOCK, limit), 0
    return BLOCK, -1  # no stated limit: asyncssh splits to what any server takes


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
    write: a symlink there could point anywhere on the box. `more` opens another SFTP client
    on the same connection (a big file spreads over a few: tui/remote/transfer/push_spread.py)."""

    def __init__(self, sftp: Any, more: Optional[Callable[[], Any]] = None) -> None:
        self.sftp = sftp
        self.channels = spread_.Channels(more)
        self.via = N_("SFTP")
        # lstat results from prefetch (and the folders this push made): asked for all names at
        # once, not one round trip after another. A folder's entry is kept for the whole push
        # (the chain check of every file under it); a file's is used once.
        self._seen: Dict[str, Optional[Any]] = {}
        self._closing: Dict[str, "asyncio.Future[Any]"] = {}  # part -> its close, still in flight

    async def _lstat(self, path: str) -> Optional[Any]:
        try:
            return await self.sftp.lstat(path)
        except (asyncssh.SFTPError, OSError) as exc:
            if _no_such(exc):
                return None
            raise

    async def _lstat_once(self, path: str) -> Optional[Any]:
        """A prefetched answer (used up), else the box asked now."""
        if path in self._seen:
            return self._seen.pop(path)
        return await self._lstat(path)

    async def _lstat_dir(self, path: str) -> Optional[Any]:
        """For the chain check: the prefetched or earlier answer is kept."""
        if path not in self._seen:
            self._seen[path] = await self._lstat(path)
        return self._seen[path]

    async def resolve(self, dest: str) -> str:
        if dest.startswith("~"):
            return (await self.sftp.realpath(".")) + dest[1:]
        if not dest.startswith("/"):
            return (await self.sftp.realpath(".")) + "/" + dest
        return dest

    async def free(self, dest: str) -> Optional[int]:
        """Free bytes on the disk DEST is on: DEST itself if it exists, else the nearest
        folder above it that does, as the probe's free_bytes does (DEST's parent was asked:
        a DEST that is a mount point of its own was checked on the wrong disk, and one whose
        parent did not exist yet was not checked at all). None where the box cannot say."""
        path = dest.rstrip("/") or "/"
        while True:
            try:
                v = await self.sftp.statvfs(path)
                return int(v.bavail * v.frsize)
            except asyncssh.SFTPNoSuchFile:
                if path == "/":
                    return None
                path = posixpath.dirname(path) or "/"
            except (asyncssh.SFTPError, OSError, AttributeError):  # no statvfs@openssh.com
                return None

    async def prefetch(self, dest: str, rels: Iterable[str]) -> None:
        """lstat every name, its part and the folders above it at once (LSTAT_IN_FLIGHT
        outstanding on the one SFTP channel): a 300 ms link pays one round trip, not three
        per file. A name push would refuse is left for have() to refuse."""
        paths: Dict[str, None] = {}
        for rel in rels:
            try:
                remote = remote_path_for(dest, rel)
            except ValueError:
                continue
            here = dest
            for part in rel.split("/")[:-1]:
                here = posixpath.join(here, part)
                paths[here] = None
            paths[remote] = None
            paths[remote + PART_SUFFIX] = None
        gate = asyncio.Semaphore(LSTAT_IN_FLIGHT)

        async def one(path: str) -> None:
            async with gate:
                self._seen[path] = await self._lstat(path)
        await asyncio.gather(*(one(p) for p in paths if p not in self._seen))

    async def prepare(self, dest: str, rels: Iterable[str]) -> None:
        """make_root and prefetch in the same round trip (DEST's own lstat among the others)."""
        root, _seen = await asyncio.gather(self._lstat(dest), self.prefetch(dest, rels))
        if _kind(root) != "dir":
            await self.make_root(dest)

    async def _check_chain(self, dest: str, rel: str) -> None:
        here = dest
        for part in rel.split("/")[:-1]:
            here = posixpath.join(here, part)
            if _kind(await self._lstat_dir(here)) == "link":
                raise PushRefused("%s is a symlink on the box: not writing through it" % here)

    async def have(self, dest: str, rel: str) -> Have:
        remote = remote_path_for(dest, rel)
        await self._check_chain(dest, rel)
        final, part = await asyncio.gather(self._lstat_once(remote), self._lstat_once(remote + PART_SUFFIX))
        if part is not None and _kind(part) != "file":  # opening it would follow a symlink
            raise PushRefused("%s%s on the box is not a regular file: not writing through it"
                              % (remote, PART_SUFFIX))
        kind = _kind(final)
        stat_ = None if final is None else RemoteStat(
            final.size or 0, final.mtime or 0, kind == "file",
            stat.S_IMODE(final.permissions) if final.permissions is not None else None)
        return Have(kind, stat_, None if part is None else (part.size or 0))

    async def chmod(self, dest: str, rel: str, mode: int) -> None:
        """The permissions of a file that is otherwise up to date (checked: not a link)."""
        await self._check_chain(dest, rel)
        await self.sftp.chmod(remote_path_for(dest, rel), stat.S_IMODE(mode))

    async def kind(self, path: str) -> str:
        """What is at `path` on the box ('none', 'file', 'dir', 'link', 'other'), not followed."""
        return _kind(await self._lstat(path))

    async def make_root(self, dest: str) -> None:
        if _kind(await self._lstat(dest)) != "dir":  # makedirs asks once per path component
            await self.sftp.makedirs(dest, exist_ok=True)

    async def mkdir(self, dest: str, rel: str, mode: int = 0o777) -> None:
        """A folder made with the local one's permissions, less the box's umask, as rsync -a
        makes it: a 0700 folder became 0755 on a shared box, readable by every user there."""
        remote = remote_path_for(dest, rel)
        await self._check_chain(dest, rel)
        kind = _kind(await self._lstat_dir(remote))
        if kind == "none":
            await self.sftp.mkdir(remote, asyncssh.SFTPAttrs(permissions=folder_mode(mode)))
            self._seen[remote] = _MADE_DIR
        elif kind != "dir":
            raise PushRefused("%s exists on the box and is not a folder" % remote)

    async def symlink(self, dest: str, rel: str, target: str) -> None:
        remote = remote_path_for(dest, rel)
        await self._check_chain(dest, rel)
        if await self._lstat_once(remote) is None:
            await self.sftp.symlink(target, remote)

    async def write_part(self, dest: str, rel: str, src: HashingReader, offset: int,
                         progress: Progress) -> int:
        """src's bytes from `offset` into the part, IN_FLIGHT writes at a time. Returns once
        the box has answered every write (sftp-server has written them: the box's sha256 can
        start); the close goes on meanwhile and settle() waits for it."""
        part = remote_path_for(dest, rel) + PART_SUFFIX
        sent, rf = await pipe_writes(self.sftp, part, src.read, offset, progress)
        self._closing[part] = asyncio.ensure_future(rf.close())
        return sent

    def warm(self, big_files: int) -> None:
        """A big file is coming: open the extra channels now, beside the lstats."""
        if big_files and getattr(self.sftp, "supports_remote_copy", False):
            self.channels.warm(spread_.SPREAD - 1)

    async def close_extra(self) -> None:
        await self.channels.close()

    async def spread(self, dest: str, entry: LocalEntry, offset: int,
                     progress: Progress) -> "Optional[tuple[int, Optional[str]]]":
        """entry's bytes into its part over SPREAD channels, joined on the box; (bytes sent,
        local sha256). None: not spread (small file, no copy-data, no extra channels, or a
        one-stream part to continue): the caller sends it as one stream."""
        segs = spread_.segments(entry.size)
        if len(segs) == 1 or not getattr(self.sftp, "supports_remote_copy", False):
            return None
        more = await self.channels.get(len(segs) - 1)
        if more is None:
            return None
        part = remote_path_for(dest, entry.rel) + PART_SUFFIX
        names = [spread_.seg_name(part, k) for k in range(1, len(segs))]
        found = await asyncio.gather(*(self._lstat(n) for n in names))
        for name, attrs in zip(names, found):
            if attrs is not None and _kind(attrs) != "file":  # opening it would follow a symlink
                raise PushRefused("%s on the box is not a regular file: not writing through it" % name)
        sizes = [None if a is None else (a.size or 0) for a in found]
        points = spread_.resume_points(segs, offset, sizes)
        if points is None:
            return None
        if progress and sum(points):
            progress(sum(points))
        stop = threading.Event()
        hashing = asyncio.get_running_loop().run_in_executor(None, spread_.file_sha, entry.path, stop)

        async def one(sftp: Any, path: str, seg: "tuple[int, int]", got: int) -> int:
            reader = spread_.RangeReader(entry.path, seg[0] + got, seg[1])
            try:
                sent, rf = await pipe_writes(sftp, path, reader.read, got, progress)
            finally:
                reader.close()
            await rf.close()
            return sent
        try:
            sent = await spread_.all_or_none([one(c, p, seg, got) for c, p, seg, got
                                              in zip([self.sftp] + more, [part] + names, segs, points)])
            await self._join(part, names, segs, spread_.joins(segs, points, sizes))
            want = await hashing
        finally:
            stop.set()
        return sum(sent), want

    async def _join(self, part: str, names: List[str], segs: "List[tuple[int, int]]",
                    which: List[int]) -> None:
        """copy-data of each segment's part into the first part, ascending (the first part
        stays a contiguous prefix after any cut), then the segment parts removed."""
        if not which:
            return
        dst = await self.sftp.open(part, "r+b", block_size=0)
        try:
            for k in which:
                src = await self.sftp.open(names[k - 1], "rb", block_size=0)
                try:
                    await self.sftp.remote_copy(src, dst, 0, segs[k][1] - segs[k][0], segs[k][0])
                finally:
                    await src.close()
        finally:
            await dst.close()
        await asyncio.gather(*(self.sftp.remove(names[k - 1]) for k in which))

    async def _closed(self, part: str) -> None:
        closing = self._closing.pop(part, None)
        if closing is not None:
            await closing

    async def settle(self, dest: str, rel: str, entry: LocalEntry) -> None:
        """The part closed and given entry's times and mode (kept writable by its owner until
        commit, so a cut right here still resumes), while the box computes its sha256."""
        part = remote_path_for(dest, rel) + PART_SUFFIX
        attrs = asyncssh.SFTPAttrs(permissions=entry.mode | stat.S_IWUSR, atime=int(time.time()),
                                   mtime=int(entry.mtime))
        await asyncio.gather(self._closed(part), self.sftp.setstat(part, attrs))

    async def discard(self, dest: str, rel: str) -> None:
        part = remote_path_for(dest, rel) + PART_SUFFIX
        await self._closed(part)
        await self.sftp.remove(part)

    async def commit(self, dest: str, rel: str, entry: LocalEntry) -> None:
        remote = remote_path_for(dest, rel)
        part = remote + PART_SUFFIX
        await self._closed(part)
        if not entry.mode & stat.S_IWUSR:  # settle kept it writable
            await self.sftp.chmod(part, entry.mode)
        await self.sftp.posix_rename(part, remote)


async def pipe_writes(sftp: Any, path: str, read: Callable[[int], bytes], offset: int,
                      progress: Progress) -> "tuple[int, Any]":
    """read()'s bytes into the box's `path` from `offset` (a fresh file at 0), IN_FLIGHT writes
    at a time. Returns (bytes sent, the open file) once the box has answered every write."""
    block, split = write_block(sftp)
    sent = 0
    rf = await sftp.open(path, "r+b" if offset else "wb", block_size=split)
    pending: "set[asyncio.Future[Any]]" = set()
    try:
        pos = offset
        while True:
            data = read(block)
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
            pending = set()
    except BaseException:
        for fut in pending:
            fut.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        try:
            await rf.close()
        except (asyncssh.Error, OSError):
            pass
        raise
    return sent, rf


_MADE_DIR = asyncssh.SFTPAttrs(permissions=stat.S_IFDIR | 0o700)  # a folder this push made


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
        chmod = getattr(box, "chmod", None)
        mode = have.final.mode if have.final is not None else None
        if chmod is not None and mode is not None and mode != stat.S_IMODE(entry.mode):
            await chmod(dest, entry.rel, entry.mode)  # rsync -a carries a chmod made here
        return FileResult(entry.rel, "up to date")
    spread = getattr(box, "spread", None)
    spreading = None if spread is None else await spread(dest, entry, offset, progress)
    if spreading is not None:
        sent, want = spreading
    else:
        if progress and offset:
            progress(offset)
        with HashingReader(entry.path, offset) as src:
            sent = await box.write_part(dest, entry.rel, src, offset, progress)
            want = src.hexdigest()
    # the box hashes while the part is closed and given its times: one round trip, not three
    got, _settled = await asyncio.gather(box_sha(remote_path_for(dest, entry.rel) + PART_SUFFIX),
                                         box.settle(dest, entry.rel, entry))
    if got != want:
        await box.discard(dest, entry.rel)  # a resumed part that does not match: send it whole next time
        return FileResult(entry.rel, "failed", sent,
                          "sha256 differs on the box; the partial file was removed, push again")
    await box.commit(dest, entry.rel, entry)
    return FileResult(entry.rel, "resumed" if sent < entry.size else "sent", sent)


async def push(box: Any, box_sha: Callable[[str], Any], entries: List[LocalEntry], dest: str,
               progress: Optional[Callable[[str, int], None]] = None) -> List[FileResult]:
    """Every entry under DEST (absolute, see box.resolve); one result each, in the entries'
    order. What the box holds is asked for all names at once (prepare); each folder, link and
    file waits only for its own folder's mkdir, not for the others; the files: small ones SMALL_IN_FLIGHT at a time (each costs a few round trips
    of its own: on a 300 ms link a code folder would take minutes one by one) beside the big
    ones, one big file at a time with all its writes in flight. Raises on a dropped link (the
    parts stay for the next push)."""
    results: List[Optional[FileResult]] = [None] * len(entries)
    warm = getattr(box, "warm", None)
    if warm is not None:  # the extra channels open while the box is asked what it holds
        warm(sum(1 for e in entries if e.kind == "file" and e.size >= spread_.SPREAD_MIN))
    await box.prepare(dest, [e.rel for e in entries if e.kind in ("file", "dir", "symlink")])
    made: "Dict[str, asyncio.Future[None]]" = {}  # a folder's rel -> its mkdir

    async def parent_made(rel: str) -> None:
        parent = made.get(posixpath.dirname(rel))
        if parent is not None:
            await parent

    async def folder(i: int, e: LocalEntry) -> None:
        await parent_made(e.rel)
        await box.mkdir(dest, e.rel, e.mode)
        results[i] = FileResult(e.rel, "dir")

    async def link(i: int, e: LocalEntry) -> None:
        await parent_made(e.rel)
        await box.symlink(dest, e.rel, e.link)
        results[i] = FileResult(e.rel, "link", detail=e.link)
    gate = asyncio.Semaphore(SMALL_IN_FLIGHT)
    big = asyncio.Lock()

    async def one(i: int, e: LocalEntry) -> None:
        await parent_made(e.rel)
        async with (gate if e.size < SMALL_FILE else big):
            results[i] = await push_file(box, box_sha, e, dest,
                                         (lambda n, r=e.rel: progress(r, n)) if progress else None)
    tasks: "List[asyncio.Future[None]]" = []
    for i, e in enumerate(entries):  # every folder's task exists before any task runs
        if e.kind == "dir":
            made[e.rel] = asyncio.ensure_future(folder(i, e))
            tasks.append(made[e.rel])
        elif e.kind == "unusual":
            results[i] = FileResult(e.rel, "unusual", detail=e.why)
    for i, e in enumerate(entries):
        if e.kind == "symlink":
            tasks.append(asyncio.ensure_future(link(i, e)))
        elif e.kind == "file":
            tasks.append(asyncio.ensure_future(one(i, e)))
    try:
        await all_or_none(tasks)
    finally:
        close = getattr(box, "close_extra", None)
        if close is not None:
            await close()
    return [r for r in results if r is not None]



def probe_sha(session: Any) -> Callable[[str], Any]:
    """The box's sha256 of a path, through the probe (no shell, no sha256sum needed)."""
    async def sha(path: str) -> Optional[str]:
        reply = await session.request(wire.SHA256, timeout=600, paths=[path])
        return (reply.get("sha256") or {}).get(path)
    return sha

