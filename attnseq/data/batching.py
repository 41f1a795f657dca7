"""Batches of Examples (ids, or the features of a source file: data/inputs), bucketed by length,
padded, with masks."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import torch

from .pipeline import Example
from .vocab import Vocab


@dataclass
class Batch:
    """A padded batch. Masks are True on real tokens.

    src (B, S) ids, or float features (B, L, F) of sources that are files (pad_features), with
    src_mask (B, S) or (B, L); tgt_in = bos + target (B, T); tgt_out = target + eos (B, T);
    tgt_mask (B, T); index: positions of the examples in their data set. Of examples with
    extended ids (a copying model's, data.pipeline.Example): ``src_ext`` (B, S) the sources as
    extended ids, ``oov`` each sentence's tokens outside the target vocabulary, and ``tgt_out``
    the extended target ids (``tgt_in`` has unk for them).
    """

    src: torch.Tensor
    src_mask: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    tgt_mask: torch.Tensor
    index: list[int]
    src_ext: torch.Tensor | None = None
    oov: list[tuple[str, ...]] | None = None

    def to(self, device: torch.device | str) -> "Batch":
        if str(device) == "cpu":
            return self
        move = lambda t: t.to(device, non_blocking=True)  # noqa: E731
        return Batch(move(self.src), move(self.src_mask), move(self.tgt_in), move(self.tgt_out),
                     move(self.tgt_mask), self.index, None if self.src_ext is None else move(self.src_ext), self.oov)

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
        tgt_out, tgt_mask = pad([e.tgt_ext + [Vocab.eos_id] for e in examples])
        return Batch(src, src_mask, tgt_in, tgt_out, tgt_mask, list(index), pad([e.src_ext for e in examples])[0],
                     [e.oov for e in examples])
    tgt_out, tgt_mask = pad([e.tgt + [Vocab.eos_id] for e in examples])
    return Batch(src, src_mask, tgt_in, tgt_out, tgt_mask, list(index))


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
    """Index lists of the batches of one epoch, a function of (seed, epoch) alone.

    With ``bucket``, examples are shuffled, cut into pools of ``pool`` batches, sorted by length
    inside each pool (so batches hold similar lengths), and the batches shuffled again. With
    ``batch_tokens`` a batch takes sentences while they hold at most that many tokens, padding
    included (see ``token_batches``), and at most ``batch_size`` of them.
    """
    rng = np.random.default_rng([seed, epoch])
    order = rng.permutation(len(examples)) if shuffle else np.arange(len(examples))
    if bucket:
        size = batch_size * pool
        chunks = [order[i : i + size] for i in range(0, len(order), size)]
        order = np.concatenate([
            c[np.argsort([len(examples[i].src) + 1000 * len(examples[i].tgt) for i in c], kind="stable")]
            for c in chunks
        ]) if chunks else order
    if batch_tokens:
        batches = token_batches([int(i) for i in order], examples, batch_tokens, batch_size)
    else:
        batches = [order[i : i + batch_size].tolist() for i in range(0, len(order), batch_size)]
    if bucket and shuffle:
        batches = [batches[i] for i in rng.permutation(len(batches))]
    return batches


def padded_length(example: Example) -> int:
    """The positions ``example`` takes in a batch: its longer side (the target with bos/eos)."""
    return max(len(example.src), len(example.tgt) + 1)


def token_batches(order: Sequence[int], examples: Sequence[Example], batch_tokens: int,
                  max_sentences: int) -> list[list[int]]:
    """``order`` cut into consecutive batches of at most ``batch_tokens`` padded tokens (sentences
    times the longest in the batch) and ``max_sentences`` sentences; a sentence longer than
    ``batch_tokens`` makes a batch of its own."""
    batches: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for i in order:
        length = padded_length(examples[i])
        if current and (len(current) >= max_sentences or (len(current) + 1) * max(longest, length) > batch_tokens):
            batches.append(current)
            current, longest = [], 0
        current.append(i)
        longest = max(longest, length)
    if current:
        batches.append(current)
    return batches


def iterate_batches(examples: Sequence[Example], indices: Sequence[Sequence[int]]) -> Iterator[Batch]:
    """Batches for the given index lists."""
    for idx in indices:
        yield collate([examples[i] for i in idx], idx)


def sorted_batches(examples: Sequence[Example], batch_size: int) -> list[list[int]]:
    """Index lists grouping examples of similar source length, for fast evaluation."""
    order = sorted(range(len(examples)), key=lambda i: len(examples[i].src))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
