"""One entry point for decoding a batch with the search the decode settings ask for."""

from __future__ import annotations

import torch

from .beam import beam_search
from .common import Hypothesis
from .greedy import greedy_search
from .options import output_limits


def max_lengths(src_mask: torch.Tensor, ratio: float, offset: int, cap: int) -> torch.Tensor:
    """Per-sentence output limits (B,): min(cap, ratio * source length + offset), at least 1."""
    return torch.tensor(output_limits(src_mask.sum(1).tolist(), ratio, offset, cap), device=src_mask.device)


def search(
    model,
    src: torch.Tensor,
    src_mask: torch.Tensor,
    decode,
    keep_attention: bool = False,
    src_ext: torch.Tensor | None = None,
) -> list[list[Hypothesis]]:
    """Hypotheses (n-best, best first) per sentence of the batch, by greedy or beam search;
    ``decode`` is checked settings (``decoding.options.decode_options``); ``src_ext`` (B, S)
    the sources as extended ids, for a copying model (its hypotheses hold those ids)."""
    limits = max_lengths(src_mask, decode.max_len_ratio, decode.max_len_offset, decode.max_len)
    if decode.beam_size == 1:
        return greedy_search(model, src, src_mask, limits, keep_attention, src_ext)
    return beam_search(
        model,
        src,
        src_mask,
        limits,
        beam_size=decode.beam_size,
        n_best=decode.n_best,
        length_penalty=decode.length_penalty,
        keep_attention=keep_attention,
        src_ext=src_ext,
    )
