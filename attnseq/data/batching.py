"""Batches of Examples (ids, or the features of a source file: data/inputs), bucketed by length,
padded, with masks."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .pipeline import Example
from .sampler import LengthSampler
from .vocab import Vocab


@dataclass(frozen=True)
class SourceBatch:
    """A batch of sources as an encoder and a search read them; the mask is True on real positions.

    ``ids``: (B, S) token ids, or float features (B, L, F) of sources that are files
    (pad_features); ``mask``: (B, S) or (B, L). For a copying model (model.copy, nn/copy.py)
    ``extended`` (B, S) holds the sources as extended target ids and ``oov`` each sentence's
    tokens outside the target vocabulary (id V + j for ``oov[j]``); None otherwise."""

    ids: torch.Tensor
    mask: torch.Tensor
    extended: torch.Tensor | None = None
    oov: list[tuple[str, ...]] | None = None

    @classmethod
    def of(
        cls, sources: Sequence[Sequence[int] | np.ndarray], extended: Sequence[Sequence[int]] | None = None
    ) -> SourceBatch:
        """The padded batch of ``sources`` (id lists, or the features of files: pad_sources) and,
        for a copying model, of their ``extended`` ids."""
        ids, mask = pad_sources(sources)
        return cls(ids, mask, None if extended is None else pad(extended)[0])

    def to(self, device: torch.device | str) -> SourceBatch:
        """The same batch on ``device``."""
        if torch.device(device) == self.ids.device:
            return self
        move = lambda t: None if t is None else t.to(device, non_blocking=True)  # noqa: E731
        return SourceBatch(move(self.ids), move(self.mask), move(self.extended), self.oov)


@dataclass
class Batch:
    """A padded batch of pairs: its ``source`` (SourceBatch), tgt_in = bos + target (B, T);
    tgt_out = target + eos (B, T); tgt_mask (B, T), True on real tokens; index: positions of the
    examples in their data set. Of a copying model's examples (data.pipeline.Example) ``tgt_out``
    holds extended target ids (``tgt_in`` has unk for them)."""

    source: SourceBatch
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    tgt_mask: torch.Tensor
    index: list[int]

    def to(self, device: torch.device | str) -> Batch:
        if str(device) == "cpu":
            return self
        move = lambda t: t.to(device, non_blocking=True)  # noqa: E731
        return Batch(self.source.to(device), move(self.tgt_in), move(self.tgt_out), move(self.tgt_mask), self.index)

    @property
    def target_tokens(self) -> int:
        return int(self.tgt_mask.sum())


def pad(seqs: Sequence[Sequence[int]], pad_id: int = Vocab.pad_id) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids (B, L), mask (B, L)) with ``seqs`` right-padded to the longest."""
    longest = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), longest), pad_id, dtype=torch.long)
    for row, seq in enumerate(seqs):
        ids[row, : len(seq)] = torch.as_tensor(seq, dtype=torch.long)
    lengths = torch.tensor([len(s) for s in seqs])
    return ids, torch.arange(longest).unsqueeze(0) < lengths.unsqueeze(1)


def pad_features(arrays: Sequence[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
    """(features (B, L, F) float32, mask (B, L)) of source features (L_i, F), zeros after each
    one's last position (the value an input kind gives its background: data/inputs). uint8
    features (an image's grey levels) are read as value / 255."""
    longest = max(len(a) for a in arrays)
    rest = arrays[0].shape[1:]
    features = torch.zeros((len(arrays), longest, *rest), dtype=torch.float32)
    for row, array in enumerate(arrays):
        values = torch.from_numpy(np.ascontiguousarray(array))
        features[row, : len(array)] = values.float() / 255 if array.dtype == np.uint8 else values.float()
    lengths = torch.tensor([len(a) for a in arrays])
    return features, torch.arange(longest).unsqueeze(0) < lengths.unsqueeze(1)


def pad_sources(sources: Sequence[Sequence[int] | np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
    """(sources (B, S) ids or (B, L, F) features, mask) of sources as the encoder reads them:
    id lists (``pad``) or the features of files (``pad_features``)."""
    if isinstance(sources[0], np.ndarray):
        return pad_features(sources)
    return pad(sources)


def collate(examples: Sequence[Example], index: Sequence[int]) -> Batch:
    """A Batch of ``examples`` (ids without bos/eos on the target side)."""
    src, src_mask = pad_sources([e.src for e in examples])
    tgt_in, _ = pad([[Vocab.bos_id] + e.tgt for e in examples])
    if examples and examples[0].src_ext is not None:  # a copying model's: extended ids
        source = SourceBatch(src, src_mask, pad([e.src_ext for e in examples])[0], [e.oov for e in examples])
        tgt_out, tgt_mask = pad([e.tgt_ext + [Vocab.eos_id] for e in examples])
    else:
        source = SourceBatch(src, src_mask)
        tgt_out, tgt_mask = pad([e.tgt + [Vocab.eos_id] for e in examples])
    return Batch(source, tgt_in, tgt_out, tgt_mask, list(index))


def batch_indices(
    examples: Sequence[Example],
    batch_size: int,
    shuffle: bool = True,
    seed: int = 0,
    epoch: int = 0,
    bucket: bool = True,
    pool: int = 50,
    batch_tokens: int = 0,
) -> list[list[int]]:
    """Index lists of the batches of one epoch of ``examples``, a function of (seed, epoch)
    alone: the batches sampler.LengthSampler draws from their lengths (bucketed by length in
    pools of ``pool`` batches with ``bucket``; of at most ``batch_tokens`` padded tokens with it)."""
    lengths = [np.array([len(getattr(e, side)) for e in examples], dtype=np.int64) for side in ("src", "tgt")]
    sampler = LengthSampler(*lengths, batch_size, batch_tokens, bucket, shuffle, seed, pool)
    return [batch.tolist() for batch in sampler.epoch(epoch)]


def iterate_batches(examples: Sequence[Example], indices: Sequence[Sequence[int]]) -> Iterator[Batch]:
    """Batches for the given index lists."""
    for idx in indices:
        yield collate([examples[i] for i in idx], idx)


def sorted_batches(examples: Sequence[Example], batch_size: int) -> list[list[int]]:
    """Index lists grouping examples of similar source length, for fast evaluation."""
    order = sorted(range(len(examples)), key=lambda i: len(examples[i].src))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
