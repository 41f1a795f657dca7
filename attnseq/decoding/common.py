"""What every search returns, and the output-length limits they share."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


@dataclass
class Hypothesis:
    """One output: token ids (no bos/eos), its score, and its attention (T_out, S) or None
    (a tensor from the torch engine, an array from the NumPy engine).

    ``score`` is the sum of the tokens' log-probabilities (eos included when it was produced),
    divided by the length penalty when beam search used one.
    """

    tokens: list[int]
    score: float
    alignment: torch.Tensor | np.ndarray | None = None


def max_lengths(src_mask: torch.Tensor, ratio: float, offset: int, cap: int) -> torch.Tensor:
    """Per-sentence output limits (B,): min(cap, ratio * source length + offset), at least 1."""
    lengths = src_mask.sum(1).float()
    limit = torch.floor(lengths * ratio).long() + offset
    return limit.clamp(min=1, max=cap)
