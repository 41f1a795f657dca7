"""Decoder state and encoder memory: named tensors that search can reorder row by row."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


def _index(value: Any, indices: torch.Tensor, dim: int) -> Any:
    """``value`` with rows ``indices`` taken along ``dim`` (tensors, nested tuples/lists, None)."""
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        return value.index_select(dim, indices)
    if isinstance(value, (tuple, list)):
        return type(value)(_index(v, indices, dim) for v in value)
    return value  # a plain number or flag shared by all rows


class State(dict):
    """A decoder's state: named tensors (or tuples of them) that share a batch dimension.

    Most tensors are batch-first; ``batch_dims`` names the exceptions (RNN hidden states are
    (layers, B, H)). ``select`` keeps rows (beam reordering, dropping finished sentences) and
    ``repeat`` expands every row k times (beam expansion).

    Entries named in ``shared`` (the encoder memory) hold one row per sentence and are never
    copied per hypothesis: every ``group`` consecutive rows of the other entries are the
    hypotheses of one sentence (``group`` is the beam width; 1 in greedy search and training).
    A decoder reads them with ``by_sentence``: its queries (B, T, H) as (B / group, group * T, H).

    Entries named in ``deferred`` (a Transformer's self-attention cache, which grows every step)
    are not copied by ``select`` either: the decoder keeps a per-row entry of the stored rows
    each row continues (``select`` composes it like any other), and takes those rows when it
    next extends the cache, in the same copy.
    """

    def __init__(self, *args, batch_dims: dict[str, int] | None = None, shared=(), deferred=(), group: int = 1,
                 **kwargs):
        super().__init__(*args, **kwargs)
        self.batch_dims = dict(batch_dims or {})
        self.shared, self.deferred, self.group = set(shared), set(deferred), group

    def copy(self) -> "State":
        """A shallow copy that keeps the batch dimensions, shared and deferred entries, and group."""
        return State(self, batch_dims=self.batch_dims, shared=self.shared, deferred=self.deferred, group=self.group)

    def select(self, indices: torch.Tensor, group: int = 1) -> "State":
        """A new State with the rows ``indices`` (1-D long tensor) of every tensor, each ``group``
        consecutive new rows hypotheses of one sentence (shared entries keep one row per sentence)."""
        sentences = None
        if self.shared:
            sentences = torch.div(indices[::group], self.group, rounding_mode="floor")
            if (len(sentences) * self.group == self.batch_size()
                    and torch.equal(sentences, torch.arange(len(sentences), device=sentences.device))):
                sentences = None  # the same sentences in order (a beam step that drops none): no copy
        return State(
            {k: v if k in self.deferred or (k in self.shared and sentences is None)
             else _index(v, sentences if k in self.shared else indices, self.batch_dims.get(k, 0))
             for k, v in self.items()},
            batch_dims=self.batch_dims, shared=self.shared, deferred=self.deferred, group=group,
        )

    def repeat(self, k: int) -> "State":
        """Each row repeated ``k`` times in a row: rows (0, 0, 1, 1, ...) for k = 2."""
        batch = self.batch_size()
        device = self.device()
        return self.select(torch.arange(batch, device=device).repeat_interleave(k), group=k * self.group)

    def by_sentence(self, rows: torch.Tensor) -> torch.Tensor:
        """``rows`` (B, T, ...) of the per-hypothesis entries as (B / group, group * T, ...):
        the hypotheses of one sentence side by side, as the shared entries are laid out."""
        return rows.reshape(rows.shape[0] // self.group, self.group * rows.shape[1], *rows.shape[2:])

    def by_hypothesis(self, rows: torch.Tensor) -> torch.Tensor:
        """The inverse of ``by_sentence``: (B / group, group * T, ...) -> (B, T, ...)."""
        return rows.reshape(rows.shape[0] * self.group, rows.shape[1] // self.group, *rows.shape[2:])

    def _first_tensor(self) -> tuple[torch.Tensor, int]:
        for k, v in self.items():
            if k in self.shared or k in self.deferred:
                continue
            while isinstance(v, (tuple, list)) and v:
                v = v[0]
            if isinstance(v, torch.Tensor):
                return v, self.batch_dims.get(k, 0)
        raise ValueError("state holds no tensor")

    def batch_size(self) -> int:
        tensor, dim = self._first_tensor()
        return tensor.shape[dim]

    def device(self) -> torch.device:
        return self._first_tensor()[0].device


@dataclass
class Memory:
    """What the encoder hands to the decoder.

    keys, values: (B, S, H) encoder outputs; mask: (B, S) True on real tokens;
    final: (L, B, H) each encoder layer's final hidden state (both directions concatenated),
    or None for encoders without one (Transformer).
    """

    keys: torch.Tensor
    values: torch.Tensor
    mask: torch.Tensor
    final: torch.Tensor | None = None
