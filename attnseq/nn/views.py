"""What a model can show of its attention beyond the alignment a step returns: capabilities a
decoder, an encoder or a scorer declares by mixing one of these into its class, which the
attention page's views (decoding/attention_views.py) ask for with ``isinstance``.

Shapes: memory as the decoder reads it, tgt_in (B, T) teacher-forced inputs, queries (B, T, Hq),
prepared keys (B, S, *), mask (B, S) True on real positions, positions (B, T) or None.
"""

from __future__ import annotations

import torch


class ShowsCrossAttention:
    """A decoder whose every layer and head attends over the source (the Transformer's)."""

    def cross_attention(self, memory, tgt_in: torch.Tensor) -> torch.Tensor:
        """Every layer's and head's weights over the source under teacher forcing: (B, L, h, T, S)."""
        raise NotImplementedError


class ShowsSelfAttention:
    """An encoder whose layers attend over the source itself (the Transformer's)."""

    def self_attention(self, src: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        """Every layer's and head's weights over the source: (B, L, h, S, S)."""
        raise NotImplementedError


class ShowsHeads:
    """A scorer made of heads (multi-head attention), whose alignment is their mean."""

    def head_alignments(
        self, query: torch.Tensor, keys: torch.Tensor, mask: torch.Tensor | None = None, positions=None
    ) -> torch.Tensor:
        """Each head's alignment (B, h, T, S)."""
        raise NotImplementedError


class ShowsWindow:
    """A scorer that attends within a window of 2D + 1 positions around an aligned position p_t
    (local attention); ``options.window`` is D."""

    def centres(self, query: torch.Tensor, lengths: torch.Tensor, positions: torch.Tensor | None) -> torch.Tensor:
        """The aligned position p_t of each query (B, T), for sources of ``lengths`` (B, 1)."""
        raise NotImplementedError
