"""The book's data sets (``date.txt``, ``addition.txt``), split as the book does.

The book is "Deep Learning from Scratch 2" (ゼロから作るDeep Learning ❷), chapters 7–8.

Each line is ``question_answer``: the source is everything before the first ``_`` (padding
spaces kept: the book treats them as tokens), the target is the rest of the line without the
newline and without the ``_`` (the book prepends ``_`` as the decoder's start symbol; add it
back in the tokenizer/batching if needed). For ``addition.txt`` the target keeps its trailing
padding (``"91  "``).

The book's split: ``numpy.random.seed(1984); numpy.random.shuffle(arange(N))``, the last
``N // 10`` shuffled lines are the test set. The same permutation is drawn here from a private
``np.random.RandomState(1984)`` (the same Mersenne Twister stream), so numpy's global RNG is
left untouched. The book has no dev set; here the last ``dev_size`` examples of the shuffled
training part become dev (default 500), so train + dev is exactly the book's training set.
For date.txt: 50,000 lines -> 44,500 train / 500 dev / 5,000 test.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import DataError
from .corpus import read_lines

Pair = tuple[str, str]
BOOK_SEED = 1984
SEPARATOR = "_"


def read_book_pairs(path: str | Path) -> list[Pair]:
    """(source, target) pairs of a book data file, in file order.

    Raises DataError naming the file and the 1-based line for a line without ``_`` or with
    an empty question, and for a missing or unreadable file.
    """
    pairs: list[Pair] = []
    for number, line in enumerate(read_lines(path), start=1):
        source, sep, target = line.partition(SEPARATOR)
        if not sep:
            raise DataError(f"{path}:{number}: no '{SEPARATOR}' between question and answer")
        if not source:
            raise DataError(f"{path}:{number}: empty question before '{SEPARATOR}'")
        pairs.append((source, target))
    return pairs


def book_split_indices(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(train_idx, test_idx)``: int arrays of shape (n - n//10,) and (n//10,).

    The book's order: ``arange(n)`` shuffled by the seed-1984 Mersenne Twister; the last
    ``n // 10`` shuffled indices are the test set.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    order = np.arange(n)
    np.random.RandomState(BOOK_SEED).shuffle(order)
    split_at = n - n // 10
    return order[:split_at], order[split_at:]


def load_book(path: str | Path, dev_size: int = 500) -> tuple[list[Pair], list[Pair], list[Pair]]:
    """``(train, dev, test)`` lists of (source, target) pairs, in the book's shuffled order.

    ``dev`` is the last ``dev_size`` pairs of the book's training part and ``train`` the
    rest of it; ``test`` is the book's test set. ``dev_size=0`` gives the book's training
    set unchanged and an empty dev list.
    """
    pairs = read_book_pairs(path)
    if not pairs:
        raise DataError(f"{path}: no examples")
    train_idx, test_idx = book_split_indices(len(pairs))
    if not 0 <= dev_size < len(train_idx):
        raise ValueError(f"dev_size must be in 0..{len(train_idx) - 1} for {path} "
                         f"({len(train_idx)} training pairs), got {dev_size}")
    training = [pairs[i] for i in train_idx]
    test = [pairs[i] for i in test_idx]
    cut = len(training) - dev_size
    return training[:cut], training[cut:], test
