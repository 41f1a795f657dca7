"""Reading parallel text: TSV files and pairs of aligned text files, streamed.

The readers are generators: a file is read a line at a time and never held whole, so a corpus
of any size can be checked, split or sampled in memory that does not grow with it
(``read_tsv`` and ``read_aligned`` collect their pairs in a list for the callers that want one).
A line that cannot be read (not UTF-8, a carriage return inside it, the wrong number of tabs)
stops the reading with a DataError naming the file and the line. What can be read past (blank
lines, pairs with an empty side, a header row, pairs too long to train on) is counted in a
``CorpusChecks``, which keeps the counts and the first line numbers of each, and reported in
one warning line each when the reading ends.
"""

from __future__ import annotations

import io
import logging
import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import BinaryIO

from ..errors import DataError

log = logging.getLogger(__name__)

Pair = tuple[str, str]
BOM = "\ufeff"
CHUNK_BYTES = 1 << 20  # read and decoded at once
FIRST_SHOWN = 5  # line numbers a report shows of each kind


# the control characters (Unicode category Cc) no text holds: all but tab, line feed and carriage return
CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def control_name(char: str) -> str:
    """``U+0000 (NUL)``: a control character's code point and its name."""
    names = {0: "NUL", 0x1B: "ESC", 0x7F: "DEL", 0x0C: "form feed", 0x0B: "vertical tab", 0x08: "backspace"}
    return f"U+{ord(char):04X}" + (f" ({names[ord(char)]})" if ord(char) in names else "")


def _decoded(
    stream: BinaryIO,
    name: str | Path,
    chunk: int | None = None,
    controls: bool = False,
    checks: CorpusChecks | None = None,
    first_line: int = 1,
) -> Iterator[str]:
    """The lines of the UTF-8 bytes ``stream`` gives, without their line endings (``\n``, or
    ``\r\n``), a byte-order mark at the start dropped; read ``chunk`` bytes (CHUNK_BYTES) at a
    time and decoded a chunk of whole lines at once. A DataError names ``name`` and the line at
    the first bytes that are not UTF-8 or, unless ``controls``, the first NUL (a binary file);
    other control characters (U+001F in a gettext catalogue's format strings, say) are read as
    text and counted in ``checks``, whose caller warns; without ``checks``, one warning at the end
    counts the lines that hold them and names the first. ``first_line``: the number of the stream's first line (a part of a file cut at a line end;
    a byte-order mark is dropped from line 1 only)."""
    chunk = chunk or CHUNK_BYTES
    lines_before, first = first_line - 1, first_line == 1
    held: list[bytes] = []  # the start of a line no block has ended yet, block by block
    own = checks is None and not controls  # the checks this reading warns of itself
    checks = CorpusChecks(str(name)) if own else checks
    while True:
        block = stream.read(chunk)
        if block:  # the whole lines read so far; the last one's start is held for the next block
            end = block.rfind(b"\n") + 1  # only the new block is searched: linear in any line's length
            if not end:
                held.append(block)
                continue
            data = b"".join([*held, block[:end]])
            held = [block[end:]] if end < len(block) else []
        elif held:  # the end: a last line without a line break
            data, held = b"".join(held), []
        else:
            if own:
                checks.warn()
            return
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            line = lines_before + data[: err.start].count(b"\n") + 1
            raise DataError(f"{name}:{line}: not valid UTF-8") from None
        if first:
            text, first = text.removeprefix(BOM), False
        if not controls and "\x00" in text:
            line = lines_before + text.count("\n", 0, text.index("\x00")) + 1
            raise DataError(f"{name}:{line}: a NUL character inside the text (a binary file?); text files hold none")
        lines = text.split("\n")
        if lines[-1] == "":  # the data ended a line (or was a byte-order mark alone)
            lines.pop()
        if "\r" in text:
            lines = [line[:-1] if line.endswith("\r") else line for line in lines]
        if not controls and CONTROL.search(text):
            for number, line in enumerate(lines, lines_before + 1):
                checks.control(number, CONTROL.findall(line))
        lines_before += len(lines)
        yield from lines


