"""Give the C heap's free pages back to the system while the app runs (issue 25).

glibc keeps what Python's larger objects (dicts, lists, strings over 512 bytes) and the C
libraries free inside its heap for reuse, and returns it only from the very top. On the idle
dashboard about 1 MB of it is free at any time: what connecting, deploying and the first layouts
used once. `malloc_trim` hands those pages back (0.1 ms on this heap), so the app's resident size
is what it holds. Elsewhere (macOS, Windows, musl) there is no such call and nothing is done."""

import ctypes
import functools
import sys
from typing import Callable, Optional

TRIM_EVERY = 60.0  # seconds: the idle dashboard's churn frees a little, a minute at a time


@functools.lru_cache(maxsize=1)
def _malloc_trim() -> Optional[Callable[[int], int]]:
    """glibc's malloc_trim, looked up once; None where there is none (musl, macOS, Windows)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return getattr(ctypes.CDLL(None), "malloc_trim", None)
    except OSError:
        return None


def trim_heap() -> bool:
    """Return the heap's free pages to the system; False where the C library cannot."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
