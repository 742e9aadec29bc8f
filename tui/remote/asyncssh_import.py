"""asyncssh, imported without its slowest step (issue 26: start-up of headless commands).

On import, asyncssh looks for liboqs (sntrup761 key exchange) with ctypes.util.find_library,
which on Linux runs `ldconfig -p`, then gcc, then ld, twice ('oqs', 'liboqs'): about a third of
asyncssh's import time where liboqs is not installed (the usual case). The same library is found
here by looking in the linker's usual directories, so where it is installed it is still used."""

import ctypes.util
import glob
import os

LIB_DIRS = ("/usr/local/lib", "/usr/local/lib64", "/usr/lib", "/usr/lib64", "/lib", "/lib64",
            "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/opt/homebrew/lib")
_real_find_library = ctypes.util.find_library


def find_oqs(name):
    """find_library for liboqs only, from a directory listing; anything else as before."""
    if name not in ("oqs", "liboqs"):
        return _real_find_library(name)
    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d] + list(LIB_DIRS)
    for d in dirs:
        hits = sorted(glob.glob(os.path.join(d, "liboqs.so*")) + glob.glob(os.path.join(d, "liboqs*.dylib")))
        if hits:
            return hits[0]
    return None


ctypes.util.find_library = find_oqs
try:
    import asyncssh  # noqa: F401 - imported here once; everyone else gets it from sys.modules
finally:
    ctypes.util.find_library = _real_find_library
