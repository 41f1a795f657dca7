"""Writing train/dev/test splits as TSV files (``source<TAB>target`` per line).

The files are read back by :func:`attnseq.data.corpus.read_tsv`. Fields are written exactly
as given, so trailing spaces (the book's padding) survive; read them back with
``strip=False``. A field with a tab or line break, or an empty/blank field (which the reader
would skip), is refused. Files are written by attnseq.files (atomically; an existing file or a
folder holding files only with ``overwrite``).
"""
from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from datetime import date
from pathlib import Path

from ..files import write_files, write_output
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


def tsv_text(pairs: Sequence[Pair]) -> str:
    """``pairs`` as UTF-8 ``source<TAB>target\n`` lines, each pair checked (see check_pairs)."""
    check_pairs(pairs)
    return "".join(f"{source}\t{target}\n" for source, target in pairs)


def write_tsv(path: str | Path, pairs: Sequence[Pair], *, overwrite: bool = False) -> Path:
    """Write ``pairs`` to ``path`` as ``source<TAB>target`` lines (tsv_text); return the path.

    Nothing is written if any pair is refused (see :func:`check_pairs`), or if ``path`` exists
    and ``overwrite`` is False. The file appears complete or not at all
    (:func:`attnseq.files.write_output`).
    """
    return write_output(path, tsv_text(pairs), overwrite=overwrite)


def write_split_dir(out_dir: str | Path, train: Sequence[Pair], dev: Sequence[Pair],
                    test: Sequence[Pair], extra: Mapping[str, Sequence[Pair]] | None = None, *,
                    inputs: Sequence[str | Path | None] = (), overwrite: bool = False) -> dict[str, Path]:
    """Write ``train.tsv``, ``dev.tsv`` and ``test.tsv`` in ``out_dir`` (created if needed), and
    each of ``extra`` ({"test-len20": pairs}) as NAME.tsv beside them.

    All files are checked before any is written (:func:`attnseq.files.write_files`): an empty
    split is refused (a run without dev pairs could not be evaluated), as is a pair that cannot
    be a TSV line, a folder that holds files already unless ``overwrite``, and a file that is
    one of ``inputs``. Returns {name: path}.
    """
    splits = dict(zip(SPLIT_NAMES, (train, dev, test)))
    empty = [name for name, pairs in splits.items() if not pairs]
    if empty:
        counts = ", ".join(f"{len(pairs)} {name}" for name, pairs in splits.items())
        raise ValueError(f"the {' and '.join(empty)} split{'s' if len(empty) > 1 else ''} would be empty "
                         f"({counts})")
    texts = {}
    for name, pairs in {**splits, **(extra or {})}.items():
        try:
            texts[f"{name}.tsv"] = tsv_text(pairs)
        except ValueError as err:
            raise ValueError(f"{name} split: {err}") from None
    written = write_files(out_dir, texts, inputs=inputs, overwrite=overwrite)
    return {name.removesuffix(".tsv"): path for name, path in written.items()}


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
                 test_fraction: float = 0.1, seed: int = 0, *, overwrite: bool = False) -> dict[str, Path]:
    """Split ``pairs`` with :func:`split_pairs` and write them with :func:`write_split_dir`."""
    return write_split_dir(out_dir, *split_pairs(pairs, dev_fraction, test_fraction, seed), overwrite=overwrite)


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
