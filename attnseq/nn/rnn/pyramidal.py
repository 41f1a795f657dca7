"""The pyramidal bidirectional encoder of Listen, Attend and Spell (Chan et al. 2016): frames of
features (B, L, F) -> Memory over L / reduction ** layers steps.

A bidirectional layer reads the frames; each of ``layers`` pyramidal layers above it (pBLSTM)
reads the outputs of the layer below with every ``reduction`` consecutive steps concatenated,

    h_i^j = pBLSTM(h_{i-1}^j, [h_{2i}^{j-1}; h_{2i+1}^{j-1}])          (the paper's eq. 2, reduction 2)

so each halves time (3 layers: 8 times fewer steps for the attention to read, and a step sees
80 ms of speech at a 10 ms hop). A sequence whose length is not a multiple of ``reduction`` has
its last group completed with zeros, the padding's value, so a sequence's memory is the same
alone and in a batch; its length becomes ceil(length / reduction), and the mask says so.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ...schema import number
from ..state import Memory
from .cells import build_rnn, length_mask
from .encoders import check_even, final_hidden


@dataclass
class PyramidOptions:
    layers: int = number(3, 0)  # pyramidal layers above the first, each dividing time by reduction
    reduction: int = number(2, 2)  # consecutive steps each pyramidal layer concatenates (the paper: 2)


def reduced_lengths(lengths: torch.Tensor, reduction: int) -> torch.Tensor:
    """Each sequence's length after a layer that joins ``reduction`` steps: ceil(lengths / r) (B,)."""
    return torch.div(lengths + reduction - 1, reduction, rounding_mode="floor")


def join_steps(x: torch.Tensor, reduction: int) -> torch.Tensor:
    """(B, L, H) -> (B, ceil(L / r), r * H): every ``reduction`` consecutive steps concatenated,
    the last group completed with zeros."""
    batch, steps, size = x.shape
    short = -steps % reduction
    if short:
        x = torch.cat([x, x.new_zeros(batch, short, size)], 1)
    return x.reshape(batch, (steps + short) // reduction, reduction * size)


class PyramidalEncoder(nn.Module):
    """Listen (Chan et al. 2016): a bidirectional layer over the frames, then ``options.layers``
    pyramidal bidirectional layers, each joining ``options.reduction`` steps; ``cfg`` gives the
    cell (model.cell), the width (model.hidden_size, both directions together) and the dropout
    between layers. ``forward(features (B, L, F), mask (B, L))`` -> Memory with keys and values
    (B, ceil(L / r ** layers), H), its mask, and each layer's final states (1 + layers, B, H)."""

    def __init__(self, cfg, input_size: int, options: PyramidOptions):
        super().__init__()
        check_even(cfg, True)
        self.reduction = options.reduction
        self.dropout = nn.Dropout(cfg.dropout)
        half = cfg.hidden_size // 2
        self.layers = nn.ModuleList([build_rnn(cfg.cell, input_size, half, 1, 0.0, True)])
        for _ in range(options.layers):
            self.layers.append(build_rnn(cfg.cell, options.reduction * self.layers[-1].output_size, half, 1, 0.0, True))
        self.output_size = self.layers[-1].output_size
        self.num_layers = len(self.layers)

    def forward(self, features: torch.Tensor, mask: torch.Tensor) -> Memory:
        x, lengths = features, mask.sum(1)  # (B, L, F), (B,)
        finals = []
        for level, layer in enumerate(self.layers):
            if level:
                x = join_steps(x, self.reduction)  # (B, L_level, r * H)
                lengths = reduced_lengths(lengths, self.reduction)
            packed = not bool((lengths == x.shape[1]).all())
            outputs, hidden = layer.encode(x, lengths if packed else None)  # (B, L_level, H), zero at padding
            x = self.dropout(outputs) * length_mask(lengths, x.shape[1]).unsqueeze(-1)  # padding stays zero
            finals.append(final_hidden(hidden, 1, layer.directions))  # (1, B, H)
        mask = length_mask(lengths, x.shape[1])  # (B, L / r ** layers)
        return Memory(keys=x, values=x, mask=mask, final=torch.cat(finals, 0))