def decode_lines(
    data: bytes, name: str | Path, controls: bool = False, checks: CorpusChecks | None = None, first_line: int = 1
) -> list[str]:
    """The lines of UTF-8 ``data`` without line endings (a byte-order mark dropped); a DataError
    naming ``name`` and the line when the bytes are not UTF-8 or, unless ``controls`` (inputs to
    translate, whose odd characters are reported per input), hold a NUL (other control characters:
    counted in ``checks``, or one warning, as _decoded says). ``data`` may be a part of a file cut
    at a line end: ``first_line`` is the number of its first line."""
    return list(_decoded(io.BytesIO(data), name, controls=controls, checks=checks, first_line=first_line))


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


def iter_lines(path: str | Path, controls: bool = False, checks: CorpusChecks | None = None) -> Iterator[str]:
    """The lines of a UTF-8 text file without line endings, read one at a time; a DataError
    names the file (and the line) when it cannot be read (``controls``, ``checks``: as _decoded)."""
    if str(path) == "-":  # standard input, as a shell user means it
        yield from _decoded(sys.stdin.buffer, "standard input", controls=controls, checks=checks)
        return
    with reading(path):
        stream = open(path, "rb")
    with stream:
        yield from _decoded(stream, path, controls=controls, checks=checks)


def read_lines(path: str | Path, controls: bool = False) -> list[str]:
    """The lines of a UTF-8 text file, without line endings (``controls``: as decode_lines)."""
    return list(iter_lines(path, controls))


def where(numbers: list[int], most: int = FIRST_SHOWN, count: int | None = None) -> str:
    """``lines 3, 9, 12`` (and how many more): the first ``most`` of ``numbers``, of ``count``
    in all (default: as many as ``numbers``)."""
    count = len(numbers) if count is None else count
    shown = ", ".join(str(n) for n in numbers[:most])
    more = f" and {count - most} more" if count > most else ""
    return f"line{'s' if count > 1 else ''} {shown}{more}"


@dataclass
class Tally:
    """How many lines were of one kind, and the first of their numbers."""

    count: int = 0
    first: list[int] = field(default_factory=list)

    def add(self, number: int) -> None:
        self.count += 1
        if len(self.first) < FIRST_SHOWN:
            self.first.append(number)

    def lines(self) -> str:
        return where(self.first, count=self.count)

    def merge(self, other: Tally, offset: int = 0) -> None:
        """Add the lines ``other`` counted (their numbers moved by ``offset``), which come after these."""
        self.count += other.count
        self.first = (self.first + [n + offset for n in other.first])[:FIRST_SHOWN]


