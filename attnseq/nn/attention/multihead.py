"""Multi-head attention as a scorer for the recurrent decoders (Vaswani et al. 2017)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ...schema import OptionsError, Variant, number, variant
from ..views import ShowsHeads
from .base import SCORERS, Locating, Scorer


@dataclass
class MultiHeadOptions:
    heads: int = number(4, 1)
    size: int = number(0, 0)  # units of all heads together; 0: the decoder's hidden size
    head: Variant = variant("scaled_dot", SCORERS)  # the scorer inside each head, with its options

    def __post_init__(self):
        if self.head.name == "multihead":
            raise OptionsError("head", "a head cannot itself be multihead")
        if issubclass(SCORERS.get(self.head.name), Locating):
            raise OptionsError(
                "head",
                f"{self.head.name} reads the previous step's alignment, and the decoder carries "
                "one alignment, the mean of the heads; use it as the attention itself",
            )


@SCORERS.register("multihead", options=MultiHeadOptions)
class MultiHeadScorer(ShowsHeads, Scorer):
    """Several heads of one registered scorer (``head``), each on its own projection of query,
    keys and values; the heads' contexts are concatenated and projected back to the value size.

    Each head has size // heads units. The alignment returned for plots is the mean over heads.
    Values are projected after the weighted sum (the two are linear, so this equals projecting
    them first) to keep per-step work independent of the source length.
    """

    float_linears = ("W_v",)  # its weight is read head by head (forward): it stays float in int8 (nn/int8.py)

    def __init__(self, query_size: int, key_size: int, options: MultiHeadOptions):
        super().__init__(query_size, key_size, options)
        self.heads = heads = options.heads
        self.head_size = d = max(1, self.hidden_size(options.size) // heads)
        self.W_q = nn.Linear(query_size, heads * d, bias=False)
        self.W_k = nn.Linear(key_size, heads * d, bias=False)
        self.W_v = nn.Linear(key_size, heads * d, bias=False)
        self.W_o = nn.Linear(heads * d, key_size, bias=False)
        self.head = SCORERS.build(options.head, "model.attention.head", d, d)

    @property
    def needs_positions(self) -> bool:
        return getattr(self.head, "needs_positions", False)

    def prepare(self, keys):
        batch, source, _ = keys.shape
        k = self.W_k(keys).view(batch, source, self.heads, self.head_size).transpose(1, 2)  # (B, h, S, d)
        k = self.head.prepare(k.reshape(batch * self.heads, source, self.head_size))  # (B*h, S, d')
        return k.view(batch, self.heads, source, -1)  # (B, h, S, d'), batch first for beam search

    def head_alignments(self, query, keys, mask=None, positions=None) -> torch.Tensor:
        """Each head's alignment (B, h, T, S)."""
        batch, steps, _ = query.shape
        h, source = self.heads, keys.shape[2]
        q = self.W_q(query).view(batch, steps, h, self.head_size).transpose(1, 2)  # (B, h, T, d)
        q = q.reshape(batch * h, steps, self.head_size)
        k = keys.reshape(batch * h, source, keys.shape[-1])
        mask = None if mask is None else mask.repeat_interleave(h, 0)  # (B*h, S)
        positions = None if positions is None else positions.repeat_interleave(h, 0)  # (B*h, T)
        return self.head.align(q, k, mask, positions).view(batch, h, steps, source)

    def align(self, query, keys, mask=None, positions=None):
        return self.head_alignments(query, keys, mask, positions).mean(1)  # (B, T, S)

    def forward(self, query, keys, values, mask=None, positions=None):
        batch, steps, _ = query.shape
        h, d = self.heads, self.head_size
        alignments = self.head_alignments(query, keys, mask, positions)  # (B, h, T, S)
        mixed = torch.bmm(alignments.reshape(batch, h * steps, -1), values)  # (B, h*T, Hv)
        w_v = self.W_v.weight.view(h, d, -1)  # (h, d, Hv)
        heads = torch.einsum("bhtv,hdv->bthd", mixed.view(batch, h, steps, -1), w_v)  # (B, T, h, d)
        context = self.W_o(heads.reshape(batch, steps, h * d))  # (B, T, Hv)
        return context, alignments.mean(1)
