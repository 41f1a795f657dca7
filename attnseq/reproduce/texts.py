"""The words of each reproduction's page, kept as data beside its code: ``texts/NAME.yaml`` holds
the page's title, claim, quotes (text, source, translation), source note, and under ``text`` every
sentence the page prints, so prose is edited without touching Python.

A sentence carrying numbers of the run is a template whose named fields the code fills,
``str.format`` style (``{accuracy:.1%}``; a literal brace is doubled, ``{{``). Under ``text`` a
value is a template, a list of templates (paragraphs), or a mapping of such (the variants a branch
chooses between, reached by a dotted key: ``alike.yes``). A missing or unknown key is a TextsError
naming the file and the key.

``texts/page.yaml`` holds the sentences every page and the index share (page.py): a shared file,
its ``text`` alone (KEY_SETS).
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from .base import Quote
from .wording import Phrase

TEXTS_DIR = Path(__file__).with_name("texts")
KEYS = ("title", "claim", "quotes", "source", "text")  # every file has each of these, and no other
QUOTE_KEYS = ("text", "source", "translation")  # translation optional (a source in English has none)
KEY_SETS = {"page": ("text",)}  # the shared files, not a reproduction's: their keys (no heading)


class TextsError(ValueError):
    """A texts file that does not read as one: names the file and the key."""


@dataclass(frozen=True)
class Texts:
    """One reproduction's words: its heading fields and its templates (dotted keys)."""

    path: Path
    title: str
    claim: str
    quotes: tuple[Quote, ...]
    source: str
    templates: dict[str, Any]  # dotted key -> template (str) or list of templates

    def _get(self, key: str) -> Any:
        if key not in self.templates:
            raise TextsError(f"{self.path}: no key 'text.{key}'")
        return self.templates[key]

    def _fill(self, key: str, template: str, fields: dict[str, Any]) -> str:
        try:
            return template.format(**fields)
        except KeyError as err:
            raise TextsError(
                f"{self.path}: 'text.{key}' has a field {{{err.args[0]}}} the code does not fill "
                f"(it fills {', '.join(sorted(fields)) or 'none'})"
            ) from None

    def format(self, key: str, **fields: Any) -> str:
        """The template at ``key`` with ``fields`` filled in."""
        template = self._get(key)
        if not isinstance(template, str):
            raise TextsError(f"{self.path}: 'text.{key}' is a list; one sentence is asked for")
        return self._fill(key, template, fields)

    def paragraphs(self, key: str, **fields: Any) -> list[str]:
        """The list of templates at ``key`` (a string counts as a list of one), each filled."""
        templates = self._get(key)
        return [self._fill(key, t, fields) for t in ([templates] if isinstance(templates, str) else templates)]

    def phrase(self, key: str, **fields: Any) -> Phrase:
        """The template at ``key`` as a Phrase: its fixed words, and a slot per field filled."""
        self.format(key, **fields)  # a field the code does not fill is named with the file
        return Phrase(self._get(key), **fields)

    def keys(self) -> list[str]:
        """Every dotted key under ``text``."""
        return list(self.templates)


def _checked(path: Path, key: str, value: Any, template: bool = True) -> str:
    if not isinstance(value, str):
        raise TextsError(f"{path}: '{key}' must be text, not {type(value).__name__}")
    if not template:  # the heading's fields are printed as they are
        return value
    try:
        list(string.Formatter().parse(value))
    except ValueError as err:
        raise TextsError(f"{path}: '{key}' is no template ({err}; a literal brace is doubled)") from None
    return value


def _flatten(path: Path, prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        if not value:
            raise TextsError(f"{path}: '{prefix}' is empty")
        for name, inner in value.items():
            if not isinstance(name, str) or not name:
                raise TextsError(
                    f"{path}: '{prefix}' has a key {name!r} that is not a name (YAML reads yes, no, on, off, "
                    "true, false and numbers as other things: quote it)"
                )
            _flatten(path, f"{prefix}.{name}", inner, out)
    elif isinstance(value, list):
        out[prefix.removeprefix("text.")] = [_checked(path, f"{prefix}[{i}]", v) for i, v in enumerate(value)]
    else:
        out[prefix.removeprefix("text.")] = _checked(path, prefix, value)


def read_texts(path: Path, keys: tuple[str, ...] = KEYS) -> Texts:
    """The texts in the YAML file ``path``, checked: a TextsError names the file and the key that
    is missing, unknown or not text. ``keys``: those the file has, and no other (a shared file's
    KEY_SETS entry: the heading fields it lacks are empty)."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise TextsError(f"{path}: {type(err).__name__}: {err}") from None
    if not isinstance(data, dict):
        raise TextsError(f"{path}: a mapping of {', '.join(keys)} is expected")
    for key in data:
        if key not in keys:
            raise TextsError(f"{path}: unknown key {key!r} (a texts file has {', '.join(keys)})")
    for key in keys:
        if key not in data:
            raise TextsError(f"{path}: no key {key!r}")
    data = {"title": "", "claim": "", "quotes": [], "source": "", **data}  # a shared file has no heading
    if not isinstance(data["quotes"], list):
        raise TextsError(f"{path}: 'quotes' must be a list")
    quotes = []
    for i, quote in enumerate(data["quotes"]):
        if not isinstance(quote, dict):
            raise TextsError(f"{path}: 'quotes[{i}]' must be a mapping of {', '.join(QUOTE_KEYS)}")
        for key in quote:
            if key not in QUOTE_KEYS:
                raise TextsError(f"{path}: unknown key 'quotes[{i}].{key}' (a quote has {', '.join(QUOTE_KEYS)})")
        for key in QUOTE_KEYS[:2]:
            if key not in quote:
                raise TextsError(f"{path}: no key 'quotes[{i}].{key}'")
        words, where = (_checked(path, f"quotes[{i}].{k}", quote[k], template=False) for k in QUOTE_KEYS[:2])
        english = _checked(path, f"quotes[{i}].translation", quote.get("translation", ""), template=False)
        quotes.append(Quote(words, where, english))
    if not isinstance(data["text"], dict):
        raise TextsError(f"{path}: 'text' must be a mapping of names to sentences")
    templates: dict[str, Any] = {}
    _flatten(path, "text", data["text"], templates)
    return Texts(
        path=path,
        title=_checked(path, "title", data["title"], template=False),
        claim=_checked(path, "claim", data["claim"], template=False),
        quotes=tuple(quotes),
        source=_checked(path, "source", data["source"], template=False),
        templates=templates,
    )


@cache
def texts(name: str) -> Texts:
    """The texts of reproduction ``name`` (or of a shared file, KEY_SETS): ``texts/NAME.yaml``
    beside this module."""
    return read_texts(TEXTS_DIR / f"{name}.yaml", KEY_SETS.get(name, KEYS))
