"""The one rule for text from the box: visible escapes, never markup, JSON without NaN."""

import io
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.cells import cell_len

from tui.core.text.boxtext import finite, json_safe, segments, visible
from tui.ui.boxtext_rich import box_text, join

from tests.support.hostile import BAD_UTF8, NAMES, assert_inert


@pytest.mark.parametrize("raw, shown", [
    ("plain name.pt", "plain name.pt"),
    ("a\x1b[2Jb", "a\\x1b[2Jb"),
    ("\x1b]52;c;aGk=\x07", "\\x1b]52;c;aGk=\\x07"),
    ("c1\x9bx", "c1\\x9bx"),
    ("del\x7f", "del\\x7f"),
    ("evil\u202egpj.exe", "evil\\u202egpj.exe"),
    ("iso\u2066x\u2069", "iso\\u2066x\\u2069"),
    ("line\u2028sep", "line\\u2028sep"),
    ("two\nlines\tand tab", "two\\nlines\\tand tab"),
    (BAD_UTF8, "bad\\xff\\xfename"),
    (BAD_UTF8.decode("utf-8", "surrogateescape"), "bad\\xff\\xfename"),
    ("lone \ud800 surrogate", "lone \\ud800 surrogate"),
    ("[@click=app.quit]X[/]", "[@click=app.quit]X[/]"),  # markup is plain text here
    ("日本語 ✓ é", "日本語 ✓ é"),
    (None, ""),
    (3.5, "3.5"),
])
def test_control_characters_are_shown_not_obeyed(raw, shown):
    assert visible(raw) == shown
    assert visible(shown) == shown  # idempotent: safe to apply twice


def test_newlines_can_be_kept_for_text_we_built():
    assert visible("a\nb\x1b", keep_newlines=True) == "a\nb\\x1b"


def test_limit_never_cuts_an_escape_in_half():
    out = visible("ab\x1bcdef", limit=4)
    assert out == "ab…"
    assert len(visible("x" * 100, limit=10)) == 10


def test_segments_mark_the_escapes():
    assert segments("a\x1bb") == [("a", False), ("\\x1b", True), ("b", False)]


def test_json_safe_has_no_bare_nan():
    doc = {"util": float("nan"), "p": [float("inf"), -float("inf"), 1.5], 3: ("x", None),
           "name": "a\x1bb"}
    text = json.dumps(json_safe(doc), allow_nan=False)
    back = json.loads(text)
    assert back == {"util": None, "p": [None, None, 1.5], "3": ["x", None], "name": "a\x1bb"}
    assert "\x1b" not in text  # json.dumps escapes control characters itself


def test_finite():
    assert finite(2) == 2.0 and finite("2") is None and finite(True) is None
    assert finite(float("nan"), 0) == 0 and finite(float("inf")) is None


@pytest.mark.parametrize("name", NAMES)
def test_box_text_is_literal_and_inert(name):
    t = box_text(name)
    assert t.spans == [] or all(s.style for s in t.spans)
    assert "[" not in name or "[" in t.plain  # markup stayed literal
    console = Console(file=io.StringIO(), force_terminal=False, width=200, record=True)
    console.print(t)
    assert_inert(console.export_text())


def test_join_mixes_our_styles_with_box_text():
    t = join(("pid 4 ", "bold"), "[/]\x1b", box_text("x", style="red"))
    assert t.plain == "pid 4 [/]\\x1bx"


box_strings = st.one_of(
    st.text(),
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x3000)),
    st.binary().map(lambda b: b.decode("utf-8", "surrogateescape")),
    st.lists(st.sampled_from(NAMES + ["[", "]", "[/", "\\", "@click"])).map("".join),
)


@settings(max_examples=300, deadline=None)
@given(box_strings, st.one_of(st.none(), st.integers(min_value=1, max_value=50)))
def test_property_visible_is_inert_idempotent_and_bounded(s, limit):
    out = visible(s, limit=limit)
    assert_inert(out)
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in out)
    out.encode("utf-8")  # printable on any UTF-8 terminal, no surrogate left
    assert visible(out, limit=limit) == out
    if limit is not None:
        assert cell_len(out) <= limit  # terminal columns (CJK: two, combining marks: none)
    if limit is None:
        assert box_text(s).plain == out


@settings(max_examples=200, deadline=None)
@given(box_strings)
def test_property_box_text_renders_without_markup_errors(s):
    console = Console(file=io.StringIO(), width=80, record=True, force_terminal=True, color_system=None)
    console.print(box_text(s, style="bold"))
    console.print(join(("label ", "cyan"), s))
    assert_inert(console.export_text())


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.one_of(st.none(), st.booleans(), st.floats(), st.integers(), st.text()),
                    lambda c: st.one_of(st.lists(c), st.dictionaries(st.text(), c)), max_leaves=30))
def test_property_json_safe_always_dumps(doc):
    text = json.dumps(json_safe(doc), allow_nan=False)

    def floats(x):
        if isinstance(x, float):
            yield x
        elif isinstance(x, dict):
            for v in x.values():
                yield from floats(v)
        elif isinstance(x, list):
            for v in x:
                yield from floats(v)
    assert all(math.isfinite(f) for f in floats(json.loads(text)))


def test_limit_counts_terminal_columns_for_cjk_text():
    # a Chinese path from the box: 2 columns per character, cut on a character boundary
    out = visible("/root/数据集/训练集", limit=12)
    assert out == "/root/数据…" and cell_len(out) <= 12
    assert visible("显存", limit=4) == "显存"


def test_the_fast_check_agrees_with_is_unsafe_for_every_code_point():
    """visible() asks one regex instead of is_unsafe per character: they must agree."""
    from tui.core.text.boxtext import _UNSAFE, is_unsafe
    disagree = [c for c in range(0x110000) if (_UNSAFE.search(chr(c)) is not None) != is_unsafe(chr(c))]
    assert disagree == []
