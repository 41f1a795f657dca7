"""The bidirectional, context-every-step and scaled-dot pages: their tasks and their judges on
hand-made data (the trained ones' pages at a tiny budget: tests/test_reproduce.py)."""

from __future__ import annotations

import random

from attnseq.reproduce.bidirectional import Bidirectional, running_max, task_pairs
from attnseq.reproduce.context_every_step import ContextEveryStep, error_ratio, position_accuracy
from attnseq.reproduce.datasets import copy_pairs
from attnseq.reproduce.memory_hops import MemoryHops
from attnseq.reproduce.peeky_by_length import PeekyByLength, bucket_of
from attnseq.reproduce.scaled_dot import ScaledDot


def test_running_max_reads_the_right_side():
    assert running_max([3, 1, 4, 1, 5, 0], "suffix-max") == [5, 5, 5, 5, 5, 0]
    assert running_max([3, 1, 4, 1, 5, 0], "prefix-max") == [3, 3, 4, 4, 5, 5]
    for source, target in task_pairs(random.Random(0), 50, "suffix-max", (5, 10)):
        xs = [int(c) for c in source]
        assert 5 <= len(xs) <= 10 and [int(c) for c in target] == [max(xs[i:]) for i in range(len(xs))]


def _data(bi_suffix, fw_suffix, bi_prefix, fw_prefix):
    return {
        "test_exact_match": {
            "suffix-max-bidirectional": bi_suffix,
            "suffix-max-forward": fw_suffix,
            "prefix-max-bidirectional": bi_prefix,
            "prefix-max-forward": fw_prefix,
        }
    }


def test_judge_bidirectional_better_on_suffix_max():
    high, low = [90, 91, 92, 93, 94], [50, 51, 52, 53, 54]
    found, _ = Bidirectional.judge(_data(high, low, high, high))
    assert [f.core for f in found] == [True, False]
    assert found[0].matched is True and found[1].matched is None


def test_judge_contradicted():
    high, low = [90, 91, 92, 93, 94], [50, 51, 52, 53, 54]
    found, _ = Bidirectional.judge(_data(low, high, high, high))
    assert found[0].matched is False


def test_copy_pairs_and_position_accuracy():
    pairs = copy_pairs(random.Random(0), 30, (6, 10))
    assert all(s == t and s.isdigit() and 6 <= len(s) <= 10 for s, t in pairs)
    # position 3 is reached by both references, 4 by one; a short output is wrong where it stops
    assert position_accuracy(["abc", "ax"], ["abc", "abcd"], 4) == [100.0, 50.0, 50.0, 0.0]


def test_judge_decline():
    """Core: the late over early error share (C's effect weakening over time); the drop in points,
    larger for any model that errs more everywhere, is observed."""
    ratio = {"initial-state": [8, 9, 7, 10, 8], "every-step": [8.5, 8.8, 7.2, 9.5, 8.1]}
    data = {"decline": {"initial-state": [30, 35, 28, 40, 33], "every-step": [2, 3, 1, 4, 2]}, "ratio": ratio}
    found, _ = ContextEveryStep.judge(data)
    assert [f.core for f in found] == [True, False]
    assert found[0].matched is None and found[1].matched is True  # the same ratio: the claim is not shown
    data["ratio"] = {"initial-state": [20, 25, 22, 30, 21], "every-step": [2, 3, 2.5, 4, 3]}
    assert ContextEveryStep.judge(data)[0][0].matched is True
    data["ratio"] = {"initial-state": [2, 3, 2.5, 4, 3], "every-step": [20, 25, 22, 30, 21]}
    assert ContextEveryStep.judge(data)[0][0].matched is False
    data["decline"] = {"initial-state": [2, 3, 1, 4, 2], "every-step": [30, 35, 28, 40, 33]}
    assert ContextEveryStep.judge(data)[0][1].matched is False


def test_error_ratio_is_finite_at_perfect_positions():
    assert error_ratio(100.0, 90.0) == 100.0  # 10% late errors over the 0.1% floor
    assert error_ratio(98.0, 90.0) == 5.0


def test_scaled_dot_judge_on_made_up_numbers():
    widths = [4, 16, 64, 256, 1024]

    def values(var_dot, grad_dot):
        dot = {"score variance": {str(d): [var_dot(d) * (1 + 0.01 * i) for i in range(5)] for d in widths}}
        dot["softmax gradient norm"] = {str(d): [grad_dot(d) * (1 + 0.01 * i) for i in range(5)] for d in widths}
        dot["largest weight"] = {str(d): [0.5] * 5 for d in widths}
        scaled = {
            "score variance": {str(d): [1.0 + 0.01 * i for i in range(5)] for d in widths},
            "softmax gradient norm": {str(d): [0.3 + 0.01 * i for i in range(5)] for d in widths},
            "largest weight": {str(d): [0.2] * 5 for d in widths},
        }
        return {"values": {"dot": dot, "scaled_dot": scaled}, "widths": widths}

    found, observed = ScaledDot.judge(values(lambda d: float(d), lambda d: 0.3 / d))
    assert [f.matched for f in found] == [True, True] and len(observed) == 2
    found, _ = ScaledDot.judge(values(lambda d: 1.0, lambda d: 0.9))  # no growth; more gradient unscaled
    assert [f.matched for f in found] == [False, False]


def test_peeky_by_length_buckets_and_judge():
    assert [bucket_of(n, 4, 4) for n in (4, 7, 8, 19)] == [0, 0, 1, 3]
    buckets = ["4-7", "8-11", "12-15", "16-19"]
    grows = {
        "4-7": [0, 1, 0, 2, 1],
        "8-11": [5, 6, 4, 5, 7],
        "12-15": [20, 25, 22, 18, 30],
        "16-19": [60, 55, 70, 65, 58],
    }
    found, observed = PeekyByLength.judge({"gap": grows, "buckets": buckets, "bucket": 4})
    assert found[0].core and found[0].matched is True and len(observed) == 1
    shrinks = {b: v for b, v in zip(buckets, reversed(list(grows.values())))}
    assert PeekyByLength.judge({"gap": shrinks, "buckets": buckets, "bucket": 4})[0][0].matched is False


def test_memory_hops_judge():
    def data(two_many, two_one):
        same = [99.0, 99.5, 99.9, 99.2, 99.7]
        return {
            "exact_match": {"3": {"single": same, "two": two_many}, "1": {"single": same, "two": two_one}},
            "margin": 1.0,
        }

    found, _ = MemoryHops.judge(data([95, 96, 94, 97, 95], [40, 45, 42, 38, 44]))
    assert [f.core for f in found] == [True, False] and found[0].matched is True and found[1].matched is True
    assert MemoryHops.judge(data([40, 45, 42, 38, 44], [95, 96, 94, 97, 95]))[0][0].matched is False
