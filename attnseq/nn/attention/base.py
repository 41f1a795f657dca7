"""The base of every attention scorer. It masks, normalises and takes the weighted sum; each
variant only says how a query scores the keys (``score``) and, for local attention, which
keys it may see (``window``). A registry maps ``model.attention`` names to the variants and
their options dataclasses. A scorer may also read what the decoder carries of the earlier
steps' attention: the coverage (``covers``: their sum) or the previous step's alignment
(``locates``: location-aware attention), each a (B, T, S) tensor, one row a query.

Shapes: queries (B, T, Hq) (T = 1 when stepping), keys (B, S, Hk), values (B, S, Hv),
mask (B, S) bool with True on real tokens, alignment (B, T, S), context (B, T, Hv).
"""

from __future__ import annotations

import torch
from torch import nn

from ...errors import ConfigError
from ...registry import Registry
from ...schema import Variant
from .softmax import masked_softmax

SCORERS: Registry[type[Scorer]] = Registry("attention scorer", key="model.attention")


class Scorer(nn.Module):
    """Base of every attention scorer.

    A variant registers itself with its options dataclass (``@SCORERS.register("concat",
    options=ConcatOptions)``) and implements ``score(query, keys) -> (B, T, S)``. Keys that can
    be projected once per sentence are projected in ``prepare`` (called once by the decoder,
    never per step). ``options`` is the variant's options instance. A variant that compares
    queries with unprojected keys sets ``same_size``: the base then refuses unequal sizes.
    """

    same_size: bool = False  # queries and keys compared as they are: they must have one size
    covers: bool = False  # its score takes a coverage vector (See et al. 2017): add_coverage, score_covered
    locates: bool = (
        False  # its score reads the previous alignment (Chorowski et al. 2015): first_alignment, score_located
    )

    def __init__(self, query_size: int, key_size: int, options=None):
        super().__init__()
        if self.same_size and query_size != key_size:
            raise ConfigError(
                f"model.attention: this scorer compares the decoder state ({query_size}) with the encoder "
                f"outputs ({key_size}) unprojected, so the two need one size; use general or concat",
                key="model.attention",
            )
        self.query_size, self.key_size = query_size, key_size
        self.options = options

    def hidden_size(self, size: int) -> int:
        """The width of an inner layer: the option ``size``, or the query size when it is 0."""
        return size or self.query_size

    def prepare(self, keys: torch.Tensor) -> torch.Tensor:
        """Keys as ``score`` wants them, computed once per sentence: (B, S, Hk) -> (B, S, *)."""
        return keys

    def score(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """Unnormalised scores (B, T, S) of ``query`` (B, T, Hq) against prepared ``keys``."""
        raise NotImplementedError

    def add_coverage(self) -> None:
        """Give the score a coverage term (a scorer that ``covers`` defines it; the model refuses
        coverage with the others, naming model.coverage)."""
        raise NotImplementedError

    def score_covered(self, query: torch.Tensor, keys: torch.Tensor, coverage: torch.Tensor) -> torch.Tensor:
        """Scores (B, T, S) like ``score``'s, with the coverage c (B, T, S) of each query (the sum
        of its hypothesis' earlier alignments) in them."""
        raise NotImplementedError

    @classmethod
    def forward_only(cls, options) -> bool:
        """Whether, with ``options`` (its options instance), no step's most attended position can
        lie before the previous step's: an alignment whose argmax never moves back by construction."""
        return False

    def first_alignment(self, mask: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """The alignment (B, S) a scorer that ``locates`` reads at the first step, before any
        was computed, for memories of ``mask`` (B, S)."""
        raise NotImplementedError

    def score_located(self, query: torch.Tensor, keys: torch.Tensor, previous: torch.Tensor) -> torch.Tensor:
        """Scores (B, T, S) like ``score``'s, with each query's previous alignment (B, T, S) in
        them (a scorer that ``locates`` defines it)."""
        raise NotImplementedError

    def scores(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        coverage: torch.Tensor | None = None,
        previous: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Unnormalised scores (B, T, S): ``score_located`` with ``previous`` alignments (B, T, S),
        ``score_covered`` with a ``coverage`` (B, T, S), else ``score``."""
        if previous is not None:
            return self.score_located(query, keys, previous)
        if coverage is not None:
            return self.score_covered(query, keys, coverage)
        return self.score(query, keys)

    def window(
        self,
        query: torch.Tensor,
        scores: torch.Tensor,
        mask: torch.Tensor,
        positions: torch.Tensor | None = None,
        previous: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Local attention hook: (mask restricted to the window (B, T, S), weights to multiply
        the alignment by (B, T, S) or None; the product is renormalised). ``positions`` (B, T)
        are the target positions of the queries, ``previous`` (B, T, S) their previous
        alignments where the scorer ``locates``. Global scorers keep the whole mask."""
        return mask, None

    def align(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        mask: torch.Tensor | None = None,
        positions: torch.Tensor | None = None,
        coverage: torch.Tensor | None = None,
        previous: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Alignment (B, T, S) of ``query`` over prepared ``keys``: zero where masked (or outside
        a local window), each row summing to one; scored with ``coverage`` (B, T, S) or the
        ``previous`` alignments (B, T, S) when given (a scorer that ``locates`` reads its
        ``first_alignment`` without them)."""
        if mask is None:
            mask = torch.ones(keys.shape[0], keys.shape[1], dtype=torch.bool, device=keys.device)
        if previous is None and self.locates:  # the first step's: nothing attended before
            previous = self.first_alignment(mask, query.dtype).unsqueeze(1).expand(-1, query.shape[1], -1)
        scores = self.scores(query, keys, coverage, previous)  # (B, T, S)
        mask = mask.unsqueeze(1).expand_as(scores)  # (B, T, S)
        mask, reweight = self.window(query, scores, mask, positions, previous)
        alignment = masked_softmax(scores, mask)  # (B, T, S)
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
        coverage: torch.Tensor | None = None,
        previous: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(context (B, T, Hv), alignment (B, T, S)); ``keys`` already passed through ``prepare``.

        Masked positions (mask False) get exactly zero weight; each row of weights sums to one.
        ``positions`` (B, T): target positions of the queries, used by local attention;
        ``coverage`` (B, T, S): the coverage vector of each query, for a scorer that ``covers``;
        ``previous`` (B, T, S): the alignment of each query's previous step, for a scorer that
        ``locates`` (without it, the scorer's ``first_alignment``).
        """
        alignment = self.align(query, keys, mask, positions, coverage, previous)  # (B, T, S)
        context = torch.bmm(alignment, values)  # (B, T, Hv)
        return context, alignment


def build_scorer(variant: Variant | str, query_size: int, key_size: int, key: str = "model.attention") -> Scorer:
    """The scorer ``variant`` names (``model.attention``), for queries and keys of these sizes."""
    return SCORERS.build(variant, key, query_size, key_size)
