"""The epochs' batches drawn from the lengths alone (data.sampler): the very batches the
in-memory path drew from its Examples (the order of cc83ef3, kept below as the reference), the
token budget kept, and each process's share: every pair of an epoch in exactly one share, every
share as many batches."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from attnseq.data.sampler import LengthSampler

LENGTHS = st.lists(st.tuples(st.integers(1, 60), st.integers(0, 60)), max_size=400)
SETTINGS = dict(
    batch_size=st.sampled_from([1, 2, 7, 64]),
    batch_tokens=st.sampled_from([0, 0, 1, 40, 300, 3000]),
    bucket=st.booleans(),
    seed=st.integers(0, 3),
    epoch=st.integers(0, 3),
    pool=st.sampled_from([1, 3, 50]),
)


def reference_batches(lengths, batch_size, batch_tokens, bucket, seed, epoch, pool, shuffle=True):
    """batching.batch_indices as it was at cc83ef3, on Python lists of (source, target) lengths."""
    rng = np.random.default_rng([seed, epoch])
    order = rng.permutation(len(lengths)) if shuffle else np.arange(len(lengths))
    if bucket:
        size = batch_size * pool
        chunks = [order[i : i + size] for i in range(0, len(order), size)]
        order = (
            np.concatenate(
                [c[np.argsort([lengths[i][0] + 1000 * lengths[i][1] for i in c], kind="stable")] for c in chunks]
            )
            if chunks
            else order
        )
    if batch_tokens:
        batches, current, longest = [], [], 0
        for i in order.tolist():
            length = max(lengths[i][0], lengths[i][1] + 1)
            if current and (len(current) >= batch_size or (len(current) + 1) * max(longest, length) > batch_tokens):
                batches.append(current)
                current, longest = [], 0
            current.append(i)
            longest = max(longest, length)
        if current:
            batches.append(current)
    else:
        batches = [order[i : i + batch_size].tolist() for i in range(0, len(order), batch_size)]
    if bucket and shuffle:
        batches = [batches[i] for i in rng.permutation(len(batches))]
    return batches


def sampler_of(lengths, batch_size, batch_tokens, bucket, seed, pool, shuffle=True) -> LengthSampler:
    src, tgt = (np.array([pair[side] for pair in lengths], dtype=np.int32) for side in (0, 1))
    return LengthSampler(src, tgt, batch_size, batch_tokens, bucket, shuffle, seed, pool)


@settings(max_examples=60, deadline=None)
@given(lengths=LENGTHS, shuffle=st.booleans(), **SETTINGS)
def test_the_batches_are_those_the_in_memory_path_drew(
    lengths, batch_size, batch_tokens, bucket, seed, epoch, pool, shuffle
):
    sampler = sampler_of(lengths, batch_size, batch_tokens, bucket, seed, pool, shuffle)
    drawn = [batch.tolist() for batch in sampler.epoch(epoch)]
    assert drawn == reference_batches(lengths, batch_size, batch_tokens, bucket, seed, epoch, pool, shuffle)
    assert [b.tolist() for b in sampler.epoch(epoch)] == drawn  # a function of (seed, epoch): a resume draws it again


def test_token_batches_keep_the_budget_across_the_blocks_they_are_cut_in(monkeypatch):
    """Padded lengths are looked up a block at a time (BLOCK pairs); batches cross the blocks."""
    import attnseq.data.sampler as sampler_module

    rng = np.random.default_rng(0)
    lengths = list(zip(rng.integers(1, 50, 3000).tolist(), rng.integers(0, 50, 3000).tolist()))
    expected = reference_batches(lengths, 64, 500, True, 1, 2, 50)
    for block in (1, 7, 1000):
        monkeypatch.setattr(sampler_module, "BLOCK", block)
        batches = [b.tolist() for b in sampler_of(lengths, 64, 500, True, 1, 50).epoch(2)]
        assert batches == expected
    for batch in batches:
        longest = max(max(lengths[i][0], lengths[i][1] + 1) for i in batch)
        assert len(batch) <= 64 and (len(batch) * longest <= 500 or len(batch) == 1)


@settings(max_examples=60, deadline=None)
@given(lengths=LENGTHS, world_size=st.integers(2, 4), **SETTINGS)
def test_the_processes_shares_hold_every_pair_once(
    lengths, batch_size, batch_tokens, bucket, seed, epoch, pool, world_size
):
    """Each of ``world_size`` processes (rank 0..) takes its share of an epoch: as many batches
    each, no batch empty, every pair in exactly one; unless there are fewer batches than
    processes (then none: the trainer refuses it, naming train.batch_size)."""
    epoch_batches = sampler_of(lengths, batch_size, batch_tokens, bucket, seed, pool).epoch(epoch)
    shares = [epoch_batches.shard(rank, world_size) for rank in range(world_size)]
    assert len({len(share) for share in shares}) == 1
    if len(epoch_batches) < world_size:
        assert not len(shares[0])
        return
    assert len(shares[0]) == -(-len(epoch_batches) // world_size) or len(shares[0]) == len(epoch_batches) // world_size
    taken = np.concatenate([batch for share in shares for batch in share])
    assert sorted(taken.tolist()) == list(range(len(lengths)))
    assert all(len(batch) for share in shares for batch in share)
    for share in shares:  # a resumed process skips the batches it trained: slices are the share's
        start = len(share) // 2
        assert [b.tolist() for b in share[start:]] == [b.tolist() for b in list(share)[start:]]
