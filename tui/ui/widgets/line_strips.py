"""One line of rich Text drawn straight to a Strip, as Textual's Content would draw it (issue 25).

A panel line that fits its width is, in Textual, `Content.from_rich_text` -> `_FormattedLine
.to_strip`: each span's style converted, the spans' stack combined at every boundary, and one
new rich Style per segment carrying its (x, y) offset for mouse selection. A dashboard line
changes its figures every second but not its styles or their places, so here the same
arithmetic runs with its results kept: converted span styles, combined stacks and offset
styles are looked up, not built again. The segments are equal to Textual's, offsets included
(tests/unit/tui/ui/widgets/test_line_panel.py compares them with a Static's)."""

from operator import itemgetter
from typing import Dict, List, Optional

from rich.cells import cell_len
from rich.segment import Segment
from rich.text import Text
from textual.strip import Strip
from textual.style import Style

try:  # what Content() does to its text; a line it would change takes Textual's own path
    from textual.content import _strip_control_codes
except ImportError:  # another Textual: no fast path
    _strip_control_codes = None

_BY_POSITION = itemgetter(0, 1)
_LIMIT = 8192  # cached styles per panel before the caches start again (a resize, a theme)


class LineDrawer:
    """Draws lines of one widget at one base style; None when a line needs Textual's path
    (wider than `width`, a tab, control codes, a span style that is not a string)."""

    def __init__(self, widget, base: Style, width: int) -> None:
        self.base, self.width = base, width
        app = widget.app
        self._console_style = app.console.get_style
        self._theme = app.ansi_theme
        self._widget_style = widget._get_style
        self._spans: Dict = {}      # span style string -> textual Style (from_rich_text's)
        self._stacks: Dict = {}     # tuple of span keys -> base + the stack, combined
        self._offset: Dict = {}     # (stack key, x, y) -> rich Style with the offset meta

    def _span_style(self, key) -> Style:
        style = self._spans.get(key)
        if style is None:
            if isinstance(key, tuple):  # the Text's own style: Content keeps it a string
                style = self._widget_style(key[0])
            else:
                style = Style.from_rich_style(self._console_style(key), self._theme)
            self._spans[key] = style
        return style

    def _stack_style(self, key: tuple) -> Style:
        style = self._stacks.get(key)
        if style is None:
            # Content.render: the base, then the spans in their order, combined; to_strip adds
            # the base once more
            style = self.base + Style.combine([self.base] + [self._span_style(k) for k in key])
            self._stacks[key] = style
        return style

    def _rich(self, key: tuple, x: int, y: int):
        cached = self._offset.get((key, x, y))
        if cached is None:
            if len(self._offset) > _LIMIT:
                self._offset.clear()
            cached = self._offset[(key, x, y)] = self._stack_style(key).rich_style_with_offset(x, y)
        return cached

    def draw(self, line: Text, y: int) -> Optional[Strip]:
        plain = line.plain
        if _strip_control_codes is None or "\t" in plain or _strip_control_codes(plain) != plain:
            return None
        length = cell_len(plain)
        if length > self.width:
            return None
        if not line.style:
            strip = self._draw_runs(line, plain, length, y)
            if strip is not None:
                return strip
        keys: List = []
        starts: List = []
        if line.style and plain:  # stylize_before: a span under the others, if the text is not empty
            if not isinstance(line.style, str) or "@" in line.style:  # Textual's parse makes @click meta
                return None
            keys.append((line.style,))
            starts.append((0, len(plain)))
        for start, end, style in line._spans:
            if not isinstance(style, str):
                return None
            keys.append(style)
            starts.append((start, end))
        if not keys:
            return Strip([Segment(plain, self._rich((), 0, y))], length)
        # Content.render's walk: enter/leave events sorted by offset, leaving after entering
        events = [(0, False, 0)]
        events += [(s, False, i) for i, (s, _e) in enumerate(starts, 1)]
        events += [(e, True, i) for i, (_s, e) in enumerate(starts, 1)]
        events.append((len(plain), True, 0))
        events.sort(key=_BY_POSITION)
        stack: List[int] = []
        segments = []
        x = 0
        for (offset, leaving, index), (next_offset, _, _) in zip(events, events[1:]):
            if leaving:
                stack.remove(index)
            else:
                stack.append(index)
            if next_offset > offset:
                text = plain[offset:next_offset]
                key = tuple(keys[i - 1] for i in sorted(stack) if i)
                segments.append(Segment(text, self._rich(key, x, y)))
                x += len(text)
        return Strip(segments, length)

    def _draw_runs(self, line: Text, plain: str, length: int, y: int) -> Optional[Strip]:
        """draw() for the usual panel line: spans in order, none overlapping (styled() and
        Text.append make them so). The stack walk then gives each span its own style and
        the gaps the base: the same segments, found in one pass; None if the spans are not so."""
        rich = self._rich
        segments = []
        x = 0
        for start, end, style in line._spans:
            if start < x or end < start or end > len(plain) or not isinstance(style, str):
                return None
            if start > x:
                segments.append(Segment(plain[x:start], rich((), x, y)))
            if end > start:
                segments.append(Segment(plain[start:end], rich((style,), start, y)))
                x = end
        if x < len(plain) or not segments:
            segments.append(Segment(plain[x:], rich((), x, y)))
        return Strip(segments, length)
