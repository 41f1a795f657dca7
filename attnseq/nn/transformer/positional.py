"""Positional encodings and the Transformer's input embedding (Vaswani et al. 2017, section 3.5).

Self-attention is blind to order, so each position adds a vector of its own to the token's
embedding. A registry maps ``model.positional`` to the two kinds:

- ``sinusoidal``: PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d)),
  a fixed table (a buffer, not saved in checkpoints, extended on demand for long inputs);
- ``learned``: one trained vector per position, up to its option ``max_positions``.

``TransformerEmbedding`` multiplies the token embeddings by sqrt(d_model), adds the positions
and applies dropout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from ...errors import ConfigError
from ...registry import Registry
from ...schema import Variant, number

POSITIONAL: Registry[type[PositionalEncoding]] = Registry("positional encoding", key="model.positional")


def sinusoidal_table(positions: int, dim: int) -> torch.Tensor:
    """The sinusoidal encodings of positions 0 .. positions-1: (positions, dim).

    Even columns 2i hold sin(pos / 10000^(2i/dim)), odd columns 2i+1 hold cos of the same angle.
    """
    pos = torch.arange(positions, dtype=torch.float64).unsqueeze(1)  # (P, 1)
    two_i = torch.arange(0, dim, 2, dtype=torch.float64)  # (ceil(D/2),)
    angle = pos / torch.pow(10000.0, two_i / dim)  # (P, ceil(D/2))
    table = torch.zeros(positions, dim, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : dim // 2])
    return table.float()


class PositionalEncoding(nn.Module):
    """Base: ``forward(start, length)`` -> encodings of positions start .. start+length-1, (length, D)."""

    def __init__(self, dim: int, options=None):
        super().__init__()
        self.dim, self.options = dim, options

    def forward(self, start: int, length: int) -> torch.Tensor:
        raise NotImplementedError


@POSITIONAL.register("sinusoidal")
class SinusoidalPositions(PositionalEncoding):
    """The fixed sin/cos table, extended as far as a sequence reaches (no limit)."""

    initial_positions = 1024

    def __init__(self, dim: int, options=None):
        super().__init__(dim, options)
        self.register_buffer("table", sinusoidal_table(self.initial_positions, dim), persistent=False)

    def forward(self, start: int, length: int) -> torch.Tensor:
        end = start + length
        if end > self.table.shape[0]:
            self.table = sinusoidal_table(max(end, 2 * self.table.shape[0]), self.dim).to(self.table)
        return self.table[start:end]  # (length, D)


@dataclass
class LearnedOptions:
    max_positions: int = number(1024, 1)  # positions 0 .. max_positions - 1 have a vector


@POSITIONAL.register("learned", options=LearnedOptions)
class LearnedPositions(PositionalEncoding):
    """A trained vector per position 0 .. max_positions-1 (Gehring et al. 2017)."""

    def __init__(self, dim: int, options: LearnedOptions):
        super().__init__(dim, options)
        self.max_positions = options.max_positions
        self.embed = nn.Embedding(self.max_positions, dim)
        nn.init.normal_(self.embed.weight, std=dim**-0.5)

    def forward(self, start: int, length: int) -> torch.Tensor:
        end = start + length
        if end > self.max_positions:
            raise ConfigError(
                f"model.positional.max_positions: a sequence reaches position {end}, past the "
                f"{self.max_positions} learned positions; raise it or limit lengths "
                "(data.max_source_len, data.max_target_len, decode.max_len)",
                key="model.positional.max_positions",
            )
        return self.embed.weight[start:end]  # (length, D)


class TransformerEmbedding(nn.Module):
    """Token ids (B, T) -> dropout(embedding * sqrt(d_model) + positions): (B, T, D).

    ``tokens`` is the token table (its weight may be tied to an output layer); ``start`` is
    the position of the first id (the step counter during incremental decoding).
    """

    def __init__(self, vocab_size: int, d_model: int, positional: Variant | str, dropout: float):
        super().__init__()
        self.d_model = d_model
        self.scale = math.sqrt(d_model)
        self.tokens = nn.Embedding(vocab_size, d_model, padding_idx=0)
        nn.init.normal_(self.tokens.weight, std=d_model**-0.5)  # unit variance after scaling
        with torch.no_grad():
            self.tokens.weight[0].zero_()
        self.positions = POSITIONAL.build(positional, "model.positional", d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, ids: torch.Tensor, start: int = 0) -> torch.Tensor:
        x = self.tokens(ids) * self.scale  # (B, T, D)
        return self.dropout(x + self.positions(start, ids.shape[1]).to(x.dtype))
