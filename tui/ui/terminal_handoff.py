"""Give the real terminal to a program (`ssh -t HOST tmux attach`, nvitop) and take it back.

The program runs as an asyncio subprocess, so the event loop keeps serving while it has the
terminal: the box session's keepalives, and in `gputui demo` the embedded SSH server that
the program is talking to (a blocking wait there deadlocked the demo for good). Textual must
not paint meanwhile, so the wait sits inside `batch_update()` around `suspend()`.

Ctrl-C belongs to the program while it runs: the terminal is cooked again, so SIGINT reaches
the whole foreground group, gputui included; a no-op handler keeps it from killing the app
(handlers are reset on exec, so the program still gets the default). When the program fails,
its last words stay on screen until Enter: "NVML not found" is worth reading."""

import asyncio
import inspect
import os
import signal
import sys
from typing import Any, Callable, List, Optional, TextIO

from tui.core.i18n import _


def failure_prompt(argv: List[str], code: int) -> str:
    """The line under a failed program's own output."""
    name = os.path.basename(argv[0]) if argv else "?"
    return "\n" + _("[%s exited with %s — press Enter to return to gputui]") % (name, code) + " "


async def _wait_for_enter(stdin: TextIO) -> None:
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    fd = stdin.fileno()

    def readable() -> None:
        try:
            data = os.read(fd, 4096)
        except OSError:
            data = b"\n"
        if (b"\n" in data or b"\r" in data or not data) and not done.done():
            done.set_result(None)
    loop.add_reader(fd, readable)
    try:
        await done
    finally:
        loop.remove_reader(fd)


async def run_in_terminal(argv: List[str], *, stdin: Optional[TextIO] = None,
                          stdout: Optional[TextIO] = None, pause_on_failure: bool = True,
                          **kwargs: Any) -> int:
    """Run `argv` on this terminal without blocking the loop; -> its exit status (127 when it
    cannot start). With `pause_on_failure`, a non-zero exit waits for Enter first."""
    stdin = stdin or sys.__stdin__
    stdout = stdout or sys.__stdout__
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, lambda *_: None)
    try:
        try:
            child = await asyncio.create_subprocess_exec(*argv, **kwargs)
        except OSError as exc:
            stdout.write("%s: %s\n" % (argv[0] if argv else "?", exc))
            code = 127
        else:
            code = await child.wait()
        if code != 0 and pause_on_failure and stdin is not None and stdin.isatty():
            stdout.write(failure_prompt(argv, code))
            stdout.flush()
            await _wait_for_enter(stdin)
        return code
    finally:
        signal.signal(signal.SIGINT, previous)


async def default_hand_off(app: Any, argv: List[str]) -> Optional[int]:
    """The app's terminal hand-off. Textual's suspend() cannot run headless, so tests replace
    `app.hand_off_terminal`."""
    with app.batch_update():  # outermost: no paint until the driver is back
        with app.suspend():
            return await run_in_terminal(argv)


async def hand_off(app: Any, argv: List[str]) -> Optional[int]:
    """Call the app's hand-off (a test's may be a plain function)."""
    func: Callable[..., Any] = app.hand_off_terminal
    result = func(app, argv)
    if inspect.isawaitable(result):
        result = await result
    return result
