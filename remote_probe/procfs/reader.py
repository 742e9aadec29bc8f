"""Reading /proc and /sys files: the one primitive every procfs module uses."""

import os
import time

# Where /proc is. GPUTUI_PROC_ROOT points it elsewhere: a test hides /proc (an empty dir) to
# play a laptop without one (macOS runs the demo's probe), and every reader must then degrade
# to "not available", never crash. Read once at import: the daemon inherits it.
PROC = os.environ.get("GPUTUI_PROC_ROOT") or "/proc"
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PAGE_MIB = (os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096) / 1048576.0


def proc_available():
    """Whether there is a /proc to read (none on macOS, where the demo's probe runs)."""
    return os.path.exists(PROC + "/self")


def read_text(path, default=""):
    """A whole (small, /proc or /sys) file as text. Plain os.read: a third of the cost of
    open() with its buffer and decoder layers, and the probe reads hundreds a second."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return default
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError:
        return default
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")


def pid_alive(pid):
    """Whether a process with this pid exists (a zombie counts), without /proc: signal 0
    asks the kernel (EPERM: it exists, it is another user's). For the liveness checks that
    must also work where there is no /proc (macOS runs the demo's probe)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def pid_state(pid):
    """The one-letter state /proc gives a process ("R", "S", "Z"...), or None where /proc
    cannot say (gone, or no /proc at all)."""
    text = read_text("%s/%d/stat" % (PROC, pid), None)
    if not text or ")" not in text:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return fields[0] if fields else None


def pid_gone(pid):
    """Gone, or a zombie (exited, not reaped by an init that does not reap: as good as
    gone). Without /proc a zombie cannot be told from a live process and reads as alive."""
    return not pid_alive(pid) or pid_state(pid) == "Z"


def wait_gone(pid, timeout):
    """Until pid_gone(pid) or `timeout` seconds have passed. -> whether it went."""
    for _ in range(max(1, int(timeout / 0.05))):
        if pid_gone(pid):
            return True
        time.sleep(0.05)
    return pid_gone(pid)
