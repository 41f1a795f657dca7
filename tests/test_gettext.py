"""gettext catalogs: a corpus from .po/.mo files, placeholders, filling a .po file in place."""

from __future__ import annotations

from pathlib import Path

import polib
import pytest

from attnseq.data.corpora.gettext import (
    MISMATCH_COMMENT,
    build_gettext_corpus,
    placeholders,
    placeholders_match,
    split_of,
    translate_po,
)
from attnseq.data.corpus import read_aligned
from attnseq.errors import DataError, UserError

HEADER = """# German translations for demo.
#
msgid ""
msgstr ""
"Project-Id-Version: demo 1.0\\n"
"Content-Type: text/plain; charset=UTF-8\\n"
"Plural-Forms: nplurals=2; plural=(n != 1);\\n"

"""

FIRST = (
    HEADER
    + """msgid "Open file"
msgstr "Datei öffnen"

#, fuzzy
msgid "Save"
msgstr "Sichern"

msgid "Line one\\nline two"
msgstr "Zeile eins\\nZeile zwei"

msgid "%d file"
msgid_plural "%d files"
msgstr[0] "%d Datei"
msgstr[1] "%d Dateien"

msgid "%s: %s"
msgstr "%s: %s"

msgid "Untranslated"
msgstr ""

msgid "Quit %s"
msgstr "%s beenden"

#~ msgid "Old"
#~ msgstr "Alt"
"""
)

