"""More encoders: a residual stack, and GNMT's encoder (Wu et al. 2016).

Both build one recurrent layer per level (any registered ``model.cell``) so that residual
connections can join the levels, and return a Memory whose ``final`` holds each level's last
hidden state (L, B, H), directions concatenated.
"""
from __future__ import annotations

import torch
from torch import nn

from ..errors import ConfigError
from .cells import build_rnn
from .encoders import ENCODERS, Encoder, final_hidden
from .state import Memory


class LayerwiseEncoder(Encoder):
    """Embedding, then ``len(self.layers)`` single recurrent layers run one after another.

    Level l's input is level l-1's output, plus level l-2's output when ``residual[l]``
    (x_{l+1} = RNN_l(x_l) + x_l).
    """

    def __init__(self, cfg, vocab_size: int, bidirectional: list[bool], residual: list[bool]):
        super().__init__()
        if any(bidirectional) and cfg.hidden_size % 2:
            raise ConfigError(f"model.hidden_size: a bidirectional layer needs an even size, got {cfg.hidden_size}")
        self.embed = nn.Embedding(vocab_size, cfg.embed_size, padding_idx=0)
        self.dropout = nn.Dropout(cfg.dropout)
        self.residual = residual
        self.layers = nn.ModuleList()
        size = cfg.embed_size
        for bi in bidirectional:
            directions = 2 if bi else 1
            layer = build_rnn(cfg.cell, size, cfg.hidden_size // directions, 1, 0.0, bi,
                              projection_size=cfg.projection_size // directions)
            self.layers.append(layer)
            size = layer.output_size
        widths = {layer.output_size for layer in self.layers}
        if len(widths) > 1:
            raise ConfigError(f"model.encoder: the levels' output sizes differ ({sorted(widths)}); "
                              "residual connections need one size")
        self.output_size = size

    def forward(self, src, src_mask):
        x = self.dropout(self.embed(src))  # (B, S, E)
        lengths = src_mask.sum(1)  # (B,)
        packed = not bool((lengths == src.shape[1]).all())
        finals = []
        for layer, residual in zip(self.layers, self.residual):
            outputs, state = layer(x, None, lengths if packed else None)  # (B, S, H)
            outputs = self.dropout(outputs)
            x = outputs + x if residual else outputs
            finals.append(final_hidden(state, 1, layer.directions))  # (1, B, H)
        return Memory(keys=x, values=x, mask=src_mask, final=torch.cat(finals, 0))  # final (L, B, H)


@ENCODERS.register("residual")
class ResidualEncoder(LayerwiseEncoder):
    """Stacked recurrent layers (uni- or bidirectional, ``model.bidirectional``) with a residual
    connection around every layer above the first (the embedding has another size)."""

    def __init__(self, cfg, vocab_size: int):
        layers = cfg.encoder_layers
        super().__init__(cfg, vocab_size, [cfg.bidirectional] * layers, [False] + [True] * (layers - 1))


@ENCODERS.register("gnmt")
class GNMTEncoder(LayerwiseEncoder):
    """GNMT's encoder (Wu et al. 2016): a bidirectional bottom layer, unidirectional layers
    above it, and residual connections from the third layer on. ``model.bidirectional`` is
    not used: the bottom layer is always bidirectional."""

    def __init__(self, cfg, vocab_size: int):
        layers = cfg.encoder_layers
        super().__init__(cfg, vocab_size, [True] + [False] * (layers - 1),
                         [index >= 2 for index in range(layers)])
