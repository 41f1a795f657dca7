"""Real parallel text from gettext catalogs, and filling a catalog's gaps with a trained model.

Every Debian system carries compiled catalogs (``/usr/share/locale/<lang>/LC_MESSAGES/*.mo``):
English user-interface messages and their translations, tens of thousands of short sentences
per language. :func:`build_gettext_corpus` turns them into train/dev/test pairs;
:func:`translate_po` fills the untranslated entries of a ``.po`` file, marked fuzzy for review.
"""

from __future__ import annotations

import hashlib
import logging
import re
import struct
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from ...errors import DataError, UserError
from ...files import check_output, write_output

log = logging.getLogger(__name__)

Pair = tuple[str, str]
LOCALE_ROOTS = (Path("/usr/share/locale"), Path("/usr/share/locale-langpack"))
DEV_FRACTION = TEST_FRACTION = 0.0225  # about 1,000 sentences each of ~45,000 (German)
MISMATCH_COMMENT = "attnseq: placeholders differ"

_PLACEHOLDER = re.compile(
    r"""
      (?P<escape>\{\{|\}\})                                   # literal braces, not placeholders
    | %\([^()\s]+\)[-+#0]*(?:\d+|\*)?(?:\.\d+)?[diouxXeEfFgGcrsa]   # %(name)s
    | %(?:\d+\$)?[-+#0]*(?:\d+|\*(?:\d+\$)?)?(?:\.(?:\d+|\*(?:\d+\$)?))?
        (?:(?:hh|h|ll|l|j|z|t|I64|I32)[diouxXn]|L[eEfFgGaA]|l[cs]|[A-Za-z%])  # %s %1$s %lu %% %H
    | %<PRI[A-Za-z0-9]+>                                      # %<PRIu64>
    | %\d+                                                    # Qt's %1
    | \{[A-Za-z_0-9]*(?:\.[A-Za-z_]\w*|\[\w+\])*(?:![rsa])?(?::[^{}]*)?\}  # {name} {0} {} {x:>4}
    | </?[A-Za-z][A-Za-z0-9:-]*(?:\s[^<>]*)?/?>                 # markup: <b> </b> <a href="..."> <br/>
    | &(?:[A-Za-z]+|\#\d+|\#x[0-9A-Fa-f]+);                     # entities: &amp; &#169;
    """,
    re.VERBOSE,
)
_MULTILINE = re.compile(r"[\n\r\t]")
LANGUAGE = re.compile(r"[A-Za-z]{2,8}(?:[_@.-][A-Za-z0-9]+)*")  # de, pt_BR, sr@latin, zh_Hant


def placeholders(text: str) -> list[str]:
    """The format placeholders and markup of ``text`` in order: printf (``%s``, ``%-5.2f``,
    ``%1$s``, ``%lu``, ``%%``), strftime (``%H``), Python (``%(name)s``, ``{name}``, ``{0:>4}``),
    Qt (``%1``), ``%<PRIu64>``, tags (``<b>``, ``</b>``, ``<a href="...">``) and entities
    (``&amp;``). A ``%`` followed by a space is text ("50% of"); ``{{`` and ``}}`` are braces."""
    return [m.group(0) for m in _PLACEHOLDER.finditer(text) if not m.group("escape")]


def placeholders_match(source: str, target: str) -> bool:
    """True when ``target`` has the same multiset of placeholders as ``source``."""
    return Counter(placeholders(source)) == Counter(placeholders(target))


def has_words(text: str) -> bool:
    """True when ``text`` has a letter outside its placeholders (not only '%s: %s' or '...')."""
    return any(ch.isalpha() for ch in _PLACEHOLDER.sub(" ", text))


