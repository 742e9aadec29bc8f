"""`gputui push` through the probe channel, for boxes without SFTP (PTY-only proxies such as
RunPod's basic SSH, or an sshd that refuses the subsystem).

The same interface as tui.remote.transfer.push.SftpBox, made of the probe's file_* requests
(remote_probe/files/filexfer_write.py: the box writes only part files inside DEST, O_NOFOLLOW,
each chunk checked by its sha256). Chunks are pipelined: CHUNKS_IN_FLIGHT requests
outstanding, so a 150-300 ms link is not latency-bound. The first chunk of a file goes
alone (it truncates a stale part), the rest follow in order.
"""

import asyncio
import base64
import hashlib
import posixpath
from typing import Any, Awaitable, Callable, Dict, Iterable, Optional

from remote_probe import wire
from tui.core.i18n import N_
from tui.core.transfer.upload_plan import PART_SUFFIX, LocalEntry, RemoteStat, remote_path_for
from tui.remote.probe.client import ProbeError
from tui.remote.transfer.push import HashingReader, Have, Progress, PushRefused, SftpBox, folder_mode

CHUNK = 256 << 10  # bytes per file_write: base64 ~350 KB, a third of wire.MAX_LINE
CHUNKS_IN_FLIGHT = 32  # 8 MiB outstanding: fills 50 MB/s x 150 ms; memory bound ~11 MB of lines
STAT_BATCH = 2000  # names per file_stat (the box's limit too)
CHUNK_TIMEOUT = 120  # seconds for one chunk's answer (behind up to 31 others on a slow link)


