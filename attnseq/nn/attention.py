"""Attention scorers. One base class masks, normalises and takes the weighted sum; each
variant only says how a query scores the keys. A registry maps config names to classes.

Shapes: queries (B, T, Hq) (T = 1 when stepping), keys (B, S, Hk), values (B, S, Hv),
mask (B, S) bool with True on real tokens, alignment (B, T, S), context (B, T, Hv).
"""
from __future__ import annotations

import math

import torch
from torch import nn

from ..errors import ConfigError
from ..registry import Registry

SCORERS: Registry[type["Scorer"]] = Registry("attention scorer")


class Scorer(nn.Module):
    """Base of every attention scorer.

    Subclasses implement ``score(query, keys) -> (B, T, S)``. Keys that can be projected once
    per sentence are projected in ``prepare`` (called once by the decoder, never per step).
    """

    def __init__(self, query_size: int, key_size: int, attention_size: int = 0, **options):
        super().__init__()
        self.query_size, self.key_size = query_size, key_size
        self.attention_size = attention_size or query_size

    def prepare(self, keys: torch.Tensor) -> torch.Tensor:
        """Keys as ``score`` wants them, computed once per sentence: (B, S, Hk) -> (B, S, *)."""
        return keys

    def score(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """Unnormalised scores (B, T, S) of ``query`` (B, T, Hq) against prepared ``keys``."""
        raise NotImplementedError

    def window(self, query: torch.Tensor, scores: torch.Tensor, mask: torch.Tensor,
               positions: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Local attention hook: (mask restricted to the window (B, T, S), weights to multiply
        the alignment by (B, T, S) or None; the product is renormalised). ``positions`` (B, T)
        are the target positions of the queries. Global scorers keep the whole mask."""
        return mask, None

    def align(self, query: torch.Tensor, keys: torch.Tensor, mask: torch.Tensor | None = None,
              positions: torch.Tensor | None = None) -> torch.Tensor:
        """Alignment (B, T, S) of ``query`` over prepared ``keys``: zero where masked (or outside
        a local window), each row summing to one."""
        scores = self.score(query, keys)  # (B, T, S)
        if mask is None:
            mask = torch.ones(scores.shape[0], scores.shape[2], dtype=torch.bool, device=scores.device)
        mask = mask.unsqueeze(1).expand_as(scores)  # (B, T, S)
        mask, reweight = self.window(query, scores, mask, positions)
        scores = scores.masked_fill(~mask, float("-inf"))
        alignment = torch.softmax(scores, dim=-1)  # (B, T, S)
        if reweight is not None:
            alignment = alignment * reweight
            alignment = alignment / alignment.sum(-1, keepdim=True)
        return alignment

    def forward(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        mask: torch.Tensor | None = None,
        positions: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(context (B, T, Hv), alignment (B, T, S)); ``keys`` already passed through ``prepare``.

        Masked positions (mask False) get exactly zero weight; each row of weights sums to one.
        ``positions`` (B, T): target positions of the queries, used by local attention.
        """
        alignment = self.align(query, keys, mask, positions)  # (B, T, S)
        context = torch.bmm(alignment, values)  # (B, T, Hv)
        return context, alignment


def _require_equal(name: str, query_size: int, key_size: int) -> None:
    if query_size != key_size:
        raise ConfigError(
            f"model.attention: {name} attention needs the decoder state ({query_size}) and the "
            f"encoder outputs ({key_size}) to have one size; use general or concat"
        )


@SCORERS.register("dot")
class DotScorer(Scorer):
    """score = h_t · h_s (Luong et al. 2015; the book's chapter 8)."""

    def __init__(self, query_size: int, key_size: int, attention_size: int = 0, **options):
        super().__init__(query_size, key_size, attention_size)
        _require_equal("dot", query_size, key_size)

    def score(self, query, keys):
        return torch.bmm(query, keys.transpose(1, 2))  # (B, T, S)


@SCORERS.register("scaled_dot")
class ScaledDotScorer(DotScorer):
    """score = h_t · h_s / sqrt(d) (Vaswani et al. 2017)."""

    def score(self, query, keys):
        return torch.bmm(query, keys.transpose(1, 2)) / math.sqrt(query.shape[-1])


@SCORERS.register("general")
class GeneralScorer(Scorer):
    """score = h_t^T W_a h_s, bilinear (Luong et al. 2015); W_a h_s is computed once per sentence."""

    def __init__(self, query_size: int, key_size: int, attention_size: int = 0, **options):
        super().__init__(query_size, key_size, attention_size)
        self.W_a = nn.Linear(key_size, query_size, bias=False)

    def prepare(self, keys):
        return self.W_a(keys)  # (B, S, Hq)

    def score(self, query, keys):
        return torch.bmm(query, keys.transpose(1, 2))  # (B, T, S)


@SCORERS.register("concat")
class ConcatScorer(Scorer):
    """score = v^T tanh(W_q h_t + W_k h_s), additive MLP (Bahdanau et al. 2014, Luong's concat)."""

    def __init__(self, query_size: int, key_size: int, attention_size: int = 0, **options):
        super().__init__(query_size, key_size, attention_size)
        self.W_k = nn.Linear(key_size, self.attention_size, bias=False)
        self.W_q = nn.Linear(query_size, self.attention_size, bias=True)
        self.v = nn.Linear(self.attention_size, 1, bias=False)

    def prepare(self, keys):
        return self.W_k(keys)  # (B, S, A)

    def score(self, query, keys):
        hidden = torch.tanh(self.W_q(query).unsqueeze(2) + keys.unsqueeze(1))  # (B, T, S, A)
        return self.v(hidden).squeeze(-1)  # (B, T, S)


def build_scorer(name: str, query_size: int, key_size: int, attention_size: int = 0, **options) -> Scorer:
    """The scorer registered as ``name`` (``model.attention``)."""
    cls = SCORERS.get(name, "model.attention")
    return cls(query_size, key_size, attention_size, **options)


from . import attention_extra  # noqa: E402,F401  (registers more scorers)