# -- reading catalogs ------------------------------------------------------------------------------
def catalog_files(lang: str, paths: Sequence[str | Path] | None = None) -> list[Path]:
    """Sorted .po/.mo files: ``paths`` (files, or folders searched recursively), or the system's
    catalogs for ``lang`` (``<root>/<lang>/LC_MESSAGES/*.mo``, else ``<root>/<lang>_*/...``)."""
    if paths:
        found: list[Path] = []
        for path in map(Path, paths):
            if path.is_dir():
                found += [p for p in path.rglob("*") if p.suffix in (".po", ".mo") and p.is_file()]
            elif path.is_file():
                found.append(path)
            elif path.exists():  # polib reads a catalog more than once: a pipe cannot be one
                raise DataError(f"{path}: a pipe or a device, not a file; give catalog files (.po, .mo) or folders")
            else:
                raise DataError(f"{path}: no such file or folder")
        return sorted(set(found))
    for pattern in (lang, f"{lang}_*"):
        found = sorted(p for root in LOCALE_ROOTS for p in root.glob(f"{pattern}/LC_MESSAGES/*.mo"))
        if found:
            return found
    return []


def read_catalog(path: Path):
    """The polib catalog (POFile or MOFile) in ``path``; a DataError names unreadable files."""
    import polib

    try:
        if path.suffix == ".mo":
            return polib.mofile(str(path))
        return polib.pofile(str(path))
    except (OSError, ValueError, UnicodeDecodeError, LookupError, struct.error) as err:  # struct: a cut .mo
        raise DataError(f"{path}: not a readable gettext catalog ({err})") from None


def usable(entry) -> bool:
    """A single-line, translated, current, non-fuzzy, non-plural entry with words on both sides."""
    return bool(
        entry.msgid
        and entry.msgstr
        and not entry.msgid_plural
        and not entry.obsolete
        and "fuzzy" not in entry.flags
        and not _MULTILINE.search(entry.msgid)
        and not _MULTILINE.search(entry.msgstr)
        and entry.msgid.strip()
        and entry.msgstr.strip()
        and has_words(entry.msgid)
        and has_words(entry.msgstr)
    )


def catalog_pairs(files: Iterable[Path]) -> list[Pair]:
    """(English, translation) pairs of the usable entries, de-duplicated by source: the first
    translation met (files in the given order, entries in catalog order) wins."""
    pairs: dict[str, str] = {}
    for path in files:
        for entry in read_catalog(path):
            if usable(entry):
                pairs.setdefault(entry.msgid, entry.msgstr)
    return list(pairs.items())


def hash_position(source: str, seed: int = 0) -> float:
    """A fixed point in [0, 1) for ``source``: sha1(seed:source), uniform over sources."""
    digest = hashlib.sha1(f"{seed}:{source}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def split_of(
    source: str, seed: int = 0, dev_fraction: float = DEV_FRACTION, test_fraction: float = TEST_FRACTION
) -> str:
    """ "train", "dev" or "test" for ``source`` by its hash position, so a sentence keeps its
    split whatever else the corpus holds."""
    u = hash_position(source, seed)
    return "dev" if u < dev_fraction else "test" if u < dev_fraction + test_fraction else "train"


