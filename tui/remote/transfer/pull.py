"""`gputui pull`'s engine: what is under a path on the box, then many downloads at once.

Each file goes through tui.core.transfer.download (the checklist's engine: NAME.gputui-part resumed,
the box's sha256 computed while the bytes flow, a newer local copy never overwritten). Small
files go SMALL_IN_FLIGHT at a time beside the big ones (one big file at a time, with all its
reads in flight): each small file costs ~4 round trips of its own (stat, open, read, close),
so on a 300 ms link a code folder one by one took a second a file. The walk asks for a whole
level of folders at once (SFTP readdir gives each name's lstat), not one name after another.
"""

import asyncio
import posixpath
import stat
from typing import Any, Callable, List, Optional, Tuple

import asyncssh

from remote_probe import wire
from tui.core.i18n import N_
from tui.core.transfer.download import Result, download
from tui.remote.transfer.tasks import all_or_none

SMALL_FILE = 1 << 20  # files under this go several at a time
SMALL_IN_FLIGHT = 16  # small downloads at once (memory: each holds < 1 MiB in flight)
DIRS_IN_FLIGHT = 32  # readdir requests outstanding during the walk

FileRow = Tuple[str, int, float]  # (path relative to the pulled path's parent, size, mtime)


NOT_REGULAR = N_("not a regular file or folder")
SYMLINK = N_("a symlink")  # made here as a link (pull_cmd)
CANNOT_LIST = "a folder the box will not list: %s"  # its files are missing: the pull fails


async def walk_sftp(sftp: Any, top: str) -> Tuple[List[FileRow], List[Tuple[str, str]]]:
    """(regular files, skipped entries with why: links, FIFOs, devices, and folders the box
    will not list, whose files are then missing) under top, sorted by name.
    Names come with lstat attributes (readdir), so a symlink is listed, never followed.
    SFTP is asked with bytes, so a name that is not UTF-8 comes back as its bytes (asyncssh
    gives up on the whole listing otherwise: 'Unable to decode name'); here names are str
    with those bytes as surrogates, as tui.core.transfer.download takes them."""
    def raw(path: str) -> bytes:
        return path.encode("utf-8", "surrogateescape")

    def text(name: Any) -> str:
        return name.decode("utf-8", "surrogateescape") if isinstance(name, bytes) else name

    top = top.rstrip("/") or "/"
    parent = posixpath.dirname(top) or "/"
    files: List[FileRow] = []
    skipped: List[Tuple[str, str]] = []

    def sort(path: str, attrs: Any, dirs: List[str]) -> None:
        mode = attrs.permissions or 0
        rel = posixpath.relpath(path, parent)
        if stat.S_ISDIR(mode):
            dirs.append(path)
        elif stat.S_ISREG(mode):
            files.append((rel, attrs.size or 0, attrs.mtime or 0))
        else:
            skipped.append((rel, SYMLINK if stat.S_ISLNK(mode) else NOT_REGULAR))

    level: List[str] = []
    sort(top, await sftp.lstat(raw(top)), level)
    gate = asyncio.Semaphore(DIRS_IN_FLIGHT)

    async def listing(path: str) -> List[Any]:
        async with gate:
            try:
                return await sftp.readdir(raw(path))
            except (asyncssh.SFTPPermissionDenied, asyncssh.SFTPNoSuchFile) as exc:
                # one folder the box will not list stopped the whole pull, nothing downloaded
                skipped.append((posixpath.relpath(path, parent), CANNOT_LIST % (exc.reason or exc)))
                return []
    while level:
        found = await asyncio.gather(*(listing(d) for d in level))
        below: List[str] = []
        for path, names in zip(level, found):
            for name in names:
                filename = text(name.filename)
                if filename not in (".", ".."):
                    sort(posixpath.join(path, filename), name.attrs, below)
        level = below
    return sorted(files), sorted(skipped)


def place_links(local: str, pairs: List[Tuple[str, str]]) -> List[Tuple[str, str, str]]:
    """Each (rel, target) made under `local` as a link -> (rel, status, detail)."""
    from tui.core.transfer.download import place_link
    out = []
    for rel, target in pairs:
        try:
            out.append((rel,) + place_link(local, rel, target))
        except OSError as exc:  # a laptop that cannot make links (Windows without the right)
            out.append((rel, "failed", exc.strerror or str(exc)))
    return out


async def pull_links(sftp: Any, parent: str, links: List[str], local: str) -> List[Tuple[str, str, str]]:
    """Each symlink (rel under `parent`) made under `local` as a link to the same target ->
    (rel, status, detail); its target read with readlink, all at once."""
    async def target(rel: str) -> Any:
        try:
            return await sftp.readlink(posixpath.join(parent, rel).encode("utf-8", "surrogateescape"))
        except (asyncssh.SFTPError, OSError) as exc:
            return exc
    out, pairs = [], []
    for rel, got in zip(links, await asyncio.gather(*(target(r) for r in links))):
        if isinstance(got, BaseException):
            out.append((rel, "failed", str(getattr(got, "reason", None) or got)))
        else:
            pairs.append((rel, got.decode("utf-8", "surrogateescape") if isinstance(got, bytes) else got))
    return out + place_links(local, pairs)


async def pull_files(sftp: Any, session: Any, files: List[FileRow], parent: str, local: str,
                     progress: Optional[Callable[[str, int, bool], None]] = None,
                     on_result: Optional[Callable[[Result], None]] = None) -> List[Result]:
    """Every file (names relative to `parent`, the folder sftp reads relative names from)
    into `local`; one Result each, in the files' order. progress(rel, bytes since the last
    call, whether they moved now: False for what a resumed part already held); on_result as
    each file ends."""
    results: List[Optional[Result]] = [None] * len(files)
    gate = asyncio.Semaphore(SMALL_IN_FLIGHT)
    big = asyncio.Lock()  # one big file at a time: it has all its reads in flight already

    async def one(i: int, rel: str, size: int, mtime: float) -> None:
        full = posixpath.join(parent, rel)

        async def box_sha() -> Any:
            reply = await session.request(wire.SHA256, timeout=600, paths=[full])
            return (reply.get("sha256") or {}).get(full)
        seen: List[Optional[int]] = [None]  # bytes reported so far; None before the first call

        def on_progress(done: int, _size: int) -> None:
            if progress:  # the first call says what a resumed part already holds: not moved now
                progress(rel, done - (seen[0] or 0), seen[0] is not None)
            seen[0] = done
        async with (gate if size < SMALL_FILE else big):
            r = await download(sftp, rel, local, size, mtime, expected_sha=box_sha, progress=on_progress)
        if progress and r.status in ("up to date", "kept newer local") and (seen[0] or 0) < size:
            progress(rel, size - (seen[0] or 0), False)  # here already: the total's part of it is done
        results[i] = r
        if on_result:
            on_result(r)
    tasks = [asyncio.ensure_future(one(i, *row)) for i, row in enumerate(files)]
    await all_or_none(tasks)
    return [r for r in results if r is not None]
