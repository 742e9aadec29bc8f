"""Repainting a panel once a second without re-laying out the whole screen (issues 12, 25).

A `LinePanel` shows a list of text lines and repaints only the lines whose text changed:
one new CPU figure repaints its line, not the panel. Each line is laid out with the same
code a Static uses (`Visual.to_strips` over the line's Content), so what is drawn is what a
Static with the joined text draws: the same wrapping, styles and snapshots."""

from typing import List, Optional, Sequence

import io
from bisect import bisect_right

from rich.console import Console
from rich.text import Span, Text
from textual.content import Content
from textual.geometry import Region, Size
from textual.strip import Strip

try:  # the one-line case of Content._wrap_and_format, built directly (tests/unit/tui/ui/widgets/test_line_panel.py)
    from textual.content import _FormattedLine
except ImportError:  # another Textual: the general path
    _FormattedLine = None
from textual.visual import Visual, visualize
from textual.widget import Widget

from tui.ui.widgets.line_strips import LineDrawer

NEWLINE = Text("\n")


def same_text(a: Text, b: Text) -> bool:
    """The same characters with the same styles (rich's == leaves the base style out)."""
    return a.plain == b.plain and a.spans == b.spans and a.style == b.style


def styled(parts) -> Text:
    """One line from (text, style) parts: what Text() and one append(text, style) per part
    make, spans and all, built in one go (append checks and measures each part; a panel line
    has up to 40 parts, every second)."""
    plain, spans, at = [], [], 0
    for text, style in parts:
        if text:
            end = at + len(text)
            if style:
                spans.append(Span(at, end, style))
            plain.append(text)
            at = end
    return Text("".join(plain), spans=spans)


def split_lines(text) -> List[Text]:
    """A panel's text as its lines, as a Static would break it (blank lines kept): what
    `text.split("\n", allow_blank=True)` gives, span for span, found with one bisect per span
    instead of rich's divide (the billing panel's 18 lines and 40 spans, every second)."""
    if not isinstance(text, Text):
        text = Text(str(text))
    plain = text.plain
    if "\n" not in plain:
        return [text]
    pieces = plain.split("\n")
    starts = []
    at = 0
    for piece in pieces:
        starts.append(at)
        at += len(piece) + 1
    style, justify, overflow = text.style, text.justify, text.overflow
    lines = [Text(piece, style=style, justify=justify, overflow=overflow) for piece in pieces]
    count = len(pieces)
    for start, end, span_style in text._spans:
        k = max(0, bisect_right(starts, start) - 1)  # the line the span starts in (or its newline)
        while k < count:
            line_start = starts[k]
            if line_start >= end:
                break
            new_start = max(start, line_start) - line_start
            new_end = min(end, line_start + len(pieces[k])) - line_start
            if new_end > new_start:
                lines[k]._spans.append(Span(new_start, new_end, span_style))
            k += 1
    return lines


def rstripped(lines: List[Text]) -> List[Text]:
    """`lines` as `split_lines` would give them back after the joined text's `rstrip()`:
    trailing blank lines dropped, the last line's trailing spaces cut (the lines are the
    caller's own, built for this call)."""
    while lines and not lines[-1].plain.rstrip():
        lines.pop()
    if not lines:
        return [Text()]
    lines[-1].rstrip()
    return lines


