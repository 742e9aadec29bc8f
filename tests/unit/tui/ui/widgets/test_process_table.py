"""The process table's drawing of its own figures."""

def test_a_plain_figure_cell_draws_as_the_text_path_draws_it():
    """The table's short path for its own figures (ASCII, fits the column, issue 38) gives the
    segments the rich Text path gives: padded to the column, a space after, in the line's style."""
    from rich.console import Console
    from rich.segment import Segment
    from rich.style import Style
    from rich.text import Text
    console, style = Console(width=200), Style(color="red", bgcolor="black")
    for cell in ("1234", "88", "n/a", "12.3G", "0", "", "5h03m"):
        for width in (len(cell), len(cell) + 3, 8):
            text = Text(cell)
            text.truncate(width, overflow="ellipsis", pad=True)
            text.append(" ")
            assert [Segment(cell.ljust(width) + " ", style)] == \
                list(Segment.simplify(Segment.apply_style(text.render(console), style)))
