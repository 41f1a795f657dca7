"""Seed-to-seed spread: a score over seeds, and two configurations compared over their seeds in
words with their numbers: "better" by the exact permutation test (``permuted``, ``better_finding``),
"alike" by Welch's t and its two one-sided tests (``comparison``, ``equivalence_phrase``), one
score measured twice on the same seeds by the paired t test (``paired_comparison``), counts of
seeds that learn or items right against a bar by the exact binomial test (``count_finding``), a
score's mean over seeds against a bar by its t interval (``bar_finding``).
With one seed there is no spread to test by, and the page says so; with too few seeds for the
test to decide, the finding says how many it needs (``undecided_reason``).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from .base import Cell, Evidence, Finding
from .significance import (
    ALPHA,
    BarTest,
    Paired,
    Permutation,
    Welch,
    against_bar,
    better,
    count_needed,
    count_test,
    mean_interval,
    needed_seeds,
    paired,
    permutation,
    welch,
)
from .wording import Phrase, PValue

Where = tuple[tuple[str, ...], str]  # a table cell: its row's first cells and its column


@dataclass
class Spread:
    """One score of a configuration, one value per seed."""

    values: list[float]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)

    @property
    def sd(self) -> float:
        return statistics.stdev(self.values) if len(self.values) > 1 else 0.0

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)

    def format(self, scale: float = 1.0, digits: int = 1, unit: str = "") -> str:
        """ "mean ± sd unit (low–high)" with the values times ``scale``; the value alone for one seed."""
        m = self.mean * scale
        if len(self.values) == 1:
            return f"{m:.{digits}f}{unit}"
        return (
            f"{m:.{digits}f}{unit} ± {self.sd * scale:.{digits}f} "
            f"({self.low * scale:.{digits}f}–{self.high * scale:.{digits}f})"
        )


def separated(a: Spread, b: Spread) -> int | None:
    """+1 when every seed of ``a`` scores above every seed of ``b``, -1 the other way round, 0 when
    the ranges overlap; None when either has fewer than two seeds (no spread to judge by)."""
    if len(a.values) < 2 or len(b.values) < 2:
        return None
    if a.low > b.high:
        return 1
    if b.low > a.high:
        return -1
    return 0


def spreads(rows: Sequence[dict], key: str) -> Spread:
    """The values of ``key`` in ``rows`` (one row per seed) that are not None."""
    return Spread([r[key] for r in rows if r.get(key) is not None])


def untested(a_name: str, a: Spread, b_name: str, b: Spread, unit: str, f: str) -> Phrase:
    """The two scores and that there is no test: fewer than two seeds on a side."""
    return Phrase(
        f"{{}} {{:{f}}}{{}} against {{}} {{:{f}}}{{}} (n = {{}} and {{}}: no spread to test by)",
        a_name,
        a.mean,
        unit,
        b_name,
        b.mean,
        unit,
        len(a.values),
        len(b.values),
    )


def comparison(
    a_name: str, a: Spread, b_name: str, b: Spread, unit: str = "%", digits: int = 1
) -> tuple[Welch | None, Phrase]:
    """(Welch's t-test of ``a`` against ``b`` over seeds, the two scores and the test's numbers as
    a Phrase: means, sds, n, the difference with its 95% interval, t, df and p); with fewer than
    two seeds on a side, the scores and that there is no test."""
    test = welch(a.values, b.values)
    f = f".{digits}f"
    if test is None:
        return None, untested(a_name, a, b_name, b, unit, f)
    return test, Phrase(
        f"{{}} {{:{f}}}{{}} ± {{:{f}}} (n = {{}}) against {{}} {{:{f}}}{{}} ± {{:{f}}} (n = {{}}): "
        f"difference {{:+{f}}}, {{:.0f}}% interval [{{:{f}}}, {{:{f}}}], Welch's t = {{:.2f}}, "
        "df = {:.1f}, p {}",
        a_name,
        test.mean_a,
        unit,
        test.sd_a,
        test.n_a,
        b_name,
        test.mean_b,
        unit,
        test.sd_b,
        test.n_b,
        test.diff,
        100 * (1 - ALPHA),
        test.low95,
        test.high95,
        test.t,
        test.df,
        PValue(test.p),
    )


def equivalence_phrase(test: Welch | None, margin: float, digits: int = 1) -> Phrase:
    """The two one-sided tests' numbers: the 90% interval of the difference against the margin."""
    if test is None:
        return Phrase("")
    f = f".{digits}f"
    return Phrase(
        f"; {{:.0f}}% interval [{{:{f}}}, {{:{f}}}] against the margin ±{{:g}}",
        100 * (1 - 2 * ALPHA),
        test.low90,
        test.high90,
        margin,
    )


