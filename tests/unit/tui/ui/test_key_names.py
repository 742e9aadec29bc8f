"""Keys are spelled as Textual spells them, from gputui's own table (issue 25: Textual's
spelling looks names up in the Unicode name database, ~0.5 MB of RSS for the footer alone)."""

import importlib
import inspect
import pkgutil

import pytest
import textual.app
import textual.widgets
from textual.binding import Binding
from textual.dom import DOMNode
from textual.keys import format_key
from textual.widgets._footer import FooterKey

import tui.ui
from tui.ui.key_names import key_display

from tests.support.snapshot_app import canned_app


def bound_keys(package):
    """Every key string bound by a DOM class in `package`'s modules."""
    keys = set()
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        module = importlib.import_module(info.name)
        for _name, klass in inspect.getmembers(module, inspect.isclass):
            if not issubclass(klass, DOMNode):
                continue
            for b in vars(klass).get("BINDINGS", []):
                b = b if isinstance(b, Binding) else Binding(*b)
                keys.update(k.strip() for k in b.key.split(","))
    return keys


def textual_spelling(key):
    """App.get_key_display's spelling before gputui overrode it."""
    modifiers, base = Binding(key, "noop").parse_key()
    shown = format_key(base)
    if "ctrl" in modifiers:
        modifiers.remove("ctrl")
        shown = "^" + shown
    return "+".join(modifiers + [shown])


GPUTUI_KEYS = sorted(bound_keys(tui.ui))
TEXTUAL_KEYS = sorted(bound_keys(textual.widgets) - set(GPUTUI_KEYS))


@pytest.mark.parametrize("key", GPUTUI_KEYS)
def test_every_gputui_key_is_in_the_table_and_spelled_as_textual_does(key):
    modifiers, base = Binding(key, "noop").parse_key()
    assert key_display(modifiers, base) == textual_spelling(key)


@pytest.mark.parametrize("key", TEXTUAL_KEYS)
def test_textual_widget_keys_are_spelled_as_textual_does_or_left_to_it(key):
    modifiers, base = Binding(key, "noop").parse_key()
    assert key_display(modifiers, base) in (None, textual_spelling(key))


def test_a_key_missing_from_the_table_is_left_to_textual():
    assert key_display([], "f13") is None
    assert key_display(["ctrl"], "question_mark") == "^?"
    assert key_display(["shift", "ctrl"], "tab") == "shift+^tab" == textual_spelling("shift+ctrl+tab")


async def test_the_dashboard_footer_needs_no_unicode_name_lookup(monkeypatch):
    looked_up = []
    monkeypatch.setattr(textual.app, "format_key", lambda key: looked_up.append(key) or key)
    app = canned_app(2)
    async with app.run_test(size=(120, 40)) as pilot:
        app.feed()
        for _ in range(50):  # the footer settles after the first frames (slower under load)
            await pilot.pause(0.1)
            shown = {k.key_display for k in app.screen.query(FooterKey)}
            if {"q", "?", "/", "s/S"} <= shown:
                break
        dashboard_keys = [k for k, _d, _t in app.screen_keys()]
        await pilot.press("question_mark")
        for _ in range(50):
            await pilot.pause(0.1)
            help_screen_keys = [k for k, _d, _t in app.screen_keys()]
            if help_screen_keys == ["esc"]:
                break
    assert looked_up == []
    assert {"q", "?", "/", "s/S"} <= shown
    assert {"q", "?", "/"} <= set(dashboard_keys)
    assert help_screen_keys == ["esc"]
