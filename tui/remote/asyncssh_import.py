"""asyncssh, imported without its slowest steps (issue 26: start-up of headless commands).

On import, asyncssh looks for liboqs (sntrup761/ML-KEM key exchange) and Nettle (UMAC MACs)
with ctypes.util.find_library, which on Linux runs `ldconfig -p`, then gcc, then ld, for each
name it tries ('oqs', 'liboqs', 'nettle', ...): a third of asyncssh's import time where liboqs
is not installed (the usual case), a subprocess even where Nettle is. The same libraries are
found here by looking in the linker's usual directories, so where they are installed they are
still used.

asyncssh.crypto.x509 imports cryptography.x509 (~35 ms) and then pyOpenSSL; without pyOpenSSL
(not a dependency of gputui, nor of asyncssh by default) that import fails and asyncssh goes
on without X.509 certificates, which OpenSSH does not use anyway. Where pyOpenSSL is missing
the module is skipped before it loads cryptography.x509: the same outcome, 35 ms sooner.

asyncssh formats a debug line for every SSH and SFTP packet (its name, "N bytes", the payload
joined) and only then finds its packet log off (debug level < 3, the default): a twentieth of a
pull's CPU. quiet_packet_log skips that formatting while the packet log is off; with
asyncssh.set_debug_level(3) every packet is logged as before (issue 38)."""

import ctypes.util
import fnmatch
import importlib.util
import os
import sys
import warnings

LIB_DIRS = ("/usr/local/lib", "/usr/local/lib64", "/usr/lib", "/usr/lib64", "/lib", "/lib64",
            "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/opt/homebrew/lib")
# The names asyncssh asks for (crypto/pq.py, crypto/umac.py); anything else goes to ctypes.
FAST_NAMES = ("oqs", "liboqs", "nettle", "libnettle", "libnettle-6")
X509_MODULE = "asyncssh.crypto.x509"
_real_find_library = ctypes.util.find_library
DSA_WARNING = r"DSA is deprecated"  # cryptography's CryptographyDeprecationWarning text


def find_fast(name, listings=None):
    """find_library for asyncssh's optional libraries, from a directory listing (no
    subprocess); any other name as before. Each directory is listed once per import of
    asyncssh (it asks for five names; /usr/lib/x86_64-linux-gnu holds thousands of files)."""
    if name not in FAST_NAMES:
        return _real_find_library(name)
    listings = {} if listings is None else listings
    base = name[3:] if name.startswith("lib") else name
    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d] + list(LIB_DIRS)
    for d in dirs:
        if d not in listings:
            try:
                listings[d] = os.listdir(d)
            except OSError:
                listings[d] = []
        prefix = "lib%s." % base  # what both patterns start with: a cheap test before fnmatch
        hits = sorted(f for f in listings[d] if f.startswith(prefix) and (
            fnmatch.fnmatchcase(f, prefix + "so*") or fnmatch.fnmatchcase(f, prefix + "*dylib")))
        if hits:
            return os.path.join(d, hits[0])
    return None


def skip_x509():
    """True when asyncssh's X.509 module would fail anyway (no pyOpenSSL)."""
    return X509_MODULE not in sys.modules and importlib.util.find_spec("OpenSSL") is None


def _dsa_warning_class():
    """cryptography's CryptographyDeprecationWarning (asyncssh loads cryptography.utils anyway);
    a cryptography without it has no DSA deprecation to silence, so a class nothing raises."""
    try:
        from cryptography.utils import CryptographyDeprecationWarning
    except ImportError:
        return type("NoDsaDeprecation", (Warning,), {})
    return CryptographyDeprecationWarning


def _import():
    skipped = skip_x509()
    if skipped:
        sys.modules[X509_MODULE] = None  # type: ignore[assignment] # `import` raises ImportError
    listings = {}  # directory -> its names, for this import only (a library installed later is found)
    ctypes.util.find_library = lambda name: find_fast(name, listings)
    try:
        with warnings.catch_warnings():
            # cryptography >= 46 deprecates DSA, and asyncssh's modules name its classes at import:
            # ten warnings on every command's stderr that no user of gputui can act on. Only
            # those, only during this import (issue 37); any other warning still shows.
            warnings.filterwarnings("ignore", message=DSA_WARNING, category=_dsa_warning_class(),
                                    module=r"asyncssh(\.|$)")
            import asyncssh  # noqa: F401 - imported here once; everyone else gets it from sys.modules
    finally:
        ctypes.util.find_library = _real_find_library
        if skipped and sys.modules.get(X509_MODULE, 0) is None:
            del sys.modules[X509_MODULE]  # a later import behaves as it would have


def quiet_packet_log(packet_module, logger_class):
    """asyncssh's per-packet log hook, with an early return while its packet log is off."""
    cls = packet_module.SSHPacketLogger
    formatted = cls._log_packet
    if getattr(formatted, "gputui_quiet", False):
        return

    def _log_packet(self, msg, pkttype, pktid, packet, note):
        if logger_class._debug_level >= 3:  # what SSHLogger.packet itself checks, read each time
            formatted(self, msg, pkttype, pktid, packet, note)
    _log_packet.gputui_quiet = True
    cls._log_packet = _log_packet


_import()
quiet_packet_log(sys.modules["asyncssh.packet"], sys.modules["asyncssh.logging"].SSHLogger)
