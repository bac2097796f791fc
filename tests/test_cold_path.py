"""The cold path (#38): the writers stay vectorised without changing a number or a word."""

from __future__ import annotations

import io
import json

import pytest
from conftest import REPORT_FIXTURES, real_dir
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ttdash.format import fmt_floats
from ttdash.model import Trace, Window
from ttdash.model.advice import iter_advice
from ttdash.report.safe import json_clean
from ttdash.report.single import to_json


@pytest.mark.parametrize("name", REPORT_FIXTURES)
def test_json_advice_written_from_frames_equals_every_entry(name):
    """report -f json writes the advice a frame at a time; the entries are model.advice's, in
    its order, with the same fields and values as Advice.as_dict (floats as json_clean)."""
    view = Trace.load(real_dir() / name).view(Window("all"))
    buf = io.StringIO()
    to_json(view, buf)
    got = json.loads(buf.getvalue())["advice"]
    want = [json_clean(a.as_dict()) for a in iter_advice(view.ops, view.pause_above_us)]
    assert got == want
    assert len(want) > 0 or name.endswith("EXCERPT_first5lines.csv")


@pytest.mark.parametrize("by", ["op", "memory"])
def test_summary_groups_keyed_once_per_distinct_op_equal_row_by_row(by):
    """summary_key works on the distinct (op code, input 0 memory) pairs and spreads the result
    back; on every real file it equals the row-by-row rule, missing keys included."""
    import pandas as pd

    from ttdash.model.query import _summary_key_rows, summary_key

    for name in REPORT_FIXTURES:
        ops = Trace.load(real_dir() / name).view(Window("all")).ops
        got, want = summary_key(ops, by), _summary_key_rows(ops, by)
        pd.testing.assert_series_equal(got, want, check_names=False)


special = st.sampled_from([0.0, -0.0, 9.995, 9.9949, 99.95, 999.5, 1e4 - 0.05, 9999.5, 1e6,
                           999_999.99, 1e300, -1e300, 1e-300, float("inf"), float("-inf"),
                           float("nan"), 2.0 ** 63, 123456789.125])
values = st.lists(st.one_of(special, st.floats(allow_nan=True, allow_infinity=True),
                            st.floats(min_value=-1e7, max_value=1e7)), max_size=60)


@settings(max_examples=300, deadline=None)
@given(values, st.sampled_from(["us", "pct", "num", "int", "id"]), st.integers(0, 3),
       st.sampled_from(["float64", "float32"]))
def test_column_formatting_a_unit_at_a_time_equals_each_value_formatted(xs, kind, digits,
                                                                         dtype):
    """format.fmt_floats (the tables' fast path) gives the text fmt_us / fmt_pct / fmt_num /
    fmt_int give each value, for any float: missing, infinite, huge, rounding edges, float32."""
    import numpy as np

    from ttdash.model.columns import FORMATTERS

    with np.errstate(over="ignore"):
        a = np.array(xs, dtype=dtype)
    assume(not (kind in ("int", "id") and np.isfinite(a).any()
                and np.abs(a[np.isfinite(a)]).max() > 1e30))  # 1e300 digits: both agree, slow
    want = [FORMATTERS[kind](v, digits) for v in a]
    assert fmt_floats(kind, a, digits) == want