@dataclass
class CorpusChecks:
    """What reading a corpus (``name``: a file, or two aligned ones) found besides its pairs:
    how many lines it read and pairs it gave, the lines skipped (blank, or a side empty), a first
    line that names columns (a header row, read as a pair), and, when ``long_words`` is set, the
    pairs with a side of more words than that (read as pairs; training drops pairs longer than
    its data.max_source_len / max_target_len tokens, and a word is at least one token)."""

    name: str
    long_words: int = 0
    skipped_what: str = "empty lines or pairs with an empty side"  # what a skipped line is
    lines: int = 0
    pairs: int = 0
    line: int = 0  # the line of the last pair read
    skipped: Tally = field(default_factory=Tally)
    long: Tally = field(default_factory=Tally)
    controls: Tally = field(default_factory=Tally)  # lines holding control characters (not NUL)
    control_names: set[str] = field(default_factory=set)
    header: str | None = None

    def control(self, number: int, found: list[str]) -> None:
        """Count line ``number`` when it holds the control characters ``found``."""
        if found:
            self.controls.add(number)
            self.control_names.update(control_name(c) for c in found)

    def pair(self, number: int, source: str, target: str) -> None:
        """Count the pair of line ``number``."""
        self.pairs += 1
        self.line = number
        n = self.long_words  # more than n words take more than 2n characters: count words only then
        if n and (len(source) > 2 * n and len(source.split()) > n or len(target) > 2 * n and len(target.split()) > n):
            self.long.add(number)

    def merge(self, other: CorpusChecks) -> None:
        """Add what ``other`` found in the lines that follow these (a later part of the same text,
        its lines numbered as in the text)."""
        self.lines += other.lines
        self.pairs += other.pairs
        for mine, theirs in ((self.skipped, other.skipped), (self.long, other.long), (self.controls, other.controls)):
            mine.merge(theirs)
        self.control_names |= other.control_names
        self.header = self.header if self.header is not None else other.header

    def warn(self) -> None:
        """One warning line for each kind of line found."""
        if self.header is not None:
            log.warning(
                "%s:1: %r looks like a header row naming the columns; it is read as a pair (delete "
                "the line if it is a header)",
                self.name,
                self.header,
            )
        if self.skipped.count:
            log.warning(
                "%s: skipped %d %s (%s)", self.name, self.skipped.count, self.skipped_what, self.skipped.lines()
            )
        if self.controls.count:
            n = self.controls.count
            log.warning(
                "%s: %d line%s hold%s control characters (%s), read as characters of the text (%s)",
                self.name,
                n,
                "s" * (n > 1),
                "" if n > 1 else "s",
                ", ".join(sorted(self.control_names)),
                self.controls.lines(),
            )
        if self.long.count:
            log.warning(
                "%s: %d pair(s) with a side of more than %d words (%s), kept; training drops pairs "
                "longer than data.max_source_len / data.max_target_len tokens (%d by default; a word "
                "is a token or more)",
                self.name,
                self.long.count,
                self.long_words,
                self.long.lines(),
                self.long_words,
            )


# column names a first line of a TSV file may hold instead of a pair: a header row
COLUMN_NAMES = {
    "source",
    "target",
    "src",
    "tgt",
    "trg",
    "input",
    "output",
    "question",
    "answer",
    "text",
    "label",
    "translation",
    "reference",
    "ref",
    "hypothesis",
    "hyp",
    "sentence",
    "original",
    "from",
    "to",
    "x",
    "y",
    "lang1",
    "lang2",
    "english",
    "german",
    "french",
    "spanish",
}
LANGUAGE_CODES = {
    "en",
    "de",
    "fr",
    "es",
    "it",
    "nl",
    "pt",
    "sv",
    "da",
    "no",
    "nb",
    "fi",
    "pl",
    "cs",
    "ru",
    "uk",
    "tr",
    "ar",
    "he",
    "hi",
    "zh",
    "ja",
    "ko",
    "vi",
    "th",
    "id",
    "el",
    "hu",
    "ro",
    "bg",
}


def looks_like_header(source: str, target: str) -> bool:
    """True when the pair names columns ("source<TAB>target", "src<TAB>tgt", "en<TAB>de")."""
    names = [side.strip().lower() for side in (source, target)]
    return names[0] != names[1] and (all(n in COLUMN_NAMES for n in names) or all(n in LANGUAGE_CODES for n in names))


def iter_tsv(path: str | Path, strip: bool = True, checks: CorpusChecks | None = None) -> Iterator[Pair]:
    """(source, target) pairs from ``source<TAB>target`` lines, read one line at a time.

    A line without exactly one tab, or with a carriage return inside it, raises a DataError
    naming the file and line. Pairs with an empty side are skipped. ``strip`` removes surrounding
    whitespace (the book's data keeps its padding spaces with ``strip=False``). A first line that
    names columns is read as a pair. ``checks`` (when given) counts the lines read, the pairs, the
    lines skipped and a header row; its ``warn()`` reports them."""
    checks = checks if checks is not None else CorpusChecks(str(path))
    for _, pair in tsv_pairs(iter_lines(path, checks=checks), path, strip, checks=checks):
        yield pair


