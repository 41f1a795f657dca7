"""The tests that decide a reproduction's comparisons, each reported with its numbers. Every
distribution is SciPy's (``scipy.stats``).

- Two configurations over seeds, each seed an independent run: the exact permutation test of the
  difference of their means over every split of the pooled seeds (``permutation``), which says one
  is *better* when its two-sided p is below ``ALPHA``. It names the case where every seed of one
  scores above every seed of the other (``separated``), and the smallest p its numbers of seeds can
  give at all (that case): 2 / C(6, 3) = 0.1 at 3 seeds against 3, so no comparison of 3 seeds
  decides, however far apart; 2 / C(10, 5) = 0.008 at 5 against 5. Where the seeds cannot decide,
  the finding says it needs ``SEEDS_NEEDED`` seeds (``needed_seeds``).
- Two configurations alike: Welch's t (``welch``, scipy.stats.ttest_ind with equal_var=False) and
  its two one-sided tests (TOST) of equivalence, which say two are *alike within m points* when
  the 90% interval of their difference lies inside (-m, m) (``alike``), and *not alike* when the
  95% interval lies wholly beyond one of the bounds.
- Paired: one score measured twice on the same seed or the same data draw (a model on the lengths
  it was trained on and on longer ones; two methods on one draw of data): the paired t test of
  the differences (``paired``, scipy.stats.ttest_rel), its intervals read by ``alike`` and
  ``better`` as Welch's are.
- Counts: outcomes that are bimodal (a seed learns the task or it does not), or items of a test
  set right or wrong: the exact binomial test of k successes in n against a share
  (``count_test``, scipy.stats.binomtest, with its Clopper-Pearson interval), read against a bar by
  ``against_bar``; two arms' counts by Fisher's exact test (``fisher``).
- One configuration against a bar over seeds: the 95% t interval of its mean (``mean_interval``),
  which says it is *at or above the bar* when the interval lies there, *below* when it lies
  wholly below (``against_bar``).
- One model against another on the same test items (few seeds): a paired bootstrap over the
  items (sacrebleu's for BLEU, scoring.paired_bleu; ``bootstrap_interval`` for any statistic).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

ALPHA = 0.05  # the level of every test a page states
# Seeds per arm a comparison needs where seeds disagree (issue 41): with 5 against 5 the exact
# permutation test can reach p = 2 / 252; with 3 against 3 it cannot go below 0.1.
SEEDS_NEEDED = 5
EXACT_LIMIT = 200_000  # splits of the pooled seeds up to which the permutation test is exact
RESAMPLES = 9_999  # random splits beyond it (a fixed generator: the same p every time)


def t_two_sided(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom."""
    return float(2.0 * stats.t.sf(abs(t), df))


def t_quantile(q: float, df: float) -> float:
    """The ``q`` quantile of Student's t with ``df`` degrees of freedom."""
    return float(stats.t.ppf(q, df))


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
    """Welch's t-test of ``a`` against ``b`` (one value per seed; scipy.stats.ttest_ind with
    equal_var=False); None when either has fewer than two values (no spread to test against).
    Samples without spread (every seed the same score) give an interval of width 0 and p = 0 (or
    1 when the means are equal)."""
    if len(a) < 2 or len(b) < 2:
        return None
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    sa, sb = statistics.stdev(a), statistics.stdev(b)
    diff = ma - mb
    se = math.sqrt(sa**2 / len(a) + sb**2 / len(b))
    if se == 0.0:
        t = math.copysign(math.inf, diff) if diff else 0.0
        p = 1.0 if diff == 0.0 else 0.0
        return Welch(ma, 0.0, len(a), mb, 0.0, len(b), diff, 0.0, float(len(a) + len(b) - 2), t, p, *[diff] * 4)
    test = stats.ttest_ind(a, b, equal_var=False)
    i95, i90 = test.confidence_interval(0.95), test.confidence_interval(0.90)
    return Welch(
        ma,
        sa,
        len(a),
        mb,
        sb,
        len(b),
        diff,
        se,
        float(test.df),
        float(test.statistic),
        float(test.pvalue),
        float(i95.low),
        float(i95.high),
        float(i90.low),
        float(i90.high),
    )


@dataclass
class Paired:
    """The paired t test of mean(a - b) over pairs (the same seed or data draw measured twice): the
    means of a and b, the mean difference, the sd of the differences, n pairs, t, df, the two-sided
    p, and the 95% and 90% intervals of the mean difference."""

    mean_a: float
    mean_b: float
    diff: float
    sd: float
    n: int
    t: float
    df: float
    p: float
    low95: float
    high95: float
    low90: float
    high90: float


def paired(a: Sequence[float], b: Sequence[float]) -> Paired | None:
    """The paired t test of ``a`` against ``b`` (scipy.stats.ttest_rel), ``a[i]`` and ``b[i]`` one
    pair; None for fewer than two pairs. Differences without spread give an interval of width 0
    and p = 0 (1 when every difference is 0)."""
    if len(a) != len(b):
        raise ValueError(f"paired: {len(a)} values against {len(b)}")
    if len(a) < 2:
        return None
    d = [x - y for x, y in zip(a, b)]
    diff, sd, n = statistics.fmean(d), statistics.stdev(d), len(d)
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    if sd == 0.0:
        t = math.copysign(math.inf, diff) if diff else 0.0
        return Paired(ma, mb, diff, 0.0, n, t, float(n - 1), 1.0 if diff == 0.0 else 0.0, *[diff] * 4)
    test = stats.ttest_rel(a, b)
    i95, i90 = test.confidence_interval(0.95), test.confidence_interval(0.90)
    return Paired(
        ma,
        mb,
        diff,
        sd,
        n,
        float(test.statistic),
        float(test.df),
        float(test.pvalue),
        float(i95.low),
        float(i95.high),
        float(i90.low),
        float(i90.high),
    )


