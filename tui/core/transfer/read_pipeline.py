"""An SFTP download's reads (issue 38): how many to keep outstanding, and the file's bytes in
order from them, with one stall timer for the lot."""

import asyncio
import collections
from typing import Any, AsyncIterator, Deque, Optional, Tuple

from tui.core.transfer.link_sizes import LINK_RATE, MIN_READS, WINDOW


def reads_in_flight(rtt: float, block: int) -> int:
    """SFTP reads of `block` bytes to keep outstanding on a link whose round trip is `rtt`
    seconds: what LINK_RATE moves in one round trip (the bandwidth-delay product), at least
    MIN_READS (the server always has the next read queued) and at most the channel's WINDOW.
    On loopback or a LAN that is MIN_READS: answers the box sent ahead of a laptop busy
    decrypting only pile up in its memory (the whole WINDOW did: 32 MiB of the pull's RSS)."""
    want = int(rtt * LINK_RATE) // block + 1
    return max(MIN_READS, min(want, WINDOW // block))


class _Stall:
    """"No byte from the box for `seconds`" as one timer, moved on as answers come, instead of
    an asyncio.wait_for around every read (a timer, a future and a callback per 256 KiB block:
    a tenth of the client's CPU on loopback). wait(fut): its result, or asyncio.TimeoutError
    when nothing has come for `seconds` (the read it waited on is cancelled)."""

    def __init__(self, seconds: float) -> None:
        self.loop = asyncio.get_running_loop()
        self.seconds = seconds
        self.last = self.loop.time()
        self.waiting: Optional["asyncio.Future[Any]"] = None
        self.timer: Optional[asyncio.TimerHandle] = None
        self.fired = False

    async def wait(self, fut: "asyncio.Future[Any]") -> Any:
        if not fut.done():
            self.waiting = fut
            if self.timer is None:
                self.timer = self.loop.call_at(self.last + self.seconds, self._check)
            try:
                await fut
            except asyncio.CancelledError:
                if self.fired:
                    raise asyncio.TimeoutError() from None
                raise
            finally:
                self.waiting = None
        self.last = self.loop.time()
        return fut.result()

    def _check(self) -> None:
        self.timer = None
        if self.waiting is None:  # between reads: the next wait sets the timer again
            return
        due = self.last + self.seconds
        if self.loop.time() >= due:
            self.fired = True
            self.waiting.cancel()
        else:
            self.timer = self.loop.call_at(due, self._check)

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


async def blocks(f: Any, start: int, size: int, block: int, in_flight: int,
                  stall_seconds: float) -> AsyncIterator[bytes]:
    """The file's bytes from `start` to `size`, in order, with `in_flight` reads of `block`
    bytes outstanding. A short answer (a server's own read limit) is completed before going on;
    an empty one is the end of the file (it shrank on the box). asyncio.TimeoutError when no
    answer has come for stall_seconds."""
    reads: Deque[Tuple[int, int, "asyncio.Future[bytes]"]] = collections.deque()
    ahead = start
    stall = _Stall(stall_seconds)
    try:
        while True:
            while len(reads) < in_flight and ahead < size:
                n = min(block, size - ahead)
                reads.append((ahead, n, asyncio.ensure_future(f.read(n, ahead))))
                ahead += n
            if not reads:
                return
            at, want, task = reads.popleft()
            data = await stall.wait(task)
            while data and len(data) < want:
                yield data
                at, want = at + len(data), want - len(data)
                data = await stall.wait(asyncio.ensure_future(f.read(want, at)))
            if not data:
                return
            yield data
    finally:
        stall.close()
        for _at, _n, task in reads:
            task.cancel()
        if reads:
            await asyncio.gather(*(t for _a, _n, t in reads), return_exceptions=True)
