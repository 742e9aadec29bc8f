"""``probe attach``: make sure the daemon runs, then bridge stdio <-> its unix socket.

This is what the SSH exec channel (or the raw terminal of a PTY-only proxy) runs. When
the channel dies (dropped SSH, closed laptop) only this bridge exits; the daemon and its
history stay. File chunk reads (``filexfer``) are answered by the bridge itself, and a
failure before the daemon's hello is written as an error line too, since over a terminal
neither stderr nor the exit status may reach the client.
"""

import json
import os
import selectors
import socket
import subprocess
import sys
import time

from remote_probe import wire
from remote_probe.files import filexfer
from remote_probe.autostop.policy import STATE_FILE, armed_in
from remote_probe.autostop.supervise import stop_supervisor
from remote_probe.paths import (UnsafePath, check_daemon_peer, ensure_private_dir, ensure_runtime_dir,
                                self_command, socket_path)
from remote_probe.wire import EXIT_USAGE, config_key

SPAWN_WAIT = 10.0  # for a daemon this attach cannot see (another attach or the supervisor started it)
# for the daemon this attach started, while it lives: on a box whose cores are all busy (eight
# dataloader workers, a pip build) its imports and first bind can take well over 10 s. Under
# the laptop's HELLO_TIMEOUT (45 s), so the laptop hears why rather than a timeout.
SPAWN_PATIENCE = 35.0


def spawn_daemon(state_dir, simulate):
    """Start the daemon in its own session so it outlives this SSH channel; its Popen."""
    argv, env = self_command()
    argv = argv + ["daemon", "--state-dir", state_dir]
    if simulate:
        argv += ["--simulate", simulate]
    log_path = os.path.join(state_dir, "daemon.log")
    try:
        if os.path.getsize(log_path) > 1 << 20:
            os.replace(log_path, log_path + ".1")
    except OSError:
        pass
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0),
                 0o600)
    with os.fdopen(fd, "ab") as log:
        return subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                         cwd="/", close_fds=True, start_new_session=True)


def connect(path):
    """A socket to the daemon at `path`, or None if nothing listens. UnsafePath when the
    process listening there is another user's (SO_PEERCRED): never talk to it."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    check_daemon_peer(sock, path)
    return sock


def inode(path):
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def read_line(sock, timeout=5.0):
    """The daemon's hello line (and whatever bytes came after it)."""
    sock.settimeout(timeout)
    buf = b""
    while b"\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            break
        buf += chunk
        if len(buf) > wire.MAX_LINE:  # not a daemon's hello: something else listens here
            raise wire.ProtocolError("no hello within %d bytes" % wire.MAX_LINE)
    sock.settimeout(None)
    line, _, rest = buf.partition(b"\n")
    return line, rest


def stop_daemon(sock, path, only_if_unused=False):
    """Stop the daemon behind `sock`. -> None, or the daemon's reason for staying
    (with only_if_unused it refuses while another live session uses it)."""
    try:
        sock.sendall(wire.encode({"type": wire.SHUTDOWN, "id": "attach",
                                  "only_if_unused": only_if_unused}))
        sock.settimeout(3)
        buf = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            buf += chunk
            for line in buf.split(b"\n")[:-1]:
                try:
                    msg = wire.decode(line)
                except wire.ProtocolError:
                    continue
                if msg.get("id") == "attach" and msg["type"] == wire.ERROR:
                    sock.close()
                    return str(msg.get("error") or "the daemon refused to stop")
            buf = buf[buf.rfind(b"\n") + 1:]
    except OSError:
        pass
    sock.close()
    deadline = time.time() + 5
    while os.path.exists(path) and time.time() < deadline:
        time.sleep(0.05)
    return None


IN_USE_PATIENCE = 2.0  # seconds a daemon in use by another session is asked again


class DaemonInUse(Exception):
    """The daemon runs other settings for a live session; it is not ours to replace."""


class DaemonDied(Exception):
    """The daemon this attach started exited before it answered; args[0] is its status."""


class DaemonSilent(Exception):
    """No daemon answered in time; args[0] is how long attach waited, in seconds."""