class ProbeBox:
    """The box's files through the probe's file_* requests. `request` is session.request."""

    def __init__(self, request: Callable[..., Awaitable[Dict[str, Any]]]) -> None:
        self._request = request
        self.via = N_("probe channel")
        self._facts: Dict[str, Dict[str, Any]] = {}
        self._free: Optional[int] = None

    async def _ask(self, kind: str, timeout: float = 60, **params: Any) -> Dict[str, Any]:
        try:
            return await self._request(kind, timeout=timeout, **params)
        except ProbeError as exc:
            text = str(exc)
            # the box's own refusals start with the request's name (filexfer_write.handle);
            # a lost connection does not, and stays a ProbeError (resumable: run it again)
            if text.startswith(kind + " "):
                raise PushRefused(text) from None
            raise

    async def resolve(self, dest: str) -> str:
        """DEST as the box's absolute path (~ and relative names resolved there)."""
        reply = await self._ask(wire.FILE_STAT, root=dest, paths=[])
        free = reply.get("free")
        self._free = free if isinstance(free, int) else None
        root = reply.get("root")
        if not isinstance(root, str) or not root.startswith("/"):
            raise PushRefused("the box did not say where %s is" % dest)
        return root

    async def free(self, dest: str) -> Optional[int]:
        if self._free is None:
            await self.resolve(dest)
        return self._free

    async def prefetch(self, dest: str, rels: Iterable[str]) -> None:
        """What the box holds at every name, STAT_BATCH names a request (not a round trip each)."""
        names = list(rels)
        for at in range(0, len(names), STAT_BATCH):
            reply = await self._ask(wire.FILE_STAT, root=dest, paths=names[at:at + STAT_BATCH])
            entries = reply.get("entries")
            if isinstance(entries, dict):
                self._facts.update({k: v for k, v in entries.items() if isinstance(v, dict)})

    async def prepare(self, dest: str, rels: Iterable[str]) -> None:
        """DEST made first, then what the box holds under it (the order push had before)."""
        await self.make_root(dest)
        await self.prefetch(dest, rels)

    async def have(self, dest: str, rel: str) -> Have:
        facts = self._facts.pop(rel, None)
        if facts is None:
            facts = await self._stat_one(dest, rel)
        return have_from(facts)

    async def _stat_one(self, root: str, rel: str) -> Dict[str, Any]:
        reply = await self._ask(wire.FILE_STAT, root=root, paths=[rel])
        return (reply.get("entries") or {}).get(rel) or {}

    async def kind(self, path: str) -> str:
        """What is at `path` on the box, as SftpBox.kind says it; 'unknown' where the box cannot
        tell (its folder is missing, a name it refuses)."""
        parent, name = posixpath.split(path.rstrip("/"))
        try:
            return have_from(await self._stat_one(parent or "/", name)).kind
        except (PushRefused, ProbeError):
            return "unknown"

    async def chmod(self, dest: str, rel: str, mode: int) -> None:
        """The permissions of a file that is otherwise up to date."""
        remote_path_for(dest, rel)
        await self._ask(wire.FILE_CHMOD, root=dest, path=rel, mode=mode & 0o7777)

    async def make_root(self, dest: str) -> None:
        await self._ask(wire.FILE_MKDIR, root=dest, path="")

    async def mkdir(self, dest: str, rel: str, mode: int = 0o777) -> None:
        remote_path_for(dest, rel)  # refuses a climbing name before the box does
        await self._ask(wire.FILE_MKDIR, root=dest, path=rel, mode=folder_mode(mode))

    async def symlink(self, dest: str, rel: str, target: str) -> None:
        remote_path_for(dest, rel)
        await self._ask(wire.FILE_LINK, root=dest, path=rel, target=target)

    async def write_part(self, dest: str, rel: str, src: HashingReader, offset: int,
                         progress: Progress) -> int:
        remote_path_for(dest, rel)
        part = rel + PART_SUFFIX
        sent = 0

        async def one(data: bytes, at: int, truncate: bool) -> int:
            await self._ask(wire.FILE_WRITE, timeout=CHUNK_TIMEOUT, root=dest, path=part, offset=at,
                            data=base64.b64encode(data).decode("ascii"),
                            sha256=hashlib.sha256(data).hexdigest(), truncate=truncate)
            if progress:
                progress(len(data))
            return len(data)

        pos = offset
        data = src.read(CHUNK)
        sent += await one(data, pos, True)  # alone: it cuts a stale part to `offset`
        pos += len(data)
        pending: "set[asyncio.Future[int]]" = set()
        try:
            while True:
                data = src.read(CHUNK)
                if not data:
                    break
                pending.add(asyncio.ensure_future(one(data, pos, False)))
                pos += len(data)
                if len(pending) >= CHUNKS_IN_FLIGHT:
                    done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                    for d in done:
                        sent += d.result()
            if pending:
                for n in await asyncio.gather(*pending):
                    sent += n
                pending = set()
        finally:
            for fut in pending:
                fut.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
        return sent

    async def settle(self, dest: str, rel: str, entry: LocalEntry) -> None:
        """Nothing: file_commit sets the times and mode as it renames."""

    async def discard(self, dest: str, rel: str) -> None:
        await self._ask(wire.FILE_COMMIT, root=dest, path=rel + PART_SUFFIX, to=rel, discard=True)

    async def commit(self, dest: str, rel: str, entry: LocalEntry) -> None:
        await self._ask(wire.FILE_COMMIT, root=dest, path=rel + PART_SUFFIX, to=rel, size=entry.size,
                        mode=entry.mode, mtime=entry.mtime)


def have_from(facts: Dict[str, Any]) -> Have:
    """A file_stat entry (box data: types checked) -> Have; a refusal raises PushRefused."""
    kind = facts.get("kind")
    if kind == "refused":
        raise PushRefused(str(facts.get("why") or "the box refused the name"))
    if kind not in ("none", "file", "dir", "link", "other"):
        kind = "none"
    size, mtime, part = facts.get("size"), facts.get("mtime"), facts.get("part")
    final = None
    if kind != "none" and isinstance(size, int) and isinstance(mtime, (int, float)):
        mode = facts.get("mode")
        final = RemoteStat(size, float(mtime), kind == "file",
                           mode if isinstance(mode, int) and not isinstance(mode, bool) else None)
    return Have(kind, final, part if isinstance(part, int) and part >= 0 else None)


def box_files(session: Any, client: Any) -> Any:
    """SFTP when session.file_client() gave an SFTP client, else the probe channel."""
    if not hasattr(client, "makedirs"):
        return ProbeBox(session.request)
    conn = getattr(session, "conn", None)
    return SftpBox(client, None if conn is None else conn.start_sftp_client)
