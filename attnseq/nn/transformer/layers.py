"""The Transformer's layers (Vaswani et al. 2017): masks, multi-head scaled dot-product
attention, the position-wise feed-forward, the residual connections around each sublayer, and
the encoder and decoder layers.

Masks are boolean, True where attention may look: padding masks hide the source's padding
(encoder self-attention, cross-attention); the decoder's self-attention is causal.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..attention.softmax import masked_softmax
from ..state import RowLayout

Cache = tuple[torch.Tensor, torch.Tensor]  # a layer's self-attention (keys, values), each (B, h, t, dk)


def extend(past: torch.Tensor, rows: torch.Tensor | None, new: torch.Tensor) -> torch.Tensor:
    """(B, h, t + T, dk): the rows ``rows`` (B,) of ``past`` (B0, h, t, dk), or all of them in
    order when None, each followed by the same row of ``new`` (B, h, T, dk); one copy (beam search
    reorders and grows the cache at once)."""
    if rows is None:
        return torch.cat([past, new], 2)
    if torch.is_grad_enabled() and (past.requires_grad or new.requires_grad):  # out= has no gradient
        return torch.cat([past.index_select(0, rows), new], 2)
    batch, heads, steps, size = new.shape
    out = new.new_empty(batch, heads, past.shape[2] + steps, size)
    torch.index_select(past, 0, rows, out=out[:, :, : past.shape[2]])
    out[:, :, past.shape[2] :] = new
    return out


# -- masks and attention ---------------------------------------------------------------------------
def padding_mask(mask: torch.Tensor) -> torch.Tensor:
    """(B, S) True on real tokens -> (B, 1, 1, S), broadcastable over heads and queries."""
    return mask[:, None, None, :]


def causal_mask(length: int, device: torch.device | str | None = None) -> torch.Tensor:
    """(T, T): True where query position t may attend to key position u, i.e. u <= t."""
    return torch.ones(length, length, dtype=torch.bool, device=device).tril()


def scaled_dot_product(
    query: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor | None,
    dropout: float = 0.0,
    need_weights: bool = False,
):
    """(context (B, h, T, dk), weights (B, h, T, S) or None) of softmax(Q K^T / sqrt(dk)) V.

    query (B, h, T, dk); keys, values (B, h, S, dk); mask boolean, broadcastable to (B, h, T, S),
    True where a query may attend. Without ``need_weights`` torch's fused kernel runs (it does
    not return the weights); with it the same masked softmax is computed explicitly.
    """
    if not need_weights:
        return F.scaled_dot_product_attention(query, keys, values, attn_mask=mask, dropout_p=dropout), None
    scores = query @ keys.transpose(-2, -1) / math.sqrt(query.shape[-1])  # (B, h, T, S)
    weights = masked_softmax(scores, mask)
    context = F.dropout(weights, dropout) @ values if dropout else weights @ values  # (B, h, T, dk)
    return context, weights


class MultiHeadAttention(nn.Module):
    """h heads of scaled dot-product attention over projections W_q, W_k, W_v; W_o mixes them.

    Keys and values are projected separately (``project``) so that a decoder can project the
    memory once per sentence and cache its own past keys and values.
    """

    def __init__(self, d_model: int, heads: int, dropout: float):
        super().__init__()
        self.heads, self.head_size, self.dropout = heads, d_model // heads, dropout
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)

    def split(self, x: torch.Tensor) -> torch.Tensor:
        """(B, L, D) -> (B, h, L, dk)."""
        batch, length, _ = x.shape
        return x.view(batch, length, self.heads, self.head_size).transpose(1, 2)

    def project(self, keys: torch.Tensor, values: torch.Tensor) -> Cache:
        """Per-head keys and values (B, h, S, dk) of inputs (B, S, D)."""
        return self.split(self.W_k(keys)), self.split(self.W_v(values))

    def forward(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        mask: torch.Tensor | None,
        need_weights: bool = False,
    ):
        """(output (B, T, D), weights (B, h, T, S) or None) for query inputs (B, T, D) and
        projected keys, values (B, h, S, dk)."""
        dropout = self.dropout if self.training else 0.0
        context, weights = scaled_dot_product(
            self.split(self.W_q(query)), keys, values, mask, dropout, need_weights
        )  # (B, h, T, dk)
        batch, _, length, _ = context.shape
        return self.W_o(context.transpose(1, 2).reshape(batch, length, -1)), weights


class FeedForward(nn.Module):
    """Position-wise feed-forward: W_2 dropout(ReLU(W_1 x)), (B, T, D) -> (B, T, D)."""

    def __init__(self, d_model: int, ff_size: int, dropout: float):
        super().__init__()
        self.W_1, self.W_2 = nn.Linear(d_model, ff_size), nn.Linear(ff_size, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.W_2(self.dropout(torch.relu(self.W_1(x))))


class Residual(nn.Module):
    """The residual connection and layer norm around one sublayer f, with dropout on f's output.

    pre-norm: x + f(LN(x)); post-norm: LN(x + f(x)). ``inner(x)`` is f's input and
    ``outer(x, f_out)`` the result.
    """

    def __init__(self, d_model: int, dropout: float, pre_norm: bool):
        super().__init__()
        self.pre_norm = pre_norm
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def inner(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x) if self.pre_norm else x

    def outer(self, x: torch.Tensor, sublayer_out: torch.Tensor) -> torch.Tensor:
        x = x + self.dropout(sublayer_out)
        return x if self.pre_norm else self.norm(x)


# -- layers ----------------------------------------------------------------------------------------
class EncoderLayer(nn.Module):
    """Self-attention over the source, then the feed-forward, each inside a Residual."""

    def __init__(self, cfg):
        super().__init__()
        d = cfg.hidden_size
        self.self_attn = MultiHeadAttention(d, cfg.heads, cfg.dropout)
        self.ff = FeedForward(d, cfg.ff_size, cfg.dropout)
        self.attn_res = Residual(d, cfg.dropout, cfg.pre_norm)
        self.ff_res = Residual(d, cfg.dropout, cfg.pre_norm)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B, S, D) -> (B, S, D); mask (B, 1, 1, S)."""
        return self.forward_with_weights(x, mask, need_weights=False)[0]

    def forward_with_weights(self, x: torch.Tensor, mask: torch.Tensor, need_weights: bool = True):
        """(output (B, S, D), self-attention weights (B, h, S, S) or None); mask (B, 1, 1, S)."""
        h = self.attn_res.inner(x)
        keys, values = self.self_attn.project(h, h)
        context, weights = self.self_attn(h, keys, values, mask, need_weights)
        x = self.attn_res.outer(x, context)
        return self.ff_res.outer(x, self.ff(self.ff_res.inner(x))), weights


