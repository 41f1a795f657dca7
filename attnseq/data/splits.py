"""Train/dev/test splits: cutting a corpus of any size into them, and writing them as TSV files
(``source<TAB>target`` per line).

The files are read back by :func:`attnseq.data.corpus.read_tsv`. Fields are written exactly
as given, so trailing spaces (the book's padding) survive; read them back with
``strip=False``. A field with a tab or line break, or an empty/blank field (which the reader
would skip), is refused. Files are written by attnseq.files (atomically; an existing file or a
folder holding files only with ``overwrite``).

How a corpus is split (:func:`split_corpus`, and :func:`split_pairs` for pairs in memory), in
memory that does not grow with the corpus: each pair's source is hashed with a key made of the
seed (blake2b, 64 bits), so all pairs of one source go to one split. Dev takes the sources of
the lowest hashes until it holds the pairs asked for (a count, or a fraction of the corpus's
pairs), test the next ones until dev and test together hold theirs, train the rest: a seeded
random choice of sources, exact in pairs when sources do not repeat. The corpus is read three
times (counting pairs and a histogram of the hashes; the hashes of the two buckets where the
cuts fall; writing), never held. Each split is written in the order the corpus gives, through
a shuffle buffer of ``SHUFFLE_PAIRS`` pairs: a uniformly shuffled split when it fits, locally
shuffled beyond.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import TypeVar

import numpy as np

from ..files import open_outputs, write_files, write_output
from ..progress import StepProgress
from ..utils import stream_seed
from .corpora.dates import DEFAULT_END, DEFAULT_START, generate_unique_dates
from .corpus import CorpusChecks

Pair = tuple[str, str]
SPLIT_NAMES = ("train", "dev", "test")
_FORBIDDEN = {"\t": "a tab", "\n": "a newline", "\r": "a carriage return"}
HASH_BUCKET_BITS = 16  # the histogram of the first pass: 2**16 buckets of source hashes
SHUFFLE_PAIRS = 100_000  # pairs each split's shuffle buffer holds
T = TypeVar("T")


def check_pairs(pairs: Sequence[Pair]) -> None:
    """Raise ValueError naming the first pair (0-based index) that cannot be a TSV line."""
    for index, pair in enumerate(pairs):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and all(isinstance(field, str) for field in pair)):
            raise ValueError(f"pair {index}: expected (source, target) strings, got {pair!r}")
        for side, field in zip(("source", "target"), pair):
            if not field.strip():
                raise ValueError(f"pair {index}: the {side} is empty or blank")
            for char, name in _FORBIDDEN.items():
                if char in field:
                    raise ValueError(f"pair {index}: the {side} contains {name}: {field!r}")


def tsv_text(pairs: Sequence[Pair]) -> str:
    """``pairs`` as UTF-8 ``source<TAB>target\n`` lines, each pair checked (see check_pairs).

    The check is made on the whole text at once (one tab and one line break a pair, no carriage
    return, strings that are not blank); check_pairs names the first pair at fault when it fails."""
    try:
        text = "".join([f"{source}\t{target}\n" for source, target in pairs])
    except (TypeError, ValueError):  # not pairs
        text = ""
    n = len(pairs)
    if not (
        text.count("\t") == n
        and text.count("\n") == n
        and "\r" not in text
        and all(
            isinstance(s, str) and isinstance(t, str) and s and t and not s.isspace() and not t.isspace()
            for s, t in pairs
        )
    ):
        check_pairs(pairs)
        raise AssertionError("check_pairs passed pairs the whole-text check refused")
    return text


def write_tsv(path: str | Path, pairs: Sequence[Pair], *, overwrite: bool = False) -> Path:
    """Write ``pairs`` to ``path`` as ``source<TAB>target`` lines (tsv_text); return the path.

    Nothing is written if any pair is refused (see :func:`check_pairs`), or if ``path`` exists
    and ``overwrite`` is False. The file appears complete or not at all
    (:func:`attnseq.files.write_output`).
    """
    return write_output(path, tsv_text(pairs), overwrite=overwrite)


def check_split_sizes(counts: Mapping[str, int]) -> None:
    """Raise ValueError naming the splits of ``counts`` ({"train": 40, ...}) that would be empty
    (a run without dev pairs could not be evaluated)."""
    empty = [name for name, n in counts.items() if not n]
    if empty:
        shown = ", ".join(f"{n} {name}" for name, n in counts.items())
        raise ValueError(f"the {' and '.join(empty)} split{'s' if len(empty) > 1 else ''} would be empty ({shown})")


def write_split_dir(
    out_dir: str | Path,
    train: Sequence[Pair],
    dev: Sequence[Pair],
    test: Sequence[Pair],
    extra: Mapping[str, Sequence[Pair]] | None = None,
    *,
    inputs: Sequence[str | Path | None] = (),
    overwrite: bool = False,
) -> dict[str, Path]:
    """Write ``train.tsv``, ``dev.tsv`` and ``test.tsv`` in ``out_dir`` (created if needed), and
    each of ``extra`` ({"test-len20": pairs}) as NAME.tsv beside them.

    All files are checked before any is written (:func:`attnseq.files.write_files`): an empty
    split is refused (check_split_sizes), as is a pair that cannot be a TSV line, a folder that
    holds files already unless ``overwrite``, and a file that is one of ``inputs``. Returns
    {name: path}.
    """
    splits = dict(zip(SPLIT_NAMES, (train, dev, test)))
    check_split_sizes({name: len(pairs) for name, pairs in splits.items()})
    texts = {}
    for name, pairs in {**splits, **(extra or {})}.items():
        try:
            texts[f"{name}.tsv"] = tsv_text(pairs)
        except ValueError as err:
            raise ValueError(f"{name} split: {err}") from None
    written = write_files(out_dir, texts, inputs=inputs, overwrite=overwrite)
    return {name.removesuffix(".tsv"): path for name, path in written.items()}


# -- splitting a corpus of any size ----------------------------------------------------------------
Reader = Callable[[CorpusChecks | None], Iterable[Pair]]  # a fresh pass over a corpus's pairs


def held_out(size: float, pairs: int) -> int:
    """The pairs ``size`` asks of a corpus of ``pairs``: a count when it is 1 or more, else that
    fraction of the pairs, at least one when it is above 0 and the corpus has 3 pairs or more."""
    if size >= 1:
        return int(size)
    return max(round(size * pairs), 1 if size > 0 and pairs >= 3 else 0)


def _first_reaching(groups: Iterable[tuple[int, int]], need: int, before: int = 0) -> int:
    """The hash of the first of ``groups`` ((hash, pairs), in hash order) at which the pairs
    counted reach ``need`` (``before`` of them counted already)."""
    for key, count in groups:
        before += count
        if before >= need:
            return key
    raise AssertionError(f"the groups hold fewer than {need} pairs")


@dataclass
class SplitPlan:
    """Where each pair of a corpus goes, by the hash of its source under ``key``: dev up to
    ``dev_cut``, test above it up to ``test_cut``, train above that (a cut of -1 takes nothing);
    ``counts``: {split: pairs}."""

    key: bytes
    dev_cut: int
    test_cut: int
    counts: dict[str, int]

    def split_of(self, source: str) -> str:
        h = source_hash(source, self.key)
        return "dev" if h <= self.dev_cut else "test" if h <= self.test_cut else "train"


def source_hash(source: str, key: bytes) -> int:
    """A source's 64-bit hash under ``key`` (blake2b keyed with it): where it falls in the split."""
    hasher = _keyed(key).copy()  # a copy of the keyed state: half the cost of keying anew
    hasher.update(source.encode("utf-8"))
    return int.from_bytes(hasher.digest(), "big")


