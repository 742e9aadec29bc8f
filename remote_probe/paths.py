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
        chosen = _chosen_runtime_dir(state_dir)
        if chosen:
            return chosen
        import hashlib  # here: it maps libcrypto (~4 MB) into every attach bridge otherwise
        digest = hashlib.sha256(os.fsencode(state_dir)).hexdigest()[:16]
        path = "/tmp/gputui-%d-%s" % (os.getuid(), digest)
    return path


CHOICE_FILE = "run-dir"  # in the (private) state dir: the /tmp runtime dir picked instead


def _chosen_runtime_dir(state_dir):
    try:
        with open(os.path.join(state_dir, CHOICE_FILE)) as f:
            chosen = f.read().strip()
    except (OSError, UnicodeDecodeError):
        return None
    prefix = "/tmp/gputui-%d-" % os.getuid()
    if chosen.startswith(prefix) and "/" not in chosen[len(prefix):] and len(chosen) < 60:
        return chosen
    return None


def ensure_runtime_dir(state_dir):
    """The runtime dir, created and checked (ensure_private_dir). When the predictable /tmp
    name of a long state dir is taken by someone else (a squatter's directory or symlink),
    an unpredictable one is made instead (mkdtemp: O_EXCL, 0700) and remembered in the
    state dir, which attach and the daemon it spawns both read. -> (path, note or None)."""
    path = runtime_dir(state_dir)
    try:
        return ensure_private_dir(path), None
    except UnsafePath as exc:
        if not path.startswith("/tmp/"):
            raise
        why = str(exc)
    import tempfile
    fresh = tempfile.mkdtemp(prefix="gputui-%d-" % os.getuid(), dir="/tmp")
    ensure_private_dir(fresh)
    tmp = os.path.join(state_dir, CHOICE_FILE + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(fresh + "\n")
    os.replace(tmp, os.path.join(state_dir, CHOICE_FILE))
    return fresh, "%s; using %s instead" % (why.replace("gputui probe: ", "", 1), fresh)


def socket_path(state_dir):
    return os.path.join(runtime_dir(state_dir), "probe.sock")


class UnsafePath(SystemExit):
    """A directory or socket gputui would use on the box is not safe: a symlink or a
    directory another user owns, a parent another user can write. str() says which and why.
    A SystemExit, so the daemon exits with the message; attach turns it into an error line."""


def _who(uid):
    try:
        import pwd
        return "%s (uid %d)" % (pwd.getpwuid(uid).pw_name, uid)
    except (ImportError, KeyError):
        return "uid %d" % uid


def path_problem(path, uid=None):
    """Why the directory `path` cannot hold gputui's private files, or None when it can.

    Walked one component at a time with lstat, from /: a symlink is followed only when it
    belongs to root or to us; each directory on the way must belong to root or to us and
    not be writable by other users unless sticky (/tmp: nobody can rename or delete what
    we own there); the last must be ours and writable by nobody else. Then nobody else can swap anything under it
    between this check and its use. Self-contained (its own imports): the start script
    runs this same source before it trusts a directory (tui/remote/bootstrap.py).
    """
    import os
    import stat
    uid = os.getuid() if uid is None else uid
    gid = os.getgid()
    pending = [p for p in os.path.abspath(path).split("/") if p]
    cur, hops = "/", 0
    while pending:
        name = pending.pop(0)
        if name == ".":
            continue
        if name == "..":
            cur = os.path.dirname(cur)
            continue
        here = os.path.join(cur, name)
        try:
            st = os.lstat(here)
        except OSError as exc:
            return "%s: %s" % (here, exc.strerror or exc)
        if stat.S_ISLNK(st.st_mode):
            if st.st_uid not in (0, uid):
                return "%s is a symbolic link owned by %s" % (here, _who(st.st_uid))
            hops += 1
            if hops > 40:
                return "%s: too many levels of symbolic links" % here
            target = os.readlink(here)
            if target.startswith("/"):
                cur = "/"
            pending = [p for p in target.split("/") if p] + pending
            continue
        if not stat.S_ISDIR(st.st_mode):
            return "%s is not a directory" % here
        last = not pending
        if st.st_uid != uid and (last or st.st_uid != 0):
            return "%s belongs to %s" % (here, _who(st.st_uid))
        others_write = st.st_mode & 0o002 or (st.st_mode & 0o020 and st.st_gid != gid)
        # a sticky parent (/tmp) is fine; as the directory itself it is shared: others may
        # already have put names in it
        if others_write and (last or not st.st_mode & stat.S_ISVTX):
            return "%s can be written by other users" % here
        cur = here
    return None


def ensure_private_dir(path):
    """Create `path` (0700, parents too) or check it, race-free: mkdir never follows a
    symlink and fails on an existing name; then the whole chain is checked (path_problem)
    and the directory itself is opened with O_NOFOLLOW, its owner read from that fd and
    its mode narrowed to 0700 through it. Raises UnsafePath, naming the path and the owner.

    This is also what protects the direct path (sshd's streamlocal forwarding connects the
    laptop to the socket; nobody on the box can check that peer): the socket lives in a
    directory chain only we own and only we can write, verified here when it is created.
    """
    path = os.path.abspath(path)
    missing = []
    head = path
    while not os.path.lexists(head):
        missing.append(head)
        head = os.path.dirname(head)
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            pass  # made meanwhile (by another attach, or not): checked below
        except OSError as exc:
            raise UnsafePath("gputui probe: cannot create %s: %s" % (d, exc.strerror or exc))
    why = path_problem(path)
    if why:
        raise UnsafePath("gputui probe: %s; refusing to use it (remove it, or choose another "
                         "--remote-dir)" % why)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0))
    try:
        st = os.fstat(fd)
        if st.st_uid != os.getuid():
            raise UnsafePath("gputui probe: %s belongs to %s; refusing to use it"
                             % (path, _who(st.st_uid)))
        if st.st_mode & 0o077:
            os.fchmod(fd, 0o700)
    finally:
        os.close(fd)
    return path


def lock_path(state_dir):
    """The daemon's lock: in the state dir, not in run/, so a `rm -rf run/` (a /tmp cleaner,
    a hasty user) cannot take it away from a live daemon and let a second one start."""
    return os.path.join(state_dir, "daemon.lock")


def peer_uid(sock):
    """The uid of the process at the other end of a unix socket (SO_PEERCRED), or None
    where the platform cannot say."""
    import socket
    import struct
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        return None
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, opt, struct.calcsize("3i"))
    except OSError:
        return None
    return struct.unpack("3i", creds)[1]


def check_daemon_peer(sock, path):
    """The daemon behind `sock` must run as us: raise UnsafePath otherwise."""
    uid = peer_uid(sock)
    if uid is not None and uid != os.getuid():
        sock.close()
        raise UnsafePath("gputui probe: the socket %s is served by %s, not by you; refusing "
                         "to talk to it" % (path, _who(uid)))


def refuse_stranger(writer, log=None):
    """The daemon's side: True (and the connection closed) when the client is another
    user. Root is let in: it could read our files anyway."""
    sock = writer.get_extra_info("socket")
    uid = peer_uid(sock) if sock is not None else None
    if uid is None or uid in (0, os.getuid()):
        return False
    if log is not None:
        log.warning("refused a client running as %s", _who(uid))
    writer.close()
    return True


def self_command():
    """argv that runs this probe again: the zipapp, or ``-m remote_probe`` from source."""
    main = os.path.abspath(sys.argv[0])
    if main.endswith(".pyz"):
        return [sys.executable, main], None
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = pkg_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return [sys.executable, "-m", "remote_probe"], env
