"""Luong et al.'s (2015) local attention: the general (bilinear) score, restricted to a window
[p_t - D, p_t + D] around an aligned position p_t (``window`` = D).

Local scorers restrict the alignment through the ``window`` hook and need the target position
of each query (``positions`` (B, T)), which the decoders pass; ``centres`` says where each
query's window is centred (p_t), so that a page can draw it. Source positions are counted
from the first token; masks are True on a prefix of each row (padding at the end), as the
batching produces them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import nn

from ...errors import ConfigError
from ...schema import Variant, number, variant_of
from ..views import ShowsWindow
from .base import SCORERS, Windowed
from .content import GeneralScorer
from .softmax import masked_softmax


def source_lengths(mask: torch.Tensor) -> torch.Tensor:
    """Real source tokens per row, (B, 1) float, from a window mask (B, T, S)."""
    return mask[:, :1].sum(-1).to(torch.float32)  # (B, 1)


def window_centres(centres: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """The positions (B, T) the windows are centred on: centres c (B, T) rounded and clamped
    into [0, length - 1] (lengths (B, 1)), so that every window holds a real position."""
    limit = (lengths - 1).clamp(min=0)  # (B, 1)
    return torch.minimum(centres.detach().round(), limit).clamp(min=0)  # (B, T)


def inside_window(centres: torch.Tensor, lengths: torch.Tensor, width: int, steps: int) -> torch.Tensor:
    """(B, T, S) bool: source positions s with |s - c| <= D around ``window_centres(centres)``."""
    centre = window_centres(centres, lengths)  # (B, T)
    s = torch.arange(steps, device=centres.device, dtype=centre.dtype)  # (S,)
    return (s.view(1, 1, -1) - centre.unsqueeze(-1)).abs() <= width  # (B, T, S)


# the largest share of the memory a window may cover and still be read by gathering: below it
# gathering's fixed cost outweighs scoring every position (the local-cost page's table)
GATHER_BELOW = 0.25


def window_rows(memory: torch.Tensor, rows: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """The rows of ``memory`` (B, S, H) at source positions ``index`` (B, T, W): (B, T, W, H);
    ``rows`` (B * T * W,) are those positions in the memory flattened to (B * S, H) (an
    index_select there is several times faster than a gather along S)."""
    if memory.is_contiguous():
        return memory.view(-1, memory.shape[-1]).index_select(0, rows).view(*index.shape, -1)
    return memory[torch.arange(memory.shape[0], device=memory.device).view(-1, 1, 1), index]


class GatheredWindow:
    """A local scorer's forward that reads only the 2D + 1 keys and values of each query's
    window (Luong et al.'s point: a step's cost grows with D, not with the source length S),
    when the window is at most a quarter of the memory (GATHER_BELOW); else the base's scores
    over all S, masked to the window. Both give the same context and alignment (B, T, S), zero
    outside the window. The scorer supplies ``centres`` (p_t) and ``reweight`` (the Gaussian of
    local-p, or None)."""

    def reweight(self, index: torch.Tensor, centres: torch.Tensor) -> torch.Tensor | None:
        """Weights (B, T, W) to multiply the window's alignment by at source positions ``index``
        (B, T, W) around the unrounded ``centres`` (B, T); None: unweighted."""
        return None

    def forward(self, query, keys, values, mask=None, positions=None, coverage=None, previous=None):
        width = self.options.window
        span = 2 * width + 1  # W, the window's positions
        batch, steps, source = query.shape[0], query.shape[1], keys.shape[1]
        if coverage is not None or previous is not None or span > GATHER_BELOW * source:
            return super().forward(query, keys, values, mask, positions, coverage, previous)
        if mask is None:
            mask = torch.ones(batch, source, dtype=torch.bool, device=keys.device)
        lengths = source_lengths(mask.unsqueeze(1))  # (B, 1)
        centres = self.centres(query, lengths, positions)  # (B, T) p_t
        centre = window_centres(centres, lengths).to(torch.long)  # (B, T)
        index = centre.unsqueeze(-1) + torch.arange(-width, width + 1, device=keys.device)  # (B, T, W)
        inside = (index >= 0) & (index < source)  # (B, T, W)
        index = index.clamp(0, source - 1)
        rows = (index + source * torch.arange(batch, device=keys.device).view(batch, 1, 1)).view(-1)  # (B * T * W,)
        real = mask.reshape(-1).index_select(0, rows).view(batch, steps, span) & inside  # (B, T, W)
        k = window_rows(keys, rows, index)  # (B, T, W, Hq)
        scores = torch.einsum("btwh,bth->btw", k, query)  # (B, T, W)
        weights = masked_softmax(scores, real)  # (B, T, W)
        reweight = self.reweight(index, centres)
        if reweight is not None:
            weights = weights * reweight.to(weights.dtype)
            weights = weights / weights.sum(-1, keepdim=True)
        v = window_rows(values, rows, index)  # (B, T, W, Hv)
        context = torch.einsum("btw,btwh->bth", weights, v)  # (B, T, Hv)
        # the alignment over the whole memory: a position clamped in twice has weight 0 the second time
        alignment = weights.new_zeros(batch, steps, source).scatter_add_(2, index, weights.masked_fill(~real, 0.0))
        return context, alignment  # (B, T, Hv), (B, T, S)


@dataclass
class LocalMOptions:
    window: int = number(5, 0)  # D: the window is [p_t - D, p_t + D]
    # the encoder reads the source reversed (data.reverse_source), so p_t = t, counted in reading
    # order, is the memory's position S - 1 - t; set from data.reverse_source when the config is
    # checked (orient_local_windows)
    reversed: bool = False


@SCORERS.register("local_m", options=LocalMOptions)
class LocalMonotonicScorer(ShowsWindow, GatheredWindow, Windowed, GeneralScorer):
    """Local-m: p_t = t, the target position (clamped to the source), hard window of 2D+1; with
    ``reversed`` (a source read backwards) the source's t-th token, at S - 1 - t in the memory."""

    needs_positions = True  # the query alone does not say which target step it is

    def centres(
        self, query: torch.Tensor, lengths: torch.Tensor, positions: torch.Tensor | None = None
    ) -> torch.Tensor:
        """p_t (B, T) in memory positions: the target positions of the queries (B, T, Hq), or
        with ``reversed`` their mirror S - 1 - t; lengths S (B, 1)."""
        batch, steps = query.shape[:2]
        if positions is None:
            positions = torch.arange(steps, device=query.device).expand(batch, steps)
        positions = positions.to(torch.float32)  # (B, T)
        return (lengths - 1) - positions if self.options.reversed else positions

    def window(self, query, scores, mask, positions=None, previous=None):
        lengths = source_lengths(mask)  # (B, 1)
        inside = inside_window(self.centres(query, lengths, positions), lengths, self.options.window, scores.shape[-1])
        return mask & inside, None


