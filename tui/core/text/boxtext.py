"""One rule for text from the box: it is data, never markup and never control codes.

Process argv, tmux names, file names and probe strings are controlled by whoever uses
the box. Before any of it reaches the user's terminal (plain CLI output) or the app
(through `tui.ui.boxtext_rich.box_text`, which builds a `rich.text.Text`, never markup),
it passes through `visible()`: every character a terminal would act on is replaced by
a visible escape, so `\\x1b]52;c;…` cannot write the clipboard, `\\x1b[2J` cannot clear
the screen and U+202E cannot reorder what the user reads.

Shown as an escape:
* C0 controls, DEL and C1 controls (`\\x1b`, `\\x7f`, `\\x9b`); newline and tab too,
  unless the caller keeps newlines for multi-line text it built itself;
* bidi controls (U+202A-202E, U+2066-2069, U+200E/200F, U+061C) and the line and
  paragraph separators U+2028/2029;
* lone surrogates, which is how Python carries bytes that are not UTF-8
  (surrogateescape): shown as the original byte, `\\xff`.

`json_safe()` is the JSON side of the same rule: JSON stays JSON (control characters
are escaped by `json.dumps` itself), but numbers that are not finite become null so
`allow_nan=False` never fails and no bare `NaN` is printed.
"""

import math
import re
import unicodedata
from typing import Any, List, Optional, Sequence, Tuple, TypeVar, Union

T = TypeVar("T")


BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
SEPARATORS = frozenset("\u2028\u2029")
ELLIPSIS = "…"


def cell_len(text: str) -> int:
    """Terminal columns of `text` (CJK characters take two; issue 14): rich's count, imported
    at the first limit, so a command that prints without one does not load rich (issue 38)."""
    from rich.cells import cell_len as rich_cell_len
    return rich_cell_len(text)


def _escape(ch: str) -> str:
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape: the original byte 0x80-0xff
        return "\\x%02x" % (code - 0xDC00)
    if code <= 0xFF:
        return {"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(ch, "\\x%02x" % code)
    return "\\u%04x" % code


def is_unsafe(ch: str) -> bool:
    """Would a terminal act on this character (or is it not text at all)?"""
    code = ord(ch)
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return True
    if code < 0x200:  # fast path: Latin text
        return False
    return ch in BIDI or ch in SEPARATORS or unicodedata.category(ch) == "Cs"


# what is_unsafe says yes to: C0/C1 controls, the bidi controls, the line/paragraph
# separators and surrogates (category Cs); tests/unit/tui/core/test_boxtext.py checks both agree
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f%s%s\ud800-\udfff]" % ("".join(sorted(BIDI)), "".join(sorted(SEPARATORS))))


def segments(value: object, keep_newlines: bool = False) -> List[Tuple[str, bool]]:
    """Split box text into (text, is_escape) runs; the UI styles the escapes."""
    text = as_text(value)
    out: List[Tuple[str, bool]] = []
    run: List[str] = []
    for ch in text:
        if is_unsafe(ch) and not (keep_newlines and ch == "\n"):
            if run:
                out.append(("".join(run), False))
                run = []
            out.append((_escape(ch), True))
        else:
            run.append(ch)
    if run:
        out.append(("".join(run), False))
    return out


def as_text(value: object) -> str:
    """Any value from the box as str: None is '', bytes are decoded (bad bytes kept as
    surrogates, shown later as `\\xNN`), numbers and other types through str()."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "surrogateescape")
    try:
        return str(value)
    except Exception:  # noqa: BLE001 - a hostile __str__ cannot get past the boundary
        return "<%s>" % type(value).__name__


def visible(value: object, limit: Optional[int] = None, keep_newlines: bool = False) -> str:
    """Box text as a plain str a terminal cannot act on. Idempotent.

    limit: at most this many terminal columns of the *result* (CJK characters take two),
    ending with '…' when cut (an escape is never cut in half)."""
    text = as_text(value)
    if _UNSAFE.search(text) is None:  # is_unsafe for every character, in one C call (issue 25)
        parts = [(text, False)]
    else:
        parts = segments(text, keep_newlines)
    out = "".join(part for part, _ in parts)
    if limit is not None and cell_len(out) > limit:
        out = clip(parts, limit)
    return out


def clip(parts: Sequence[Tuple[str, bool]], limit: int) -> str:
    """Join (text, is_escape) runs into at most `limit` columns, '…' at the end."""
    room = max(0, limit - 1)
    out = []
    for part, is_escape in parts:
        if cell_len(part) <= room:
            out.append(part)
            room -= cell_len(part)
            continue
        if not is_escape:
            for ch in part:  # a double-width character straddling the edge is left out
                room -= cell_len(ch)
                if room < 0:
                    break
                out.append(ch)
        break
    return "".join(out) + ELLIPSIS


def json_safe(value: Any, _depth: int = 0) -> Any:
    """A copy that `json.dumps(..., allow_nan=False)` accepts: NaN and ±Infinity become
    None; tuples become lists; keys become str; anything else unknown goes through str."""
    if _depth > 64:  # deeper than any document gputui builds: the box sent it
        return None
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, dict):
        return {as_text(k): json_safe(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v, _depth + 1) for v in value]
    return as_text(value)


def finite(value: object, default: Optional[T] = None) -> Union[float, T, None]:
    """A number from the box or the config as float if it is a finite number, else default."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    value = float(value)
    return value if math.isfinite(value) else default
