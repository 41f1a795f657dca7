"""Writing train/dev/test splits as TSV files (``source<TAB>target`` per line).

The files are read back by :func:`attnseq.data.corpus.read_tsv`. Fields are written exactly
as given, so trailing spaces (the book's padding) survive; read them back with
``strip=False``. A field with a tab or line break, or an empty/blank field (which the reader
would skip), is refused. Files are written atomically.
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import date
from pathlib import Path

from ..utils import atomic_write_text
from .dates import DEFAULT_END, DEFAULT_START, generate_unique_dates

Pair = tuple[str, str]
SPLIT_NAMES = ("train", "dev", "test")
_FORBIDDEN = {"\t": "a tab", "\n": "a newline", "\r": "a carriage return"}


def check_pairs(pairs: Sequence[Pair]) -> None:
    """Raise ValueError naming the first pair (0-based index) that cannot be a TSV line."""
    for index, pair in enumerate(pairs):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2
                and all(isinstance(field, str) for field in pair)):
            raise ValueError(f"pair {index}: expected (source, target) strings, got {pair!r}")
        for side, field in zip(("source", "target"), pair):
            if not field.strip():
                raise ValueError(f"pair {index}: the {side} is empty or blank")
            for char, name in _FORBIDDEN.items():
                if char in field:
                    raise ValueError(f"pair {index}: the {side} contains {name}: {field!r}")


def write_tsv(path: str | Path, pairs: Sequence[Pair]) -> Path:
    """Write ``pairs`` to ``path`` as UTF-8 ``source<TAB>target\\n`` lines; return the path.

    Nothing is written if any pair is refused (see :func:`check_pairs`). The file appears
    complete or not at all (:func:`attnseq.utils.atomic_write_text`).
    """
    path = Path(path)
    check_pairs(pairs)
    atomic_write_text(path, "".join(f"{source}\t{target}\n" for source, target in pairs))
    return path


def write_split_dir(out_dir: str | Path, train: Sequence[Pair], dev: Sequence[Pair],
                    test: Sequence[Pair]) -> dict[str, Path]:
    """Write ``train.tsv``, ``dev.tsv`` and ``test.tsv`` in ``out_dir`` (created if needed).

    All three splits are checked before any file is written; an empty split is refused (a run
    without dev pairs could not be evaluated). Returns {split name: path}.
    """
    splits = dict(zip(SPLIT_NAMES, (train, dev, test)))
    empty = [name for name, pairs in splits.items() if not pairs]
    if empty:
        counts = ", ".join(f"{len(pairs)} {name}" for name, pairs in splits.items())
        raise ValueError(f"the {' and '.join(empty)} split{'s' if len(empty) > 1 else ''} would be empty "
                         f"({counts}); give more pairs or larger --dev/--test")
    for name, pairs in splits.items():
        try:
            check_pairs(pairs)
        except ValueError as err:
            raise ValueError(f"{name} split: {err}") from None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return {name: write_tsv(out / f"{name}.tsv", pairs) for name, pairs in splits.items()}


def split_pairs(pairs: Sequence[Pair], dev_fraction: float = 0.1, test_fraction: float = 0.1,
                seed: int = 0) -> tuple[list[Pair], list[Pair], list[Pair]]:
    """``(train, dev, test)`` lists of pairs; no source appears in two splits.

    Pairs are grouped by source (all pairs sharing a source go to the same split), the groups
    are shuffled with ``random.Random(seed)``, and the first ``round(dev_fraction * groups)``
    groups form dev, the next ``round(test_fraction * groups)`` test, the rest train. Within
    a split, pairs keep the shuffled group order.
    """
    if not (0 <= dev_fraction and 0 <= test_fraction and dev_fraction + test_fraction <= 1):
        raise ValueError(f"fractions must be >= 0 and sum to <= 1, got dev={dev_fraction}, "
                         f"test={test_fraction}")
    groups: dict[str, list[Pair]] = {}
    for pair in pairs:
        groups.setdefault(pair[0], []).append(tuple(pair))
    sources = list(groups)
    random.Random(seed).shuffle(sources)
    # at least one source for a split asked for, whenever the corpus has enough to share
    n_dev = max(round(dev_fraction * len(sources)), 1 if dev_fraction and len(sources) >= 3 else 0)
    n_test = max(round(test_fraction * len(sources)), 1 if test_fraction and len(sources) >= 3 else 0)
    parts = (sources[n_dev + n_test:], sources[:n_dev], sources[n_dev:n_dev + n_test])
    train, dev, test = ([pair for source in part for pair in groups[source]] for part in parts)
    return train, dev, test


def write_splits(pairs: Sequence[Pair], out_dir: str | Path, dev_fraction: float = 0.1,
                 test_fraction: float = 0.1, seed: int = 0) -> dict[str, Path]:
    """Split ``pairs`` with :func:`split_pairs` and write them with :func:`write_split_dir`."""
    return write_split_dir(out_dir, *split_pairs(pairs, dev_fraction, test_fraction, seed))


def make_date_splits(n_train: int = 40_000, n_dev: int = 5_000, n_test: int = 5_000,
                     seed: int = 0, locales: Sequence[str] = ("en",),
                     start: date = DEFAULT_START, end: date = DEFAULT_END,
                     ) -> tuple[list[Pair], list[Pair], list[Pair]]:
    """``(train, dev, test)`` date pairs with all sources distinct (80/10/10 by default).

    Draws ``n_train + n_dev + n_test`` pairs with distinct sources from
    :func:`attnseq.data.dates.generate_unique_dates` (deterministic in ``seed``) and cuts them
    in that order; the same date may appear in two splits, but never the same source string.
    """
    for name, count in (("n_train", n_train), ("n_dev", n_dev), ("n_test", n_test)):
        if count < 0:
            raise ValueError(f"{name} must be >= 0, got {count}")
    pairs = generate_unique_dates(n_train + n_dev + n_test, seed, locales, start, end)
    return pairs[:n_train], pairs[n_train:n_train + n_dev], pairs[n_train + n_dev:]