class LinePanel(Widget):
    """Lines of text; a changed line repaints that line only.

    `show_lines` takes the new lines; lines equal to those on screen cost a comparison.
    A line count change (the panel's height) asks for a layout; anything else repaints the
    changed lines' regions. While text is selected with the mouse the panel renders its
    whole text at once, as a Static does, so the selection spans lines correctly."""

    DEFAULT_CSS = """
    LinePanel { height: auto; }
    """

    def __init__(self, *, id: Optional[str] = None, classes: Optional[str] = None) -> None:
        super().__init__(id=id, classes=classes)
        self._lines: List[Text] = []
        self._strips: List[List[Strip]] = []  # per line, laid out at self._width
        self._flat: List[Strip] = []
        self._width = 0
        self._style = None
        self._joined: Optional[Text] = None
        self._drawer: Optional[LineDrawer] = None
        self._render_key = None  # (width, style, selecting) self._render was made for
        self._render = None

    # -- what tests and screens read ---------------------------------------------------
    @property
    def lines(self) -> List[Text]:
        return list(self._lines)

    def render(self) -> Text:
        """The whole text (what `str(panel.render())` reads in tests)."""
        if self._joined is None:
            self._joined = NEWLINE.join(self._lines) if self._lines else Text()
        return self._joined

    # -- data ----------------------------------------------------------------------
    def show_text(self, text) -> bool:
        return self.show_lines(split_lines(text))

    def show_lines(self, lines: Sequence[Text]) -> bool:
        """Show `lines`; returns whether anything changed."""
        lines = list(lines) or [Text()]
        old = self._lines
        if len(lines) == len(old) and all(same_text(a, b) for a, b in zip(lines, old)):
            return False
        self._lines = lines
        self._joined = None
        width = self._width
        if not width:  # not laid out yet: the first render lays everything out
            self.refresh(layout=True)
            return True
        old_strips = self._strips
        old_height = len(self._flat)
        strips, dirty, y = [], [], 0
        render = None
        for i, line in enumerate(lines):
            if i < len(old) and i < len(old_strips) and same_text(line, old[i]):
                rendered = old_strips[i]
            else:
                render = render or self._renderer(width)
                rendered = render(line, i)
                dirty.append((y, len(rendered)))
            strips.append(rendered)
            y += len(rendered)
        self._set_strips(strips)
        if len(self._flat) != old_height or len(lines) != len(old):
            self.refresh(layout=True)
        elif self.text_selection is not None:
            self.refresh()
        else:
            for y, height in runs(dirty):
                self.refresh(Region(0, y, width, height))
        return True

    # -- rendering -----------------------------------------------------------------
    def _renderer(self, width: int):
        """Lay out line `index` as a Static with the joined text would (`Visual.to_strips` ->
        `Content.render_strips`, no selection: see render_line): the same wrapping and styles,
        and the same (x, line) offsets in the styles' meta that mouse selection reads. What
        that looks up per call (styles, rules, link style) is looked up once here."""
        style = self.visual_style
        key = (width, style, self.screen._selecting)
        if self._render_key == key:  # what it looks up is the same until one of these changes
            return self._render
        self._render_key, self._render = key, self._make_renderer(width, style)
        return self._render

    def _make_renderer(self, width: int, style):
        wrap = getattr(Content, "_wrap_and_format", None)
        if self.styles.content_align != ("left", "top") or wrap is None:  # not for these panels
            return lambda line, index: Visual.to_strips(self, visualize(self, line, markup=False),
                                                        width, None, style)
        get_rule = self.styles.get
        rules = dict(align=get_rule("text_align", "left"), overflow=get_rule("text_overflow", "fold"),
                     no_wrap=get_rule("text_wrap", "wrap") == "nowrap", line_pad=get_rule("line_pad", 0),
                     tab_size=8, get_style=self._get_style)
        link = (self.link_style if self.auto_links and not self.is_container and not self.screen._selecting
                else None)
        console = self.app.console

        short_cut = not rules["no_wrap"] and not rules["line_pad"] and _FormattedLine is not None
        drawer = self._drawer
        # the link style changes only segments whose meta has an @click: the drawer makes none
        fast = short_cut and rules["align"] in ("left", "start")
        if fast and (drawer is None or drawer.base is not style or drawer.width != width):
            drawer = self._drawer = LineDrawer(self, style, width)  # its caches last while these do

        def render(line: Text, index: int) -> List[Strip]:
            if not width:
                return []
            if fast:
                strip = drawer.draw(line, index)
                if strip is not None:
                    return [strip]
            content = Content.from_rich_text(line, console=console)
            if short_cut and content.cell_length <= width and "\t" not in content.plain:
                # what _wrap_and_format makes of a line that fits: itself, one line, no cuts
                formatted = [_FormattedLine(self._get_style, content, width, 0, index,
                                            align=rules["align"], line_end=True)]
            else:
                formatted = content._wrap_and_format(width, **rules)
            strips = []
            for f in formatted:
                f.y = index  # the line's place in the whole text, as in the Static
                strips.append(Strip(*f.to_strip(style)))
            if link is not None:
                strips = [strip._apply_link_style(link) for strip in strips]
            return strips

        return render

    def _set_strips(self, strips: List[List[Strip]]) -> None:
        self._strips = strips
        self._flat = [s for rendered in strips for s in rendered]

    def _layout_at(self, width: int) -> None:
        # colours from CSS (the theme, the stale dashboard's opacity) are in the strips
        style = self.visual_style
        if width != self._width or style is not self._style or len(self._strips) != len(self._lines):
            self._width, self._style = width, style
            render = self._renderer(width)
            self._set_strips([render(line, i) for i, line in enumerate(self._lines)])

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if width <= 0:
            return len(self._lines)
        self._layout_at(width)
        return len(self._flat)

    def on_resize(self, _event) -> None:
        self._layout_at(self.size.width)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        style = self.visual_style
        if self.text_selection is not None:  # a Static's whole-text rendering
            whole = Visual.to_strips(self, visualize(self, self.render(), markup=False), width, None, style)
            return whole[y] if y < len(whole) else Strip.blank(width, style.rich_style)
        self._layout_at(width)
        if y < len(self._flat):
            return self._flat[y]
        return Strip.blank(width, style.rich_style)

    def get_selection(self, selection):
        return selection.extract(str(self.render())), "\n"


