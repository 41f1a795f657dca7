"""A run's training text as its preparation reads it (data.prepare): in parts that processes
read on their own, and known by its content.

- ``TsvText``: a ``source<TAB>target`` file, cut at line ends into parts of a few MB that a
  worker process reads from the file itself (read_tsv's rules, lines numbered as in the file);
  its content digest is the file's SHA-256, remembered by the file's identity (device, inode,
  size, modification and change times), so a second start does not read the file again;
- ``PairsText``: pairs already in memory (the book's split of its file): one part.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from ..utils import atomic_write_text
from .corpus import CorpusChecks, decode_lines, reading, tsv_pairs

Pair = tuple[str, str]
Part = tuple[int, int, int]  # (start, end, number of its first line): bytes of a file, or items of a list
PART_BYTES = 2 << 20  # the size of a file's parts (cut at the next line end)
BLOCK = 1 << 20  # bytes read at a time


class TsvText:
    """The training pairs of a TSV file, read in parts."""

    def __init__(self, path: str | Path, strip: bool = True):
        self.path, self.strip = Path(path), strip

    @property
    def name(self) -> str:
        return str(self.path)

    def size(self) -> int:
        with reading(self.path):
            return self.path.stat().st_size

    def digest(self, memo: Path | None = None) -> str:
        """The SHA-256 of the file's bytes; ``memo``: a folder remembering it by the file's
        identity and times, so that an unchanged file is not read again."""
        with reading(self.path):
            status = os.stat(self.path)
            identity = json.dumps(
                [
                    os.path.realpath(self.path),
                    status.st_dev,
                    status.st_ino,
                    status.st_size,
                    status.st_mtime_ns,
                    status.st_ctime_ns,
                ]
            )
            remembered = memo / hashlib.sha256(identity.encode()).hexdigest() if memo is not None else None
            if remembered is not None and remembered.exists():
                return remembered.read_text(encoding="ascii")
            digest = hashlib.sha256()
            with open(self.path, "rb") as file:
                while block := file.read(BLOCK):
                    digest.update(block)
        if remembered is not None:
            atomic_write_text(remembered, digest.hexdigest())
        return digest.hexdigest()

    def parts(self, size: int | None = None) -> Iterator[Part]:
        """The file's parts: about ``size`` bytes each (PART_BYTES), each ending at a line end
        (or the end)."""
        size = size or PART_BYTES
        start, first, pending = 0, 1, bytearray()
        last = -1  # where in ``pending`` its last line end is (-1: none)
        with reading(self.path), open(self.path, "rb") as file:
            while block := file.read(max(size - len(pending), min(size, BLOCK))):
                at = block.rfind(b"\n")  # only the new block is searched: linear in any line's length
                if at >= 0:
                    last = len(pending) + at
                pending += block
                if len(pending) < size or last < 0:
                    continue
                cut = last + 1
                yield start, start + cut, first
                start, first, last = start + cut, first + pending.count(b"\n", 0, cut), -1
                del pending[:cut]
            if pending:
                yield start, start + len(pending), first

    def head(self, n: int) -> list[Pair]:
        """The first ``n`` pairs (all of them when there are fewer), read no further."""
        checks = CorpusChecks(self.name)
        pairs = (pair for part in self.parts() for _, pair in self.pairs(part, checks))
        return list(itertools.islice(pairs, n))

    def pairs(self, part: Part, checks: CorpusChecks) -> Iterator[tuple[int, Pair]]:
        """(line number, pair) of the part's lines; ``checks`` counts the blank lines and pairs with
        an empty side, a header row and the lines holding control characters (corpus.iter_tsv's)."""
        start, end, first = part
        with reading(self.path), open(self.path, "rb") as file:
            data = os.pread(file.fileno(), end - start, start)
        lines = decode_lines(data, self.path, checks=checks, first_line=first)
        return tsv_pairs(lines, self.path, self.strip, first, checks)


class PairsText:
    """Training pairs in memory (a split a data source made): one part."""

    def __init__(self, pairs: Sequence[Pair], name: str):
        self.items, self.name = pairs, name

    def size(self) -> int:
        return sum(len(s) + len(t) for s, t in self.items)

    def digest(self, memo: Path | None = None) -> str:
        """The SHA-256 of the pairs as TSV lines."""
        digest = hashlib.sha256()
        for source, target in self.items:
            digest.update(f"{source}\t{target}\n".encode("utf-8", errors="surrogatepass"))
        return digest.hexdigest()

    def parts(self, size: int | None = None) -> Iterator[Part]:
        yield 0, len(self.items), 1

    def head(self, n: int) -> list[Pair]:
        return list(self.items[:n])

    def pairs(self, part: Part, checks: CorpusChecks) -> Iterator[tuple[int, Pair]]:
        start, end, first = part
        return enumerate(self.items[start:end], start=first)


TrainingText = TsvText | PairsText
