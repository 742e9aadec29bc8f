"""The scrolling graph draws exactly what fmt.graph draws, sample after sample (issue 25)."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from tui.core.text import format as fmt
from tui.ui.widgets.graph import ScrollingGraph

values = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.integers(-50, 150))


@settings(max_examples=200, deadline=None)
@given(st.lists(values, max_size=80), st.integers(0, 40), st.integers(1, 3))
def test_same_as_fmt_graph_as_samples_arrive(stream, width, height):
    graph = ScrollingGraph()
    history = []
    for v in stream:
        history.append(v)
        assert graph.rows(history, width, height) == fmt.graph(history, width, height)


def test_resize_and_gap_draw_again():
    graph = ScrollingGraph()
    history = [50.0 + 40 * math.sin(i / 3) for i in range(30)]
    assert graph.rows(history, 20, 3) == fmt.graph(history, 20, 3)
    assert graph.rows(history, 12, 1) == fmt.graph(history, 12, 1)  # resized
    history = history[:10]  # a reconnect that started a fresh history
    assert graph.rows(history, 12, 1) == fmt.graph(history, 12, 1)


@settings(max_examples=100, deadline=None)
@given(st.lists(values, max_size=60), st.integers(1, 30), st.integers(1, 30), st.integers(1, 2))
def test_same_as_fmt_graph_with_a_ring_that_drops_its_oldest(stream, ring, width, height):
    graph = ScrollingGraph()
    history = []
    for v in stream:
        history = (history + [v])[-ring:]
        assert graph.rows(history, width, height) == fmt.graph(history, width, height)


def test_a_growing_graph_draws_one_column_per_sample(monkeypatch):
    """The first minutes, before the history fills the graph: one new column per sample, not
    the whole history again (the dashboard's graphs are this wide for 2-3 minutes)."""
    graph = ScrollingGraph()
    history = [10.0, 20.0]
    graph.rows(history, 40, 2)
    drawn = []
    column = graph._column
    monkeypatch.setattr(graph, "_column", lambda v, h: drawn.append(v) or column(v, h))
    for i in range(50):
        history.append(float(i))
        assert graph.rows(history, 40, 2) == fmt.graph(history, 40, 2)
    assert len(drawn) == 50
