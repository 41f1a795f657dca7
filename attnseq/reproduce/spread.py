"""Seed-to-seed spread: a score over seeds, and two configurations compared over their seeds by
Welch's t-test (significance.welch), in words with its numbers (``comparison``). With one seed
there is no spread to test by, and the page says so.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from .base import Finding
from .significance import ALPHA, Welch, against_bar, better, mean_interval, welch
from .wording import Phrase, PValue


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


def comparison(
    a_name: str, a: Spread, b_name: str, b: Spread, unit: str = "%", digits: int = 1
) -> tuple[Welch | None, Phrase]:
    """(Welch's t-test of ``a`` against ``b`` over seeds, the two scores and the test's numbers as
    a Phrase: means, sds, n, the difference with its 95% interval, t, df and p); with fewer than
    two seeds on a side, the scores and that there is no test."""
    test = welch(a.values, b.values)
    f = f".{digits}f"
    if test is None:
        return None, Phrase(
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


def better_finding(
    what: Phrase, a_name: str, a: Spread, b_name: str, b: Spread, unit: str = "%", digits: int = 1
) -> Finding:
    """The finding that ``a`` does better than ``b`` (higher), by Welch's t over the seeds: matched
    when it is better, not matched when ``b`` is, undecided when the test cannot tell them apart
    or has no spread to test by; its text ``what``, the comparison's numbers and which is better."""
    test, words = comparison(a_name, a, b_name, b, unit, digits)
    order = better(test)
    return Finding(
        None if not order else order > 0,
        what
        + words
        + {
            1: Phrase(": {} is better.", a_name),
            -1: Phrase(": {} is better.", b_name),
            0: Phrase(": the test cannot tell them apart."),
            None: Phrase("."),
        }[order],
    )


def bar_finding(what: Phrase, values: Sequence[float], bar: float, unit: str = "%", digits: int = 1) -> Finding:
    """The finding that a score reaches ``bar`` over the seeds ``values``: matched when the 95%
    interval of its mean lies at or above the bar, not matched when wholly below it, undecided
    when it straddles the bar or one seed gives no interval; its text ``what`` and the numbers."""
    test = mean_interval(values)
    verdict = against_bar(test, bar)
    f = f".{digits}f"
    if test is None:
        numbers = Phrase(
            f"{{:{f}}}{{}} (n = {{}}: no spread to test by) against the bar of {{:g}}{{}}",
            statistics.fmean(values),
            unit,
            len(values),
            bar,
            unit,
        )
    else:
        numbers = Phrase(
            f"{{:{f}}}{{}} ± {{:{f}}} (n = {{}}), {{:.0f}}% interval of the mean [{{:{f}}}, {{:{f}}}] "
            "against the bar of {:g}{}",
            test.mean,
            unit,
            test.sd,
            test.n,
            100 * (1 - ALPHA),
            test.low95,
            test.high95,
            bar,
            unit,
        )
    return Finding(
        verdict,
        what
        + numbers
        + {
            True: Phrase(": at or above the bar."),
            False: Phrase(": below the bar."),
            None: Phrase(": the test cannot tell whether it reaches the bar."),
        }[verdict],
    )
