"""The output layer (generator): decoder features -> next-token logits."""

from __future__ import annotations

import torch
from torch import nn


class OutputLayer(nn.Linear):
    """``nn.Linear`` from features (..., F) to logits (..., V), with the same parameters.

    For the rows of one decoding step (B, F) it multiplies first and adds the bias in place:
    torch's addmm copies the bias into the (B, V) output before multiplying, which costs about a
    tenth of the product with an 8,000-word vocabulary; the result is the same to the bit.
    Training computes the loss from ``weight`` and ``bias`` directly (``nn.loss``).
    """

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        if features.dim() != 2 or self.bias is None:
            return super().forward(features)
        return torch.mm(features, self.weight.t()).add_(self.bias)  # (B, V)