@dataclass
class Permutation:
    """The exact permutation test of mean(a) - mean(b) over independent seeds: the means and sizes,
    the difference, the two-sided p over every split of the pooled values into groups of n_a and
    n_b (``exact``; else ``RESAMPLES`` random splits), the smallest p these sizes can give (every
    value of one group above every value of the other), and ``separated``: +1 when every value of
    a is above every value of b, -1 the other way round, 0 when they overlap."""

    mean_a: float
    n_a: int
    mean_b: float
    n_b: int
    diff: float
    p: float
    smallest_p: float
    separated: int
    exact: bool = True


def smallest_p(n_a: int, n_b: int) -> float:
    """The smallest two-sided p of the permutation test of two groups of ``n_a`` and ``n_b``
    distinct values: 2 / C(n_a + n_b, n_a) (at most 1)."""
    return min(1.0, 2.0 / math.comb(n_a + n_b, n_a))


def needed_seeds(alpha: float = ALPHA) -> int:
    """The seeds per arm a comparison is run with where seeds disagree: SEEDS_NEEDED, or more when
    the exact test at that many could not reach ``alpha``."""
    n = SEEDS_NEEDED
    while smallest_p(n, n) >= alpha:
        n += 1
    return n


def permutation(a: Sequence[float], b: Sequence[float]) -> Permutation | None:
    """The permutation test of ``a`` against ``b`` (one value per seed), by
    scipy.stats.permutation_test on the difference of the means: exact up to EXACT_LIMIT splits;
    None when either has fewer than two values."""
    if len(a) < 2 or len(b) < 2:
        return None
    splits = math.comb(len(a) + len(b), len(a))
    exact = splits <= EXACT_LIMIT
    test = stats.permutation_test(
        (np.asarray(a, dtype=float), np.asarray(b, dtype=float)),
        lambda x, y, axis: np.mean(x, axis=axis) - np.mean(y, axis=axis),
        permutation_type="independent",
        vectorized=True,
        n_resamples=np.inf if exact else RESAMPLES,
        alternative="two-sided",
        rng=np.random.default_rng(1),
    )
    order = 1 if min(a) > max(b) else -1 if min(b) > max(a) else 0
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    return Permutation(
        ma, len(a), mb, len(b), ma - mb, float(min(1.0, test.pvalue)), smallest_p(len(a), len(b)), order, exact
    )


def better(test: Welch | Paired | Permutation | None) -> int | None:
    """+1 when a is better than b (p < ALPHA, a's mean higher), -1 the other way round, 0 when the
    test cannot tell them apart; None without a test (fewer than two seeds)."""
    if test is None:
        return None
    if test.p >= ALPHA:
        return 0
    return 1 if test.diff > 0 else -1


def alike(test: Welch | Paired | None, margin: float) -> bool | None:
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
    half = t_quantile(1 - ALPHA / 2, len(values) - 1) * sd / math.sqrt(len(values)) if sd else 0.0
    return BarTest(mean, sd, len(values), mean - half, mean + half)


@dataclass
class Count:
    """k successes in n (seeds that learned, test items right) against the share ``p0``: the share
    k / n, the exact binomial test's two-sided p, and the share's 95% Clopper-Pearson interval."""

    k: int
    n: int
    p0: float
    share: float
    p: float
    low95: float
    high95: float


def count_test(k: int, n: int, p0: float = 0.5) -> Count | None:
    """The exact binomial test of ``k`` successes in ``n`` against the share ``p0``
    (scipy.stats.binomtest); None when n is 0."""
    if n < 1:
        return None
    test = stats.binomtest(int(k), int(n), p0)
    interval = test.proportion_ci(1 - ALPHA, method="exact")
    return Count(int(k), int(n), p0, k / n, float(test.pvalue), float(interval.low), float(interval.high))


def count_needed(bar: float, alpha: float = ALPHA) -> int:
    """The fewest trials at which every one a success puts the share's 95% interval at or above
    ``bar`` (0 < bar < 1): the count a claim "most of them" needs at all. n of n successes have
    the Clopper-Pearson lower bound (alpha / 2) ** (1 / n)."""
    return max(1, math.ceil(math.log(alpha / 2) / math.log(bar) - 1e-9))


@dataclass
class Fisher:
    """Two arms' counts, k_a of n_a against k_b of n_b, by Fisher's exact test: the two shares and
    its two-sided p."""

    k_a: int
    n_a: int
    k_b: int
    n_b: int
    p: float

    @property
    def diff(self) -> float:
        return self.k_a / self.n_a - self.k_b / self.n_b


def fisher(k_a: int, n_a: int, k_b: int, n_b: int) -> Fisher | None:
    """Fisher's exact test of k_a successes in n_a against k_b in n_b (scipy.stats.fisher_exact);
    None when an arm is empty. ``better`` reads it as it reads the other tests."""
    if n_a < 1 or n_b < 1:
        return None
    test = stats.fisher_exact([[k_a, n_a - k_a], [k_b, n_b - k_b]])
    return Fisher(k_a, n_a, k_b, n_b, float(test.pvalue))


def against_bar(test: BarTest | Count | None, bar: float) -> bool | None:
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
