"""The search's batches decoded several at once (Translator.batches_at_once, translator.base.in_order):
results in the batches' order, an error raised where they are read, the batches not started cancelled."""

from __future__ import annotations

import threading
import time

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from attnseq.translator.base import in_order


@settings(max_examples=50, deadline=None)
@given(
    items=st.lists(st.integers(), max_size=20),
    workers=st.integers(1, 4),
    delays=st.lists(st.floats(0, 0.002), min_size=1, max_size=5),
)
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


@settings(max_examples=60, deadline=None)
@given(
    setting=st.none()
    | st.text(st.characters(exclude_characters="\x00", exclude_categories=["Cs"]), max_size=6)
    | st.integers(-3, 64).map(str)
)
@example(setting="²")  # a digit to str.isdigit, not to int(): it raised ValueError
@example(setting=" 2 ")
def test_the_batches_at_once_by_default_are_a_count_of_at_least_one(setting):
    """CTranslate2's default batches at once (engines/ctranslate2_engine/translator.default_threads): a
    whole number above 0 in OMP_NUM_THREADS, else the CPUs this process may use, whatever the
    variable holds (empty, 0, negative, OpenMP's lists such as "2,1", text)."""
    import os

    from attnseq.engines.ctranslate2_engine.translator import default_threads
    from attnseq.hardware import usable_cpus

    before = os.environ.pop("OMP_NUM_THREADS", None)
    try:
        if setting is not None:
            os.environ["OMP_NUM_THREADS"] = setting
        found = default_threads()
        text = (setting or "").strip()  # (spaces around it allowed, as OpenMP allows them)
        whole = text.isascii() and text.isdigit() and int(text) > 0
        assert found == (int(text) if whole else usable_cpus()) and found >= 1
    finally:
        os.environ.pop("OMP_NUM_THREADS", None)
        if before is not None:
            os.environ["OMP_NUM_THREADS"] = before
