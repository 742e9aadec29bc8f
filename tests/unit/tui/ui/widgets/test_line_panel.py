"""A LinePanel draws what a Static with the same text draws (wrapping, styles, the offsets
mouse selection reads), and a changed line repaints that line, not the panel (issue 25)."""

import pytest
from rich.text import Text
from textual.app import App
from textual.widgets import Static

from tui.ui.boxtext_rich import box_text
from tui.ui.widgets.live import LinePanel, split_lines, update_text

CSS = """
Static, LinePanel { border: round $primary-darken-1; padding: 0 1; height: auto; width: 30; }
"""


def styled(*parts):
    t = Text()
    for text, style in parts:
        t.append(text, style=style)
    return t


TEXTS = [
    Text("one line"),
    styled(("CPU ", "bold"), ("35%", ""), ("  32 cores\n", "dim"), ("▁▂▃▄", "green"), ("\nlast", "")),
    styled(("a line far too long for thirty columns, so it wraps onto the next\n", "dim"), ("b", "red")),
    Text("blank lines\n\nkept\n"),
    Text("trailing spaces   \n  leading"),
    box_text("rm -rf /tmp/x\x1b[31m[/] [@click=app.quit]\nnext"),
    Text("全角の文字が折り返される長い行です、全角の文字が折り返される"),
    Text(""),
]


def _overlapping():
    t = Text("base, spans over, inside", style="dim")  # fits the panel's 26 columns
    t.stylize("bold", 0, 10)
    t.stylize("red", 5, 20)
    t.stylize("italic", 12, 12)  # empty
    t.stylize("on blue", 18)
    return t


def _overlapping_unstyled():
    t = Text("spans over, no base style")  # the run walk gives up: the stack walk draws it
    t.stylize("bold", 0, 10)
    t.stylize("red", 5, 15)
    t.stylize("italic", 3, 3)
    return t


def _adjacent_and_empty():
    t = Text("adjacent spans, an empty one")
    t.stylize("bold", 0, 8)
    t.stylize("red", 8, 14)
    t.stylize("italic", 16, 16)
    return t


TEXTS += [_overlapping(), _overlapping_unstyled(), _adjacent_and_empty(),
          Text("only its own style", style="bold magenta"),
          styled(("100% ", "dim"), ("▁▂▃▄▅▆▇█", "green"), ("  last 1:00", "dim")),
          styled(("显存 ", "bold"), ("60.3/80.0G", "magenta"), (" 温度", ""))]  # double width, fits


class Pair(App):
    CSS = CSS

    def compose(self):
        yield Static(id="static")
        yield LinePanel(id="panel")


def same_drawing(app):
    static, panel = app.query_one("#static", Static), app.query_one("#panel", LinePanel)
    assert panel.size == static.size
    for y in range(static.size.height):
        assert list(panel.render_line(y)) == list(static.render_line(y)), y


@pytest.mark.parametrize("index", range(len(TEXTS)))
async def test_draws_what_a_static_draws(index):
    app = Pair()
    async with app.run_test(size=(80, 24)) as pilot:
        app.query_one("#static", Static).update(TEXTS[index])
        update_text(app.query_one("#panel", LinePanel), TEXTS[index])
        await pilot.pause()
        same_drawing(app)
        assert str(app.query_one("#panel").render()) == TEXTS[index].plain


async def test_lines_that_fit_are_drawn_straight_to_strips():
    """The cached path (line_strips.LineDrawer) draws the lines that fit; the rest (wrapped,
    control codes shown by box_text are fine) go through Textual's Content."""
    app = Pair()
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.query_one("#panel", LinePanel)
        update_text(panel, _overlapping())
        await pilot.pause()
        drawer = panel._drawer
        assert drawer is not None and drawer._offset  # the segments' offset styles came from it
        assert drawer.draw(Text("x" * 200), 0) is None  # wider than the panel: wrapped by Textual
        assert drawer.draw(Text("a\tb"), 0) is None


async def test_changed_line_repaints_only_that_line():
    app = Pair()
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.query_one("#panel", LinePanel)
        first = styled(("CPU 35%\n", "bold"), ("RAM 60%\n", ""), ("Net 1 kB/s", "dim"))
        panel.show_text(first)
        await pilot.pause()
        before = [panel.render_line(y) for y in range(3)]
        panel._repaint_regions.clear()
        assert not panel.show_text(first.copy())  # the same text: nothing to do
        second = styled(("CPU 35%\n", "bold"), ("RAM 61%\n", ""), ("Net 1 kB/s", "dim"))
        assert panel.show_text(second)
        assert [r.y for r in panel._repaint_regions] == [2]  # line 1 of the content, under the border
        await pilot.pause()
        after = [panel.render_line(y) for y in range(3)]
        assert after[0] is before[0] and after[2] is before[2] and after[1] is not before[1]
        app.query_one("#static", Static).update(second)
        await pilot.pause()
        same_drawing(app)


@pytest.mark.parametrize("parts", [
    (("CPU ", "bold"), ("35%", ""), ("", "dim"), ("  32 cores", "dim")),
    ((" 0 ", "bold"), ("▁▂", "green"), ("▃", "green"), ("", "")),
    (),
])
def test_styled_is_text_appended_part_by_part(parts):
    from tui.ui.widgets.live import same_text, styled as built
    assert same_text(built(parts), styled(*parts))


def test_split_lines_keeps_blank_lines_and_styles():
    lines = split_lines(styled(("a\n", "red"), ("\n", ""), ("b", "bold")))
    assert [line.plain for line in lines] == ["a", "", "b"]
    assert lines[2].spans[0].style == "bold"


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=300)
@given(st.lists(st.tuples(st.text(alphabet="ab\n", max_size=6), st.sampled_from(["", "red", "bold", "dim"])),
                max_size=8),
       st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40), st.sampled_from(["blue", "reverse"])), max_size=4))
def test_split_lines_is_riches_split_span_for_span(parts, extra):
    """The panel's own split (one bisect per span, issue 38) gives what rich's
    Text.split("\\n", allow_blank=True) gives: the same lines, styles and spans, for any text
    and any spans, overlapping and across newlines included."""
    from rich.text import Span
    text = styled(*parts) if parts else Text("")
    size = len(text.plain)  # spans inside the text, as styled() and rich make them
    for start, end, style in extra:
        text.spans.append(Span(min(start, end, size), min(max(start, end), size), style))
    want = list(text.split("\n", allow_blank=True)) if "\n" in text.plain else [text]
    got = split_lines(text)
    assert [t.plain for t in got] == [t.plain for t in want]
    def spans(lines):  # an empty span draws nothing: rich keeps some, the split drops them
        return [sorted(s for s in t.spans if s.end > s.start) for t in lines]
    assert spans(got) == spans(want)
    assert [t.style for t in got] == [t.style for t in want]
