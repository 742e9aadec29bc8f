"""Repainting a panel once a second without re-laying out the whole screen (issue 12)."""

import io

from rich.console import Console
from rich.text import Text


def wrapped_rows(plain, width):
    """Terminal rows `plain` takes in `width` columns, wrapped at words as the panel does
    (0: unknown, one row per line)."""
    if width <= 0:
        return plain.count("\n")
    return len(Text(plain).wrap(_MEASURE, width))


_MEASURE = Console(width=1000, color_system=None, file=io.StringIO())  # measuring only


def update_text(widget, text):
    """Show `text` in a Static. Unchanged text costs nothing; a re-layout of the screen is
    asked for only when the panel's line count changes (its height can change)."""
    old = getattr(widget, "_live_text", None)
    if old is not None and old == text:
        return False
    plain = text.plain if isinstance(text, Text) else str(text)
    # rows as shown: a line wider than the panel wraps, and the panel must grow for it (the
    # "autostop armed" line fell out of the billing panel when it wrapped)
    width = getattr(getattr(widget, "content_size", None), "width", 0) or 0
    lines = wrapped_rows(plain, width)
    widget._live_text = text
    widget.update(text, layout=getattr(widget, "_live_lines", None) != lines)
    widget._live_lines = lines
    return True
