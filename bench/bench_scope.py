"""Everything a bench starts (temp dirs and files, servers, box users) is stopped and removed on
the way out, also on Ctrl-C, SIGTERM or SIGHUP (issue 26).

    from bench_scope import guarded, mkdtemp, on_exit, popen_group

    def main():
        with guarded():
            work = mkdtemp("gputui-bench-x-")   # removed on exit
            server = popen_group([...])         # its whole process group killed on exit
            on_exit(stop_sshd, box)             # run on exit, last registered first

Children started with popen_group get a session of their own, so a Ctrl-C on the terminal
reaches only the bench, which then stops them in order (a server that got the terminal's
SIGINT and then the bench's own one was interrupted half way through its own cleanup)."""

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_undo = []  # (fn, args), run last first


def _interrupted(signum, frame):
    raise KeyboardInterrupt  # unwinds through the finally blocks, like Ctrl-C


def on_exit(fn, *args):
    _undo.append((fn, args))


def mkdtemp(prefix, mode=None):
    path = tempfile.mkdtemp(prefix=prefix)
    if mode is not None:
        os.chmod(path, mode)
    on_exit(shutil.rmtree, path, True)
    return path


def _unlink(*paths):
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def temp_path(prefix, *suffixes):
    """A file name in TMPDIR; it and name+suffix for each suffix are removed on exit."""
    fd, path = tempfile.mkstemp(prefix=prefix)
    os.close(fd)
    on_exit(_unlink, path, *[path + s for s in suffixes])
    return path


def stop_group(proc, first=signal.SIGTERM, grace=10.0):
    """Ask `proc` to stop (`first`), wait up to `grace` s, then kill its whole process group."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(first)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            print("%d did not stop in %.0f s: killed" % (proc.pid, grace), file=sys.stderr)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # the server is gone; whatever it started goes too
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(5)


def popen_group(argv, first=signal.SIGTERM, grace=10.0, **kw):
    proc = subprocess.Popen(argv, start_new_session=True, **kw)
    on_exit(stop_group, proc, first, grace)
    return proc


def kill_pid(pid, grace=0.5):
    """A child started with fork (a pty): SIGTERM, then SIGKILL, reaped."""
    try:
        os.kill(pid, signal.SIGTERM)
        deadline = time.time() + grace
        while time.time() < deadline:
            if os.waitpid(pid, os.WNOHANG) != (0, 0):
                return
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def cleanup():
    """Run what on_exit registered, last first; one failure does not stop the rest."""
    while _undo:
        fn, args = _undo.pop()
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001 - keep cleaning up
            print("cleaning up (%s): %s" % (getattr(fn, "__name__", fn), e), file=sys.stderr)


@contextlib.contextmanager
def guarded():
    """The bench's body: stop signals unwind it, and everything registered is undone after."""
    old = {sig: signal.signal(sig, _interrupted) for sig in STOP_SIGNALS}
    try:
        yield
    except KeyboardInterrupt:
        print("interrupted: cleaning up", file=sys.stderr)
        raise SystemExit(130)
    finally:
        for sig in STOP_SIGNALS:  # a second signal cannot leave half of it behind
            signal.signal(sig, signal.SIG_IGN)
        cleanup()
        for sig, handler in old.items():
            signal.signal(sig, handler)