def held_out_minimum(pairs: int) -> int:
    """How many pairs dev and test each hold at least: 1 to 50, about 5% of a small corpus."""
    return max(1, min(50, pairs // 20))


def build_gettext_corpus(
    lang: str,
    paths: Sequence[str | Path] | None = None,
    seed: int = 0,
    *,
    dev_fraction: float = DEV_FRACTION,
    test_fraction: float = TEST_FRACTION,
) -> tuple[list[Pair], list[Pair], list[Pair]]:
    """(train, dev, test) English->``lang`` pairs from gettext catalogs.

    Reads ``paths`` (.po/.mo files or folders) or the system's catalogs for ``lang``; keeps
    single-line, non-fuzzy, non-obsolete, non-plural, non-empty entries that have words (not
    only placeholders or punctuation), de-duplicated by source; assigns splits by a hash of the
    source salted with ``seed``. Raises a UserError if no pair is found.
    """
    if not LANGUAGE.fullmatch(lang):
        raise UserError(f"data gettext --lang {lang!r}: expected a language code, such as de or pt_BR")
    files = catalog_files(lang, paths)
    where = ", ".join(map(str, paths)) if paths else f"/usr/share/locale/{lang}/LC_MESSAGES"
    if not files:
        raise UserError(f"data gettext: no .po or .mo catalogs in {where}")
    pairs = catalog_pairs(files)
    if not pairs:
        raise UserError(f"data gettext: no usable single-line translations in {len(files)} catalogs of {where}")
    if len(pairs) < 3:
        raise UserError(f"data gettext: {len(pairs)} usable translation(s) in {where}: too few for train, dev and test")
    splits: dict[str, list[Pair]] = {"train": [], "dev": [], "test": []}
    for pair in pairs:
        splits[split_of(pair[0], seed, dev_fraction, test_fraction)].append(pair)
    # a few catalogs hash few pairs into dev and test: fill them from the train pairs with the
    # lowest hash positions, so no split is ever empty (and the choice stays deterministic)
    minimum = held_out_minimum(len(pairs))
    spare = sorted(splits["train"], key=lambda pair: hash_position(pair[0], seed))
    for name, fraction in (("dev", dev_fraction), ("test", test_fraction)):
        while fraction and len(splits[name]) < minimum and len(spare) > 1:
            moved = spare.pop(0)
            splits["train"].remove(moved)
            splits[name].append(moved)
    log.info(
        "%d catalogs -> %d pairs (%d train, %d dev, %d test)",
        len(files),
        len(pairs),
        *(len(v) for v in splits.values()),
    )
    return splits["train"], splits["dev"], splits["test"]


# -- filling a .po file ----------------------------------------------------------------------------
def fillable(entry) -> bool:
    """An untranslated, current entry with something to translate on one line (and, for a
    plural entry, its plural form too)."""
    forms = [entry.msgid] + ([entry.msgid_plural] if entry.msgid_plural else [])
    translated = any(entry.msgstr_plural.values()) if entry.msgid_plural else entry.msgstr
    return bool(
        not entry.obsolete and not translated and all(form.strip() and not _MULTILINE.search(form) for form in forms)
    )


def plural_forms(catalog) -> int:
    """How many plural forms the catalog's language has (its Plural-Forms header; 2 without one)."""
    found = re.search(r"nplurals\s*=\s*(\d+)", catalog.metadata.get("Plural-Forms", ""))
    return int(found.group(1)) if found else 2


def translate_po(
    translator,
    in_path: str | Path,
    out_path: str | Path,
    beam_size: int | None = None,
    wrapwidth: int = 78,
    *,
    overwrite: bool = False,
) -> dict[str, int]:
    """Fill the untranslated entries of the catalog ``in_path`` and write it to ``out_path``.

    Filled entries are flagged fuzzy (for a translator to review); an output whose placeholders
    or markup differ from its source also gets the translator comment ``# attnseq: placeholders
    differ``. A plural entry gets its singular's translation as form 0 and its plural's as every
    other form (as many as the header's Plural-Forms says). Multi-line (or tab-holding) entries
    are left untranslated and named in the log. Every other line of the file is kept byte for
    byte; only the filled entries are re-written (by polib, lines wrapped at ``wrapwidth``).
    Written atomically, never over ``in_path``, over an existing ``out_path`` only with
    ``overwrite`` (attnseq.files.write_output). Returns {"entries", "translated", "plurals",
    "placeholder_mismatches", "skipped"}.
    """
    in_path = Path(in_path)
    if in_path.exists() and not in_path.is_file():  # a folder, or a pipe polib would read twice
        raise DataError(f"{in_path}: not a file (a folder, a pipe or a device); give the .po file itself")
    if not in_path.is_file():
        raise DataError(f"{in_path}: no such file")
    if in_path.suffix != ".po":
        raise DataError(f"{in_path}: translate --po needs a .po file (a compiled .mo cannot be filled)")
    check_output(out_path, inputs=[in_path], overwrite=overwrite)  # before anything is translated
    catalog = read_catalog(in_path)
    current = [e for e in catalog if not e.obsolete]
    untranslated = [e for e in current if not e.translated() and "fuzzy" not in e.flags]
    todo = [e for e in untranslated if fillable(e)]
    left = [e for e in untranslated if not fillable(e)]
    if left:
        log.warning(
            "%s: %d entries left untranslated (multi-line), at lines %s",
            in_path,
            len(left),
            ", ".join(str(e.linenum) for e in left[:5]) + (" ..." if len(left) > 5 else ""),
        )
    sources = [form for e in todo for form in ([e.msgid, e.msgid_plural] if e.msgid_plural else [e.msgid])]
    outputs = iter(translator.translate(sources, beam_size=beam_size) if sources else [])
    forms = plural_forms(catalog)
    filled, mismatches, plurals = [], 0, 0
    for entry in todo:
        if entry.msgid_plural:
            singular, plural = next(outputs), next(outputs)
            pairs = [(entry.msgid, singular), (entry.msgid_plural, plural)]
            if not (singular.strip() and plural.strip()):
                continue
            entry.msgstr_plural = {k: singular if k == 0 else plural for k in range(forms)}
            plurals += 1
        else:
            output = next(outputs)
            pairs = [(entry.msgid, output)]
            if not output.strip():
                continue
            entry.msgstr = output
        if "fuzzy" not in entry.flags:
            entry.flags.insert(0, "fuzzy")  # gettext tools list fuzzy first
        if not all(placeholders_match(source, output) for source, output in pairs):
            mismatches += 1
            entry.tcomment = f"{entry.tcomment}\n{MISMATCH_COMMENT}" if entry.tcomment else MISMATCH_COMMENT
        filled.append(entry)
    text = rewrite_entries(in_path, catalog, filled, wrapwidth)
    try:
        data = text.encode(catalog.encoding)
    except UnicodeEncodeError as err:
        raise DataError(
            f"{in_path}: its charset {catalog.encoding} cannot hold "
            f"{err.object[err.start : err.end]!r} of a translation; convert the catalog to UTF-8 "
            "(msgconv -t UTF-8)"
        ) from None
    write_output(out_path, data, inputs=[in_path], overwrite=overwrite)
    return {
        "entries": len(current),
        "translated": len(filled),
        "plurals": plurals,
        "placeholder_mismatches": mismatches,
        "skipped": len(untranslated) - len(filled),
    }


def rewrite_entries(path: Path, catalog, changed: Sequence, wrapwidth: int = 78) -> str:
    """The text of the .po file ``path`` with the lines of the ``changed`` entries of its parsed
    ``catalog`` replaced by their new text; all other lines unchanged.

    An entry spans from its first line (polib's ``linenum``) to the line before the next
    entry, without trailing blank lines. If re-reading the result does not give the catalog's
    entries back (an unusual layout), the whole catalog is written by polib instead.
    """
    import polib

    raw = path.read_bytes().decode(catalog.encoding)
    if not changed:
        return raw
    lines = raw.splitlines(keepends=True)
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    starts = sorted(e.linenum - 1 for e in catalog)  # 0-based first line of every entry
    ends = dict(zip(starts, starts[1:] + [len(lines)]))
    replacement = {}
    for entry in changed:
        start = entry.linenum - 1
        end = ends[start]
        while end > start and not lines[end - 1].strip():
            end -= 1
        replacement[start] = (end, entry.__unicode__(wrapwidth))
    out, i = [], 0
    while i < len(lines):
        if i in replacement:
            end, text = replacement[i]
            text = text if text.endswith("\n") else text + "\n"
            out.append(text.replace("\n", newline))
            i = end
        else:
            out.append(lines[i])
            i += 1
    text = "".join(out)
    if _signature(polib.pofile(text)) != _signature(catalog):
        log.warning("%s: unusual layout; the whole catalog is re-written by polib", path)
        catalog.wrapwidth = wrapwidth
        text = str(catalog) + "\n"
    return text


def _signature(catalog) -> list[tuple]:
    return [
        (
            e.msgctxt,
            e.msgid,
            e.msgid_plural,
            e.msgstr,
            sorted(e.msgstr_plural.items()),
            sorted(e.flags),
            e.tcomment,
            e.obsolete,
        )
        for e in catalog
    ]
