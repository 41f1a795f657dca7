"""The tests that decide a reproduction's comparisons, each reported with its numbers.

- Two configurations over seeds: Welch's t-test on their means (``welch``), which says one is
  *better* when its two-sided p is below ``ALPHA``, and the two one-sided tests (TOST) of
  equivalence, which say two are *alike within m points* when the 90% interval of their
  difference lies inside (-m, m) (``alike``), and *not alike* when the 95% interval lies wholly
  beyond one of the bounds.
- One configuration against a bar (a score a claim needs) over seeds: the 95% t interval of its
  mean, which says it is *at or above the bar* when the interval lies there, *below* when it lies
  wholly below (``against_bar``).
- One model against another on the same test items (few seeds): a paired bootstrap over the
  items (sacrebleu's for BLEU, scoring.paired_bleu; ``bootstrap_interval`` for any statistic).

No SciPy: Student's t distribution is computed from the regularised incomplete beta function.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

ALPHA = 0.05  # the level of every test a page states


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (Lentz's method)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-14:
            break
    return h


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b), 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_two_sided(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom."""
    if math.isinf(t):
        return 0.0
    return incomplete_beta(df / 2.0, 0.5, df / (df + t * t))


def t_quantile(q: float, df: float) -> float:
    """The ``q`` quantile (q > 0.5) of Student's t with ``df`` degrees of freedom (bisection)."""
    low, high = 0.0, 1e6
    for _ in range(200):
        mid = (low + high) / 2.0
        if 1.0 - t_two_sided(mid, df) / 2.0 < q:
            low = mid
        else:
            high = mid
    return (low + high) / 2.0


@dataclass
class Welch:
    """Welch's t-test of mean(a) - mean(b) over seeds: the two samples' means, sds and sizes, the
    difference, its standard error, Welch-Satterthwaite degrees of freedom, t, the two-sided p,
    and the 95% and 90% intervals of the difference."""

    mean_a: float
    sd_a: float
    n_a: int
    mean_b: float
    sd_b: float
    n_b: int
    diff: float
    se: float
    df: float
    t: float
    p: float
    low95: float
    high95: float
    low90: float
    high90: float


def welch(a: Sequence[float], b: Sequence[float]) -> Welch | None:
    """Welch's t-test of ``a`` against ``b`` (one value per seed); None when either has fewer
    than two values (no spread to test against). Samples without spread (every seed the same
    score) give an interval of width 0 and p = 0 (or 1 when the means are equal)."""
    if len(a) < 2 or len(b) < 2:
        return None
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    va, vb = statistics.variance(a), statistics.variance(b)
    wa, wb = va / len(a), vb / len(b)
    se, diff = math.sqrt(wa + wb), ma - mb
    if se == 0.0:
        p = 1.0 if diff == 0.0 else 0.0
        return Welch(
            ma,
            0.0,
            len(a),
            mb,
            0.0,
            len(b),
            diff,
            0.0,
            float(len(a) + len(b) - 2),
            math.copysign(math.inf, diff) if diff else 0.0,
            p,
            diff,
            diff,
            diff,
            diff,
        )
    df = (wa + wb) ** 2 / ((wa**2 / (len(a) - 1) if wa else 0.0) + (wb**2 / (len(b) - 1) if wb else 0.0))
    t = diff / se
    h95, h90 = t_quantile(0.975, df) * se, t_quantile(0.95, df) * se
    return Welch(
        ma,
        math.sqrt(va),
        len(a),
        mb,
        math.sqrt(vb),
        len(b),
        diff,
        se,
        df,
        t,
        t_two_sided(t, df),
        diff - h95,
        diff + h95,
        diff - h90,
        diff + h90,
    )


def better(test: Welch | None) -> int | None:
    """+1 when a is better than b (p < ALPHA, a's mean higher), -1 the other way round, 0 when the
    test cannot tell them apart; None without a test (fewer than two seeds)."""
    if test is None:
        return None
    if test.p >= ALPHA:
        return 0
    return 1 if test.diff > 0 else -1


def alike(test: Welch | None, margin: float) -> bool | None:
    """Equivalence within ``margin`` by the two one-sided tests at ALPHA: True when the 90%
    interval of the difference lies inside (-margin, margin); False when the 95% interval lies
    wholly beyond one bound (the two differ by more than the margin); else None (undecided)."""
    if test is None:
        return None
    if -margin < test.low90 and test.high90 < margin:
        return True
    if test.low95 > margin or test.high95 < -margin:
        return False
    return None


@dataclass
class BarTest:
    """The mean of one score over seeds against a bar: mean, sd, n, and the 95% t interval of the
    mean (of width 0 when every seed scored the same)."""

    mean: float
    sd: float
    n: int
    low95: float
    high95: float


def mean_interval(values: Sequence[float]) -> BarTest | None:
    """The 95% t interval of the mean of ``values`` (one per seed); None for fewer than two."""
    if len(values) < 2:
        return None
    mean, sd = statistics.fmean(values), statistics.stdev(values)
    half = t_quantile(0.975, len(values) - 1) * sd / math.sqrt(len(values)) if sd else 0.0
    return BarTest(mean, sd, len(values), mean - half, mean + half)


def against_bar(test: BarTest | None, bar: float) -> bool | None:
    """True when the interval of ``test`` lies at or above ``bar``, False when it lies wholly
    below it, None when it straddles the bar or there is no test (fewer than two seeds)."""
    if test is None:
        return None
    if test.low95 >= bar:
        return True
    if test.high95 < bar:
        return False
    return None


def bootstrap_interval(
    statistic: Callable[[np.ndarray], float],
    n: int,
    samples: int = 1000,
    seed: int = 1,
    strata: Sequence[Sequence[int]] | None = None,
) -> tuple[float, float, float]:
    """(the 2.5% and 97.5% quantiles of ``statistic`` over ``samples`` resamples of ``n`` items
    drawn with replacement, the two-sided bootstrap p of the statistic being 0): ``statistic``
    takes the indices of a resample. With ``strata`` (lists of item indices), each stratum is
    resampled within itself, so every resample keeps their sizes."""
    rng = np.random.default_rng(seed)
    groups = [np.asarray(s, dtype=np.int64) for s in strata] if strata else [np.arange(n)]
    values = np.array(
        [
            statistic(np.concatenate([g[rng.integers(0, len(g), len(g))] for g in groups if len(g)]))
            for _ in range(samples)
        ]
    )
    p = min(1.0, 2.0 * min(float(np.mean(values <= 0.0)), float(np.mean(values >= 0.0))))
    return float(np.quantile(values, 0.025)), float(np.quantile(values, 0.975)), p


def slope(x: Sequence[float], y: Sequence[float]) -> float:
    """The least-squares slope of ``y`` on ``x``."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    dx = x - x.mean()
    return float((dx * (y - y.mean())).sum() / max((dx * dx).sum(), 1e-12))
