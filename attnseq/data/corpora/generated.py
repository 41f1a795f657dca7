"""Generated corpora of any size, written as they are made: dates (``attnseq data dates``) and
passages of gettext messages (``attnseq data passages``), millions of pairs in minutes.

A corpus is made in blocks of ``BLOCK_PAIRS`` pairs. Block k comes from its own random stream,
seeded by a hash of the seed and k (utils.stream_seed), so any process can make any block and
the corpus depends on the seed alone, not on how many processes made it or which finished
first. ``workers`` processes make the blocks, at most two each under way at once, and the
blocks are written in order as they come: memory holds a few blocks, never the corpus.

Dates: the first ``DISTINCT_DATES`` training pairs, dev and test are those of
:func:`attnseq.data.splits.make_date_splits` (every source distinct, the same pairs at a seed
as a smaller corpus has); training pairs beyond them come in blocks in which a source may
repeat one met before (the English dates number about 2.5 million), never a dev or test one.
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain, islice
from pathlib import Path

from ...files import open_outputs
from ...progress import StepProgress
from ..splits import SPLIT_NAMES, check_split_sizes, make_date_splits, tsv_text
from .dates import DateBlocks

Pair = tuple[str, str]
Maker = Callable[[int, int], list[Pair]]  # (block index, pairs) -> the block's pairs
Blocks = Iterable[tuple[int, str]]  # (pairs, their TSV text) of each block in turn
BLOCK_PAIRS = 20_000
DISTINCT_DATES = 100_000  # the first training dates, like dev and test, have distinct sources


def blocks(make: Maker, n: int, workers: int = 1, first: int = 0, size: int | None = None) -> Iterator[tuple[int, str]]:
    """(pairs, TSV text) of each block of ``n`` pairs (``size``, BLOCK_PAIRS, a block), blocks
    ``first``, ``first + 1``, ... made by ``make(index, pairs)``, in order; by ``workers``
    processes (``make`` must then pickle), each with at most two blocks under way."""
    size = size or BLOCK_PAIRS
    tasks = [(first + i, min(size, n - start)) for i, start in enumerate(range(0, n, size))]
    if workers <= 1 or len(tasks) <= 1:
        for index, pairs in tasks:
            yield pairs, tsv_text(make(index, pairs))
        return
    # spawned, not forked: a fresh interpreter is safe whatever threads this one runs
    context = multiprocessing.get_context("spawn")
    with context.Pool(min(workers, len(tasks)), initializer=_install, initargs=(make,)) as pool:
        todo = iter(tasks)
        pending = deque(pool.apply_async(_made, (task,)) for task in islice(todo, 2 * workers))
        while pending:
            done = pending.popleft().get()
            task = next(todo, None)
            if task is not None:
                pending.append(pool.apply_async(_made, (task,)))
            yield done


_MAKE: Maker | None = None  # a worker process's maker


def _install(make: Maker) -> None:
    global _MAKE
    _MAKE = make


def _made(task: tuple[int, int]) -> tuple[int, str]:
    index, pairs = task
    return pairs, tsv_text(_MAKE(index, pairs))


def write_generated(
    out_dir: str | Path, splits: dict[str, Blocks], counts: dict[str, int], *, name: str, overwrite: bool = False
) -> None:
    """Write each split's blocks into ``out_dir``/SPLIT.tsv as they come (files.open_outputs: the
    files appear whole, or nothing does), with a progress display named ``name`` over all
    ``counts`` pairs."""
    with (
        open_outputs(out_dir, [f"{split}.tsv" for split in splits], overwrite=overwrite) as streams,
        StepProgress(name, total=sum(counts.values()), unit="pair") as progress,
    ):
        for split, parts in splits.items():
            for pairs, text in parts:
                streams[f"{split}.tsv"].write(text)
                progress.update(pairs)


def date_corpus(
    n_train: int, n_dev: int, n_test: int, seed: int = 0, locales: Sequence[str] = ("en",), workers: int = 1
) -> dict[str, Blocks]:
    """The blocks of each split of a date corpus (see the module's docstring); made as they are
    read. Raises ValueError for sizes or locales that cannot be had."""
    check_split_sizes({"train": n_train, "dev": n_dev, "test": n_test})
    head = min(n_train, DISTINCT_DATES)
    train, dev, test = make_date_splits(head, n_dev, n_test, seed=seed, locales=locales)
    more = DateBlocks(seed, tuple(locales), excluded=frozenset(source for source, _ in dev + test))
    return {
        "train": chain([(len(train), tsv_text(train))], blocks(more, n_train - head, workers, first=1)),
        "dev": [(len(dev), tsv_text(dev))],
        "test": [(len(test), tsv_text(test))],
    }


def passage_corpus(
    messages: dict[str, list[Pair]], counts: dict[str, int], seed: int = 0, workers: int = 1
) -> dict[str, Blocks]:
    """The blocks of each split of a corpus of passages (data/passages.py), each split's made
    of that split's ``messages`` ({"train": gettext pairs, ...}); made as they are read."""
    from .passages import PassageBlocks

    check_split_sizes(counts)
    return {
        split: blocks(PassageBlocks(messages[split], seed, split), counts[split], workers if split == "train" else 1)
        for split in SPLIT_NAMES
    }
