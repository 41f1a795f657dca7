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


@dataclass(frozen=True)
class RowLayout:
    """How a state's rows line up with its shared entries: every ``per_sentence`` consecutive
    rows are the hypotheses of one sentence (the beam width; 1 in greedy search and training),
    whose shared entries (the encoder memory) hold one row.

    A layer that reads a shared entry takes its queries ``by_sentence`` (the hypotheses of one
    sentence side by side, as the shared entries are laid out) and its results back
    ``by_hypothesis`` (``State.attend`` does both for a decoder); ``per_hypothesis`` gives a
    shared entry one row per hypothesis.
    """

    per_sentence: int = 1

    def by_sentence(self, rows: torch.Tensor) -> torch.Tensor:
        """``rows`` (B, T, ...) of the per-hypothesis entries as (B / k, k * T, ...) (reshaped
        for k = 1 too: the same operations whatever the beam, so training's gradients do not
        depend on it)."""
        k = self.per_sentence
        return rows.reshape(rows.shape[0] // k, k * rows.shape[1], *rows.shape[2:])

    def by_hypothesis(self, rows: torch.Tensor, dim: int = 1) -> torch.Tensor:
        """The inverse of ``by_sentence`` for results whose positions run along ``dim``:
        (B / k, ..., k * T, ...) -> (B, ..., T, ...) (a Transformer's weights (B / k, h, k * T, S)
        have them along dim 2; they are left as they are for k = 1)."""
        k = self.per_sentence
        shape = rows.shape
        if dim == 1:
            return rows.reshape(shape[0] * k, shape[1] // k, *shape[2:])
        if k == 1:
            return rows
        split = rows.view(*shape[:dim], k, shape[dim] // k, *shape[dim + 1 :]).movedim(dim, 1)  # (B / k, k, ...)
        return split.reshape(shape[0] * k, *split.shape[2:])

    def per_hypothesis(self, shared: torch.Tensor) -> torch.Tensor:
        """A shared entry (B / k, ...) with its row repeated for each hypothesis: (B, ...)."""
        return shared.repeat_interleave(self.per_sentence, 0) if self.per_sentence > 1 else shared


class State:
    """A decoder's state: named entries (tensors, tuples of them, or plain values) that share a
    batch dimension, and the layout search needs to reorder them. It is immutable: ``replace``
    and ``share`` give a new State with other entries, ``select`` and ``repeat`` one with other
    rows, and each keeps the layout. There is no other way to make a State from another's
    entries (a State is not a dict: ``dict(state)`` and ``State(**state)`` fail).

    Most tensors are batch-first; ``batch_dims`` names the exceptions (RNN hidden states are
    (layers, B, H)). ``select`` keeps rows (beam reordering, dropping finished sentences) and
    ``repeat`` expands every row k times (beam expansion).

    Entries named in ``shared`` (the encoder memory) hold one row per sentence and are never
    copied per hypothesis: ``row_layout`` says which rows of the other entries are the
    hypotheses of one sentence, and ``attend`` reads the shared entries with them.

    Entries named in ``deferred`` (a Transformer's self-attention cache, which grows every step)
    are not copied by ``select`` either: the decoder keeps a per-row entry of the stored rows
    each row continues (``select`` composes it like any other), and takes those rows when it
    next extends the cache, in the same copy.
    """

    __slots__ = ("_entries", "_batch_dims", "_shared", "_deferred", "_row_layout")

    def __init__(self, *, batch_dims: dict[str, int] | None = None, shared=(), deferred=(), **entries):
        self._entries = entries
        self._batch_dims = dict(batch_dims or {})
        self._shared, self._deferred = frozenset(shared), frozenset(deferred)
        self._row_layout = RowLayout()

    def _with(
        self, entries: dict[str, Any], shared: frozenset[str] | None = None, row_layout: RowLayout | None = None
    ) -> State:
        """A State of ``entries`` with this one's layout (``shared``, ``row_layout`` changed where given)."""
        state = State.__new__(State)
        state._entries, state._batch_dims, state._deferred = entries, self._batch_dims, self._deferred
        state._shared = self._shared if shared is None else shared
        state._row_layout = self._row_layout if row_layout is None else row_layout
        return state

    # -- reading ------------------------------------------------------------------------------
    def __getitem__(self, name: str) -> Any:
        return self._entries[name]

    __iter__ = None  # not iterable and no keys(): dict(state) and State(**state) raise TypeError

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def __repr__(self) -> str:
        return (
            f"State({', '.join(self._entries)}; shared {sorted(self._shared)}, deferred "
            f"{sorted(self._deferred)}, {self._row_layout.per_sentence} hypotheses per sentence)"
        )

    @property
    def batch_dims(self) -> dict[str, int]:
        """The batch dimension of each entry that is not batch-first."""
        return dict(self._batch_dims)

    @property
    def shared(self) -> frozenset[str]:
        """The names of the entries that hold one row per sentence."""
        return self._shared

    @property
    def deferred(self) -> frozenset[str]:
        """The names of the entries whose rows the decoder takes when it next extends them."""
        return self._deferred

    @property
    def row_layout(self) -> RowLayout:
        """How the rows line up with the shared entries (for layers below the decoder)."""
        return self._row_layout

    def attend(
        self,
        attention,
        query: torch.Tensor,
        *memory,
        positions: torch.Tensor | None = None,
        **per_query: torch.Tensor | None,
    ):
        """The tensors ``attention(query, *memory, positions)`` returns, each (B, T, ...), with the
        hypotheses of a sentence reading its shared ``memory`` entries together: ``query``
        (B, T, Hq), ``positions`` (B, T) or None and each tensor of ``per_query`` (B, T, ...) that
        is not None (passed by its name: a scorer's ``coverage=`` or ``previous=``) go in
        ``by_sentence``, the layout of the shared entries, and the results come back
        ``by_hypothesis``. The memory is never copied."""
        layout = self._row_layout
        if positions is not None:
            positions = layout.by_sentence(positions)
        extra = {name: layout.by_sentence(rows) for name, rows in per_query.items() if rows is not None}
        results = attention(layout.by_sentence(query), *memory, positions, **extra)
        return tuple(layout.by_hypothesis(r) for r in results)

    def per_hypothesis(self, name: str) -> torch.Tensor:
        """The shared entry ``name`` with one row per hypothesis: (B, ...)."""
        return self._row_layout.per_hypothesis(self._entries[name])

    # -- deriving ------------------------------------------------------------------------------
    def replace(self, **entries: Any) -> State:
        """A new State with ``entries`` changed or added (of the kind their names are declared:
        per row unless shared or deferred), the rest and the layout kept."""
        return self._with({**self._entries, **entries})

    def share(self, **entries: Any) -> State:
        """A new State with ``entries`` added as shared entries: one row per sentence (B / k, ...)."""
        return self._with({**self._entries, **entries}, shared=self._shared | set(entries))

    def select(self, indices: torch.Tensor, group: int = 1) -> State:
        """A new State with the rows ``indices`` (1-D long tensor) of every tensor, each ``group``
        consecutive new rows hypotheses of one sentence (shared entries keep one row per sentence)."""
        sentences = None
        if self._shared:
            sentences = torch.div(indices[::group], self._row_layout.per_sentence, rounding_mode="floor")
            if len(sentences) * self._row_layout.per_sentence == self.batch_size() and torch.equal(
                sentences, torch.arange(len(sentences), device=sentences.device)
            ):
                sentences = None  # the same sentences in order (a beam step that drops none): no copy
        return self._with(
            {
                k: v
                if k in self._deferred or (k in self._shared and sentences is None)
                else _index(v, sentences if k in self._shared else indices, self._batch_dims.get(k, 0))
                for k, v in self._entries.items()
            },
            row_layout=RowLayout(group),
        )

    def repeat(self, k: int) -> State:
        """Each row repeated ``k`` times in a row: rows (0, 0, 1, 1, ...) for k = 2."""
        batch = self.batch_size()
        device = self.device()
        return self.select(
            torch.arange(batch, device=device).repeat_interleave(k), group=k * self._row_layout.per_sentence
        )

    # -- the batch ------------------------------------------------------------------------------
    def _first_tensor(self) -> tuple[torch.Tensor, int]:
        for k, v in self._entries.items():
            if k in self._shared or k in self._deferred:
                continue
            while isinstance(v, (tuple, list)) and v:
                v = v[0]
            if isinstance(v, torch.Tensor):
                return v, self._batch_dims.get(k, 0)
        raise ValueError("state holds no tensor")

    def batch_size(self) -> int:
        """The number of rows (hypotheses)."""
        tensor, dim = self._first_tensor()
        return tensor.shape[dim]

    def device(self) -> torch.device:
        return self._first_tensor()[0].device


@dataclass
class Memory:
    """What the encoder hands to the decoder.

    keys, values: (B, S, H) encoder outputs; mask: (B, S) True on real tokens;
    final: (L, B, H) each encoder layer's final hidden state (both directions concatenated),
    or None for encoders without one (Transformer); extended: (B, S) the source tokens as
    extended target ids, what a copying decoder copies (nn/copy.py), or None.
    """

    keys: torch.Tensor
    values: torch.Tensor
    mask: torch.Tensor
    final: torch.Tensor | None = None
    extended: torch.Tensor | None = None
