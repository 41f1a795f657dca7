"""The masked softmax that normalises attention scores: the scorers' (base.py), the
Transformer's scaled dot-product attention with weights, the memory networks' reads."""

from __future__ import annotations

import torch


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None, zero_empty_rows: bool = False) -> torch.Tensor:
    """Softmax of ``scores`` over the last dimension where ``mask`` is True (boolean,
    broadcastable to ``scores``; None: everywhere): exactly zero where it is False. A row with
    nothing to attend to is NaN (0 / 0), or all zeros with ``zero_empty_rows`` (an empty story)."""
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if zero_empty_rows and mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights
