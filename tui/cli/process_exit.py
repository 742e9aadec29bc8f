"""The end of a gputui process (issue 26): once the command is done, exit without tearing the
interpreter down. Freeing some 400 modules and everything they hold, which a process about to
end does not need, is ~50 ms of CPU: a fifth of a warm `gputui status`.

Only from the entry points (console script, `python -m tui`), never from main(): tests call
main() in their own process."""

import atexit
import os
import sys
import threading


def exit_code(code):
    """sys.exit's meaning of `code` as a process status: None is 0, an int is itself, anything
    else (a message) is printed and is 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def exit_now(code):
    """Exit with `code` after what an ordinary exit must still do: the atexit callbacks (the
    log's flush, executors' joins, finalizers), stdout and stderr flushed. Where a thread other
    than this one still runs, the ordinary exit instead (it waits for non-daemon threads)."""
    if threading.active_count() > 1:
        sys.exit(code)
    status = exit_code(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader that went away (`| head`), a closed stream
            pass
    os._exit(status)