SECOND = (
    HEADER
    + """msgid "Open file"
msgstr "Datei aufmachen"

msgid "Close"
msgstr "Schließen"

msgctxt "menu"
msgid "Help"
msgstr "Hilfe"
"""
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# ----------------------------------------------------------------- placeholders
def test_placeholders_of_every_common_syntax():
    assert placeholders("Copy %s to %d places, %1$s and %2$-5.2f") == ["%s", "%d", "%1$s", "%2$-5.2f"]
    assert placeholders("%(name)s has %lu items, 100%% done, %<PRIu64> bytes") == ["%(name)s", "%lu", "%%", "%<PRIu64>"]
    assert placeholders("{name} and {0} and {} and {size:>8} but not {{braces}}") == [
        "{name}",
        "{0}",
        "{}",
        "{size:>8}",
    ]
    assert placeholders("Qt says %1 of %2") == ["%1", "%2"]
    assert placeholders("50% of users, no placeholder") == []


def test_placeholder_multisets_are_compared_in_any_order():
    assert placeholders_match("Copy %s to %s", "Kopiere nach %s: %s")
    assert placeholders_match("{a} and {b}", "{b} und {a}")
    assert not placeholders_match("Copy %s to %s", "Kopiere %s")
    assert not placeholders_match("%d files", "%s Dateien")


# ----------------------------------------------------------------- the corpus
def test_corpus_from_po_and_mo_files(tmp_path):
    write(tmp_path / "cat" / "a.po", FIRST)
    polib.pofile(SECOND).save_as_mofile(str(tmp_path / "cat" / "b.mo"))
    train, dev, test = build_gettext_corpus("de", [tmp_path / "cat"], dev_fraction=0, test_fraction=0)
    assert (dev, test) == ([], [])
    # a.po first (sorted file list): its "Open file" wins; fuzzy, multi-line, plural,
    # placeholder-only, untranslated and obsolete entries are left out; msgctxt entries stay
    assert sorted(train) == sorted(
        [("Open file", "Datei öffnen"), ("Quit %s", "%s beenden"), ("Close", "Schließen"), ("Help", "Hilfe")]
    )


def test_split_is_deterministic_and_a_property_of_the_source(tmp_path):
    pairs = [(f"Message number {i}", f"Meldung Nummer {i}") for i in range(400)]
    body = "".join(f'msgid "{s}"\nmsgstr "{t}"\n\n' for s, t in pairs)
    write(tmp_path / "big.po", HEADER + body)
    train, dev, test = build_gettext_corpus("de", [tmp_path / "big.po"], seed=3, dev_fraction=0.2, test_fraction=0.2)
    assert (train, dev, test) == build_gettext_corpus(
        "de", [tmp_path / "big.po"], seed=3, dev_fraction=0.2, test_fraction=0.2
    )
    assert len(train) + len(dev) + len(test) == 400
    assert 40 < len(dev) < 120 and 40 < len(test) < 120
    assert not {s for s, _ in dev} & {s for s, _ in train}
    # a sentence's split depends only on itself and the seed, not on the rest of the corpus
    assert all(split_of(s, 3, 0.2, 0.2) == "dev" for s, _ in dev)
    assert build_gettext_corpus("de", [tmp_path / "big.po"], seed=4, dev_fraction=0.2, test_fraction=0.2)[1] != dev


def test_unreadable_catalog_and_empty_corpus_are_user_errors(tmp_path):
    bad = write(tmp_path / "bad" / "broken.mo", "not a catalog")
    with pytest.raises(DataError, match="broken.mo"):
        build_gettext_corpus("de", [bad])
    bad_po = write(tmp_path / "bad" / "broken.po", 'msgid "Open"\nmsgstr "a"b"\n')
    with pytest.raises(DataError, match="broken.po"):
        build_gettext_corpus("de", [bad_po])
    with pytest.raises(DataError, match="missing.po"):
        build_gettext_corpus("de", [tmp_path / "missing.po"])
    empty = write(tmp_path / "empty" / "e.po", HEADER + 'msgid "Nothing"\nmsgstr ""\n')
    with pytest.raises(UserError, match="no usable"):
        build_gettext_corpus("de", [empty])
    (tmp_path / "no-catalogs").mkdir()
    with pytest.raises(UserError, match="no .po or .mo"):
        build_gettext_corpus("de", [tmp_path / "no-catalogs"])
    with pytest.raises(UserError, match="no .po or .mo"):
        build_gettext_corpus("xx-no-such-language")


def test_a_pipe_given_as_a_catalog_is_refused_by_name_not_read(tmp_path):
    """polib reads a catalog more than once, so a FIFO (a shell's <(...)) would hang: it is one
    line naming it, never 'no such file'."""
    import os

    fifo = tmp_path / "catalog.po"
    os.mkfifo(fifo)
    with pytest.raises(DataError, match=f"^{fifo}: a pipe or a device, not a file"):
        build_gettext_corpus("de", [fifo])
    with pytest.raises(DataError, match=f"^{fifo}: not a file"):
        translate_po(lambda texts: texts, fifo, tmp_path / "out.po")


def test_aligned_files_with_different_line_counts_name_both_files_and_counts(tmp_path):
    src = write(tmp_path / "train.en", "one\ntwo\nthree\n")
    tgt = write(tmp_path / "train.de", "eins\nzwei\n")
    with pytest.raises(DataError) as err:
        read_aligned(src, tgt)
    message = str(err.value)
    assert str(src) in message and str(tgt) in message and "3" in message and "2" in message


# ----------------------------------------------------------------- filling a .po file
TO_FILL = (
    HEADER
    + """#. A comment for translators, wrapped by hand in an unusual way
#: src/main.c:10 src/main.c:20
#, c-format
msgid ""
"A long message that gettext wrapped at a column polib would not choose "
"%s"
msgstr "Eine lange Meldung %s"

#: src/main.c:30
#, c-format
msgid "Copy %s to %s"
msgstr ""

msgid "Cancel"
msgstr ""

#, fuzzy
msgid "Save"
msgstr "Sichern"

msgid "One line\\nand another"
msgstr ""

msgid "%d file"
msgid_plural "%d files"
msgstr[0] ""
msgstr[1] ""

msgctxt "menu"
msgid "Quit"
msgstr "Beenden"
#~ msgid "Old"
#~ msgstr "Alt"
"""
)


class FakeTranslator:
    """Upper-cases its input; drops the second placeholder of 'Copy %s to %s'."""

    def __init__(self):
        self.seen: list[str] = []

    def translate(self, texts, beam_size=None):
        self.seen += texts
        return [t.upper().replace("%S TO %S", "%s NACH") for t in texts]


def entry_blocks(text: str) -> list[str]:
    return text.split("\n\n")


def test_translate_po_fills_gaps_and_keeps_every_other_line(tmp_path):
    source = write(tmp_path / "de.po", TO_FILL)
    out = tmp_path / "out" / "de.po"
    translator = FakeTranslator()
    summary = translate_po(translator, source, out)
    assert summary == {"entries": 7, "translated": 3, "plurals": 1, "placeholder_mismatches": 2, "skipped": 1}
    # not the multi-line entry nor the fuzzy one; a plural entry's two forms
    assert translator.seen == ["Copy %s to %s", "Cancel", "%d file", "%d files"]
    original, written = entry_blocks(TO_FILL), entry_blocks(out.read_text(encoding="utf-8"))
    assert len(written) == len(original)
    changed = [i for i, (a, b) in enumerate(zip(original, written)) if a != b]
    assert [[line for line in original[i].splitlines() if line.startswith("msgid ")][0] for i in changed] == [
        'msgid "Copy %s to %s"',
        'msgid "Cancel"',
        'msgid "%d file"',
    ]
    assert written[changed[0]] == (
        f'# {MISMATCH_COMMENT}\n#: src/main.c:30\n#, fuzzy, c-format\nmsgid "Copy %s to %s"\nmsgstr "COPY %s NACH"'
    )
    assert written[changed[1]] == '#, fuzzy\nmsgid "Cancel"\nmsgstr "CANCEL"'
    catalog = polib.pofile(str(out))
    cancel = catalog.find("Cancel")
    assert cancel.msgstr == "CANCEL" and cancel.fuzzy and not cancel.tcomment
    files = catalog.find("%d file")  # every plural form filled: form 0 from the singular
    assert files.msgstr_plural == {0: "%D FILE", 1: "%D FILES"} and files.fuzzy
    assert files.tcomment == MISMATCH_COMMENT  # %D is not %d


def test_untouched_entries_stay_byte_identical_even_where_polib_would_rewrap(tmp_path):
    # polib alone would re-wrap the first entry's msgid (one line of 74 characters)
    assert str(polib.pofile(TO_FILL)).split("\n\n")[1] != entry_blocks(TO_FILL)[1]
    crlf = TO_FILL.replace("\n", "\r\n")  # Windows line ends are kept too
    source = write(tmp_path / "de.po", "")
    source.write_bytes(crlf.encode("utf-8"))
    out = tmp_path / "de.filled.po"
    translate_po(FakeTranslator(), source, out)
    original, written = crlf.encode().split(b"\r\n\r\n"), out.read_bytes().split(b"\r\n\r\n")
    assert len(original) == len(written) and b"\n" not in out.read_bytes().replace(b"\r\n", b"")
    filled = (b'msgid "Copy %s to %s"', b'msgid "Cancel"', b'msgid "%d file"')
    untouched = [(a, b) for a, b in zip(original, written) if not any(f in a for f in filled)]
    assert len(untouched) == len(original) - 3 and all(a == b for a, b in untouched)
    # a catalog with nothing to fill comes back byte for byte
    again = tmp_path / "again.po"
    translate_po(FakeTranslator(), out, again)
    assert again.read_bytes() == out.read_bytes()


def test_translate_po_refuses_a_compiled_catalog(tmp_path):
    mo = tmp_path / "de.mo"
    polib.pofile(SECOND).save_as_mofile(str(mo))
    with pytest.raises(DataError, match="de.mo"):
        translate_po(FakeTranslator(), mo, tmp_path / "x.po")


def test_markup_counts_as_placeholders():
    assert placeholders('<b>Save</b> &amp; <a href="x">quit</a> %s') == [
        "<b>",
        "</b>",
        "&amp;",
        '<a href="x">',
        "</a>",
        "%s",
    ]
    assert placeholders_match("<b>Save</b>", "<b>Sichern</b>")
    assert not placeholders_match("<b>Save</b>", "<bjSave (bj bj.")
    assert placeholders("a < b and c > d") == []  # comparisons are text


def test_a_few_catalogs_still_give_dev_and_test_pairs(tmp_path):
    """Hashing 60 pairs into 2.25% slices leaves dev or test empty: they are filled from train."""
    entries = "".join(f'msgid "Open file number {i}"\nmsgstr "Datei Nummer {i} öffnen"\n\n' for i in range(60))
    write(tmp_path / "cat" / "a.po", HEADER + entries)
    train, dev, test = build_gettext_corpus("de", [tmp_path / "cat"])
    assert len(dev) >= 3 and len(test) >= 3 and len(train) + len(dev) + len(test) == 60
    assert (train, dev, test) == build_gettext_corpus("de", [tmp_path / "cat"])  # deterministic
    write(tmp_path / "two" / "b.po", HEADER + 'msgid "Open"\nmsgstr "Öffnen"\n\nmsgid "Save"\nmsgstr "Sichern"\n')
    with pytest.raises(UserError, match="2 usable translation.*too few"):
        build_gettext_corpus("de", [tmp_path / "two"])
