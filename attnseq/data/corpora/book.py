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

from ...errors import ConfigError, DataError
from ..corpus import read_lines
from ..sources import SOURCES, Source, first_line
from ..vocab import Vocab

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
        raise ValueError(
            f"dev_size must be in 0..{len(train_idx) - 1} for {path} ({len(train_idx)} training pairs), got {dev_size}"
        )
    training = [pairs[i] for i in train_idx]
    test = [pairs[i] for i in test_idx]
    cut = len(training) - dev_size
    return training[:cut], training[cut:], test


def book_vocab(path: str | Path) -> Vocab:
    """The book's one character vocabulary of a question_answer file: the characters of whole
    lines ('_' included) in order of first appearance (after the four specials, so character
    ids are the book's ids + 4)."""
    return Vocab.build([q + SEPARATOR + a for q, a in read_book_pairs(path)], order="appearance")


@SOURCES.register("book")
class BookSource(Source):
    """``data.format: book``: ``data.train`` is one file of the book's lines, split as the book
    does (the last tenth of its shuffle is the test set, scored after every epoch as the book
    does, so it is the dev set too), with the book's one character vocabulary for both sides."""

    def check(self, data) -> None:
        if not data.train:
            raise ConfigError("data.train: data.format book needs the book's file (--data date.txt)", key="data.train")
        if data.tokenizer.name != "char":
            raise ConfigError(
                f"data.tokenizer: data.format book is character-level (the book's); got {data.tokenizer.name!r}",
                key="data.tokenizer",
            )

    def splits(self, data) -> dict[str, list[Pair]]:
        self.check(data)
        train, _, test = load_book(data.train, dev_size=0)
        return {"train": train, "dev": test, "test": test}

    def vocabulary(self, data) -> Vocab:
        return book_vocab(data.train)

    def shares_vocab(self, data) -> bool:
        return True

    @classmethod
    def reads_file(cls, path: Path) -> bool:
        line = first_line(path)
        return "\t" not in line and SEPARATOR in line

    def test_pairs(self, path: Path, data) -> list[Pair]:
        return load_book(path, dev_size=0)[2]
