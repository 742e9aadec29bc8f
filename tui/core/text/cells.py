"""Text in terminal columns: the one padder for every plain table gputui prints or draws.

`"%-12s"` and `str.ljust` count characters; a terminal counts columns: a CJK character
takes two, a combining mark none. Box text may also carry control characters, which take
no column but would act on the terminal: they are shown as visible escapes first (the
boxtext rule), so what is padded is what the terminal shows."""

import unicodedata
from typing import Iterable, List, Tuple

from rich.cells import cell_len  # terminal columns: CJK characters take two (issue 14)

from tui.core.text.boxtext import visible

__all__ = ["cell_len", "columns", "line_breaks", "pad"]


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


# Chinese punctuation that never starts a line, and openers that never end one
NO_LINE_START = set("，。、；：？！）」』】》〉…·%,.;:?!)]}")
NO_LINE_END = set("（「『【《〈([{")


def _wide(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in ("W", "F")


def line_breaks(text: str, width: int) -> List[int]:
    """Where to cut `text` (one line, no newline) so that each piece takes at most `width`
    columns: at spaces, and between Chinese characters (which have no spaces between words),
    never before a closing punctuation mark nor after an opening one. A word wider than the
    line is cut where it must be. The offsets are where each new line starts; the spaces at a
    cut stay at the end of the line before it, for the caller to strip."""
    width = max(1, width)
    cuts: List[int] = []
    start, used, last = 0, 0, -1  # this line's start, its columns, the latest place to cut
    for i, ch in enumerate(text):
        if i > start and not ch.isspace():
            prev = text[i - 1]
            if (prev.isspace() or _wide(ch) or _wide(prev)) and ch not in NO_LINE_START \
                    and prev not in NO_LINE_END:
                last = i
        w = cell_len(ch)
        if used + w > width and not ch.isspace() and i > start:
            cut = last if last > start else i
            cuts.append(cut)
            start, last = cut, -1
            used = cell_len(text[cut:i])
        used += w
    return cuts
