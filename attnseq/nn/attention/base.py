"""The base of every attention scorer. It masks, normalises and takes the weighted sum; each
variant only says how a query scores the keys (``score``). A registry maps ``model.attention``
names to the variants and their options dataclasses. What only some variants do is a capability
mixed into their class, and the decoder asks ``isinstance``: ``Windowed`` scorers say which keys a
query may see (local attention), ``Covering`` ones read the coverage (the sum of the earlier
steps' alignments), ``Locating`` ones the previous step's alignment (location-aware attention),
each of those a (B, T, S) tensor, one row a query.

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

    def scores(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        coverage: torch.Tensor | None = None,
        previous: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Unnormalised scores (B, T, S) of ``query`` against prepared ``keys``; a Covering
        scorer reads the ``coverage`` (B, T, S), a Locating one the ``previous`` alignments."""
        return self.score(query, keys)

    def restrict(
        self,
        query: torch.Tensor,
        scores: torch.Tensor,
        mask: torch.Tensor,
        positions: torch.Tensor | None = None,
        previous: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(the mask (B, T, S) a query's alignment falls within, weights (B, T, S) to multiply the
        alignment by, or None): the whole mask, unweighted; a Windowed scorer cuts it."""
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
        ``previous`` alignments (B, T, S) when given (a Locating scorer reads its
        ``first_alignment`` without them)."""
        if mask is None:
            mask = torch.ones(keys.shape[0], keys.shape[1], dtype=torch.bool, device=keys.device)
        scores = self.scores(query, keys, coverage, previous)  # (B, T, S)
        mask = mask.unsqueeze(1).expand_as(scores)  # (B, T, S)
        mask, reweight = self.restrict(query, scores, mask, positions, previous)
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
        ``coverage`` (B, T, S): the coverage vector of each query, for a Covering scorer;
        ``previous`` (B, T, S): the alignment of each query's previous step, for a scorer that
        is Locating (without it, the scorer's ``first_alignment``).
        """
        alignment = self.align(query, keys, mask, positions, coverage, previous)  # (B, T, S)
        context = torch.bmm(alignment, values)  # (B, T, Hv)
        return context, alignment


class Windowed:
    """A scorer that lets each query see only a window of the keys (local attention, Luong et
    al. 2015; a window around the previous alignment, Chorowski et al. 2015)."""

    def window(
        self,
        query: torch.Tensor,
        scores: torch.Tensor,
        mask: torch.Tensor,
        positions: torch.Tensor | None = None,
        previous: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(mask restricted to the window (B, T, S), weights to multiply the alignment by
        (B, T, S) or None; the product is renormalised). ``positions`` (B, T) are the target
        positions of the queries, ``previous`` (B, T, S) their previous alignments where the
        scorer is Locating."""
        raise NotImplementedError

    def restrict(self, query, scores, mask, positions=None, previous=None):
        return self.window(query, scores, mask, positions, previous)


class Covering:
    """A scorer whose score takes a coverage vector c (B, T, S), the sum of a hypothesis'
    earlier alignments (See et al. 2017); ``model.coverage`` is refused with any other."""

    def add_coverage(self) -> None:
        """Give the score its coverage term."""
        raise NotImplementedError

    def score_covered(self, query: torch.Tensor, keys: torch.Tensor, coverage: torch.Tensor) -> torch.Tensor:
        """Scores (B, T, S) like ``score``'s, with the coverage (B, T, S) of each query in them."""
        raise NotImplementedError

    def scores(self, query, keys, coverage=None, previous=None):
        if coverage is not None:
            return self.score_covered(query, keys, coverage)
        return super().scores(query, keys, coverage, previous)


class Locating:
    """A scorer whose score reads each query's previous alignment (B, T, S) (location-aware
    attention, Chorowski et al. 2015); the decoder carries it from step to step."""

    def first_alignment(self, mask: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """The alignment (B, S) read at the first step, before any was computed, for memories of
        ``mask`` (B, S)."""
        raise NotImplementedError

    def score_located(self, query: torch.Tensor, keys: torch.Tensor, previous: torch.Tensor) -> torch.Tensor:
        """Scores (B, T, S) like ``score``'s, with each query's previous alignment (B, T, S) in them."""
        raise NotImplementedError

    @classmethod
    def forward_only(cls, options) -> bool:
        """Whether, with ``options``, no step's most attended position can lie before the previous
        step's: an alignment whose argmax never moves back by construction."""
        return False

    def scores(self, query, keys, coverage=None, previous=None):
        return self.score_located(query, keys, previous)

    def align(self, query, keys, mask=None, positions=None, coverage=None, previous=None):
        if previous is None:  # the first step's: nothing attended before
            if mask is None:
                mask = torch.ones(keys.shape[0], keys.shape[1], dtype=torch.bool, device=keys.device)
            previous = self.first_alignment(mask, query.dtype).unsqueeze(1).expand(-1, query.shape[1], -1)
        return super().align(query, keys, mask, positions, coverage, previous)


def forward_only(scorer: type[Scorer], options) -> bool:
    """Whether the scorer class ``scorer`` with ``options`` never moves its alignment's argmax back
    (Locating.forward_only; False for every other scorer)."""
    return issubclass(scorer, Locating) and scorer.forward_only(options)


def build_scorer(variant: Variant | str, query_size: int, key_size: int, key: str = "model.attention") -> Scorer:
    """The scorer ``variant`` names (``model.attention``), for queries and keys of these sizes."""
    return SCORERS.build(variant, key, query_size, key_size)
