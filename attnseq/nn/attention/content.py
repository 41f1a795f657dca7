"""Global scorers that compare the query with every key by content: dot, scaled dot, general
(bilinear), concat (additive MLP) and cosine."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ...schema import number
from .base import SCORERS, Covering, Scorer


@SCORERS.register("dot")
class DotScorer(Scorer):
    """score = h_t · h_s (Luong et al. 2015; the book's chapter 8)."""

    same_size = True

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

    def __init__(self, query_size: int, key_size: int, options=None):
        super().__init__(query_size, key_size, options)
        self.W_a = nn.Linear(key_size, query_size, bias=False)

    def prepare(self, keys):
        return self.W_a(keys)  # (B, S, Hq)

    def score(self, query, keys):
        return torch.bmm(query, keys.transpose(1, 2))  # (B, T, S)


@dataclass
class ConcatOptions:
    size: int = number(0, 0)  # units of the alignment MLP; 0: the decoder's hidden size


class AdditiveScorer(Scorer):
    """score = v^T tanh(W_q h_t + W_k h_s), additive MLP (Bahdanau et al. 2014, Luong's concat):
    what concat and location attention share."""

    def __init__(self, query_size: int, key_size: int, options):
        super().__init__(query_size, key_size, options)
        size = self.hidden_size(options.size)
        self.W_k = nn.Linear(key_size, size, bias=False)
        self.W_q = nn.Linear(query_size, size, bias=True)
        self.v = nn.Linear(size, 1, bias=False)

    def prepare(self, keys):
        return self.W_k(keys)  # (B, S, A)

    def score(self, query, keys):
        # the (B, T, S, A) sum is the largest tensor of a step: tanh in place spares a copy of it
        hidden = (self.W_q(query).unsqueeze(2) + keys.unsqueeze(1)).tanh_()  # (B, T, S, A)
        return self.v(hidden).squeeze(-1)  # (B, T, S)


@SCORERS.register("concat", options=ConcatOptions)
class ConcatScorer(Covering, AdditiveScorer):
    """score = v^T tanh(W_q h_t + W_k h_s), additive MLP (Bahdanau et al. 2014, Luong's concat).

    With coverage (See et al. 2017): score_i = v^T tanh(W_q h_t + W_k h_i + w_c c_i), c_i the
    attention position i got at the earlier steps."""

    def __init__(self, query_size: int, key_size: int, options: ConcatOptions):
        super().__init__(query_size, key_size, options)
        self.w_c = None

    def add_coverage(self):
        self.w_c = nn.Linear(1, self.W_k.out_features, bias=False)  # w_c

    def score_covered(self, query, keys, coverage):
        covered = self.w_c(coverage.unsqueeze(-1))  # (B, T, S, A): c_i w_c
        hidden = (self.W_q(query).unsqueeze(2) + keys.unsqueeze(1) + covered).tanh_()  # (B, T, S, A)
        return self.v(hidden).squeeze(-1)  # (B, T, S)


@dataclass
class CosineOptions:
    temperature: float = number(0.1, 0.0, low_open=True)  # τ: scores are cos / τ
    learn_temperature: bool = True


@SCORERS.register("cosine", options=CosineOptions)
class CosineScorer(Scorer):
    """score = cos(h_t, h_s) / τ: cosine similarity, sharpened by a temperature τ.

    τ (``temperature``) is learned unless ``learn_temperature`` is false; it is stored as a
    log-factor around its initial value, so every ``model.init`` scheme starts from τ. Keys of
    another size than the query are projected to it once per sentence.
    """

    def __init__(self, query_size: int, key_size: int, options: CosineOptions):
        super().__init__(query_size, key_size, options)
        self.W_k = nn.Linear(key_size, query_size, bias=False) if key_size != query_size else None
        self.base_scale = 1.0 / options.temperature
        self.log_scale = nn.Parameter(torch.zeros(()), requires_grad=options.learn_temperature)

    def prepare(self, keys):
        if self.W_k is not None:
            keys = self.W_k(keys)  # (B, S, Hq)
        return F.normalize(keys, dim=-1)  # unit keys, once per sentence

    def score(self, query, keys):
        scale = self.base_scale * self.log_scale.clamp(max=math.log(100.0)).exp()
        return scale * torch.bmm(F.normalize(query, dim=-1), keys.transpose(1, 2))  # (B, T, S)
