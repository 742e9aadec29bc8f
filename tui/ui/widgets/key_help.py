"""The help screen's text: one row a key, its description wrapped under the description
column (at 80 columns "Ctrl-C, kill, rename" had restarted at the left edge, under the keys).

help_text() is a plain function of the width, so tests read the wrapping without a terminal;
KeyHelp lays the text out again whenever its width changes."""

from typing import List, Optional, Sequence, Tuple

from rich.text import Text
from textual.geometry import Size
from textual.widget import Widget

from tui.core.i18n import _
from tui.core.text.cells import cell_len, line_breaks

KEY_COLUMN = 12  # " s/S        ": a space, the key padded to 10, a space
MIN_DESCRIPTION = 20  # narrower than this, descriptions wrap at the full width instead


def _wrapped(text: Text, width: int) -> List[Text]:
    """`text` cut into lines of at most `width` columns (at spaces, and between Chinese
    characters: rich wraps at spaces only, and left "释放  —" alone on a line), styles kept."""
    lines = []
    for line in text.split(allow_blank=True):
        for piece in line.divide(line_breaks(line.plain, width)):
            piece.rstrip()
            lines.append(piece)
    return lines


def key_row(key: str, description: str, tooltip: Optional[str], width: int) -> List[Text]:
    """One key's lines: the key in its column, the description and tooltip wrapped beside
    it, every continuation line indented to the description column."""
    body = Text(description)
    if tooltip:
        body.append("  — %s" % tooltip, style="dim")
    indent = KEY_COLUMN if width - KEY_COLUMN >= MIN_DESCRIPTION else 1
    head = Text.assemble((" %-10s" % key, "bold cyan"), " ")  # key names: ASCII
    lines = []
    if head.cell_len > indent:  # a long key name (or no room for a column): alone on its line
        lines.append(head)
        head = Text(" " * indent)
    for i, line in enumerate(_wrapped(body, width - indent)):
        lines.append((head if i == 0 else Text(" " * indent)) + line)
    return lines


def help_text(keys: Sequence[Tuple[str, str, Optional[str]]], about: str, width: int) -> Text:
    """The whole help: title, a row a key, the command palette, what gputui is."""
    lines = [Text(_("gputui — keys"), style="bold"), Text("")]
    for key, description, tooltip in keys:
        lines.extend(key_row(key, description, tooltip, width))
    lines.append(Text(""))
    lines.extend(key_row("ctrl+p", _("command palette: every action by name"), None, width))
    lines.append(Text(""))
    lines.extend(_wrapped(Text(about, style="dim"), width))
    return Text("\n").join(lines)


class KeyHelp(Widget):
    """The help text, wrapped for the width it is given."""

    DEFAULT_CSS = "KeyHelp { width: 1fr; height: auto; }"

    def __init__(self, keys: Sequence[Tuple[str, str, Optional[str]]], about: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.keys = list(keys)
        self.about = about
        self._cache: Tuple[int, Optional[Text]] = (-1, None)

    def text_for(self, width: int) -> Text:
        if self._cache[0] != width or self._cache[1] is None:
            self._cache = (width, help_text(self.keys, self.about, width))
        return self._cache[1]

    def render(self) -> Text:
        return self.text_for(self.content_size.width or 72)

    def get_content_width(self, container: Size, viewport: Size) -> int:
        return max(cell_len(line) for line in self.text_for(container.width).plain.split("\n"))

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.text_for(width).plain.split("\n"))
