"""What every search returns."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Hypothesis:
    """One output: token ids (no bos/eos), its score, and its attention (T_out, S) or None
    (a tensor from the torch engine, an array from the NumPy engine).

    ``score`` is the sum of the tokens' log-probabilities (eos included when it was produced),
    divided by the length penalty when beam search used one.
    """

    tokens: list[int]
    score: float
    alignment: Any = None
