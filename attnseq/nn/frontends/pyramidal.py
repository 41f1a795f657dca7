"""``model.frontend: pyramidal``: the listener of Listen, Attend and Spell (Chan et al. 2016), the
pyramidal bidirectional encoder: frames of features (B, L, F) -> cells over L / (stack *
reduction ** layers) steps.

A bidirectional layer reads the frames; each of ``layers`` pyramidal layers above it (pBLSTM)
reads the outputs of the layer below with every ``reduction`` consecutive steps concatenated,

    h_i^j = pBLSTM(h_{i-1}^j, [h_{2i}^{j-1}; h_{2i+1}^{j-1}])          (the paper's eq. 5, reduction 2)

so each divides time (3 layers: 8 times fewer steps for the attention to read, a step seeing
80 ms of speech at a 10 ms hop). ``stack`` frames may be joined the same way before the first
layer (Sak et al. 2015's lower frame rate; 1, the paper's, joins none): the bottom layer, which
reads the most steps, then costs that many times less.

A sequence whose length is not a multiple of a join has its last group completed with zeros, the
padding's value, and the layers read each sequence within its own length, so a sequence's cells
are the same alone and in a batch; its length becomes ceil(length / r), and the mask says so
(the decoders never attend past it).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ...errors import ConfigError
from ...schema import number
from ..rnn.cells import build_rnn, length_mask
from .base import FRONTENDS, Frontend


@dataclass
class PyramidOptions:
    layers: int = number(3, 0, 6)  # pyramidal layers above the first, each dividing time by reduction
    reduction: int = number(2, 2, 8)  # consecutive steps a pyramidal layer concatenates (the paper: 2)
    stack: int = number(1, 1, 8)  # frames joined before the first layer (1: none, the paper's)


def reduced_lengths(lengths: torch.Tensor, reduction: int) -> torch.Tensor:
    """Each sequence's length after ``reduction`` steps are joined: ceil(lengths / r) (B,)."""
    return torch.div(lengths + reduction - 1, reduction, rounding_mode="floor")


def join_steps(x: torch.Tensor, reduction: int) -> torch.Tensor:
    """(B, L, H) -> (B, ceil(L / r), r * H): every ``reduction`` consecutive steps concatenated,
    the last group completed with zeros."""
    batch, steps, size = x.shape
    short = -steps % reduction
    if short:
        x = torch.cat([x, x.new_zeros(batch, short, size)], 1)
    return x.reshape(batch, (steps + short) // reduction, reduction * size)


@FRONTENDS.register("pyramidal", options=PyramidOptions)
class PyramidalFrontend(Frontend):
    """Listen (Chan et al. 2016): ``stack`` frames joined, a bidirectional layer, then ``layers``
    pyramidal bidirectional layers joining ``reduction`` steps each; the cell is model.cell (an
    LSTM for the Transformer), both directions together ``output_size`` wide, model.dropout
    between layers. cells (B, ceil(L / (stack * reduction ** layers)), H)."""

    reads = "audio"

    def __init__(self, cfg, feature_size: int, output_size: int, options: PyramidOptions):
        super().__init__()
        if output_size % 2:
            raise ConfigError(
                f"model.hidden_size: the pyramidal frontend is bidirectional and needs an even size, got {output_size}",
                key="model.hidden_size",
            )
        self.options, self.output_size = options, output_size
        self.dropout = nn.Dropout(getattr(cfg, "dropout", 0.0))
        cell = getattr(cfg, "cell", None) or "lstm"
        joins = [options.stack] + [options.reduction] * options.layers  # steps joined below each layer
        self.joins = joins
        self.layers = nn.ModuleList()
        size = feature_size
        for join in joins:
            self.layers.append(build_rnn(cell, join * size, output_size // 2, bidirectional=True))
            size = self.layers[-1].output_size

    def grid(self, length: int) -> tuple[int, ...]:
        """(steps,): the cells of ``length`` frames."""
        for join in self.joins:
            length = -(-length // join)
        return (length,)

    def cells(self, features: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, lengths = features, mask.sum(1)  # (B, L, F), (B,)
        for level, (join, layer) in enumerate(zip(self.joins, self.layers)):
            if join > 1:
                x = join_steps(x, join)  # (B, L_level, join * H)
                lengths = reduced_lengths(lengths, join)
            packed = not bool((lengths == x.shape[1]).all())
            outputs, _ = layer.encode(x, lengths if packed else None)  # (B, L_level, H), zero at padding
            x = outputs * length_mask(lengths, x.shape[1]).unsqueeze(-1)
            if level + 1 < len(self.layers):
                x = self.dropout(x)
        return x, length_mask(lengths, x.shape[1])  # (B, S, H), (B, S)
