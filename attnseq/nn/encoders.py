"""Encoders: source ids (B, S) -> Memory (keys/values (B, S, H), mask, final states).

A registry maps ``model.encoder`` to classes; each takes (ModelConfig, source vocabulary size).
"""
from __future__ import annotations

import torch
from torch import nn

from ..errors import ConfigError
from ..registry import Registry
from .cells import RecurrentLayer, build_rnn
from .state import Memory

ENCODERS: Registry[type["Encoder"]] = Registry("encoder")


class Encoder(nn.Module):
    """Base: embeds the source and produces a Memory whose outputs have ``output_size``."""

    output_size: int

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor) -> Memory:
        raise NotImplementedError


def final_hidden(state, num_layers: int, directions: int) -> torch.Tensor:
    """Each layer's final hidden state, directions concatenated: (L, B, H * directions)."""
    h = RecurrentLayer.hidden_of(state)  # (L * directions, B, H)
    _, batch, hidden = h.shape
    h = h.view(num_layers, directions, batch, hidden)
    return torch.cat(h.unbind(1), dim=-1)  # (L, B, H * directions)


@ENCODERS.register("stacked")
class StackedEncoder(Encoder):
    """Embedding and a stack of recurrent layers, uni- or bidirectional.

    Bidirectional layers give each direction hidden_size // 2 units, so outputs are hidden_size.
    """

    def __init__(self, cfg, vocab_size: int):
        super().__init__()
        if cfg.bidirectional and cfg.hidden_size % 2:
            raise ConfigError(f"model.hidden_size: a bidirectional encoder needs an even size, got {cfg.hidden_size}")
        self.directions = 2 if cfg.bidirectional else 1
        self.num_layers = cfg.encoder_layers
        self.embed = nn.Embedding(vocab_size, cfg.embed_size, padding_idx=0)
        self.dropout = nn.Dropout(cfg.dropout)
        self.rnn = build_rnn(cfg.cell, cfg.embed_size, cfg.hidden_size // self.directions,
                             cfg.encoder_layers, cfg.dropout, cfg.bidirectional,
                             projection_size=cfg.projection_size // self.directions)
        self.output_size = self.rnn.output_size  # hidden_size (projection_size for lstm_proj)

    def forward(self, src, src_mask):
        x = self.dropout(self.embed(src))  # (B, S, E)
        lengths = src_mask.sum(1)  # (B,)
        packed = not bool((lengths == src.shape[1]).all())  # no packing when nothing is padded
        outputs, state = self.rnn(x, None, lengths if packed else None)  # (B, S, H)
        outputs = self.dropout(outputs)
        final = final_hidden(state, self.num_layers, self.directions)  # (L, B, H)
        return Memory(keys=outputs, values=outputs, mask=src_mask, final=final)


def build_encoder(cfg, vocab_size: int) -> Encoder:
    """The encoder registered as ``cfg.encoder``."""
    return ENCODERS.get(cfg.encoder, "model.encoder")(cfg, vocab_size)


from . import encoders_extra  # noqa: E402,F401  (registers more encoders)
