"""The search's batches decoded several at once (Translator.batches_at_once, translator.base.in_order):
results in the batches' order, an error raised where they are read, the batches not started cancelled."""
from __future__ import annotations

import threading
import time

import pytest
from hypothesis import given, settings, strategies as st

from attnseq.translator.base import in_order


@settings(max_examples=50, deadline=None)
@given(items=st.lists(st.integers(), max_size=20), workers=st.integers(1, 4),
       delays=st.lists(st.floats(0, 0.002), min_size=1, max_size=5))
def test_results_come_in_the_order_of_the_items(items, workers, delays):
    def slow_square(x):
        time.sleep(delays[x % len(delays)])
        return x * x, threading.get_ident()

    found = list(in_order(slow_square, items, workers))
    assert [r for r, _ in found] == [x * x for x in items]
    if workers == 1:
        assert {t for _, t in found} <= {threading.get_ident()}


def test_an_error_is_raised_where_it_is_read_and_the_rest_are_cancelled():
    started = []

    def work(x):
        started.append(x)
        if x == 1:
            raise ValueError("batch 1")
        time.sleep(0.05)
        return x

    results = in_order(work, list(range(40)), 2)
    assert next(results) == 0
    with pytest.raises(ValueError, match="batch 1"):
        next(results)
    assert len(started) < 40  # those not started when the error was read were cancelled
