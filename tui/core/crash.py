"""When the app crashes: the full traceback goes to a log file, the terminal gets one
line (reason and log path) and the exit status is not 0. No textual import here."""

import os
import time
import traceback
from typing import Optional

from tui import __version__
from tui.core.text.boxtext import visible
from tui.core.config import state_dir
from tui.core.i18n import _
from tui.core.private import make_private_dir, open_private

EXIT_CRASH = 70  # EX_SOFTWARE


def crash_log_path() -> str:
    return os.path.join(state_dir(), "crash.log")


def write_crash_log(exc: BaseException, path: Optional[str] = None) -> Optional[str]:
    """Append the traceback of `exc`; returns the path, or None if it cannot be written."""
    path = path or crash_log_path()
    try:
        make_private_dir(os.path.dirname(path))
        with os.fdopen(open_private(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "a",
                       encoding="utf-8", errors="backslashreplace") as f:
            f.write("=== gputui %s crashed at %s\n" % (__version__, time.strftime("%Y-%m-%d %H:%M:%S")))
            f.write("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
            f.write("\n")
    except OSError:
        return None
    return path


def crash_line(exc: BaseException, log_path: Optional[str]) -> str:
    """One line for the terminal; the exception's text can hold box text: visible()."""
    reason = visible("%s: %s" % (type(exc).__name__, exc), limit=240)
    where = (_("the full traceback is in %s") % log_path) if log_path else _("no log could be written")
    return _("gputui crashed: %s (%s)") % (reason, where)
