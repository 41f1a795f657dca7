"""Scoring translations beyond one corpus BLEU: by source-length bucket, and two systems on the
same sentences with sacrebleu's paired bootstrap (each system's 95% interval over resampled
test sets, and the p-value of their difference), for single-seed comparisons."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

Pair = tuple[str, str]


def translate(translator, pairs: Sequence[Pair], beam_size: int) -> tuple[list[str], list[str]]:
    """(outputs, references) of ``translator`` on ``pairs``; the references as given, normalised
    only as the run's data settings say, as ``Translator.evaluate`` scores them."""
    results = translator.search([s for s, _ in pairs], beam_size=beam_size)
    return [r.outputs[0] for r in results], [translator.pipeline.normalise(t) for _, t in pairs]


@dataclass
class PairedBleu:
    """Two systems' BLEU on the same sentences: scores, the half-width of each one's 95% bootstrap
    interval, and the bootstrap p-value of the difference (None when too few sentences)."""

    baseline: float
    baseline_ci: float
    system: float
    system_ci: float
    p_value: float | None


def paired_bleu(
    baseline: Sequence[str], system: Sequence[str], references: Sequence[str], samples: int = 1000
) -> PairedBleu:
    """sacrebleu's paired bootstrap resampling (``samples`` resampled test sets, its fixed seed)
    of ``system`` against ``baseline``."""
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest

    if len(references) < 2:
        from ..eval.metrics import bleu

        return PairedBleu(bleu(baseline, references), 0.0, bleu(system, references), 0.0, None)
    test = PairedTest(
        [("baseline", list(baseline)), ("system", list(system))],
        {"BLEU": BLEU()},
        [list(references)],
        test_type="bs",
        n_samples=samples,
    )
    _, scores = test()
    base, other = scores["BLEU"]
    # identical scores (both systems at 0 on a few sentences): no difference to test
    p_value = 1.0 if base.score == other.score else other.p_value
    return PairedBleu(base.score, base.ci, other.score, other.ci, p_value)


def length_buckets(lengths: Sequence[int], edges: Sequence[int], minimum: int) -> list[tuple[int, int]]:
    """Buckets (lowest, highest length) cut at ``edges`` (each edge starts a bucket), adjacent
    buckets merged until each holds at least ``minimum`` of ``lengths`` (merging upwards, the
    last bucket into the one before it)."""
    top = max(lengths, default=1)
    starts = [e for e in sorted(set(edges)) if e <= top] or [1]
    buckets = [(low, (starts[i + 1] - 1) if i + 1 < len(starts) else top) for i, low in enumerate(starts)]

    def count(b):
        return sum(b[0] <= n <= b[1] for n in lengths)

    i = 0
    while i < len(buckets) and len(buckets) > 1:
        if count(buckets[i]) >= minimum:
            i += 1
            continue
        if i + 1 < len(buckets):
            buckets[i : i + 2] = [(buckets[i][0], buckets[i + 1][1])]
        else:
            buckets[i - 1 : i + 1] = [(buckets[i - 1][0], buckets[i][1])]
            i -= 1
    return buckets


def bucket_label(bucket: tuple[int, int]) -> str:
    low, high = bucket
    return str(low) if low == high else f"{low}-{high}"


def bleu_statistics(hypotheses: Sequence[str], references: Sequence[str]):
    """sacrebleu's BLEU statistics of each sentence (N, 10): hypothesis and reference lengths,
    then the matching and the total n-grams for n = 1..4; a corpus BLEU is a sum of rows."""
    import numpy as np
    from sacrebleu.metrics import BLEU

    return np.array(BLEU()._extract_corpus_statistics(list(hypotheses), [list(references)]), dtype=np.int64)


def bleu_of(statistics) -> float:
    """The corpus BLEU of summed sentence statistics (bleu_statistics rows), as sacrebleu scores it."""
    from sacrebleu.metrics import BLEU

    return BLEU()._compute_score_from_stats([int(x) for x in statistics]).score


def slope_gap(
    baseline: Sequence,
    system: Sequence,
    buckets: Sequence[Sequence[int]],
    lengths: Sequence[float],
    samples: int = 1000,
) -> dict:
    """The length slopes of two systems' BLEU and the test of their difference: per system the
    least-squares slope of bucket BLEU (the mean over its seeds' statistics, ``baseline`` and
    ``system`` one bleu_statistics array per seed) on each bucket's mean length ``lengths``;
    ``gap`` = system's slope - baseline's, with its 95% interval and two-sided p over ``samples``
    bootstrap resamples of the items within each bucket (the same items for both systems)."""
    import numpy as np

    from .significance import bootstrap_interval, slope

    def slopes(idx=None) -> tuple[float, float]:
        out = []
        for runs in (baseline, system):
            ys = []
            for members in buckets:
                pick = np.asarray(members) if idx is None else idx[np.isin(idx, members)]
                ys.append(float(np.mean([bleu_of(stats[pick].sum(0)) for stats in runs])))
            out.append(slope(lengths, ys))
        return out[0], out[1]

    base, other = slopes()
    low, high, p = bootstrap_interval(lambda idx: (lambda s: s[1] - s[0])(slopes(idx)), 0, samples, strata=buckets)
    return {
        "slope_baseline": base,
        "slope_system": other,
        "gap": other - base,
        "low": low,
        "high": high,
        "p": p,
        "samples": samples,
    }


def decline_gap(baseline: Sequence, system: Sequence, buckets: Sequence[Sequence[int]], samples: int = 1000) -> dict:
    """The relative decline of two systems' BLEU from the shortest bucket to the longest (Bahdanau
    et al.'s measure: BLEU of the last bucket / BLEU of the first - 1, per system, the mean over
    its seeds' statistics, ``baseline`` and ``system`` one bleu_statistics array per seed) and the
    test of their difference: ``gap`` = system's decline - baseline's (positive: the system loses
    less), with its 95% interval and two-sided p over ``samples`` bootstrap resamples of the items
    within each bucket (the same items for both systems)."""
    import numpy as np

    from .significance import bootstrap_interval

    first, last = buckets[0], buckets[-1]

    def declines(idx=None) -> tuple[float, float]:
        out = []
        for runs in (baseline, system):
            ends = []
            for members in (first, last):
                pick = np.asarray(members) if idx is None else idx[np.isin(idx, members)]
                ends.append(float(np.mean([bleu_of(stats[pick].sum(0)) for stats in runs])))
            out.append(ends[1] / ends[0] - 1.0 if ends[0] > 0 else 0.0)
        return out[0], out[1]

    base, other = declines()
    low, high, p = bootstrap_interval(lambda idx: (lambda d: d[1] - d[0])(declines(idx)), 0, samples, strata=buckets)
    return {
        "baseline": base,
        "system": other,
        "gap": other - base,
        "low": low,
        "high": high,
        "p": p,
        "samples": samples,
    }