@lru_cache(maxsize=8)
def _keyed(key: bytes):
    return hashlib.blake2b(digest_size=8, key=key)


def plan_split(
    read: Reader,
    dev: float = 0.05,
    test: float = 0.05,
    seed: int = 1,
    *,
    checks: CorpusChecks | None = None,
    name: str = "data split",
) -> SplitPlan:
    """The split of the corpus that ``read`` gives (see the module's docstring): ``dev`` and
    ``test`` are counts of pairs (1 or more) or fractions of them. Reads the corpus twice, each
    time with a progress display named ``name``, the first time counting what it finds in
    ``checks`` and reporting it (CorpusChecks.warn). Raises ValueError when the sizes cannot be
    had."""
    if dev < 0 or test < 0 or (dev < 1 and test < 1 and dev + test > 1):
        raise ValueError(f"fractions must be >= 0 and sum to <= 1, got dev={dev}, test={test}")
    key = f"attnseq-split/{seed}".encode()[:64]  # blake2b takes keys of up to 64 bytes
    shift = 64 - HASH_BUCKET_BITS
    histogram = np.zeros(1 << HASH_BUCKET_BITS, dtype=np.int64)  # pairs by the top bits of their hash
    buckets: list[int] = []
    with StepProgress(f"{name}: reading", unit="pair") as progress:
        for source, _ in read(checks):
            buckets.append(source_hash(source, key) >> shift)
            if len(buckets) == 4096:  # counted in the histogram a few thousand at a time
                histogram += np.bincount(buckets, minlength=histogram.size)
                progress.update(len(buckets))
                buckets.clear()
        histogram += np.bincount(buckets, minlength=histogram.size)
        progress.update(len(buckets))
    if checks is not None:
        checks.warn()
    pairs = int(histogram.sum())
    needs = [held_out(dev, pairs), held_out(test, pairs)]
    if sum(needs) > pairs:
        raise ValueError(f"{needs[0]} dev and {needs[1]} test pairs asked of a corpus of {pairs}")
    # each cut falls in the first bucket where the pairs counted in hash order reach its number:
    # dev's, then dev's and test's; the second pass counts the pairs of each hash in those buckets
    reach = [needs[0], needs[0] + needs[1]]
    upto = np.cumsum(histogram)
    cut_bucket = [int(np.searchsorted(upto, n)) for n in reach]
    before = [int(upto[b - 1]) if b else 0 for b in cut_bucket]
    in_cut_buckets: Counter[int] = Counter()
    if any(reach):
        wanted = {b for b, n in zip(cut_bucket, reach) if n}
        with StepProgress(f"{name}: cutting", total=pairs, unit="pair") as progress:
            for source, _ in progress.over(read(None)):
                h = source_hash(source, key)
                if h >> shift in wanted:
                    in_cut_buckets[h] += 1
    cuts, taken = [], []  # each cut's hash, and the pairs at or below it
    for n, bucket, count in zip(reach, cut_bucket, before):
        if not n:
            cuts.append(-1)
            taken.append(0)
            continue
        groups = sorted((h, c) for h, c in in_cut_buckets.items() if h >> shift == bucket)
        cut = _first_reaching(groups, n, count)
        cuts.append(cut)
        taken.append(count + sum(c for h, c in groups if h <= cut))
    counts = {"train": pairs - taken[1], "dev": taken[0], "test": taken[1] - taken[0]}
    return SplitPlan(key, cuts[0], cuts[1], counts)


