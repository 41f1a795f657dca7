"""The Neural Turing Machine's tasks (Graves et al. 2014, section 4) as text pairs: copy, repeat
copy and priority sort of sequences of random binary vectors.

Each ``bits``-bit vector is one token, written as its bits ("01101001"), so a sequence is a
sentence of such words and the model's vocabulary is the 2**bits vectors. The paper feeds the
bits as an input vector and predicts each output bit with its own sigmoid; here a vector is a
symbol read through an embedding and predicted by one softmax over all vectors, and the model
ends its output with eos instead of being told the output's length.

- ``copy``: the sequence -> the same sequence;
- ``repeat-copy``: the sequence and a count token "x3" -> the sequence three times (the paper
  gives the count as a number on its own input channel);
- ``sort``: items "VECTOR pK" with distinct priorities K (the paper's are reals in [-1, 1]) ->
  the vectors from the highest priority to the lowest.

Lengths are drawn uniformly from a range; test sets with longer sequences than the training
ones measure how the learned program generalises.
"""

from __future__ import annotations

import random
from collections.abc import Callable

Pair = tuple[str, str]


def vector(rng: random.Random, bits: int) -> str:
    """A random ``bits``-bit vector as a token of 0s and 1s."""
    return format(rng.getrandbits(bits), f"0{bits}b")


def copy_pair(rng: random.Random, length: int, bits: int = 8, **_) -> Pair:
    """A sequence of ``length`` vectors -> itself."""
    sequence = " ".join(vector(rng, bits) for _ in range(length))
    return sequence, sequence


def repeat_copy_pair(rng: random.Random, length: int, bits: int = 8, repeats: tuple[int, int] = (1, 5), **_) -> Pair:
    """A sequence and "xN" -> the sequence N times (N uniform in ``repeats``)."""
    sequence = " ".join(vector(rng, bits) for _ in range(length))
    count = rng.randint(*repeats)
    return f"{sequence} x{count}", " ".join([sequence] * count)


def sort_pair(rng: random.Random, length: int, bits: int = 8, levels: int = 32, **_) -> Pair:
    """Items "VECTOR pK" with distinct priorities K < ``levels`` -> the vectors, highest K first."""
    if length > levels:
        raise ValueError(f"sort: {length} items need at least as many priority levels (--levels), got {levels}")
    items = [(vector(rng, bits), k) for k in rng.sample(range(levels), length)]
    source = " ".join(f"{v} p{k}" for v, k in items)
    return source, " ".join(v for v, _ in sorted(items, key=lambda item: -item[1]))


TASKS: dict[str, Callable[..., Pair]] = {"copy": copy_pair, "repeat-copy": repeat_copy_pair, "sort": sort_pair}


def generate_pairs(task: str, n: int, lengths: tuple[int, int], rng: random.Random, **options) -> list[Pair]:
    """``n`` pairs of ``task`` with sequence lengths uniform in ``lengths`` (inclusive)."""
    low, high = lengths
    if not 1 <= low <= high:
        raise ValueError(f"lengths must satisfy 1 <= low <= high, got {low}-{high}")
    return [TASKS[task](rng, rng.randint(low, high), **options) for _ in range(n)]


def make_task_splits(
    task: str,
    n_train: int,
    n_dev: int,
    n_test: int,
    lengths: tuple[int, int],
    test_lengths: tuple[int, ...] = (),
    seed: int = 1,
    **options,
) -> tuple[list[Pair], list[Pair], list[Pair], dict[int, list[Pair]]]:
    """(train, dev, test, {length: n_test pairs of that length}): train, dev and test with lengths
    in ``lengths``, and a longer test set for each of ``test_lengths``; deterministic in ``seed``.
    ``options``: the task's (``bits``, ``repeats``, ``levels``)."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; choose from {', '.join(TASKS)}")
    for name, count in (("n_train", n_train), ("n_dev", n_dev), ("n_test", n_test)):
        if count < 0:
            raise ValueError(f"{name} must be >= 0, got {count}")
    rng = random.Random(seed)
    train = generate_pairs(task, n_train, lengths, rng, **options)
    dev = generate_pairs(task, n_dev, lengths, rng, **options)
    test = generate_pairs(task, n_test, lengths, rng, **options)
    longer = {n: generate_pairs(task, n_test, (n, n), rng, **options) for n in test_lengths}
    return train, dev, test, longer


def parse_range(text: str) -> tuple[int, int]:
    """ "1-10" -> (1, 10); "5" -> (5, 5)."""
    try:
        low, _, high = text.partition("-")
        return int(low), int(high or low)
    except ValueError:
        raise ValueError(f"expected a range like 1-10, got {text!r}") from None
