"""How a bound key is spelled in the footer and the help screen.

Textual spells a named key (`question_mark`, `escape`) by looking its name up in the Unicode
name database; those lookups map ~0.5 MB of `unicodedata` into the app for the footer alone
(issue 25: the idle dashboard's memory). The keys gputui and Textual's own widgets bind are
spelled here instead, exactly as Textual spells them (tests/unit/tui/ui/test_key_names.py
holds the two together); any other key still goes to Textual."""

from typing import List, Optional

GLYPHS = {
    "backspace": "⌫", "delete": "del", "down": "↓", "up": "↑", "left": "←", "right": "→",
    "end": "end", "home": "home", "enter": "⏎", "escape": "esc", "pagedown": "pgdn",
    "pageup": "pgup", "question_mark": "?", "slash": "/", "space": "space", "tab": "tab",
}


def key_glyph(key: str) -> Optional[str]:
    """The footer's spelling of one key without modifiers, or None when the table lacks it.
    A one-character key is itself (no Unicode name has one character)."""
    if len(key) == 1:
        return key
    return GLYPHS.get(key)


def key_display(modifiers: List[str], key: str) -> Optional[str]:
    """`ctrl+x` is `^x`, other modifiers are joined with `+` (Textual's App.get_key_display)."""
    shown = key_glyph(key)
    if shown is None:
        return None
    modifiers = list(modifiers)
    if "ctrl" in modifiers:
        modifiers.remove("ctrl")
        shown = "^" + shown
    return "+".join(modifiers + [shown])
