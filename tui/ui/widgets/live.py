"""Repainting a panel once a second without re-laying out the whole screen (issue 12)."""

from rich.text import Text


def update_text(widget, text):
    """Show `text` in a Static. Unchanged text costs nothing; a re-layout of the screen is
    asked for only when the panel's line count changes (its height can change)."""
    old = getattr(widget, "_live_text", None)
    if old is not None and old == text:
        return False
    plain = text.plain if isinstance(text, Text) else str(text)
    lines = plain.count("\n")
    widget._live_text = text
    widget.update(text, layout=getattr(widget, "_live_lines", None) != lines)
    widget._live_lines = lines
    return True