class ShuffleBuffer:
    """A bounded shuffle: holds up to ``size`` items; each item pushed beyond that sends out one
    held item chosen with ``rng`` in its place, and ``drain()`` gives the rest in random order.
    Items that all fit come out in a uniformly random order; more are shuffled locally."""

    def __init__(self, rng: random.Random, size: int):
        self.rng, self.size, self.held = rng, size, []

    def push(self, item: T) -> T | None:
        """The item that leaves the buffer for ``item`` (None while it fills)."""
        if len(self.held) < self.size:
            self.held.append(item)
            return None
        i = int(self.rng.random() * self.size)  # uniform (to 2**-53), at half randrange's cost
        out, self.held[i] = self.held[i], item
        return out

    def drain(self) -> list:
        self.rng.shuffle(self.held)
        out, self.held = self.held, []
        return out


def routed(read: Reader, plan: SplitPlan, seed: int = 1, name: str = "data split") -> Iterator[tuple[str, Pair]]:
    """(split, pair) for every pair of the corpus, in each split's written order: the corpus's,
    through the split's shuffle buffer (seeded by ``seed`` and the split's name); a third pass."""
    buffers = {
        split: ShuffleBuffer(random.Random(stream_seed(seed, "shuffle", split)), SHUFFLE_PAIRS) for split in SPLIT_NAMES
    }
    with StepProgress(f"{name}: writing", total=sum(plan.counts.values()), unit="pair") as progress:
        for pair in progress.over(read(None)):
            split = plan.split_of(pair[0])
            out = buffers[split].push(pair)
            if out is not None:
                yield split, out
    for split, buffer in buffers.items():
        for pair in buffer.drain():
            yield split, pair


