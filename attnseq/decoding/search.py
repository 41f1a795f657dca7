"""One entry point for decoding a batch with the search the decode settings ask for."""

from __future__ import annotations

import torch

from ..data.batching import SourceBatch
from .beam import beam_search
from .common import Hypothesis
from .greedy import greedy_search
from .options import output_limits


def max_lengths(src_mask: torch.Tensor, ratio: float, offset: int, cap: int) -> torch.Tensor:
    """Per-sentence output limits (B,): min(cap, ratio * source length + offset), at least 1."""
    return torch.tensor(output_limits(src_mask.sum(1).tolist(), ratio, offset, cap), device=src_mask.device)


def search(model, source: SourceBatch, decode, keep_attention: bool = False) -> list[list[Hypothesis]]:
    """Hypotheses (n-best, best first) per sentence of the ``source`` batch, by greedy or beam
    search; ``decode`` is checked settings (``decoding.options.decode_options``). A copying
    model's hypotheses hold extended ids."""
    limits = max_lengths(source.mask, decode.max_len_ratio, decode.max_len_offset, decode.max_len)
    if decode.beam_size == 1:
        return greedy_search(model, source, limits, keep_attention)
    return beam_search(
        model,
        source,
        limits,
        beam_size=decode.beam_size,
        n_best=decode.n_best,
        length_penalty=decode.length_penalty,
        keep_attention=keep_attention,
    )
