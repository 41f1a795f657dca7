"""What every search returns, and the state it starts from."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def first_state(model, src, src_mask, src_ext=None):
    """(the decoder's State before the first target token, the real positions each sentence's
    attention runs over (B,) as a list: what its alignment is cut to) of the sources ``src`` (B, S)
    ids with ``src_mask`` (B, S); ``src_ext`` (B, S): the sources as extended ids, for a copying model.

    The attention of a text runs over its tokens; that of a source that is a file, features
    (B, L, F), over the cells its frontend made of them (an image's grid: data/inputs), the memory's
    mask, whose real cells come first too."""
    memory = model.encode(src, src_mask) if src_ext is None else model.encode(src, src_mask, src_ext)
    if src.dim() > 2:  # features: the frontend's cells
        first = memory[0] if isinstance(memory, tuple) else memory  # an ensemble's members read one source
        src_mask = first.mask
    return model.decoder.init_state(memory), src_mask.sum(1).tolist()


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

    def reversed_source(self, length: int) -> "AttentionViews":
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
