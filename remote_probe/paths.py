"""Where the probe keeps its socket and lock, and how it runs itself again.

Its own small module so that `attach` (run on every connect, to bridge stdio to the daemon's
socket) imports a few stdlib modules, not the daemon with asyncio and logging (issue 12)."""

import os
import sys


def default_state_dir():
    return os.path.join(os.path.expanduser("~"), ".cache", "gputui")


def runtime_dir(state_dir):
    """Where the socket and lock live.

    Under the state dir rather than $XDG_RUNTIME_DIR: logind deletes the latter when the
    user's last SSH session ends, which would orphan a daemon meant to outlive it.
    Unix socket paths are limited to ~107 bytes, so very deep homes fall back to /tmp,
    under a name that is a digest of the state dir: the same in every process (attach and
    the daemon it spawns must agree; ``hash()`` of a str differs per process).
    """
    path = os.path.join(state_dir, "run")
    if len(os.fsencode(os.path.join(path, "probe.sock"))) > 100:
        import hashlib  # here: it maps libcrypto (~4 MB) into every attach bridge otherwise
        digest = hashlib.sha256(os.fsencode(state_dir)).hexdigest()[:16]
        path = "/tmp/gputui-%d-%s" % (os.getuid(), digest)
    return path


def socket_path(state_dir):
    return os.path.join(runtime_dir(state_dir), "probe.sock")


def ensure_private_dir(path):
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.stat(path)
    if st.st_uid != os.getuid():
        raise SystemExit("gputui probe: %s is owned by another user; refusing to use it" % path)
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)


def self_command():
    """argv that runs this probe again: the zipapp, or ``-m remote_probe`` from source."""
    main = os.path.abspath(sys.argv[0])
    if main.endswith(".pyz"):
        return [sys.executable, main], None
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = pkg_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return [sys.executable, "-m", "remote_probe"], env
