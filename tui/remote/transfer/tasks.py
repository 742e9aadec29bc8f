"""What push and pull both wait on, apart from either, so that `gputui pull` does not load the
upload code (push, its plan, the billing text) for this one function (issue 38)."""

import asyncio
from typing import Any, List


async def all_or_none(tasks: List["asyncio.Future[Any]"]) -> None:
    """Wait for every task; the first failure (or a cancel: Ctrl-C, escape) cancels the rest and
    waits for them too, so nothing still writes after the caller has said "stopped"."""
    try:
        await asyncio.gather(*tasks)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