def orient_local_windows(model, reverse_source: bool, key: str = "model.attention"):
    """The model settings ``model`` (checked) with every local-m scorer's ``reversed`` (the
    attention, or a multihead's head) set to ``reverse_source``: p_t = t counts the source in
    reading order, whichever way the encoder reads it. A ``reversed: true`` without
    data.reverse_source is a ConfigError naming the key."""

    def oriented(variant, where):
        if variant is None:
            return None
        if variant.name == "multihead":
            head = oriented(variant_of(where + ".head", variant.options["head"]), where + ".head")
            return Variant(variant.name, {**variant.options, "head": head.plain()})
        if variant.name != "local_m":
            return variant
        if variant.options.get("reversed") and not reverse_source:
            raise ConfigError(
                f"{where}.reversed: the window follows the source's reading order, and "
                "data.reverse_source is false: the encoder reads it forwards; leave reversed out "
                "(it is set from data.reverse_source)",
                key=f"{where}.reversed",
            )
        return Variant(variant.name, {**variant.options, "reversed": reverse_source})

    if getattr(model, "attention", None) is None:
        return model
    return dataclasses.replace(model, attention=oriented(model.attention, key))


@dataclass
class LocalPOptions:
    window: int = number(5, 1)  # D: the window is [p_t - D, p_t + D], the Gaussian's σ = D / 2
    size: int = number(0, 0)  # units of W_p; 0: the decoder's hidden size


@SCORERS.register("local_p", options=LocalPOptions)
class LocalPredictiveScorer(ShowsWindow, GatheredWindow, Windowed, GeneralScorer):
    """Local-p: p_t = S · σ(v_p^T tanh(W_p h_t)) with S the source length; inside the window
    the alignment is multiplied by exp(-(s - p_t)^2 / (2σ^2)), σ = D / 2, and renormalised
    (Luong et al. leave the product unnormalised; here every alignment is a distribution)."""

    def __init__(self, query_size: int, key_size: int, options: LocalPOptions):
        super().__init__(query_size, key_size, options)
        size = self.hidden_size(options.size)
        self.W_p = nn.Linear(query_size, size, bias=False)
        self.v_p = nn.Linear(size, 1, bias=False)

    def predict(self, query: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Aligned source positions p_t (B, T) in [0, S] for query (B, T, Hq), lengths (B, 1)."""
        return lengths * torch.sigmoid(self.v_p(torch.tanh(self.W_p(query)))).squeeze(-1)

    def centres(
        self, query: torch.Tensor, lengths: torch.Tensor, positions: torch.Tensor | None = None
    ) -> torch.Tensor:
        """p_t (B, T), predicted from the queries (B, T, Hq); lengths (B, 1)."""
        return self.predict(query, lengths)

    def gaussian(self, positions: torch.Tensor, centres: torch.Tensor) -> torch.Tensor:
        """exp(-(s - p_t)^2 / (2σ^2)), σ = D / 2, at source positions s (B, T, N) or (1, 1, N)
        around centres p_t (B, T): (B, T, N)."""
        sigma = self.options.window / 2
        return torch.exp(-((positions.to(centres.dtype) - centres.unsqueeze(-1)) ** 2) / (2 * sigma**2))

    def reweight(self, index, centres):
        return self.gaussian(index, centres)  # (B, T, W)

    def window(self, query, scores, mask, positions=None, previous=None):
        width = self.options.window
        lengths = source_lengths(mask)  # (B, 1)
        centres = self.centres(query, lengths)  # (B, T)
        inside = inside_window(centres, lengths, width, scores.shape[-1])
        s = torch.arange(scores.shape[-1], device=scores.device).view(1, 1, -1)  # (1, 1, S)
        return mask & inside, self.gaussian(s, centres).to(scores.dtype)  # (B, T, S) each
