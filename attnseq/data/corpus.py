"""Reading parallel text: TSV files and pairs of aligned text files."""
from __future__ import annotations

import logging
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

from ..errors import DataError

log = logging.getLogger(__name__)

Pair = tuple[str, str]


def decode_lines(data: bytes, name: str | Path, first: int = 1) -> list[str]:
    """The lines of UTF-8 ``data`` without line endings (a byte-order mark at the start of the
    file dropped); a DataError naming ``name`` and the line when the bytes are not UTF-8. ``data``
    may be a part of a file cut at a line end: ``first`` is the number of its first line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + first
        raise DataError(f"{name}:{line}: not valid UTF-8") from None
    if first == 1:
        text = text.removeprefix("\ufeff")  # a byte-order mark is not text
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def read_lines(path: str | Path) -> list[str]:
    """The lines of a UTF-8 text file, without line endings."""
    with reading(path):
        data = Path(path).read_bytes()
    return decode_lines(data, path)


@contextmanager
def reading(path: str | Path) -> Iterator[None]:
    """Turn the OSError of reading the data file ``path`` into a DataError naming it."""
    try:
        yield
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DataError(f"{path}: a folder, not a file") from None
    except OSError as err:
        raise DataError(f"{path}: cannot read ({err.strerror})") from None


def where(numbers: list[int], most: int = 5, count: int | None = None) -> str:
    """``lines 3, 9, 12`` (and how many more): the first ``most`` of ``numbers``, of ``count``
    in all (default: as many as ``numbers``)."""
    count = len(numbers) if count is None else count
    shown = ", ".join(str(n) for n in numbers[:most])
    more = f" and {count - most} more" if count > most else ""
    return f"line{'s' if count > 1 else ''} {shown}{more}"


# column names a first line of a TSV file may hold instead of a pair: a header row
COLUMN_NAMES = {"source", "target", "src", "tgt", "trg", "input", "output", "question", "answer", "text",
                "label", "translation", "reference", "ref", "hypothesis", "hyp", "sentence", "original",
                "from", "to", "x", "y", "lang1", "lang2", "english", "german", "french", "spanish"}
LANGUAGE_CODES = {"en", "de", "fr", "es", "it", "nl", "pt", "sv", "da", "no", "nb", "fi", "pl", "cs", "ru",
                  "uk", "tr", "ar", "he", "hi", "zh", "ja", "ko", "vi", "th", "id", "el", "hu", "ro", "bg"}


def looks_like_header(source: str, target: str) -> bool:
    """True when the pair names columns ("source<TAB>target", "src<TAB>tgt", "en<TAB>de")."""
    names = [side.strip().lower() for side in (source, target)]
    return names[0] != names[1] and (all(n in COLUMN_NAMES for n in names)
                                     or all(n in LANGUAGE_CODES for n in names))


def read_tsv(path: str | Path, strip: bool = True) -> list[Pair]:
    """(source, target) pairs from ``source<TAB>target`` lines.

    A line without exactly one tab, or with a carriage return inside it, raises a DataError
    naming the file and line. Pairs with an empty side are skipped and counted in the log.
    ``strip`` removes surrounding whitespace (the book's data keeps its padding spaces with
    ``strip=False``). A first line that names columns (``source<TAB>target``, ``en<TAB>de``) is
    read as a pair, with a warning naming the file and line 1: delete it if it is a header.
    """
    skipped: list[int] = []
    pairs = [pair for _, pair in tsv_pairs(read_lines(path), path, strip, skipped=skipped)]
    warn_skipped(path, skipped)
    return pairs


def tsv_pairs(lines: Iterable[str], path: str | Path, strip: bool = True, first: int = 1,
              skipped: list[int] | None = None) -> Iterator[tuple[int, Pair]]:
    """(line number, pair) of each ``source<TAB>target`` line of ``lines`` (read_tsv's rules),
    numbered from ``first`` (a part of a file); the numbers of the lines skipped (blank, or a side
    empty) are added to ``skipped``."""
    for number, line in enumerate(lines, start=first):
        if not line.strip():
            if skipped is not None:
                skipped.append(number)
            continue
        if "\r" in line:
            raise DataError(f"{path}:{number}: a carriage return inside the line; end lines with a newline "
                            "(\\n or \\r\\n)")
        parts = line.split("\t")
        if len(parts) != 2:
            raise DataError(
                f"{path}:{number}: expected 'source<TAB>target', found {len(parts) - 1} tabs"
            )
        if number == 1 and looks_like_header(*parts):
            log.warning("%s:1: %r looks like a header row naming the columns; it is read as a pair (delete "
                        "the line if it is a header)", path, line)
        pair = _clean(*parts, strip=strip)
        if pair is None:
            if skipped is not None:
                skipped.append(number)
        else:
            yield number, pair


def warn_skipped(path: str | Path, skipped: list[int], count: int | None = None) -> None:
    """The log's warning that ``path`` had blank lines or pairs with an empty side: ``skipped``
    (their numbers, the first ones at least) of ``count`` (all of them; default len(skipped))."""
    count = len(skipped) if count is None else count
    if count:
        log.warning("%s: skipped %d empty lines or pairs with an empty side (%s)", path, count,
                    where(skipped, count=count))


def _clean(src: str, tgt: str, strip: bool) -> Pair | None:
    """The pair (stripped with ``strip``), or None when a side is empty or only whitespace."""
    if strip:
        src, tgt = src.strip(), tgt.strip()
    return (src, tgt) if src.strip() and tgt.strip() else None


def read_aligned(src_path: str | Path, tgt_path: str | Path, strip: bool = True) -> list[Pair]:
    """(source, target) pairs from two files aligned line by line.

    Differing line counts raise a DataError naming both files and both counts, a tab or a
    carriage return in a line one naming its file and line; pairs with an empty side are
    skipped and counted in the log.
    """
    src_lines, tgt_lines = read_lines(src_path), read_lines(tgt_path)
    for path, lines in ((src_path, src_lines), (tgt_path, tgt_lines)):
        for number, line in enumerate(lines, start=1):
            for char, name in (("\t", "a tab"), ("\r", "a carriage return")):
                if char in line:
                    raise DataError(f"{path}:{number}: {name} inside the sentence; one sentence a line, "
                                    "without tabs")
    if len(src_lines) != len(tgt_lines):
        raise DataError(
            f"{src_path} has {len(src_lines)} lines but {tgt_path} has {len(tgt_lines)}; "
            "aligned files must have the same number of lines"
        )
    cleaned = [_clean(src, tgt, strip) for src, tgt in zip(src_lines, tgt_lines)]
    pairs = [pair for pair in cleaned if pair is not None]
    skipped = [number for number, pair in enumerate(cleaned, start=1) if pair is None]
    if skipped:
        log.warning("%s / %s: skipped %d pairs with an empty side (%s)", src_path, tgt_path, len(skipped),
                    where(skipped))
    return pairs