def tsv_pairs(
    lines: Iterable[str], path: str | Path, strip: bool = True, first_line: int = 1, checks: CorpusChecks | None = None
) -> Iterator[tuple[int, Pair]]:
    """(line number, pair) of each ``source<TAB>target`` line of ``lines`` (iter_tsv's rules),
    numbered from ``first_line`` (a part of a file); ``checks`` counts what iter_tsv's does."""
    checks = checks if checks is not None else CorpusChecks(str(path))
    number = first_line - 1
    for number, line in enumerate(lines, start=first_line):
        if not line or line.isspace():
            checks.skipped.add(number)
            continue
        if "\r" in line:
            raise DataError(
                f"{path}:{number}: a carriage return inside the line; end lines with a newline (\\n or \\r\\n)"
            )
        parts = line.split("\t")
        if len(parts) != 2:
            raise DataError(f"{path}:{number}: expected 'source<TAB>target', found {len(parts) - 1} tabs")
        if number == 1 and looks_like_header(*parts):
            checks.header = line
        pair = _clean(*parts, strip=strip)
        if pair is None:
            checks.skipped.add(number)
        else:
            checks.pair(number, *pair)
            yield number, pair
    checks.lines += number - first_line + 1


def read_tsv(path: str | Path, strip: bool = True, lines: list[int] | None = None) -> list[Pair]:
    """The pairs of :func:`iter_tsv` in a list; one warning line names the lines skipped (blank,
    or a side empty), another a first line that looks like a header row (``FILE:1``: delete it
    if it is one). ``lines``, when given, gets each pair's line number."""
    checks = CorpusChecks(str(path))
    pairs = []
    for pair in iter_tsv(path, strip, checks):
        pairs.append(pair)
        if lines is not None:
            lines.append(checks.line)
    checks.warn()
    return pairs


def _clean(src: str, tgt: str, strip: bool) -> Pair | None:
    """The pair (stripped with ``strip``), or None when a side is empty or only whitespace."""
    if strip:
        src, tgt = src.strip(), tgt.strip()
        return (src, tgt) if src and tgt else None
    return (src, tgt) if src and tgt and not src.isspace() and not tgt.isspace() else None


def _sentences(path: str | Path) -> Iterator[str]:
    """The lines of one side of an aligned corpus; a DataError names the file and line of a tab
    or a carriage return inside one."""
    for number, line in enumerate(iter_lines(path), start=1):
        for char, name in (("\t", "a tab"), ("\r", "a carriage return")):
            if char in line:
                raise DataError(f"{path}:{number}: {name} inside the sentence; one sentence a line, without tabs")
        yield line


def iter_aligned(
    src_path: str | Path, tgt_path: str | Path, strip: bool = True, checks: CorpusChecks | None = None
) -> Iterator[Pair]:
    """(source, target) pairs from two files aligned line by line, read one line at a time.

    A tab or a carriage return in a line raises a DataError naming its file and line; files of
    different line counts one naming both files and both counts (the longer file is read to its
    end to count them). Pairs with an empty side are skipped, and counted in ``checks``."""
    checks = checks if checks is not None else CorpusChecks(f"{src_path} / {tgt_path}")
    checks.skipped_what = "pairs with an empty side"
    counts = [0, 0]
    for number, (src, tgt) in enumerate(zip_longest(_sentences(src_path), _sentences(tgt_path)), start=1):
        counts = [counts[0] + (src is not None), counts[1] + (tgt is not None)]
        if src is None or tgt is None:
            continue  # one file is longer: counted to its end, then refused below
        checks.lines = number  # the lines of the shorter file, when they differ
        pair = _clean(src, tgt, strip)
        if pair is None:
            checks.skipped.add(number)
        else:
            checks.pair(number, *pair)
            yield pair
    if counts[0] != counts[1]:
        raise DataError(
            f"{src_path} has {counts[0]} lines but {tgt_path} has {counts[1]}; "
            "aligned files must have the same number of lines"
        )


def read_aligned(src_path: str | Path, tgt_path: str | Path, strip: bool = True) -> list[Pair]:
    """The pairs of :func:`iter_aligned` in a list; one warning line names the pairs skipped."""
    checks = CorpusChecks(f"{src_path} / {tgt_path}")
    pairs = list(iter_aligned(src_path, tgt_path, strip, checks))
    checks.warn()
    return pairs