def daemon_connection(state_dir, simulate):
    """A socket to a daemon running the wanted config, and its hello line. DaemonDied or
    DaemonSilent when none answers."""
    ensure_private_dir(state_dir)
    _, note = ensure_runtime_dir(state_dir)
    if note:
        print("gputui probe: %s" % note, file=sys.stderr)
    path = socket_path(state_dir)
    want = config_key(simulate)
    spawned = False
    child = None  # the daemon this attach started, while it may still be starting
    stranger = None  # inode of a socket path that answered without a daemon's hello
    refused_since = None  # when the daemon of other settings first said it is in use
    started = time.time()
    deadline = started + SPAWN_WAIT
    while True:
        child, waiting = keep_waiting(child, started, deadline)
        if not waiting:
            break
        if stranger is not None and inode(path) == stranger:
            time.sleep(0.05)  # until our daemon has taken the path over
            continue
        sock = connect(path)
        if sock is None:
            if not spawned:
                child = spawn_daemon(state_dir, simulate)
                spawned = True
            time.sleep(0.05)
            continue
        try:
            line, rest = read_line(sock)
            hello = wire.decode(line)
        except (OSError, wire.ProtocolError):
            sock.close()
            stranger = inode(path)
            if not spawned:
                # Not a daemon's hello (another program took the path, or a daemon that
                # hangs): start ours. It takes the lock if it is free and then the path;
                # while a live daemon holds the lock, the new one just exits.
                child = spawn_daemon(state_dir, simulate)
                spawned = True
            time.sleep(0.1)
            continue
        if hello.get("config") != want:
            # Another version or another backend (a new gputui, or --simulate changed):
            # replace it, like mitogen, so the box always runs the client's own code -
            # but not while a live session uses it: two clients with different settings
            # would replace each other's daemon in a loop.
            refused = stop_daemon(sock, path, only_if_unused=True)
            if refused:
                # a session that has just ended (its bridge exited a moment ago) may still be
                # counted until the daemon reads its EOF: ask again for a short while
                refused_since = refused_since or time.time()
                if time.time() - refused_since < IN_USE_PATIENCE:
                    time.sleep(0.2)
                    continue
                raise DaemonInUse(refused)
            # its autostop watcher would start the old one again; the new daemon starts
            # its own while autostop stays armed
            stop_supervisor(state_dir)
            spawned = False
            continue
        return sock, line + b"\n" + rest
    if child is not None and child.returncode:
        raise DaemonDied(child.returncode)
    raise DaemonSilent(time.time() - started)


def keep_waiting(child, started, deadline, now=None):
    """(child, whether to wait on) for daemon_connection. The daemon we started is waited
    for while it lives (up to SPAWN_PATIENCE); once it has exited, a status 0 means another
    daemon held the lock (that one is waited for until the deadline) and any other status
    means it cannot start: stop now, its log says why."""
    now = time.time() if now is None else now
    if child is not None and child.poll() is not None:
        if child.returncode:
            return child, False
        child = None
    if now < deadline:
        return child, True
    return child, child is not None and now < started + SPAWN_PATIENCE


class _Out:
    """stdout that takes the daemon's bytes and our own reply lines without splitting
    a line: the daemon's unfinished last line is held until its newline arrives."""

    def __init__(self, stream):
        self.stream = stream
        self.tail = b""
        self.held = []

    def daemon(self, data):
        data = self.tail + data
        cut = data.rfind(b"\n") + 1
        self.tail = data[cut:]
        self.stream.write(data[:cut])
        if self.held and not self.tail:
            self.stream.write(b"".join(self.held))
            self.held = []
        self.stream.flush()

    def own(self, line):
        if self.tail:
            self.held.append(line)
            return
        self.stream.write(line)
        self.stream.flush()


def bridge(sock, first):
    """Copy stdin -> socket and socket -> stdout until either side closes.

    File reads (``filexfer``) are answered here instead of by the daemon: over a
    PTY-only proxy there is no SFTP, and a chunk read needs no daemon state.
    """
    out = _Out(sys.stdout.buffer)
    out.daemon(first)
    sel = selectors.DefaultSelector()
    stdin_fd = sys.stdin.fileno()
    sel.register(stdin_fd, selectors.EVENT_READ, "stdin")
    sel.register(sock, selectors.EVENT_READ, "sock")
    pending = b""
    while True:
        for key, _ in sel.select():
            if key.data == "stdin":
                try:
                    data = os.read(stdin_fd, 65536)
                except OSError:  # a terminal that hung up reads EIO
                    data = b""
                if not data:
                    return wire.EXIT_OK  # the client went away
                pending += data
                cut = pending.rfind(b"\n") + 1
                if not cut:
                    continue
                lines, pending = pending[:cut], pending[cut:]
                if filexfer.REQUEST_MARK not in lines:
                    sock.sendall(lines)
                    continue
                forward = []
                for line in lines.splitlines(True):
                    req = filexfer.parse_request(line)
                    if req is None:
                        forward.append(line)
                    else:
                        out.own(filexfer.encode(filexfer.handle(req)))
                if forward:
                    sock.sendall(b"".join(forward))
            else:
                data = sock.recv(65536)
                if not data:
                    print("gputui probe: the daemon closed the connection", file=sys.stderr)
                    return wire.EXIT_DAEMON_UNREACHABLE
                out.daemon(data)


