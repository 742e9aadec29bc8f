"""The schema's fast path for lists and rows of bounded numbers (issue 38) gives what the
item specs give, value for value and note for note, for any input: the probe's sample rows
take it every second, a hostile box's rows must still be cleaned as before."""

import math

from hypothesis import given, settings, strategies as st

from remote_probe.wire import schema

VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 100, 100.0, -0.0, 1e15, 1e300]), st.text(max_size=3), st.lists(st.integers(), max_size=2))
SPECS = [schema.Num(0, 100), schema.Num(0, 1 << 40, integer=True), schema.Num(-1, 1e6)]


def _same(a, b):
    """Equal, NaN equal to NaN, and of the same types (1 and 1.0 and True differ)."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


def _slow(specs, values, path):
    report = schema.Report()
    return [spec(v, (path, i), report) for i, (spec, v) in enumerate(zip(specs, values))], report


@settings(max_examples=400)
@given(st.lists(VALUES, max_size=12), st.integers(0, len(SPECS) - 1))
def test_a_list_of_numbers_is_cleaned_as_each_item_would_be(values, which):
    spec = SPECS[which]
    fast_report = schema.Report()
    got = schema.List(spec)(values, "s", fast_report)
    want, report = _slow([spec] * len(values), values, "s")
    assert _same(got, want)
    assert (fast_report.count, fast_report.examples) == (report.count, report.examples)
    assert got is not values  # a copy: the caller may keep changing what it sent


@settings(max_examples=400)
@given(st.lists(VALUES, min_size=3, max_size=3))
def test_a_row_of_numbers_is_cleaned_as_each_column_would_be(values):
    row = schema.Row([("a", SPECS[0]), ("b", SPECS[1]), ("c", SPECS[2])])
    fast_report = schema.Report()
    got = row(values, "r", fast_report)
    report = schema.Report()
    want = [spec(v, ("r", name), report) for (name, spec), v in zip([("a", SPECS[0]), ("b", SPECS[1]),
                                                                      ("c", SPECS[2])], values)]
    assert _same(got, want)
    assert (fast_report.count, fast_report.examples) == (report.count, report.examples)


def test_the_fast_path_is_taken_for_a_clean_row_and_refuses_what_it_must():
    assert schema._all_fine([1, 2.5, None], [(0, 100, False)] * 3)
    for bad in (True, float("nan"), float("inf"), 101, -1, "1", 2.5):
        integer = bad == 2.5
        assert not schema._all_fine([bad], [(0, 100, integer)]), bad
