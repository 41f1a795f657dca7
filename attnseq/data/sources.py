"""Where a run's text pairs come from (``data.format``): a registry of data sources.

- ``tsv``: a folder with ``train.tsv``, ``dev.tsv`` and ``test.tsv`` (``data.dir``), or the
  three files named one by one (``data.train``, ``data.dev``, ``data.test``);
- ``book`` (data/corpora/book.py): one file of the book's ``question_answer`` lines (date.txt), split
  and tokenized as the book does.

``data_overrides(path)`` turns the ``--data PATH`` of the command line into the settings that
read it: this is where a folder and the book's file are told apart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ConfigError, DataError
from ..registry import Registry
from .corpus import read_tsv
from .inputs import build_input, locate_sources
from .texts import PairsText, TrainingText, TsvText

Pair = tuple[str, str]
SPLITS = ("train", "dev", "test")

SOURCES: Registry[type[Source]] = Registry("data format")


class Source:
    """How one format becomes the pairs of each split."""

    def check(self, data) -> None:
        """Raise a ConfigError naming the key when ``data`` (a DataConfig) cannot be read so."""

    def splits(self, data) -> dict[str, list[Pair]]:
        """{"train": pairs, "dev": pairs (may be empty), "test": pairs, when there are some}."""
        raise NotImplementedError

    def held_out(self, data) -> dict[str, list[Pair]]:
        """The splits besides train: {"dev": pairs (may be empty), "test": pairs, when there are some}."""
        return {split: pairs for split, pairs in self.splits(data).items() if split != "train"}

    def training_text(self, data) -> TrainingText:
        """The training pairs as their preparation reads them (data.prepare); by default the
        train split, in memory."""
        return PairsText(self.splits(data)["train"], f"{data.format} data {data.train or data.dir}")

    def vocabulary(self, data):
        """A fixed Vocab for both sides (the book's), or None to build them from the training pairs."""
        return None

    def shares_vocab(self, data) -> bool:
        """True when both sides use one vocabulary (the same ids)."""
        return data.shared_vocab

    @classmethod
    def reads_file(cls, path: Path) -> bool:
        """True when ``path``, a single file, is data of this format (for ``--data FILE``)."""
        return False

    def test_pairs(self, path: Path, data) -> list[Pair]:
        """The pairs to evaluate on in the file ``path`` of this format."""
        raise NotImplementedError


@SOURCES.register("tsv")
class TsvSource(Source):
    """``source<TAB>target`` files: ``data.dir`` fills the paths that are not given."""

    def paths(self, data) -> dict[str, str]:
        paths = {split: getattr(data, split) for split in SPLITS}
        if data.dir:
            for split in SPLITS:
                paths[split] = paths[split] or str(Path(data.dir) / f"{split}.tsv")
        return paths

    def check(self, data) -> None:
        if not self.paths(data)["train"]:
            raise ConfigError(
                "data.train: no training data; give --data DIR or set data.dir / data.train", key="data.train"
            )

    def splits(self, data) -> dict[str, list[Pair]]:
        train = read_pairs(self.training_text(data).path, data)
        if not train:
            raise DataError(f"{self.paths(data)['train']}: no training pairs")
        return {"train": train, **self.held_out(data)}

    def held_out(self, data) -> dict[str, list[Pair]]:
        self.check(data)
        return {
            split: read_pairs(path, data)
            for split, path in self.paths(data).items()
            if split != "train" and path and (split != "test" or Path(path).exists())
        }

    def training_text(self, data) -> TsvText:
        """The train file, read in parts."""
        self.check(data)
        return TsvText(self.paths(data)["train"], data.strip)

    def test_pairs(self, path: Path, data) -> list[Pair]:
        return read_pairs(path, data)


def read_pairs(path: str | Path, data) -> list[Pair]:
    """The pairs of the TSV file ``path``; where ``data.input`` reads files (an image), each
    source names its file relative to the TSV's folder and is made a path from here, a missing or
    unreadable one a DataError naming the TSV's line (data/inputs)."""
    kind = build_input(data)
    if kind.reads_text:
        return read_tsv(path, strip=data.strip)
    lines: list[int] = []
    pairs = read_tsv(path, strip=data.strip, lines=lines)
    return locate_sources(kind, pairs, lines, path)


def first_line(path: Path) -> str:
    """The first line of a text file ('' when it is empty), without reading the rest."""
    try:
        with open(path, "rb") as fh:
            line = fh.readline()
    except OSError as err:
        raise DataError(f"{path}: cannot read ({err.strerror})") from None
    return line.decode("utf-8", errors="replace").rstrip("\r\n")


def data_overrides(path: str | Path) -> list[str]:
    """The ``--set`` settings that read ``path``: a folder of TSV splits, or one file that a
    registered format reads (the book's). A TSV file is refused with the command that splits it."""
    if str(path) == "-":  # ("data.dir=-" would be read as YAML's empty list)
        raise DataError("--data -: training reads its data more than once; give a folder of train/dev/test.tsv")
    path = Path(path)
    if path.is_file():
        for name in SOURCES:
            if SOURCES.get(name).reads_file(path):
                return [f"data.format={name}", "data.dir=", f"data.train={path}", "data.dev=", "data.test="]
        if "\t" in first_line(path):
            raise DataError(
                f"--data {path}: a TSV file; split it first (attnseq data split --input {path} "
                "--out DIR) and give --data DIR"
            )
        raise DataError(
            f"--data {path}: neither a folder of train/dev/test.tsv nor a file of the book's question_answer lines"
        )
    return ["data.format=tsv", f"data.dir={path}", "data.train=", "data.dev=", "data.test="]


def load_splits(data) -> dict[str, list[Pair]]:
    """The pairs of each split that ``data`` (a DataConfig) names."""
    return SOURCES.get(data.format, "data.format")().splits(data)


def evaluation_pairs(path: str | Path, data) -> list[Pair]:
    """The pairs to score for ``evaluate --data PATH``: a folder's test.tsv, the test split of a
    file that a format reads as a whole (the book's), or the pairs of a TSV file."""
    path = Path(path)
    if path.is_dir():
        path = path / "test.tsv"
    pairs = None
    if path.is_file():
        for name in SOURCES:
            source = SOURCES.get(name)
            if source.reads_file(path):
                pairs = source().test_pairs(path, data)
                break
    if pairs is None:
        pairs = read_pairs(path, data)
    if not pairs:
        raise DataError(f"{path}: no pairs to evaluate; give a file of source<TAB>reference lines")
    return pairs


def check_data(data) -> Any:
    """Raise a ConfigError naming the key when the data settings cannot be read."""
    SOURCES.get(data.format, "data.format")().check(data)
    return data
