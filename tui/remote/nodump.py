"""Keep a held password out of core dumps and out of other processes' reach.

gputui keeps the password that worked in memory for reconnects (ssh.Credentials). A crash
with core dumps enabled would write it to disk, and a dumpable process lets same-user
tools read its memory (/proc/PID/mem, ptrace where allowed). So once a password is held:
RLIMIT_CORE 0, and on Linux prctl(PR_SET_DUMPABLE, 0). Elsewhere the second is a no-op.
"""

import sys

PR_GET_DUMPABLE, PR_SET_DUMPABLE = 3, 4


def _libc():
    import ctypes
    return ctypes.CDLL(None, use_errno=True)


def hold_secrets():
    """Core dumps off and the process non-dumpable; -> what was done ("core", "dumpable")."""
    done = []
    try:
        import resource
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        done.append("core")
    except (ImportError, ValueError, OSError):
        pass
    if sys.platform.startswith("linux"):
        try:
            if _libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0:
                done.append("dumpable")
        except (OSError, AttributeError):
            pass
    return done


def is_dumpable():
    """prctl(PR_GET_DUMPABLE) on Linux (1 or 0); None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return _libc().prctl(PR_GET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        return None
