"""Evaluation metrics: the sacrebleu scores, exact match, token accuracy, and when BLEU applies."""

import pytest

from attnseq.eval.metrics import bleu, bleu_applies, chrf, exact_match, token_accuracy


def test_exact_match_and_token_accuracy():
    assert exact_match(["a b", "c"], ["a b", "d"]) == 0.5
    # position by position, over the longer of the two
    assert token_accuracy([["a", "b", "c"]], [["a", "x"]]) == pytest.approx(1 / 3)


def test_bleu_and_chrf_are_sacrebleu_scores():
    refs = ["the cat sat on the mat today", "a dog ran in the park"]
    assert bleu(refs, refs) == pytest.approx(100.0)
    assert chrf(refs, refs) == pytest.approx(100.0)
    assert 0 < bleu(["the cat sat on a mat today", "a dog ran in the park"], refs) < 100


def test_bleu_applies_only_to_references_of_four_words_on_average():
    assert not bleu_applies([])
    assert not bleu_applies(["1994-09-27", "2001-01-01"])  # one-word dates: BLEU-4 is 0 however right
    assert not bleu_applies(["one two three", "one two three"])
    assert bleu_applies(["one two three", "one two three four five"])
