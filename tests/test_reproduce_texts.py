"""The reproductions' words as data: every texts file reads, holds what its module asks for and
nothing it does not, and a file with a missing, unknown or broken key is named with the key."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from attnseq.reproduce import REPRODUCTIONS, page
from attnseq.reproduce.texts import KEY_SETS, TEXTS_DIR, TextsError, read_texts, texts
from attnseq.reproduce.wording import Phrase

GOOD = """\
title: A title
claim: A claim.
quotes:
- text: Les mots.
  source: a paper, §1
  translation: The words.
- text: Words in English.
  source: another paper
source: Where it comes from.
text:
  summary: "accuracy {accuracy:.1%} after {steps} updates"
  setup:
  - "first {steps}"
  - second, with {{braces}}
  verdict:
    matched: ": it did."
    unmatched: ": it did not."
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "name.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_texts_file_gives_its_heading_and_fills_its_templates(tmp_path):
    t = read_texts(write(tmp_path, GOOD))
    assert (t.title, t.claim, t.source) == ("A title", "A claim.", "Where it comes from.")
    assert [(q.words, q.where, q.english) for q in t.quotes] == [
        ("Les mots.", "a paper, §1", "The words."),
        ("Words in English.", "another paper", ""),
    ]
    assert t.format("summary", accuracy=0.25, steps=7) == "accuracy 25.0% after 7 updates"
    assert t.paragraphs("setup", steps=3) == ["first 3", "second, with {braces}"]
    assert t.keys() == ["summary", "setup", "verdict.matched", "verdict.unmatched"]
    phrase = t.phrase("summary", accuracy=0.5, steps=2, unused=1) + t.phrase("verdict.matched")
    assert isinstance(phrase, Phrase) and str(phrase) == "accuracy 50.0% after 2 updates: it did."
    assert phrase.words() == "accuracy  after  updates: it did." and [s.value for s in phrase.slots()] == [0.5, 2]


@pytest.mark.parametrize(
    "change, message",
    [
        (("claim: A claim.\n", ""), "no key 'claim'"),
        (("source: Where", "sources: Where"), "unknown key 'sources'"),
        (("  translation: The words.\n", "  translation: The words.\n  page: 3\n"), r"unknown key 'quotes\[0\].page'"),
        (("  source: another paper\n", ""), r"no key 'quotes\[1\].source'"),
        (('  summary: "accuracy', '  summary: "{accuracy'), r"'text.summary' is no template"),
        (('    unmatched: ": it did not."\n', "    unmatched: 3\n"), r"'text.verdict.unmatched' must be text"),
        (("    matched:", "    yes:"), r"'text.verdict' has a key True .*quote it"),
        (("title: A title", "title: [A, title]"), "'title' must be text"),
    ],
)
def test_a_missing_unknown_or_broken_key_is_named_with_the_file(tmp_path, change, message):
    old, new = change
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new))
    with pytest.raises(TextsError, match=message) as err:
        read_texts(path)
    assert str(path) in str(err.value)


def test_a_key_or_field_the_code_asks_for_and_the_file_lacks_is_named(tmp_path):
    path = write(tmp_path, GOOD)
    t = read_texts(path)
    with pytest.raises(TextsError, match=r"name.yaml: no key 'text.verdict.maybe'"):
        t.phrase("verdict.maybe")
    with pytest.raises(TextsError, match=r"name.yaml: 'text.summary' has a field \{accuracy\} .*fills steps"):
        t.format("summary", steps=1)
    with pytest.raises(TextsError, match=r"name.yaml: 'text.summary' has a field \{steps\}"):
        t.phrase("summary", accuracy=1.0)
    with pytest.raises(TextsError, match="name.yaml: "):
        read_texts(write(tmp_path, "title: [unclosed\n"))
    with pytest.raises(TextsError, match="no.yaml"):
        read_texts(tmp_path / "no.yaml")


