"""History graphs that scroll: a new sample shifts each row one column and draws one new
column, instead of drawing the whole history again every second (issue 25)."""

from typing import List, Sequence

from tui.core.text import format as fmt


class ScrollingGraph:
    """What `fmt.graph(history, width, height)` returns, kept between calls.

    When the newest `width` values are the previous ones and one more (one sample appended,
    the oldest dropped once the graph is full), the rows shift by one column; anything else
    (first call, resize, a gap) draws them all again."""

    def __init__(self, lo: float = 0.0, hi: float = 100.0) -> None:
        self.lo, self.hi = lo, hi
        self._shape = None
        self._values: List = []
        self._rows: List[List[str]] = []

    def _column(self, value, height: int) -> List[str]:
        """The characters of one value, top row first (fmt.graph's arithmetic)."""
        v = fmt.finite(value)
        v = self.lo if v is None else v
        lo, hi = self.lo, self.hi
        frac = 0.0 if hi <= lo else (min(hi, max(lo, v)) - lo) / (hi - lo)
        level = int(round(frac * height * 8))
        return [fmt.BLOCKS[max(0, min(8, level - row * 8))] for row in range(height - 1, -1, -1)]

    def rows(self, history: Sequence, width: int, height: int = 1) -> List[str]:
        values = list(history)[-width:] if width > 0 else []
        shape = (width, height)
        old = self._values
        n = len(values)
        # a full graph drops its oldest value; a growing one (the first minutes) keeps them all
        # and loses one column of its left padding: either way each row shifts by one
        if (shape == self._shape and n and len(old) in (n - 1, n) and (len(old) == n - 1 or n == width)
                and values[:-1] == old[len(old) - n + 1:]):
            for row, ch in zip(self._rows, self._column(values[-1], height)):
                del row[0]
                row.append(ch)
        else:
            columns = [self._column(v, height) for v in values]
            pad = [" "] * (width - len(values))
            self._rows = [pad + [col[r] for col in columns] for r in range(height)]
            self._shape = shape
        self._values = values
        return ["".join(row) for row in self._rows]
