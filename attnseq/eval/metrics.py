"""Scores of outputs against references: exact match, token accuracy, BLEU and chrF."""

from __future__ import annotations

from collections.abc import Sequence


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


def bleu_applies(references: Sequence[str]) -> bool:
    """True when the references are long enough for BLEU to mean something: on average at least
    four words (one-token outputs, dates or codes, would score 0 however right they are)."""
    return bool(references) and sum(len(r.split()) for r in references) / len(references) >= BLEU_MIN_WORDS


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
