"""Location-aware attention (Chorowski, Bahdanau, Serdyuk, Cho & Bengio 2015, "Attention-Based
Models for Speech Recognition"): the additive score also reads where the previous step
attended. k filters of width r convolve the previous alignment alpha_{i-1} into features
f_i = F * alpha_{i-1}, one k-vector per source position, and

    e_{i,j} = w^T tanh(W s_{i-1} + V h_j + U f_{i,j} + b),

so the score can learn to move on from where the last step looked (the paper's remedy for an
alignment that jumps back, or stays, when the content alone does not place it).

Windowing (the paper's too): with ``window`` W > 0 a step attends only to the positions
[m - back, m + W] around an anchor m of its previous alignment, in training as in decoding:
its median (``anchor: median``, the first position where its mass reaches one half: the
paper's, which centres a window there to save work on long utterances) or its peak (``anchor:
peak``, the argmax). With ``back`` 0 the attention cannot move back over the source much; with
the peak as anchor no step's most attended position lies before the previous step's at all.
Location features alone did not keep spoken dates' attention forward (configs/chan2016-las.yaml).

The previous alignment is the decoder's to carry from step to step (the state's ``previous``,
(B, S) per hypothesis, which beam search reorders with the rest); the scorer only reads it, one
(B, T, S) row per query. At the first step nothing was attended yet: the paper's equations start
from alpha_{i-1} without giving alpha_0; its authors' code for the follow-up (Bahdanau et al.
2016, rizar/attention-lvcsr, ``initial_glimpses``) puts all the mass on the first frame, and so
does ``first_alignment``.
The convolution pads with zeros, as padded positions hold no mass, so a memory's own positions
get the same features alone and batched beside a longer one.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ...schema import OptionsError, choice, number
from .base import SCORERS, Locating, Windowed
from .content import AdditiveScorer
from .local import source_lengths, window_centres


@dataclass
class LocationOptions:
    filters: int = number(10, 1)  # k: convolution filters over the previous alignment (the paper's 10)
    width: int = number(15, 1)  # r: their width in memory positions, odd (centred on a position)
    size: int = number(0, 0)  # units of the alignment MLP; 0: the decoder's hidden size
    window: int = number(0, 0)  # W: attend to [m - back, m + W], m the previous alignment's anchor; 0: everywhere
    back: int = number(0, 0)  # positions before m the window keeps (with a window only)
    anchor: str = choice("median", ("median", "peak"))  # m: the previous alignment's median or argmax (with a window)

    def __post_init__(self):
        if self.width % 2 == 0:
            raise OptionsError(
                "width", f"the filters are centred on a position, so their width is odd; got {self.width}"
            )
        for option, default in (("back", 0), ("anchor", "median")):
            if getattr(self, option) != default and not self.window:
                raise OptionsError(
                    option,
                    "shapes the window around the previous alignment, and there is none; "
                    f"set its window > 0 or drop {option}",
                )


@SCORERS.register("location", options=LocationOptions)
class LocationScorer(Locating, Windowed, AdditiveScorer):
    """e_{i,j} = w^T tanh(W s + V h_j + U f_{i,j} + b), f_i = F * alpha_{i-1} (Chorowski et al.
    2015): the concat score (``W_q`` holds W and b, ``W_k`` V, ``v`` w) with ``F`` (k filters of
    width r, no bias) and ``U`` (k -> the MLP's units) on the previous alignment; with a
    ``window``, only the positions around the previous alignment's median or peak are attended."""

    def __init__(self, query_size: int, key_size: int, options: LocationOptions):
        super().__init__(query_size, key_size, options)
        self.F = nn.Conv1d(1, options.filters, options.width, padding=options.width // 2, bias=False)
        self.U = nn.Linear(options.filters, self.W_k.out_features, bias=False)

    @classmethod
    def forward_only(cls, options):
        """True with a window from the peak and nothing before it: each step's argmax lies in
        [previous argmax, previous argmax + W]."""
        return bool(options.window) and options.anchor == "peak" and options.back == 0

    def first_alignment(self, mask, dtype=torch.float32):
        """alpha_0 (B, S): all the mass on the first position (rizar/attention-lvcsr's)."""
        first = torch.zeros(mask.shape, dtype=dtype, device=mask.device)  # (B, S)
        first[:, 0] = 1.0
        return first

    def location_features(self, previous: torch.Tensor) -> torch.Tensor:
        """U f_{i,j} (B, T, S, A) of the previous alignments ``previous`` (B, T, S)."""
        batch, steps, source = previous.shape
        f = self.F(previous.reshape(batch * steps, 1, source))  # (B*T, k, S): f_i = F * alpha_{i-1}
        return self.U(f.transpose(1, 2)).view(batch, steps, source, -1)  # (B, T, S, A)

    def score_located(self, query, keys, previous):
        hidden = (
            self.W_q(query).unsqueeze(2)
            + keys.unsqueeze(1)  # (B, T, S, A)
            + self.location_features(previous)
        ).tanh_()
        return self.v(hidden).squeeze(-1)  # (B, T, S)

    def score(self, query, keys):
        """The scores of queries at the first step (``first_alignment`` their previous one)."""
        first = self.first_alignment(keys[..., 0], keys.dtype)  # (B, S)
        return self.score_located(query, keys, first.unsqueeze(1).expand(-1, query.shape[1], -1))

    def window(self, query, scores, mask, positions=None, previous=None):
        """Without ``window``, the whole mask; with it, the mask (B, T, S) cut to [m - back,
        m + W] around the anchor m (median or peak) of each query's previous alignment
        ``previous`` (B, T, S)."""
        if not self.options.window:
            return mask, None
        lengths = source_lengths(mask)  # (B, 1)
        previous = previous.detach()
        if self.options.anchor == "peak":
            anchor = previous.argmax(-1)  # (B, T): the first most attended position
        else:
            anchor = (previous.cumsum(-1) < 0.5).sum(-1)  # (B, T): the first position at half the mass
        anchor = window_centres(anchor.to(lengths.dtype), lengths)  # (B, T), a real position
        s = torch.arange(scores.shape[-1], device=scores.device, dtype=anchor.dtype)
        offset = s.view(1, 1, -1) - anchor.unsqueeze(-1)  # (B, T, S)
        return mask & (offset >= -self.options.back) & (offset <= self.options.window), None
