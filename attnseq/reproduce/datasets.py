"""The data the reproductions train on, written as split folders (train.tsv, dev.tsv, test.tsv)
in a reproduction's runs folder, as ``attnseq data ...`` writes them.

- the book's files (date.txt, addition.txt), read where the project keeps them: in
  ``../shared/data/book/`` beside the checkout (never copied into the repository);
- generated dates (``attnseq data dates``);
- random digit strings to copy (CopyTaskOptions);
- English->German from the machine's gettext catalogs (``attnseq data gettext --lang de``).

Each takes limits on the number of pairs (0: all) so a quick check can train on a few.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError

log = logging.getLogger("attnseq")

Pair = tuple[str, str]
# the book's data sets, beside the checkout (as tests/conftest.py finds them)
BOOK_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "book"


def book_file(name: str, folder: str | Path = "") -> Path:
    """The book's data file ``name`` (date.txt, addition.txt) in ``folder`` (default: BOOK_DIR);
    a UserError when it is missing."""
    path = Path(folder or BOOK_DIR) / name
    if not path.is_file():
        raise UserError(
            f"the book's {name} is not at {path} (the reproductions read the book's data "
            "from ../shared/data/book/ beside the checkout)"
        )
    return path


def _cut(pairs: Sequence[Pair], limit: int) -> list[Pair]:
    return list(pairs[:limit] if limit else pairs)


def copy_pairs(rng: random.Random, n: int, lengths: tuple[int, int]) -> list[Pair]:
    """``n`` strings of random digits of ``lengths`` (inclusive), each its own target."""
    pairs = []
    for _ in range(n):
        digits = "".join(str(rng.randrange(10)) for _ in range(rng.randint(*lengths)))
        pairs.append((digits, digits))
    return pairs


@dataclass
class CopyTaskOptions:
    """The digit-copying task of the pages that need every output token to be new information
    (Options dataclasses inherit these fields)."""

    min_length: int = 6  # copied digit strings
    max_length: int = 10
    train_pairs: int = 20_000
    dev_sentences: int = 300
    test_pairs: int = 1_000

    def split(self, folder: Path) -> Path:
        """``folder`` with the task's train, dev and test pairs, the same for every seed."""
        rng = random.Random(1)
        make = lambda n: copy_pairs(rng, n, (self.min_length, self.max_length))  # noqa: E731
        return write_folder(folder, make(self.train_pairs), make(self.dev_sentences), make(self.test_pairs))


def write_folder(
    folder: Path,
    train: Sequence[Pair],
    dev: Sequence[Pair],
    test: Sequence[Pair],
    limits: tuple[int, int, int] = (0, 0, 0),
    extra: dict[str, Sequence[Pair]] | None = None,
) -> Path:
    """``folder`` with the three splits written, each cut to its limit (0: all), and each of
    ``extra`` ({"test-len30": pairs}) as NAME.tsv beside them; an earlier run's split there is
    replaced (the data of a reproduction's runs folder, as its runs are)."""
    from ..data.splits import write_split_dir

    write_split_dir(folder, *(_cut(pairs, n) for pairs, n in zip((train, dev, test), limits)), extra, overwrite=True)
    return folder


def book_split(
    folder: Path,
    name: str = "date.txt",
    dev_size: int = 500,
    limits: tuple[int, int, int] = (0, 0, 0),
    book_dir: str | Path = "",
) -> Path:
    """The book's file split as the book splits it (``attnseq data book``: its 5,000 test
    questions, ``dev_size`` dev pairs taken from its training set), padding spaces kept."""
    from ..data.corpora.book import load_book

    return write_folder(folder, *load_book(book_file(name, book_dir), dev_size=dev_size), limits=limits)


@dataclass
class BookTaskOptions:
    """The data options of a reproduction trained on one of the book's files (``file_name``)."""

    file_name = "date.txt"  # the book's file the reproduction reads (a class constant, not an option)
    dev_sentences: int = 500  # dev pairs held out of the book's training part, decoded at each evaluation
    train_pairs: int = 0  # training pairs (0: the book's 44,500)
    test_sentences: int = 0  # test pairs scored at the end (0: the book's 5,000)
    book_dir: str = ""  # the folder of the book's files (default: ../shared/data/book beside the checkout)

    def split(self, folder: Path) -> Path:
        """``folder`` holding the book's file split as the book splits it, cut to these limits."""
        return book_split(
            folder,
            self.file_name,
            dev_size=self.dev_sentences,
            limits=(self.train_pairs, 0, self.test_sentences),
            book_dir=self.book_dir,
        )


def book_pairs(name: str, book_dir: str | Path = "") -> tuple[list[Pair], list[Pair]]:
    """(train, test) pairs of the book's file as the book splits it (no dev set)."""
    from ..data.corpora.book import load_book

    train, _, test = load_book(book_file(name, book_dir), dev_size=0)
    return train, test


