"""Scores of outputs against references: exact match, token accuracy, BLEU and chrF; at once
(``score_all``, ``sacrebleu_score``), or added a part at a time (``RunningScores``), so that a
set of any size is scored in the memory one part takes."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def exact_match(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """Fraction (0..1) of outputs identical to their reference."""
    if not references:
        return 0.0
    return sum(h == r for h, r in zip(hypotheses, references)) / len(references)


def token_accuracy(hypotheses: Sequence[Sequence[str]], references: Sequence[Sequence[str]]) -> float:
    """Fraction (0..1) of positions where output and reference tokens agree.

    Positions run to the longer of the two in each pair, so missing and extra tokens both count
    as errors.
    """
    right = total = 0
    for hyp, ref in zip(hypotheses, references):
        right += sum(h == r for h, r in zip(hyp, ref))
        total += max(len(hyp), len(ref))
    return right / total if total else 0.0


BLEU_MIN_WORDS = 4  # BLEU-4 counts 4-grams: references shorter than this on average make it 0


def bleu_applies(references: Iterable[str]) -> bool:
    """True when the references are long enough for BLEU to mean something: on average at least
    four words (one-token outputs, dates or codes, would score 0 however right they are). They
    are read once, as they come (a generator will do)."""
    lines = words = 0
    for reference in references:
        lines += 1
        words += len(reference.split())
    return lines > 0 and words / lines >= BLEU_MIN_WORDS


def sacrebleu_score(metric: str, hypotheses: Sequence[str], references: Sequence[str]) -> tuple[float, str]:
    """(corpus score 0..100, sacrebleu's signature) of ``metric`` ("bleu" or "chrf", sacrebleu's
    defaults) on detokenised text: the signature (``nrefs:1|case:mixed|eff:no|tok:13a|...``) says
    how the score was computed, so that figures are compared only with like figures."""
    from sacrebleu.metrics import BLEU, CHRF

    scorer = {"bleu": BLEU, "chrf": CHRF}[metric]()
    score = scorer.corpus_score(list(hypotheses), [list(references)])
    return float(score.score), str(scorer.get_signature())


def bleu(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """Corpus BLEU (0..100) from sacrebleu on detokenised text."""
    return sacrebleu_score("bleu", hypotheses, references)[0]


def chrf(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """Corpus chrF (0..100) from sacrebleu."""
    return sacrebleu_score("chrf", hypotheses, references)[0]


def score_all(
    hypotheses: Sequence[str],
    references: Sequence[str],
    hyp_tokens: Sequence[Sequence[str]],
    ref_tokens: Sequence[Sequence[str]],
) -> dict[str, float]:
    """Every metric: exact_match and token_accuracy as fractions, bleu and chrf as 0..100."""
    return {
        "exact_match": exact_match(hypotheses, references),
        "token_accuracy": token_accuracy(hyp_tokens, ref_tokens),
        "bleu": bleu(hypotheses, references),
        "chrf": chrf(hypotheses, references),
    }


EVALUATION_PART = 10_000  # sentences Translator.evaluate decodes and scores at a time


class CorpusScore:
    """A sacrebleu corpus score (``metric``: "bleu" or "chrf", sacrebleu's defaults) of outputs
    added a part at a time (``add``): each part's sentence statistics are summed as it comes,
    so memory holds one part's reference n-grams, never the whole set's (sacrebleu's chrF of
    100,000 passages at once peaks at several GB). The statistics are counts, so ``score()`` is
    sacrebleu_score's of all the parts at once, to the last bit, in whatever parts and order."""

    def __init__(self, metric: str):
        from sacrebleu.metrics import BLEU, CHRF

        self.scorer = {"bleu": BLEU, "chrf": CHRF}[metric]()
        self.totals: list | None = None

    def add(self, hypotheses: Sequence[str], references: Sequence[str]) -> None:
        if not references:
            return
        from sacrebleu.utils import sum_of_lists

        # what corpus_score sums and scores (its _aggregate_and_compute), a part at a time
        summed = sum_of_lists(self.scorer._extract_corpus_statistics(list(hypotheses), [list(references)]))
        self.totals = list(summed) if self.totals is None else [a + b for a, b in zip(self.totals, summed)]

    def score(self) -> tuple[float, str]:
        """(corpus score 0..100, sacrebleu's signature), as sacrebleu_score gives them."""
        if self.totals is None:
            raise ValueError("no outputs were scored")
        return float(self.scorer._compute_score_from_stats(self.totals).score), str(self.scorer.get_signature())


class RunningScores:
    """exact_match, token_accuracy and, when asked for, BLEU and chrF (sacrebleu's, with their
    signatures) of outputs added a part at a time: counts and sacrebleu's statistics are
    summed, none of the outputs kept, and ``result()`` equals exact_match, token_accuracy and
    sacrebleu_score of every part at once."""

    def __init__(self, bleu: bool = False, chrf: bool = False):
        self.matches = self.sentences = self.right = self.positions = 0
        self.corpus = {name: CorpusScore(name) for name, wanted in (("bleu", bleu), ("chrf", chrf)) if wanted}

    def add(
        self,
        hypotheses: Sequence[str],
        references: Sequence[str],
        hyp_tokens: Sequence[Sequence[str]],
        ref_tokens: Sequence[Sequence[str]],
    ) -> None:
        self.matches += sum(h == r for h, r in zip(hypotheses, references))
        self.sentences += len(references)
        for hyp, ref in zip(hyp_tokens, ref_tokens):
            self.right += sum(h == r for h, r in zip(hyp, ref))
            self.positions += max(len(hyp), len(ref))
        for corpus in self.corpus.values():
            corpus.add(hypotheses, references)

    def result(self) -> dict[str, Any]:
        """``exact_match``, ``token_accuracy``, then ``bleu`` and ``bleu_signature``, ``chrf``
        and ``chrf_signature`` for those asked for."""
        metrics: dict[str, Any] = {
            "exact_match": self.matches / self.sentences if self.sentences else 0.0,
            "token_accuracy": self.right / self.positions if self.positions else 0.0,
        }
        for name, corpus in self.corpus.items():
            metrics[name], metrics[f"{name}_signature"] = corpus.score()
        return metrics
