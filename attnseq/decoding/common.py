"""What every search returns, the state it starts from, and how beam search scores a finished
hypothesis (the GNMT length penalty), for every engine."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the NumPy engine reads Hypothesis from here without torch
    from ..data.batching import SourceBatch


def first_state(model, source: SourceBatch):
    """(the decoder's State before the first target token of the ``source`` batch, the mask
    (B, S') of the positions its attention falls on, True on each sentence's real ones).

    The attention of ids falls on the source's tokens (``src_mask``); that of features (B, L, F),
    a file's, on the memory's real cells, which a frontend lays out over other positions than
    the frames (fewer of them over audio, a grid over an image): a search keeps those columns of
    each sentence's attention, the same alone as in a batch."""
    memory = model.encode(source)
    if source.ids.dim() > 2:  # features: the frontend's cells; an ensemble's members read one source
        return model.decoder.init_state(memory), (memory[0] if isinstance(memory, tuple) else memory).mask
    return model.decoder.init_state(memory), source.mask


def gnmt_penalty(length, alpha: float):
    """GNMT's lp(Y) = ((5 + |Y|) / 6) ** alpha (Wu et al. 2016); 1 when alpha = 0.

    ``length`` is a number or a tensor of lengths; |Y| counts the output tokens, eos included.
    """
    return ((5.0 + length) / 6.0) ** alpha


@dataclass
class Hypothesis:
    """One output: token ids (no bos/eos), its score, and its attention (T_out, S) or None
    (a tensor from the torch engine, an array from the NumPy engine).

    ``score`` is the sum of the tokens' log-probabilities (eos included when it was produced),
    divided by the length penalty when beam search used one.
    """

    tokens: list[int]
    score: float
    alignment: Any = None


@dataclass
class AttentionViews:
    """What a page shows of one hypothesis beyond its alignment (arrays, or None where the
    model has no such thing); T_out rows as in the hypothesis' alignment.

    ``cross``: every layer's and head's attention over the source (layers, heads, T_out, S):
    the Transformer's cross-attention, a recurrent decoder's multi-head scorer (one layer).
    ``window``: local attention's window per output step (T_out, 2), its first and last source
    position; ``centres`` (T_out,) the aligned position p_t it is built around; ``width`` D.
    ``p_gen``: a copying model's generation probability per output step (T_out,): 1 writes
    from the vocabulary, 0 copies where the step attends.
    """

    cross: Any = None
    window: Any = None
    centres: Any = None
    width: int = 0
    p_gen: Any = None

    def reversed_source(self, length: int) -> AttentionViews:
        """The same views with source positions 0..length-1 counted from the other end (a
        model that reads its source reversed, shown in reading order)."""
        window = None if self.window is None else (length - 1 - self.window)[:, ::-1].copy()
        return AttentionViews(
            cross=None if self.cross is None else self.cross[..., ::-1].copy(),
            window=window,
            centres=None if self.centres is None else length - 1 - self.centres,
            width=self.width,
            p_gen=self.p_gen,
        )
