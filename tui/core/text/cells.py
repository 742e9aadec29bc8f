"""Text in terminal columns: the one padder for every plain table gputui prints or draws.

`"%-12s"` and `str.ljust` count characters; a terminal counts columns: a CJK character
takes two, a combining mark none. Box text may also carry control characters, which take
no column but would act on the terminal: they are shown as visible escapes first (the
boxtext rule), so what is padded is what the terminal shows."""

from typing import Iterable, Tuple

from rich.cells import cell_len  # terminal columns: CJK characters take two (issue 14)

from tui.core.text.boxtext import visible

__all__ = ["cell_len", "columns", "pad"]


def pad(text: object, width: int, right: bool = False) -> str:
    """`text` (any value; box text shown visibly) padded with spaces to `width` columns,
    on the right (left-aligned) or, with right=True, on the left. Never cut."""
    shown = visible(text)
    fill = " " * max(0, width - cell_len(shown))
    return fill + shown if right else shown + fill


def columns(cells: Iterable[Tuple[object, int]]) -> str:
    """One table row of (text, width) cells joined by a space; a negative width aligns
    left, as %-Ns does, a positive one right."""
    return " ".join(pad(text, abs(width), right=width >= 0) for text, width in cells)
