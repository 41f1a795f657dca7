"""More attention scorers: cosine, Luong's local attention (monotonic and predictive), multi-head.

They register into :data:`attnseq.nn.attention.SCORERS`; the base :class:`Scorer` masks,
normalises and takes the weighted sum. Local scorers restrict the alignment through the
``window`` hook and need the target position of each query (``positions`` (B, T)), which the
decoders pass. Source positions are counted from the first token; masks are True on a prefix
of each row (padding at the end), as the batching produces them.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import ConfigError
from .attention import SCORERS, GeneralScorer, Scorer


@SCORERS.register("cosine")
class CosineScorer(Scorer):
    """score = cos(h_t, h_s) / τ: cosine similarity, sharpened by a temperature τ.

    ``temperature`` τ (default 0.1) is learned unless ``learn_temperature`` is False; it is
    stored as a log-factor around its initial value, so every ``model.init`` scheme starts
    from τ. Keys of another size than the query are projected to it once per sentence.
    """

    def __init__(self, query_size: int, key_size: int, attention_size: int = 0,
                 temperature: float = 0.1, learn_temperature: bool = True, **options):
        super().__init__(query_size, key_size, attention_size)
        if temperature <= 0:
            raise ConfigError(f"cosine attention: the temperature must be positive, got {temperature}")
        self.W_k = nn.Linear(key_size, query_size, bias=False) if key_size != query_size else None
        self.base_scale = 1.0 / temperature
        self.log_scale = nn.Parameter(torch.zeros(()), requires_grad=learn_temperature)

    def prepare(self, keys):
        if self.W_k is not None:
            keys = self.W_k(keys)  # (B, S, Hq)
        return F.normalize(keys, dim=-1)  # unit keys, once per sentence

    def score(self, query, keys):
        scale = self.base_scale * self.log_scale.clamp(max=math.log(100.0)).exp()
        return scale * torch.bmm(F.normalize(query, dim=-1), keys.transpose(1, 2))  # (B, T, S)


def source_lengths(mask: torch.Tensor) -> torch.Tensor:
    """Real source tokens per row, (B, 1) float, from a window mask (B, T, S)."""
    return mask[:, :1].sum(-1).to(torch.float32)  # (B, 1)


def inside_window(centres: torch.Tensor, lengths: torch.Tensor, width: int, steps: int) -> torch.Tensor:
    """(B, T, S) bool: source positions s with |s - c| <= D, for centres c (B, T) rounded and
    clamped into [0, length - 1] so that every window holds at least one real position."""
    limit = (lengths - 1).clamp(min=0)  # (B, 1)
    centre = torch.minimum(centres.detach().round(), limit).clamp(min=0)  # (B, T)
    s = torch.arange(steps, device=centres.device, dtype=centre.dtype)  # (S,)
    return (s.view(1, 1, -1) - centre.unsqueeze(-1)).abs() <= width  # (B, T, S)


class LocalScorer(GeneralScorer):
    """Base of Luong et al.'s (2015) local attention: the general (bilinear) score, restricted
    to the window [p_t - D, p_t + D] around an aligned position p_t (``window`` = D)."""

    def __init__(self, query_size: int, key_size: int, attention_size: int = 0, window: int = 5,
                 **options):
        super().__init__(query_size, key_size, attention_size)
        if window < 0:
            raise ConfigError(f"model.attention_window: must be >= 0, got {window}")
        self.width = window


@SCORERS.register("local_m")
class LocalMonotonicScorer(LocalScorer):
    """Local-m: p_t = t, the target position (clamped to the source), hard window of 2D+1."""

    needs_positions = True  # the query alone does not say which target step it is

    def window(self, query, scores, mask, positions=None):
        batch, steps, source = scores.shape
        if positions is None:
            positions = torch.arange(steps, device=scores.device).expand(batch, steps)
        inside = inside_window(positions.to(torch.float32), source_lengths(mask), self.width, source)
        return mask & inside, None


@SCORERS.register("local_p")
class LocalPredictiveScorer(LocalScorer):
    """Local-p: p_t = S · σ(v_p^T tanh(W_p h_t)) with S the source length; inside the window
    the alignment is multiplied by exp(-(s - p_t)^2 / (2σ^2)), σ = D / 2, and renormalised
    (Luong et al. leave the product unnormalised; here every alignment is a distribution)."""

    def __init__(self, query_size: int, key_size: int, attention_size: int = 0, window: int = 5,
                 **options):
        super().__init__(query_size, key_size, attention_size, window)
        if window < 1:
            raise ConfigError(f"model.attention_window: local_p needs a window of at least 1, got {window}")
        self.W_p = nn.Linear(query_size, self.attention_size, bias=False)
        self.v_p = nn.Linear(self.attention_size, 1, bias=False)

    def predict(self, query: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Aligned source positions p_t (B, T) in [0, S] for query (B, T, Hq), lengths (B, 1)."""
        return lengths * torch.sigmoid(self.v_p(torch.tanh(self.W_p(query)))).squeeze(-1)

    def window(self, query, scores, mask, positions=None):
        lengths = source_lengths(mask)  # (B, 1)
        centres = self.predict(query, lengths)  # (B, T)
        inside = inside_window(centres, lengths, self.width, scores.shape[-1])
        s = torch.arange(scores.shape[-1], device=scores.device, dtype=centres.dtype)
        sigma = self.width / 2
        gaussian = torch.exp(-((s.view(1, 1, -1) - centres.unsqueeze(-1)) ** 2) / (2 * sigma**2))
        return mask & inside, gaussian.to(scores.dtype)  # (B, T, S) each


@SCORERS.register("multihead")
class MultiHeadScorer(Scorer):
    """Several heads of one registered scorer (``head_scorer``, ``model.attention_head_scorer``),
    each on its own projection of query, keys and values; the heads' contexts are concatenated
    and projected back to the value size (Vaswani et al. 2017).

    Each head has attention_size // heads units. The alignment returned for plots is the mean
    over heads. Values are projected after the weighted sum (the two are linear, so this equals
    projecting them first) to keep per-step work independent of the source length.
    """

    def __init__(self, query_size: int, key_size: int, attention_size: int = 0, heads: int = 4,
                 head_scorer: str = "scaled_dot", window: int = 5, **options):
        super().__init__(query_size, key_size, attention_size)
        if heads < 1:
            raise ConfigError(f"model.attention_heads: must be >= 1, got {heads}")
        if head_scorer == "multihead":
            raise ConfigError("model.attention_head_scorer: a head cannot itself be multihead")
        self.heads = heads
        self.head_size = d = max(1, self.attention_size // heads)
        self.W_q = nn.Linear(query_size, heads * d, bias=False)
        self.W_k = nn.Linear(key_size, heads * d, bias=False)
        self.W_v = nn.Linear(key_size, heads * d, bias=False)
        self.W_o = nn.Linear(heads * d, key_size, bias=False)
        self.head = SCORERS.get(head_scorer, "model.attention_head_scorer")(d, d, d, window=window)

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
