"""Box text for the app: a `rich.text.Text` built from `tui.core.text.boxtext.segments`, so it
is never parsed as markup (`[/]`, `[@click=app.quit]` stay literal) and control
characters show as dim escapes instead of reaching the terminal.

Widgets put box strings on screen only through `box_text` (or `join` for a line that
mixes our own styled words with box text); `notify_text` is for `App.notify`, which
parses markup unless told not to.
"""

import re

from rich.cells import cell_len
from rich.text import Text

from tui.core.text.boxtext import ELLIPSIS, as_text, segments, visible

ESCAPE_STYLE = "reverse dim"
SGR = re.compile(r"\x1b\[[0-9;:]*m")  # colours and bold: the only escapes a preview keeps


def box_text(value, style="", limit=None, keep_newlines=False) -> Text:
    """One box string as Text; escapes are shown in ESCAPE_STYLE. `limit` counts terminal
    columns (a Chinese character takes two), so a cut always ends in '…' where it shows."""
    t = Text(style=style, no_wrap=False)
    parts = segments(value, keep_newlines)
    if limit is not None and sum(cell_len(p) for p, _ in parts) > limit:
        if limit <= 0:
            return t
        used = 0
        for part, is_escape in parts:  # cut at limit - 1, '…' last; never half an escape
            if used + cell_len(part) > limit - 1:
                if not is_escape:
                    for ch in part:  # a double-width character straddling the edge is left out
                        if used + cell_len(ch) > limit - 1:
                            break
                        t.append(ch)
                        used += cell_len(ch)
                t.append(ELLIPSIS)
                return t
            t.append(part, style=ESCAPE_STYLE if is_escape else "")
            used += cell_len(part)
    for part, is_escape in parts:
        t.append(part, style=ESCAPE_STYLE if is_escape else "")
    return t


def join(*pieces) -> Text:
    """A line from pieces: Text is used as it is, (str, style) is our own styled text,
    and a plain str is box text (made visible)."""
    t = Text()
    for p in pieces:
        if isinstance(p, Text):
            t.append_text(p)
        elif isinstance(p, tuple):
            t.append(visible(p[0], keep_newlines=True), style=p[1])
        else:
            t.append_text(box_text(p, keep_newlines=True))
    return t


def ansi_text(value) -> Text:
    """Terminal output from the box (a tmux pane) with its colours: SGR sequences become
    styles; every other escape (OSC 52, clear screen, cursor moves) is shown, not obeyed."""
    text = as_text(value)
    out, pos = [], 0
    for m in SGR.finditer(text):
        out.append(visible(text[pos:m.start()], keep_newlines=True))
        out.append(m.group())
        pos = m.end()
    out.append(visible(text[pos:], keep_newlines=True))
    return Text.from_ansi("".join(out))


def plain(value, limit=None) -> str:
    """For Textual APIs that take a str and do NOT parse markup (Input values, titles)."""
    return visible(value, limit=limit)
