"""One entry point for decoding a batch with the search the DecodeConfig asks for."""
from __future__ import annotations

import torch

from .common import Hypothesis, max_lengths
from .greedy import greedy_search


def search(model, src: torch.Tensor, src_mask: torch.Tensor, decode, keep_attention: bool = False
           ) -> list[list[Hypothesis]]:
    """Hypotheses (n-best, best first) per sentence of the batch, by greedy or beam search."""
    limits = max_lengths(src_mask, decode.max_len_ratio, decode.max_len_offset, decode.max_len)
    if decode.beam_size <= 1:
        return greedy_search(model, src, src_mask, limits, keep_attention)
    from .beam import beam_search

    return beam_search(model, src, src_mask, limits, beam_size=decode.beam_size,
                       n_best=decode.n_best, length_penalty=decode.length_penalty,
                       keep_attention=keep_attention)