def used_keys(module: Path) -> set[str]:
    """The keys a module asks its texts for: the first argument of TEXT.format/phrase/paragraphs,
    a string, or a string plus a mapping's values (``"order." + ORDER[order]``) or a choice of two;
    a key held in a variable (a loop's) is left to the strings of the module."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    tables = {
        target.id: [v.value for v in node.value.values]
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
        for target in node.targets
        if isinstance(target, ast.Name) and all(isinstance(v, ast.Constant) for v in node.value.values)
    }

    def keys(node) -> list[str]:
        if isinstance(node, ast.Name):
            return []
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, ast.IfExp):
            return keys(node.body) + keys(node.orelse)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            right = node.right
            if isinstance(right, ast.Subscript) and isinstance(right.value, ast.Name) and right.value.id in tables:
                return [k + v for k in keys(node.left) for v in tables[right.value.id]]
            if isinstance(right, ast.Subscript) and isinstance(right.value, ast.Dict):
                return [k + v.value for k in keys(node.left) for v in right.value.values]
        raise AssertionError(f"{module.name}:{node.lineno}: a key the test cannot read: {ast.unparse(node)}")

    used = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "TEXT"
            and node.func.attr in ("format", "phrase", "paragraphs")
        ):
            used.update(keys(node.args[0]))
    return used


def strings(module: Path) -> set[str]:
    """Every string constant of a module."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


MODULES = {name: Path(sys.modules[REPRODUCTIONS.get(name).__module__].__file__) for name in REPRODUCTIONS.names()}


@pytest.mark.parametrize("name", sorted(p.stem for p in TEXTS_DIR.glob("*.yaml") if p.stem not in KEY_SETS))
def test_each_texts_file_holds_what_its_reproduction_asks_for_and_no_more(name):
    """Every file is a registered reproduction's; each key its module asks for is in the file, and
    each key in the file is asked for (no sentence left behind when the code changes)."""
    assert name in REPRODUCTIONS.names()
    t = texts(name)
    cls = REPRODUCTIONS.get(name)
    assert (cls.title, cls.claim, cls.source, cls.quotes) == (t.title, t.claim, t.source, t.quotes)
    used = used_keys(MODULES[name])
    assert sorted(used - set(t.keys())) == [], "asked for and missing"
    assert sorted(set(t.keys()) - used - strings(MODULES[name])) == [], "in the file and never asked for"


def test_the_texts_are_package_data():
    text = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    assert '"attnseq.reproduce" = ["texts/*.yaml"]' in text


def test_the_shared_page_texts_hold_what_page_py_asks_for_and_no_more():
    """texts/page.yaml, the sentences of every page and of the index: its `text` alone, each key
    page.py asks for in it and each of its keys asked for."""
    assert sorted(KEY_SETS) == ["page"] and (TEXTS_DIR / "page.yaml").exists()
    t = texts("page")
    assert (t.title, t.claim, t.quotes, t.source) == ("", "", (), "")
    module = Path(page.__file__)
    used = used_keys(module)
    assert sorted(used - set(t.keys())) == [], "asked for and missing"
    assert sorted(set(t.keys()) - used - strings(module)) == [], "in the file and never asked for"


def test_a_shared_file_has_its_own_keys_and_no_heading(tmp_path):
    """A shared file is read with its own key set: the heading is no key of it, `text` is."""
    path = write(tmp_path, GOOD)
    with pytest.raises(TextsError, match="unknown key 'title' \\(a texts file has text\\)"):
        read_texts(path, KEY_SETS["page"])
    with pytest.raises(TextsError, match="no key 'text'"):
        read_texts(write(tmp_path, "title: A title\n"), ("title", "text"))
    t = read_texts(write(tmp_path, "text:\n  rule: '{n} of {m}'\n"), KEY_SETS["page"])
    assert (t.title, t.quotes, t.format("rule", n=1, m=2)) == ("", (), "1 of 2")
