"""asyncio primitives made before their loop runs (tui/remote/late_sync.py): sessions and
fleets are made in the apps' __init__, and Python 3.9 (the lower-bounds run's) bound an Event or
Semaphore to the loop current at construction, not to the one that later waits on it."""

import asyncio

from tui.remote.late_sync import LateEvent, LateSemaphore


def test_a_gate_made_before_its_loop_queues_the_connects_in_that_loop():
    """A fleet is made before the app's loop runs; its gate must still queue connects there
    (a Semaphore made outside the loop broke that on Python 3.9, the lower-bounds run's)."""
    gate, order = LateSemaphore(1), []

    async def connect(i):
        async with gate:
            order.append(i)
            await asyncio.sleep(0.01)
            order.append(-i)

    async def both():
        await asyncio.gather(connect(1), connect(2))

    asyncio.run(both())
    assert order == [1, -1, 2, -2]


def test_an_event_set_before_its_loop_runs_is_seen_in_it():
    event, woke = LateEvent(), []
    event.set()  # a session told to retry before the app's loop runs

    async def waiter():
        await asyncio.wait_for(event.wait(), 1)
        woke.append(True)
        event.clear()
        assert not event.is_set()

    asyncio.run(waiter())
    assert woke == [True]