def dates(folder: Path, train: int = 40_000, dev: int = 2_000, test: int = 2_000, seed: int = 1) -> Path:
    """Generated English dates -> ISO (``attnseq data dates`` with its defaults)."""
    from ..data.splits import make_date_splits

    return write_folder(folder, *make_date_splits(train, dev, test, seed=seed))


def long_sequences(
    folder: Path,
    train: int,
    dev: int,
    test: int,
    lengths: tuple[int, int],
    bits: int = 4,
    seed: int = 1,
    task: str = "copy",
    test_lengths: Sequence[int] = (),
    **options,
) -> Path:
    """The NTM's ``task`` (copy, repeat-copy, sort: ``attnseq data TASK``) at lengths ``lengths``:
    sequences of random ``bits``-bit vectors, one token each; for copy, sources long enough that
    a window of a few positions sees a small part of them. Each of ``test_lengths`` adds
    ``test`` pairs of that length as ``test-lenN.tsv`` (longer than trained on); ``options``:
    the task's (``repeats``, ``levels``)."""
    from ..data.corpora.algorithmic import make_task_splits

    train_pairs, dev_pairs, test_pairs, longer = make_task_splits(
        task, train, dev, test, lengths, tuple(test_lengths), seed=seed, bits=bits, **options
    )
    return write_folder(
        folder, train_pairs, dev_pairs, test_pairs, extra={f"test-len{n}": pairs for n, pairs in longer.items()}
    )


def gettext(
    folder: Path,
    lang: str = "de",
    catalogs: str = "",
    test_fraction: float | None = None,
    limits: tuple[int, int, int] = (0, 0, 0),
    draw: int = 0,
) -> Path:
    """English->``lang`` pairs from the gettext catalogs of this machine (or of the folder
    ``catalogs``), as ``attnseq data gettext`` splits them; ``test_fraction`` holds out that
    share of the sentences for test instead of the usual 2.25%. ``draw``: that many training
    pairs drawn at random (seed 0) rather than the first ones (the catalogs' pairs come sorted
    by their source, so a prefix holds one end of the alphabet); all when there are fewer."""
    import random

    from ..data.corpora.gettext import TEST_FRACTION, build_gettext_corpus

    train, dev, test = build_gettext_corpus(
        lang, [catalogs] if catalogs else None, test_fraction=TEST_FRACTION if test_fraction is None else test_fraction
    )
    if 0 < draw < len(train):
        train = [train[i] for i in sorted(random.Random(0).sample(range(len(train)), draw))]
    return write_folder(folder, train, dev, test, limits=limits)


def passages(
    folder: Path,
    lang: str = "de",
    catalogs: str = "",
    sizes: tuple[int, int, int] = (20_000, 500, 1_000),
    words: tuple[int, int] = (10, 80),
    seed: int = 0,
) -> Path:
    """English->``lang`` passages of the gettext catalogs (``attnseq data passages``: messages of
    one split's pool joined until a length drawn for each), those of ``words`` English words
    (inclusive) kept, ``sizes`` of them for train, dev and test; dev and test passages hold no
    message a training passage holds."""
    from ..data.corpora.gettext import build_gettext_corpus
    from ..data.corpora.passages import PassageBlocks

    low, high = words
    splits = dict(
        zip(("train", "dev", "test"), build_gettext_corpus(lang, [catalogs] if catalogs else None, seed=seed))
    )
    made = []
    for (split, messages), size in zip(splits.items(), sizes):
        if not messages:
            raise UserError(f"passages: the catalogs give no {split} messages")
        blocks, kept, index = PassageBlocks(messages, seed, split), [], 0
        while len(kept) < size:
            kept += [p for p in blocks(index, 1000) if low <= len(p[0].split()) <= high]
            index += 1
            if index > 1000 + size:  # every passage is drawn at the lengths given: this never ends
                raise UserError(f"passages: no {split} passages of {low}-{high} words from these catalogs")
        made.append(kept[:size])
    return write_folder(folder, *made)


def read_split(folder: Path, split: str, strip: bool = True) -> list[Pair]:
    """The pairs of ``folder/split.tsv``."""
    from ..data.corpus import read_tsv

    return read_tsv(Path(folder) / f"{split}.tsv", strip=strip)


def count(folder: Path, split: str) -> int:
    """The number of pairs in ``folder/split.tsv``."""
    with open(Path(folder) / f"{split}.tsv", encoding="utf-8") as fh:
        return sum(1 for _ in fh)


def counts(folder: Path) -> str:
    """ "44,500 training, 500 dev and 5,000 test pairs" for the split folder."""
    n = {split: count(folder, split) for split in ("train", "dev", "test")}
    return f"{n['train']:,} training, {n['dev']:,} dev and {n['test']:,} test pairs"
