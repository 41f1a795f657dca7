"""Recurrent encoders: source ids (B, S) -> Memory (keys/values (B, S, H), mask, final states).

A registry maps ``model.encoder`` to the variants; each takes (RNNConfig, source vocabulary
size, its options): ``stacked`` (uni- or bidirectional layers), ``residual`` (a residual
connection around every layer above the first) and ``gnmt`` (Wu et al. 2016).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ...errors import ConfigError
from ...registry import Registry
from ..state import Memory
from .cells import build_rnn

ENCODERS: Registry[type[Encoder]] = Registry("encoder", key="model.encoder")


class Encoder(nn.Module):
    """Base: embeds the source and produces a Memory whose outputs have ``output_size``."""

    output_size: int

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor) -> Memory:
        raise NotImplementedError


def final_hidden(h: torch.Tensor, num_layers: int, directions: int) -> torch.Tensor:
    """Each layer's final hidden state (L * directions, B, H), directions concatenated:
    (L, B, H * directions)."""
    _, batch, hidden = h.shape
    h = h.view(num_layers, directions, batch, hidden)
    return torch.cat(h.unbind(1), dim=-1)  # (L, B, H * directions)


def check_even(cfg, bidirectional: bool) -> None:
    if bidirectional and cfg.hidden_size % 2:
        raise ConfigError(
            f"model.hidden_size: a bidirectional encoder needs an even size, got {cfg.hidden_size}",
            key="model.hidden_size",
        )


@dataclass
class BidirectionalOptions:
    bidirectional: bool = True  # each direction gets hidden_size // 2, so outputs are hidden_size


@ENCODERS.register("stacked", options=BidirectionalOptions)
class StackedEncoder(Encoder):
    """Embedding and a stack of ``model.encoder_layers`` recurrent layers, uni- or bidirectional."""

    def __init__(self, cfg, vocab_size: int, options: BidirectionalOptions):
        super().__init__()
        check_even(cfg, options.bidirectional)
        self.directions = 2 if options.bidirectional else 1
        self.num_layers = cfg.encoder_layers
        self.embed = nn.Embedding(vocab_size, cfg.embed_size, padding_idx=0)
        self.dropout = nn.Dropout(cfg.dropout)
        self.rnn = build_rnn(
            cfg.cell,
            cfg.embed_size,
            cfg.hidden_size // self.directions,
            cfg.encoder_layers,
            cfg.dropout,
            options.bidirectional,
        )
        self.output_size = self.rnn.output_size  # hidden_size (the projection for lstm_proj)

    def forward(self, src, src_mask):
        x = self.dropout(self.embed(src))  # (B, S, E)
        lengths = src_mask.sum(1)  # (B,)
        packed = not bool((lengths == src.shape[1]).all())  # no packing when nothing is padded
        outputs, hidden = self.rnn.encode(x, lengths if packed else None)  # (B, S, H)
        outputs = self.dropout(outputs)
        final = final_hidden(hidden, self.num_layers, self.directions)  # (L, B, H)
        return Memory(keys=outputs, values=outputs, mask=src_mask, final=final)


class LayerwiseEncoder(Encoder):
    """Embedding, then one single recurrent layer per level, run one after another.

    Level l's input is level l-1's output, plus level l-2's output when ``residual[l]``
    (x_{l+1} = RNN_l(x_l) + x_l). ``final`` holds each level's last hidden state (L, B, H).
    """

    def __init__(self, cfg, vocab_size: int, bidirectional: list[bool], residual: list[bool]):
        super().__init__()
        check_even(cfg, any(bidirectional))
        self.embed = nn.Embedding(vocab_size, cfg.embed_size, padding_idx=0)
        self.dropout = nn.Dropout(cfg.dropout)
        self.residual = residual
        self.layers = nn.ModuleList()
        size = cfg.embed_size
        for bi in bidirectional:
            directions = 2 if bi else 1
            layer = build_rnn(cfg.cell, size, cfg.hidden_size // directions, 1, 0.0, bi)
            self.layers.append(layer)
            size = layer.output_size
        widths = {layer.output_size for layer in self.layers}
        if len(widths) > 1:
            raise ConfigError(
                f"model.encoder: the levels' output sizes differ ({sorted(widths)}); "
                "residual connections need one size",
                key="model.encoder",
            )
        self.output_size = size

    def forward(self, src, src_mask):
        x = self.dropout(self.embed(src))  # (B, S, E)
        lengths = src_mask.sum(1)  # (B,)
        packed = not bool((lengths == src.shape[1]).all())
        finals = []
        for layer, residual in zip(self.layers, self.residual):
            outputs, hidden = layer.encode(x, lengths if packed else None)  # (B, S, H)
            outputs = self.dropout(outputs)
            x = outputs + x if residual else outputs
            finals.append(final_hidden(hidden, 1, layer.directions))  # (1, B, H)
        return Memory(keys=x, values=x, mask=src_mask, final=torch.cat(finals, 0))  # final (L, B, H)


@ENCODERS.register("residual", options=BidirectionalOptions)
class ResidualEncoder(LayerwiseEncoder):
    """Stacked recurrent layers (uni- or bidirectional) with a residual connection around every
    layer above the first (the embedding has another size)."""

    def __init__(self, cfg, vocab_size: int, options: BidirectionalOptions):
        layers = cfg.encoder_layers
        super().__init__(cfg, vocab_size, [options.bidirectional] * layers, [False] + [True] * (layers - 1))


@ENCODERS.register("gnmt")
class GNMTEncoder(LayerwiseEncoder):
    """GNMT's encoder (Wu et al. 2016): a bidirectional bottom layer, unidirectional layers
    above it, and residual connections from the third layer on."""

    def __init__(self, cfg, vocab_size: int, options=None):
        layers = cfg.encoder_layers
        super().__init__(cfg, vocab_size, [True] + [False] * (layers - 1), [index >= 2 for index in range(layers)])


def build_encoder(cfg, vocab_size: int) -> Encoder:
    """The encoder ``cfg.encoder`` names."""
    return ENCODERS.build(cfg.encoder, "model.encoder", cfg, vocab_size)