class DecoderLayer(nn.Module):
    """Causal self-attention, cross-attention over the memory, feed-forward; each in a Residual."""

    def __init__(self, cfg):
        super().__init__()
        d = cfg.hidden_size
        self.self_attn = MultiHeadAttention(d, cfg.heads, cfg.dropout)
        self.cross_attn = MultiHeadAttention(d, cfg.heads, cfg.dropout)
        self.ff = FeedForward(d, cfg.ff_size, cfg.dropout)
        self.self_res = Residual(d, cfg.dropout, cfg.pre_norm)
        self.cross_res = Residual(d, cfg.dropout, cfg.pre_norm)
        self.ff_res = Residual(d, cfg.dropout, cfg.pre_norm)

    def forward(
        self,
        x: torch.Tensor,
        self_mask: torch.Tensor | None,
        past: Cache | None,
        cross_keys: torch.Tensor,
        cross_values: torch.Tensor,
        cross_mask: torch.Tensor,
        need_weights: bool = False,
        row_layout: RowLayout = RowLayout(),  # noqa: B008 (frozen)
        past_rows: torch.Tensor | None = None,
    ):
        """(x (B, T, D), cache, cross weights (B, h, T, S) or None) for new positions x (B, T, D).

        ``past``: the self-attention keys and values of earlier positions (B0, h, t, dk) or None,
        and ``past_rows`` (B,) the row of them each row of x continues (None: the same rows);
        the returned cache holds them followed by the new positions' (B, h, t + T, dk).
        ``self_mask`` (T, t + T) or None; cross keys/values (B / k, h, S, dk) and cross_mask
        (B / k, 1, 1, S): one row per sentence, whose k hypotheses (``row_layout``) attend together.
        """
        h = self.self_res.inner(x)
        keys, values = self.self_attn.project(h, h)  # (B, h, T, dk)
        if past is not None:
            keys, values = extend(past[0], past_rows, keys), extend(past[1], past_rows, values)
        x = self.self_res.outer(x, self.self_attn(h, keys, values, self_mask)[0])
        query = row_layout.by_sentence(self.cross_res.inner(x))  # (B / k, k * T, D)
        context, weights = self.cross_attn(query, cross_keys, cross_values, cross_mask, need_weights)
        context = row_layout.by_hypothesis(context)  # (B, T, D)
        if weights is not None:
            weights = row_layout.by_hypothesis(weights, dim=2)  # (B / k, h, k * T, S) -> (B, h, T, S)
        x = self.cross_res.outer(x, context)
        x = self.ff_res.outer(x, self.ff(self.ff_res.inner(x)))
        return x, (keys, values), weights
