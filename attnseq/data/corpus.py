"""Reading parallel text: TSV files and pairs of aligned text files."""
from __future__ import annotations

import logging
import re
from pathlib import Path

from ..errors import DataError

log = logging.getLogger(__name__)

Pair = tuple[str, str]


def decode_lines(data: bytes, name: str | Path, controls: bool = False) -> list[str]:
    """The lines of UTF-8 ``data`` without line endings (a byte-order mark dropped); a DataError
    naming ``name`` and the line when the bytes are not UTF-8 or, unless ``controls`` (inputs to
    translate, whose odd characters are reported per input), hold a control character."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise DataError(f"{name}:{line}: not valid UTF-8") from None
    text = text.removeprefix("\ufeff")  # a byte-order mark is not text
    control = None if controls else CONTROL.search(text)
    if control:
        char, line = control.group(), text.count("\n", 0, control.start()) + 1
        raise DataError(f"{name}:{line}: a control character, {control_name(char)}, inside the text (a binary "
                        "file?); text files hold none but tabs and line ends")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


# the control characters (Unicode category Cc) no text holds: all but tab, line feed and carriage return
CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def control_name(char: str) -> str:
    """``U+0000 (NUL)``: a control character's code point and its name."""
    names = {0: "NUL", 0x1b: "ESC", 0x7f: "DEL", 0x0c: "form feed", 0x0b: "vertical tab", 0x08: "backspace"}
    return f"U+{ord(char):04X}" + (f" ({names[ord(char)]})" if ord(char) in names else "")


def read_lines(path: str | Path, controls: bool = False) -> list[str]:
    """The lines of a UTF-8 text file, without line endings (``controls``: as decode_lines)."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DataError(f"{path}: a folder, not a file") from None
    except OSError as err:
        raise DataError(f"{path}: cannot read ({err.strerror})") from None
    return decode_lines(data, path, controls)


def where(numbers: list[int], most: int = 5) -> str:
    """``lines 3, 9, 12`` (and how many more)."""
    shown = ", ".join(str(n) for n in numbers[:most])
    more = f" and {len(numbers) - most} more" if len(numbers) > most else ""
    return f"line{'s' if len(numbers) > 1 else ''} {shown}{more}"


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
    pairs: list[Pair] = []
    skipped: list[int] = []
    for number, line in enumerate(read_lines(path), start=1):
        if not line.strip():
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
            skipped.append(number)
        else:
            pairs.append(pair)
    if skipped:
        log.warning("%s: skipped %d empty lines or pairs with an empty side (%s)", path, len(skipped),
                    where(skipped))
    return pairs


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