def runs(dirty):
    """(y, height) spans with the adjacent ones joined: one region per run of changed lines
    (each region is a message, a dirty rectangle and a cut in the compositor's chops)."""
    joined: List[List[int]] = []
    for y, height in dirty:
        if joined and joined[-1][0] + joined[-1][1] == y:
            joined[-1][1] += height
        else:
            joined.append([y, height])
    return [(y, height) for y, height in joined]


def wrapped_rows(plain, width):
    """Terminal rows `plain` takes in `width` columns, wrapped at words as the panel does
    (0: unknown, one row per line)."""
    if width <= 0:
        return plain.count("\n") + 1
    return len(Text(plain).wrap(_MEASURE, width))


_MEASURE = Console(width=1000, color_system=None, file=io.StringIO())  # measuring only


def shown_rows(widget, width):
    """Rows the text last given to `widget` (a Static through update_text, or a LinePanel)
    takes in `width` columns; measured once per text and width, not on every refresh."""
    text = widget.render() if isinstance(widget, LinePanel) else getattr(widget, "_live_text", None)
    if text is None:
        return 0
    plain = text.plain if isinstance(text, Text) else str(text)
    key = (plain, width)
    cached = getattr(widget, "_shown_rows", None)
    if cached is None or cached[0] != key:
        cached = widget._shown_rows = (key, max(1, wrapped_rows(plain, max(1, width))))
    return cached[1]


def update_text(widget, text):
    """Show `text` in a Static or a LinePanel. Unchanged text costs nothing; a Static asks
    for a re-layout of the screen only when its line count changes (its height can)."""
    if isinstance(widget, LinePanel):
        return widget.show_text(text)
    old = getattr(widget, "_live_text", None)
    if old is not None and old == text:
        return False
    plain = text.plain if isinstance(text, Text) else str(text)
    # rows as shown: a line wider than the panel wraps, and the panel must grow for it (the
    # "autostop armed" line fell out of the billing panel when it wrapped)
    # a Static not laid out yet (hidden until now) has no width: its rows are unknown, so lay
    # out now and again on the next change (a count made at width 0 compared equal to a real
    # one and left a notice a row too tall or short: CI caught the plan a row off)
    width = getattr(getattr(widget, "content_size", None), "width", 0) or 0
    lines = wrapped_rows(plain, width) if width > 0 else None
    widget._live_text = text
    widget.update(text, layout=lines is None or getattr(widget, "_live_lines", None) != lines)
    widget._live_lines = lines
    return True
