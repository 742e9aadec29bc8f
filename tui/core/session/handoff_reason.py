"""Running `ssh -t …` (tmux attach, nvitop) in the real terminal, and why it failed.

The app redraws the moment ssh exits, over whatever ssh printed ("PTY allocation request
failed", "Permission denied", a changed host key): ssh's own stderr is kept in a private
temp file, and its last lines go into the message (ssh asks for passwords on /dev/tty).
The session itself (tmux, nvitop) runs on the terminal through stdout, so nothing of it is lost.
"""

import subprocess
import tempfile
from typing import List, Optional, Tuple

from tui.core.text.boxtext import visible
from tui.core.i18n import _
from tui.core.text.paste import join


def call_keeping_stderr(argv: List[str]) -> Tuple[int, str]:
    """Run argv on this terminal -> (exit status, the last lines of its stderr)."""
    with tempfile.TemporaryFile() as err:
        code = subprocess.call(argv, stderr=err)
        err.seek(0)
        said = err.read()[-4000:].decode("utf-8", "replace")
    return code, said


def handoff_failure(argv: List[str], code: Optional[int], said: str = "") -> Optional[str]:
    """The toast after a hand-off, or None when it ended well."""
    if code in (0, None):
        return None
    lines = [ln.strip() for ln in said.splitlines() if ln.strip()]
    reason = "; ".join(lines[-2:])
    text = _("`%s` exited with %s") % (join(argv), code)
    return text + (": " + visible(reason, limit=300) if reason else "")
