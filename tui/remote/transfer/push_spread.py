"""One big file spread over several SFTP channels of the same connection (issue 24).

Why: each SSH channel has its own flow-control window, and OpenSSH's sshd offers 2 MiB per
channel: on a 300 ms link one channel moves at most ~7 MB/s however many writes are queued.
A file of SPREAD_MIN bytes or more is cut into SPREAD contiguous segments; segment 0 goes to
``NAME.gputui-part`` on the first channel, segment k to ``NAME.gputui-part.k`` on channel k,
each written in order so each part's size says exactly how much of its segment the box holds
(a resume loses at most the writes in flight, as with one stream). When all are there, the box
joins them into the first part with OpenSSH's ``copy-data`` extension, in ascending order
(so the first part is always a contiguous prefix of the file), then removes the others; the
box's sha256 of the joined part must equal the local one as before.

Without copy-data on the box, or when the extra channels do not open, the file goes as one
stream (tui.remote.transfer.push.SftpBox.write_part).
"""

import asyncio
import hashlib
import threading
from typing import Any, Awaitable, Callable, List, Optional, Sequence, Tuple

SPREAD = 3  # channels for one big file: 3 x 2 MiB windows on a 300 ms link ~ 20 MB/s
SPREAD_MIN = 48 << 20  # smaller files: one stream (segments of 16 MiB+ keep each channel busy)

ALIGN = 1 << 20  # segment starts: fixed, so a resume with another server write limit agrees
Segment = Tuple[int, int]  # [start, end) in the file


def segments(size: int, n: Optional[int] = None, align: int = ALIGN) -> List[Segment]:
    """The file's byte ranges, one per channel (n, else SPREAD), each starting on an ALIGN
    boundary."""
    n = SPREAD if n is None else n
    if n <= 1 or size < SPREAD_MIN:
        return [(0, size)]
    step = -(-size // n)
    step = -(-step // align) * align
    bounds = list(range(0, size, step)) + [size]
    return list(zip(bounds, bounds[1:]))


def seg_name(part: str, k: int) -> str:
    """The part file of segment k >= 1 (segment 0's is the file's own part)."""
    return "%s.%d" % (part, k)


def resume_points(segs: Sequence[Segment], part0: int,
                  seg_parts: Sequence[Optional[int]]) -> Optional[List[int]]:
    """Bytes of each segment the box already holds, from the first part's size (`part0`,
    0 when absent or stale) and each other segment's part size (None: absent). None: send as
    one stream (a part left by a one-stream push that has passed segment 0, nothing beside)."""
    end0 = segs[0][1]
    if part0 > end0 and all(s is None for s in seg_parts):
        return None
    points = [min(part0, end0)]
    for (start, end), have in zip(segs[1:], seg_parts):
        if have is not None:
            points.append(have if have <= end - start else 0)  # longer: stale, start over
        elif part0 >= end:
            points.append(end - start)  # joined into the first part already
        else:
            points.append(0)
    return points


def joins(segs: Sequence[Segment], points: Sequence[int], seg_parts: Sequence[Optional[int]]) -> List[int]:
    """Segments k >= 1 whose part is on the box once the sends are done (to be joined)."""
    return [k for k in range(1, len(segs))
            if seg_parts[k - 1] is not None or points[k] < segs[k][1] - segs[k][0]]


def file_sha(path: str, stop: threading.Event) -> Optional[str]:
    """sha256 of the local file, read in a worker thread beside the sends (hashlib and reads
    let the event loop run); None when stopped (the push was cancelled)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(4 << 20), b""):
            if stop.is_set():
                return None
            digest.update(chunk)
    return digest.hexdigest()


class RangeReader:
    """The bytes of [pos, end) of a local file, in order."""

    def __init__(self, path: str, pos: int, end: int) -> None:
        self._f = open(path, "rb")
        self._f.seek(pos)
        self._left = end - pos

    def read(self, n: int) -> bytes:
        data = self._f.read(min(n, self._left)) if self._left > 0 else b""
        self._left -= len(data)
        return data

    def close(self) -> None:
        self._f.close()


async def all_or_none(coros: Sequence[Awaitable[Any]]) -> List[Any]:
    """Every result, or the first error with the others cancelled (gather alone leaves them
    writing after a failure)."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        return list(await asyncio.gather(*tasks))
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class Channels:
    """The extra SFTP clients, opened once in the background (`warm`) and closed at the end."""

    def __init__(self, opener: Optional[Callable[[], Awaitable[Any]]]) -> None:
        self._opener = opener
        self._opening: "Optional[asyncio.Future[Optional[List[Any]]]]" = None

    def warm(self, n: int) -> None:
        if self._opener is not None and self._opening is None and n > 0:
            self._opening = asyncio.ensure_future(self._open(n))

    async def _open(self, n: int) -> Optional[List[Any]]:
        assert self._opener is not None
        got = await asyncio.gather(*(self._opener() for _ in range(n)), return_exceptions=True)
        clients = [c for c in got if not isinstance(c, BaseException)]
        if len(clients) < n:
            for c in clients:
                c.exit()
            return None
        return clients

    async def get(self, n: int) -> Optional[List[Any]]:
        self.warm(n)
        if self._opening is None:
            return None
        clients = await self._opening
        return None if clients is None or len(clients) < n else clients[:n]

    async def close(self) -> None:
        opening, self._opening = self._opening, None
        if opening is None:
            return
        if not opening.done():
            opening.cancel()
        got = (await asyncio.gather(opening, return_exceptions=True))[0]
        for c in got if isinstance(got, list) else []:
            c.exit()