def split_pairs(
    pairs: Sequence[Pair], dev_fraction: float = 0.1, test_fraction: float = 0.1, seed: int = 0
) -> tuple[list[Pair], list[Pair], list[Pair]]:
    """``(train, dev, test)`` lists of ``pairs`` split as :func:`split_corpus` splits a file
    (dev and test: fractions of the pairs, or counts when 1 or more); no source appears in two
    splits."""
    read = lambda checks: iter(pairs)  # noqa: E731
    plan = plan_split(read, dev_fraction, test_fraction, seed)
    splits: dict[str, list[Pair]] = {split: [] for split in SPLIT_NAMES}
    for split, pair in routed(read, plan, seed):
        splits[split].append(tuple(pair))
    return splits["train"], splits["dev"], splits["test"]


def split_corpus(
    read: Reader,
    out_dir: str | Path,
    dev: float = 0.05,
    test: float = 0.05,
    seed: int = 1,
    *,
    checks: CorpusChecks | None = None,
    inputs: Sequence[str | Path | None] = (),
    overwrite: bool = False,
) -> dict[str, int]:
    """Split the corpus that ``read`` gives into ``out_dir``'s train.tsv, dev.tsv and test.tsv
    (see the module's docstring), reading it three times and never holding it; what the first
    reading finds is counted in ``checks``. Nothing is written when a split would be empty or
    the sizes cannot be had (ValueError), or ``out_dir`` may not be written (UserError); the
    files appear whole or not at all (attnseq.files.open_outputs). Returns {split: pairs}."""
    plan = plan_split(read, dev, test, seed, checks=checks)
    check_split_sizes(plan.counts)
    with open_outputs(
        out_dir, [f"{split}.tsv" for split in SPLIT_NAMES], inputs=inputs, overwrite=overwrite
    ) as streams:
        for split, (source, target) in routed(read, plan, seed):
            streams[f"{split}.tsv"].write(f"{source}\t{target}\n")
    return plan.counts


def write_splits(
    pairs: Sequence[Pair],
    out_dir: str | Path,
    dev_fraction: float = 0.1,
    test_fraction: float = 0.1,
    seed: int = 0,
    *,
    overwrite: bool = False,
) -> dict[str, Path]:
    """Split ``pairs`` with :func:`split_pairs` and write them with :func:`write_split_dir`."""
    return write_split_dir(out_dir, *split_pairs(pairs, dev_fraction, test_fraction, seed), overwrite=overwrite)


def make_date_splits(
    n_train: int = 40_000,
    n_dev: int = 5_000,
    n_test: int = 5_000,
    seed: int = 0,
    locales: Sequence[str] = ("en",),
    start: date = DEFAULT_START,
    end: date = DEFAULT_END,
) -> tuple[list[Pair], list[Pair], list[Pair]]:
    """``(train, dev, test)`` date pairs with all sources distinct (80/10/10 by default).

    Draws ``n_train + n_dev + n_test`` pairs with distinct sources from
    :func:`attnseq.data.corpora.dates.generate_unique_dates` (deterministic in ``seed``) and cuts them
    in that order; the same date may appear in two splits, but never the same source string.
    """
    for name, count in (("n_train", n_train), ("n_dev", n_dev), ("n_test", n_test)):
        if count < 0:
            raise ValueError(f"{name} must be >= 0, got {count}")
    pairs = generate_unique_dates(n_train + n_dev + n_test, seed, locales, start, end)
    return pairs[:n_train], pairs[n_train : n_train + n_dev], pairs[n_train + n_dev :]
