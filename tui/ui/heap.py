"""Give the C heap's free pages back to the system while the app runs (issue 25).

glibc keeps what Python's larger objects (dicts, lists, strings over 512 bytes) and the C
libraries free inside its heap for reuse, and returns it only from the very top. On the idle
dashboard about 1 MB of it is free at any time: what connecting, deploying and the first layouts
used once. `malloc_trim` hands those pages back (0.1 ms on this heap), so the app's resident size
is what it holds. Elsewhere (macOS, Windows, musl) there is no such call and nothing is done."""

import ctypes
import sys
from typing import Callable, Optional

TRIM_EVERY = 60.0  # seconds: the idle dashboard's churn frees a little, a minute at a time

_trim: Optional[Callable[[int], int]] = None
_looked = False


def _malloc_trim() -> Optional[Callable[[int], int]]:
    global _trim, _looked
    if not _looked:
        _looked = True
        if sys.platform.startswith("linux"):
            try:
                _trim = getattr(ctypes.CDLL(None), "malloc_trim", None)  # glibc; musl has none
            except OSError:
                _trim = None
    return _trim


def trim_heap() -> bool:
    """Return the heap's free pages to the system; False where the C library cannot."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