def fail_before_hello(code, text):
    """Say why attach cannot start, on stderr and as an error line the client reads
    (over a terminal transport, stderr and the exit status may never arrive)."""
    print("gputui probe: %s" % text, file=sys.stderr)
    try:
        sys.stdout.buffer.write(wire.encode({"type": wire.ERROR, "id": None,
                                             "error": text, "exit": code}))
        sys.stdout.buffer.flush()
    except OSError:
        pass
    return code


def check_scenario(simulate):
    """None if the scenario exists, else why not: an unknown one would only make the
    daemon die at start, and the client would wait for it again and again."""
    if not simulate:
        return None
    from remote_probe.backends import BackendError
    from remote_probe.backends.sim import load_scenario
    try:
        load_scenario(simulate)
    except BackendError as exc:
        return str(exc)
    return None


def log_tail(state_dir):
    """The end of the daemon's log, for a message that says why it did not start."""
    try:
        with open(os.path.join(state_dir, "daemon.log"), "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 600))
            tail = f.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""
    return ("Its log ends: " + tail) if tail else ""


def run_attach(state_dir, simulate=None):
    problem = check_scenario(simulate)
    if problem:
        return fail_before_hello(EXIT_USAGE, problem)
    try:
        sock, first = daemon_connection(state_dir, simulate)
    except DaemonInUse as exc:
        return fail_before_hello(wire.EXIT_DAEMON_IN_USE, str(exc))
    except UnsafePath as exc:  # retrying cannot help: the user must remove it
        return fail_before_hello(EXIT_USAGE, str(exc).replace("gputui probe: ", "", 1))
    except DaemonDied as exc:
        return fail_before_hello(wire.EXIT_DAEMON_UNREACHABLE, "the daemon exited (status %s) "
                                 "before it answered. %s" % (exc.args[0], log_tail(state_dir)))
    except DaemonSilent as exc:
        return fail_before_hello(wire.EXIT_DAEMON_UNREACHABLE, "the daemon did not start within "
                                 "%.0f s. %s" % (exc.args[0], log_tail(state_dir)))
    try:
        return bridge(sock, first)
    except (BrokenPipeError, ConnectionError):
        return wire.EXIT_OK
    finally:
        sock.close()


def run_once(state_dir, simulate=None):
    """Two ticks one second apart (CPU % needs a delta) printed as JSON; no daemon."""
    from remote_probe.backends import select_backend
    from remote_probe.sampler import Sampler
    backend, notes = select_backend(simulate, state_dir=state_dir)
    try:
        sampler = Sampler(backend)
        sampler.tick()
        time.sleep(1.0)
        sample = sampler.tick()
        inv = sampler.inventory()
        inv["notes"] = notes
        pids = wire.proc_pids(sample)
        print(json.dumps({"inventory": inv, "sample": sample,
                          "proc_meta": sampler.proc_meta(pids)}, indent=1))
    finally:
        backend.close()
    return 0


def cancel_autostop(state_dir):
    """`cancel-autostop` on the box: tell the daemon, or clear the armed file if it is down.
    Says so when nothing was armed here: a cancel run against another probe's directory must
    not read as "this box will not be stopped"."""
    was_armed = armed_in(state_dir) is not None
    sock = connect(socket_path(state_dir))
    if sock is not None:
        try:
            read_line(sock)
            sock.sendall(wire.encode({"type": wire.AUTOSTOP_DISARM, "id": 1,
                                      "reason": "cancelled on the box"}))
            line, _ = read_line(sock)
            while line and json.loads(line.decode()).get("type") != wire.REPLY:
                line, _ = read_line(sock)
        except (OSError, ValueError):
            pass
        finally:
            sock.close()
    try:
        os.unlink(os.path.join(state_dir, STATE_FILE))
    except OSError:
        pass
    if not was_armed:
        print("gputui: autostop was not armed by the probe in %s; nothing cancelled." % state_dir)
        return 0
    print("gputui: autostop cancelled; this box will not be stopped.")
    return 0