def undecided_reason(test: Permutation | None, a: Spread, b: Spread) -> Phrase:
    """Why a comparison of ``a`` and ``b`` by the permutation ``test`` decides nothing, in a few
    words: one seed (no spread), the same score on every seed of both, too few seeds for the exact
    test to reach ALPHA at all (it needs needed_seeds()), or the test cannot tell them apart."""
    if test is None:
        return Phrase("one seed: no spread to test by")
    if len(set(a.values) | set(b.values)) == 1:
        return Phrase("no difference: every seed of both scores the same")
    if test.smallest_p >= ALPHA:
        return Phrase("needs {} seeds", needed_seeds())
    return Phrase("the test cannot tell them apart")


def permuted(
    a_name: str, a: Spread, b_name: str, b: Spread, unit: str = "%", digits: int = 1, lower: bool = False
) -> tuple[Permutation | None, Phrase]:
    """(the exact permutation test of ``a`` against ``b`` over seeds, the two scores and the test's
    numbers as a Phrase: means, sds, n, the difference and p; where every seed of one scores above
    every seed of the other, that and the two ranges; where the seeds cannot reach ALPHA at all,
    the smallest p they can give; ``lower``: a score where lower is better, the separation said
    from below); with fewer than two seeds on a side, the scores and that there is no test."""
    test = permutation(a.values, b.values)
    f = f".{digits}f"
    if test is None:
        return None, untested(a_name, a, b_name, b, unit, f)
    words = Phrase(
        f"{{}} {{:{f}}}{{}} ± {{:{f}}} (n = {{}}) against {{}} {{:{f}}}{{}} ± {{:{f}}} (n = {{}}): "
        f"difference {{:+{f}}}, exact permutation test p {{}}",
        a_name,
        a.mean,
        unit,
        a.sd,
        test.n_a,
        b_name,
        b.mean,
        unit,
        b.sd,
        test.n_b,
        test.diff,
        PValue(test.p),
    )
    if test.separated:
        (high, high_s), (low, low_s) = ((a_name, a), (b_name, b))[:: test.separated]
        if lower:
            words += Phrase(
                f"; every seed of {{}} below every seed of {{}} ({{:{f}}}–{{:{f}}}{{}} against {{:{f}}}–{{:{f}}}{{}})",
                low,
                high,
                low_s.low,
                low_s.high,
                unit,
                high_s.low,
                high_s.high,
                unit,
            )
        else:
            words += Phrase(
                f"; every seed of {{}} above every seed of {{}} ({{:{f}}}–{{:{f}}}{{}} against {{:{f}}}–{{:{f}}}{{}})",
                high,
                low,
                high_s.low,
                high_s.high,
                unit,
                low_s.low,
                low_s.high,
                unit,
            )
    if test.smallest_p >= ALPHA:
        words += Phrase("; {} seeds against {} cannot give p below {:.3f}", test.n_a, test.n_b, test.smallest_p)
    return test, words


def evidence_of(where: Sequence[Where] | None, values: Sequence[float], relation: str, bound=None) -> Evidence | None:
    """The Evidence of a finding whose numbers ``values`` stand in the table cells ``where``
    (None: not in a table)."""
    if not where:
        return None
    cells = tuple(Cell(tuple(row), column, float(v)) for (row, column), v in zip(where, values))
    return Evidence(cells, relation, bound)


