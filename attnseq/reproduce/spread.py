"""Seed-to-seed spread: a score over seeds, and whether two configurations differ by more than
it.

With a few seeds an effect counts only when the ranges do not overlap: every seed of one
configuration scores above every seed of the other (``separated``). With one seed there is no
spread to judge by, and the page says so.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence


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
        """"mean ± sd unit (low–high)" with the values times ``scale``; the value alone for one seed."""
        m = self.mean * scale
        if len(self.values) == 1:
            return f"{m:.{digits}f}{unit}"
        return (f"{m:.{digits}f}{unit} ± {self.sd * scale:.{digits}f} "
                f"({self.low * scale:.{digits}f}–{self.high * scale:.{digits}f})")


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


def alike(a: Spread, b: Spread, within: float) -> bool | None:
    """Whether ``a`` and ``b`` score alike: True when their seed ranges overlap, their means are at
    most ``within`` apart and neither's standard deviation is larger; False when the ranges are
    apart; None when the ranges overlap only because the seeds spread too widely to tell, or
    either has one seed."""
    order = separated(a, b)
    if order is None:
        return None
    if order:
        return False
    return True if abs(a.mean - b.mean) <= within and max(a.sd, b.sd) <= within else None


def spreads(rows: Sequence[dict], key: str) -> Spread:
    """The values of ``key`` in ``rows`` (one row per seed) that are not None."""
    return Spread([r[key] for r in rows if r.get(key) is not None])


def contrast(a_name: str, a: Spread, b_name: str, b: Spread, unit: str = "%", digits: int = 1
             ) -> tuple[int | None, str]:
    """(``separated(a, b)``, the two scores and what their seed ranges say, in words)."""
    order = separated(a, b)
    words = {None: "one seed each: no spread to judge by", 0: "the seed ranges overlap",
             1: f"every seed of {a_name} above every seed of {b_name}",
             -1: f"every seed of {b_name} above every seed of {a_name}"}
    return order, (f"{a_name} {a.format(digits=digits, unit=unit)} against {b_name} "
                   f"{b.format(digits=digits, unit=unit)} ({words[order]})")
