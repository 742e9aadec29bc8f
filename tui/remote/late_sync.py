"""asyncio's Event and Semaphore, each made at its first wait, inside the loop that waits.

On Python 3.9 (requires-python's lower bound) an asyncio.Event or Semaphore takes the loop that
is current when it is made, and gputui makes sessions and fleets before their loop runs
(GputuiApp.__init__, FleetApp.__init__, the tests): a wait then got a future of another loop
('There is no current event loop', or 'Task got Future attached to a different loop'). Python
3.10 and later bind at first use; these make 3.9 do the same (docs/dependencies.md: the
lower-bounds run is on Python 3.9)."""

import asyncio
from typing import Optional


class LateEvent:
    """asyncio.Event whose set/clear work before any loop runs."""

    def __init__(self):
        self._event: Optional[asyncio.Event] = None
        self._flag = False

    def _made(self) -> asyncio.Event:
        if self._event is None:
            self._event = asyncio.Event()
            if self._flag:
                self._event.set()
        return self._event

    def set(self):
        self._flag = True
        if self._event is not None:
            self._event.set()

    def clear(self):
        self._flag = False
        if self._event is not None:
            self._event.clear()

    def is_set(self):
        return self._flag

    async def wait(self):
        return await self._made().wait()


class LateSemaphore:
    """`async with gate:` as with asyncio.Semaphore(limit)."""

    def __init__(self, limit: int):
        self.limit = limit
        self._semaphore: Optional[asyncio.Semaphore] = None

    async def __aenter__(self):
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.limit)
        await self._semaphore.acquire()

    async def __aexit__(self, *exc):
        self._semaphore.release()