def better_finding(
    what: Phrase,
    a_name: str,
    a: Spread,
    b_name: str,
    b: Spread,
    unit: str = "%",
    digits: int = 1,
    *,
    lower: bool = False,
    core: bool = True,
    where: Sequence[Where] | None = None,
    outcomes: dict | None = None,
) -> Finding:
    """The finding that ``a`` does better than ``b`` (higher; lower with ``lower``: a perplexity,
    an error), by the exact permutation test over the seeds: matched when it is better, not
    matched when ``b`` is, undecided (with undecided_reason) when the test cannot tell them
    apart; its text ``what``, the comparison's numbers and the outcome (``outcomes``: the closing
    Phrase for +1, -1, 0 and None, the order of a against b by their means; default which is
    better). ``where``: the table cells of a's and b's means."""
    test, words = permuted(a_name, a, b_name, b, unit, digits, lower)
    order = better(test)
    if order and lower:
        order = -order
    outcomes = outcomes or {
        1: Phrase(": {} is better.", a_name),
        -1: Phrase(": {} is better.", b_name),
        0: Phrase(": the test cannot tell them apart."),
        None: Phrase("."),
    }
    decided = None if not order else order > 0
    higher = a.mean > b.mean
    return Finding(
        decided,
        what + words + outcomes[order],
        core,
        Phrase() if decided is not None else undecided_reason(test, a, b),
        evidence_of(where, (a.mean, b.mean), ("above" if higher else "below") if decided is not None else ""),
    )


def paired_comparison(
    a_name: str, a: Sequence[float], b_name: str, b: Sequence[float], unit: str = "%", digits: int = 1, by: str = "seed"
) -> tuple[Paired | None, Phrase]:
    """(the paired t test of ``a`` against ``b``, a[i] and b[i] the same ``by`` (a seed, a data
    draw), and its numbers as a Phrase: the means, n pairs, the mean difference with its 95%
    interval, t, df, p)."""
    test = paired(a, b)
    f = f".{digits}f"
    if test is None:
        return None, Phrase(
            f"{{}} {{:{f}}}{{}} against {{}} {{:{f}}}{{}} (n = {{}}: no spread to test by)",
            a_name,
            statistics.fmean(a),
            unit,
            b_name,
            statistics.fmean(b),
            unit,
            len(a),
        )
    return test, Phrase(
        f"{{}} {{:{f}}}{{}} against {{}} {{:{f}}}{{}}, paired by {by} (n = {{}}): mean difference {{:+{f}}}, "
        f"{{:.0f}}% interval [{{:{f}}}, {{:{f}}}], paired t = {{:.2f}}, df = {{:.0f}}, p {{}}",
        a_name,
        test.mean_a,
        unit,
        b_name,
        test.mean_b,
        unit,
        test.n,
        test.diff,
        100 * (1 - ALPHA),
        test.low95,
        test.high95,
        test.t,
        test.df,
        PValue(test.p),
    )


def paired_finding(
    what: Phrase,
    a_name: str,
    a: Sequence[float],
    b_name: str,
    b: Sequence[float],
    unit: str = "%",
    digits: int = 1,
    *,
    core: bool = True,
    where: Sequence[Where] | None = None,
    shown: Sequence[float] | None = None,
    by: str = "seed",
) -> Finding:
    """The finding that ``a`` is higher than ``b``, a[i] and b[i] measured on the same ``by``, by
    the paired t test (two-sided at ALPHA): matched when a is higher, not matched when b is,
    undecided when the test cannot tell; its text ``what`` and the test's numbers. ``where``: the
    table cells of a's and b's means; ``shown``: the numbers those cells show where the test
    runs on a transform of them (logarithms), else the means of a and b."""
    test, words = paired_comparison(a_name, a, b_name, b, unit, digits, by)
    order = better(test)
    matched = None if not order else order > 0
    shown = shown or (statistics.fmean(a), statistics.fmean(b))
    return Finding(
        matched,
        what + words,
        core,
        Phrase("" if matched is not None else "the paired test cannot tell"),
        evidence_of(where, shown, {1: "above", -1: "below"}.get(order or 0, "")),
    )


