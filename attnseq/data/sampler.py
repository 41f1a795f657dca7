"""The batches of each training epoch, drawn from the pairs' lengths alone (numpy arrays: a
store's lengths index), so that a corpus of any size is batched without a Python object per
pair; each process of a torchrun job takes its own share.

An epoch's batches are a function of (seed, epoch) and the lengths (``train.seed``,
``train.batch_size``, ``train.batch_tokens``, ``train.bucket``): the order of the pairs is a
permutation drawn from ``numpy.random.default_rng([seed, epoch])``; with bucketing it is cut into
pools of ``pool`` batches, each sorted by length (target, then source), cut into batches, and
the batches shuffled by the same generator. With ``batch_tokens`` a batch takes pairs while they
hold at most that many padded positions (pairs times the longest, whose length is its longer
side: the target with bos/eos), and at most ``batch_size`` pairs. A resumed run draws the same
epoch again and skips the batches it trained (its position: epoch and batch, in the checkpoint).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

BLOCK = 1 << 16  # pairs whose padded lengths are looked up at once, cutting token batches


class EpochBatches(Sequence):
    """One epoch's batches without a Python list of them: the pairs in batch order (``order``),
    where each batch starts in it (``bounds``), which batches, in which order (``which``), and
    batches of their own after them (``extra``: index arrays). Item k is an index array of
    pairs; a slice (of step 1), or a ``shard``, is another EpochBatches."""

    def __init__(self, order: np.ndarray, bounds: np.ndarray, which: np.ndarray, extra: Sequence[np.ndarray] = ()):
        self.order, self.bounds, self.which, self.extra = order, bounds, which, list(extra)

    def __len__(self) -> int:
        return len(self.which) + len(self.extra)

    def __getitem__(self, k):
        if isinstance(k, slice):
            start, stop, step = k.indices(len(self))
            if step != 1:
                raise ValueError("EpochBatches: slices of step 1 only")
            inner = len(self.which)
            return EpochBatches(
                self.order,
                self.bounds,
                self.which[start:stop],
                self.extra[max(start - inner, 0) : max(stop - inner, 0)],
            )
        if k < 0:
            k += len(self)
        if k >= len(self.which):
            return self.extra[k - len(self.which)]
        batch = self.which[k]
        return self.order[self.bounds[batch] : self.bounds[batch + 1]]

    def __iter__(self) -> Iterator[np.ndarray]:
        for batch in self.which.tolist():
            yield self.order[self.bounds[batch] : self.bounds[batch + 1]]
        yield from self.extra

    def shard(self, rank: int, world_size: int) -> EpochBatches:
        """Process ``rank``'s share of the batches, each pair in one share, every share as many
        batches (the processes step together): of ``world_size`` batches in turn, the
        ``rank``-th; the pairs of the batches left over are split in ``world_size`` parts, a
        batch for each (a turn more is split when they are fewer pairs than processes). Fewer
        batches than processes make no share."""
        if world_size == 1:
            return self
        turns = len(self) // world_size
        if not turns:
            return EpochBatches(self.order, self.bounds, self.which[:0])
        if sum(len(self[k]) for k in range(turns * world_size, len(self))) in range(1, world_size):
            turns -= 1  # the pairs left over could not give each process one
        mine = np.arange(rank, turns * world_size, world_size)
        inner = mine[mine < len(self.which)]
        extra = [self[k] for k in mine[len(inner) :].tolist()]
        left = [self[k] for k in range(turns * world_size, len(self))]
        if left:
            extra.append(np.array_split(np.concatenate(left), world_size)[rank])
        return EpochBatches(self.order, self.bounds, self.which[inner], extra)


class LengthSampler:
    """The epochs' batches of pairs of the given lengths (``src_lengths``, ``tgt_lengths``: (N,),
    target lengths without bos/eos; memory-mapped arrays are read a piece at a time)."""

    def __init__(
        self,
        src_lengths: np.ndarray,
        tgt_lengths: np.ndarray,
        batch_size: int,
        batch_tokens: int = 0,
        bucket: bool = True,
        shuffle: bool = True,
        seed: int = 0,
        pool: int = 50,
    ):
        self.src_lengths, self.tgt_lengths = src_lengths, tgt_lengths
        self.batch_size, self.batch_tokens, self.bucket, self.shuffle = batch_size, batch_tokens, bucket, shuffle
        self.seed, self.pool = seed, pool

    def __len__(self) -> int:
        return len(self.src_lengths)

    def state(self, epoch: int, batch: int, world_size: int = 1) -> dict:
        """The sampler's position for a checkpoint: batch ``batch`` of epoch ``epoch`` (of this
        process's share, one of ``world_size``), and what draws the epochs (the generator is
        ``default_rng([seed, epoch])``, so the position is its state)."""
        return {
            "epoch": epoch,
            "batch": batch,
            "world_size": world_size,
            "pairs": len(self),
            "seed": self.seed,
            "batch_size": self.batch_size,
            "batch_tokens": self.batch_tokens,
            "bucket": self.bucket,
            "pool": self.pool,
        }

    def changes(self, state: dict, world_size: int = 1) -> list[str]:
        """What draws other batches now than when ``state`` (a checkpoint's) was saved."""
        now = self.state(state["epoch"], state["batch"], world_size)
        return [f"{key} {state[key]} -> {now[key]}" for key in now if key in state and state[key] != now[key]]

    def epoch(self, epoch: int) -> EpochBatches:
        """Every batch of epoch ``epoch`` (0-based), in training order."""
        n = len(self)
        rng = np.random.default_rng([self.seed, epoch])
        order = np.arange(n, dtype=np.int32 if n < 2**31 else np.int64)
        if self.shuffle:
            rng.shuffle(order)  # the permutation rng.permutation(n) draws, in half the memory
        if self.bucket:
            size = self.batch_size * self.pool
            for start in range(0, n, size):
                chunk = order[start : start + size]
                key = self.src_lengths[chunk] + 1000 * self.tgt_lengths[chunk].astype(np.int64)
                order[start : start + size] = chunk[np.argsort(key, kind="stable")]
        if self.batch_tokens:
            bounds = self._token_bounds(order)
        else:
            bounds = np.append(np.arange(0, n, self.batch_size, dtype=np.int64), n)
        which = np.arange(len(bounds) - 1)
        if self.bucket and self.shuffle:
            which = rng.permutation(len(which))
        return EpochBatches(order, bounds, which)

    def padded(self, pairs: np.ndarray) -> np.ndarray:
        """The positions each of ``pairs`` takes in a batch: its longer side (the target with
        bos/eos)."""
        return np.maximum(self.src_lengths[pairs], self.tgt_lengths[pairs] + 1)

    def _token_bounds(self, order: np.ndarray) -> np.ndarray:
        """Where each batch of at most ``batch_tokens`` padded positions (pairs times the longest)
        and ``batch_size`` pairs starts in ``order``, and its end; a pair longer than
        ``batch_tokens`` makes a batch of its own."""
        n, tokens = len(order), self.batch_tokens
        most = max(1, min(self.batch_size, tokens))  # every pair takes a position at least
        counts = np.arange(1, most + 1)
        bounds, start = [0], 0
        block_start, lengths = 0, self.padded(order[: BLOCK + most])
        while start < n:
            if start + most > block_start + len(lengths) and block_start + len(lengths) < n:
                block_start, lengths = start, self.padded(order[start : start + BLOCK + most])
            window = lengths[start - block_start : start - block_start + most]
            fits = counts[: len(window)] * np.maximum.accumulate(window) <= tokens  # adding pair k keeps it within
            taken = int(np.argmin(fits)) if not fits.all() else len(window)
            start += max(taken, 1)
            bounds.append(start)
        return np.array(bounds, dtype=np.int64)


def evaluation_batches(
    src_lengths: np.ndarray, tgt_lengths: np.ndarray, batch_size: int, positions: int, target_tokens: int
) -> list[np.ndarray]:
    """Index arrays of the batches that score pairs of these lengths (target lengths without
    bos/eos) without gradients: the pairs in order of source length (a stable sort), cut into
    batches of ``batch_size`` (batching.sorted_batches), each cut further, in order, where it
    would hold more than ``positions`` padded positions (pairs times the longest side, the target
    with eos) or more than ``target_tokens`` target tokens (eos included: the rows of the output
    layer's logits). A batch within both limits stays whole, so short pairs are batched as
    before; a pair beyond either alone makes a batch of its own. What a batch holds is bounded
    however long the pairs, or many."""
    src = np.asarray(src_lengths, dtype=np.int64)
    tgt = np.asarray(tgt_lengths, dtype=np.int64) + 1  # eos
    order = np.argsort(src, kind="stable")
    batches = []
    for start in range(0, len(order), batch_size):
        whole = order[start : start + batch_size]
        side = np.maximum(src[whole], tgt[whole])
        if len(whole) * int(side.max()) <= positions and int(tgt[whole].sum()) <= target_tokens:
            batches.append(whole)
            continue
        first = 0
        while first < len(whole):
            rest = np.arange(1, len(whole) - first + 1)
            fits = (rest * np.maximum.accumulate(side[first:]) <= positions) & (
                np.cumsum(tgt[whole[first:]]) <= target_tokens
            )
            taken = max(1, int(np.argmin(fits)) if not fits.all() else len(fits))
            batches.append(whole[first : first + taken])
            first += taken
    return batches