def count_finding(
    what: Phrase,
    k: int,
    n: int,
    bar: float,
    trials: str = "seeds",
    *,
    core: bool = True,
    where: Sequence[Where] | None = None,
    scale: float = 100.0,
) -> Finding:
    """The finding that the share of successes ``k`` of ``n`` (seeds that learned, test items
    right) reaches ``bar`` (a share, 0-1): matched when the exact binomial 95% (Clopper-Pearson)
    interval of the share lies at or above it, not matched when wholly below, else undecided:
    "needs N seeds" (or items) when even n of n could not put the interval above the bar.
    ``where``: the table cell showing the share (times ``scale``)."""
    test = count_test(k, n)
    verdict = against_bar(test, bar)
    needed = count_needed(bar) if verdict is None and 0.0 < bar < 1.0 else 1
    numbers = Phrase(
        f"{{}} of {{}} {trials} ({{:.1f}}%), {{:.0f}}% interval of the share [{{:.1f}}%, {{:.1f}}%] (exact binomial) "
        "against the bar of {:g}%",
        k,
        n,
        100 * test.share,
        100 * (1 - ALPHA),
        100 * test.low95,
        100 * test.high95,
        100 * bar,
    )
    if verdict is None and n < needed:
        reason = Phrase(f"needs {{}} {trials}", needed)
        numbers += Phrase(f"; even {{}} of {{}} {trials} would not put it above the bar", n, n)
    else:
        reason = Phrase() if verdict is not None else Phrase("the interval holds the bar")
    return Finding(
        verdict,
        what
        + numbers
        + {
            True: Phrase(": at or above the bar."),
            False: Phrase(": below the bar."),
            None: Phrase(": the test cannot tell whether it reaches the bar."),
        }[verdict],
        core,
        reason,
        evidence_of(where, (scale * test.share,), {True: "above", False: "below", None: ""}[verdict], scale * bar),
    )


def bar_finding(
    what: Phrase,
    values: Spread,
    bar: float,
    unit: str = "%",
    digits: int = 1,
    *,
    core: bool = True,
    where: Sequence[Where] | None = None,
) -> Finding:
    """The finding that a score's mean over seeds (``values``) reaches ``bar`` (in the score's
    own unit): matched when the 95% t interval of the mean lies at or above it, not matched when
    wholly below, else undecided (one seed: no interval). ``where``: the table cell of the mean."""
    interval = mean_interval(values.values)
    verdict = against_bar(interval, bar)
    f = f".{digits}f"
    if interval is None:
        numbers = Phrase(f"{{:{f}}}{{}} (one seed: no interval)", values.mean, unit)
    else:
        numbers = Phrase(
            f"mean {{:{f}}}{{}} over {{}} seeds, {{:.0f}}% t interval [{{:{f}}}{{}}, {{:{f}}}{{}}]",
            interval.mean,
            unit,
            interval.n,
            100 * (1 - ALPHA),
            interval.low95,
            unit,
            interval.high95,
            unit,
        )
    closing = {
        True: Phrase(f": at or above the bar of {{:{f}}}{{}}.", bar, unit),
        False: Phrase(f": below the bar of {{:{f}}}{{}}.", bar, unit),
        None: Phrase(f": the interval holds the bar of {{:{f}}}{{}}.", bar, unit),
    }[verdict]
    reason = Phrase()
    if verdict is None:
        reason = Phrase("one seed: no spread to test by") if interval is None else Phrase("the interval holds the bar")
    return Finding(
        verdict,
        what + numbers + closing,
        core,
        reason,
        evidence_of(where, (values.mean,), {True: "above", False: "below", None: ""}[verdict], bar),
    )


def alike_reason(test: Welch | Paired | None) -> Phrase:
    """Why an equivalence test decides nothing: one seed, or an interval of the difference that
    neither lies inside the margin nor wholly beyond it."""
    if test is None:
        return Phrase("one seed: no spread to test by")
    return Phrase("the interval of the difference straddles the margin")


def slope_interval(slopes: Sequence[float], digits: int, against: Phrase) -> tuple[BarTest | None, Phrase]:
    """The 95% t interval of the mean of ``slopes`` (one per draw or seed; None for one) and the
    words "slope M (95% interval L to H)" with ``against`` (the bar or band it is held to)."""
    interval = mean_interval(slopes)
    f = f"{{:.{digits}f}}"
    mean = statistics.fmean(slopes)
    if interval is None:
        return None, Phrase(f"slope {f} (one draw: no interval), against ", mean) + against
    return interval, Phrase(
        f"slope {f} ({{:.0f}}% interval {f} to {f}), against ", mean, 95, interval.low95, interval.high95
    ) + against
