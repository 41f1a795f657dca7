"""The sentences of a page's findings: fixed words and slots, every slot filled from a
reproduction's measured numbers (its result's data), so a test can check that no figure in a
finding was written by hand.

    Phrase("{} scores {:.1f} BLEU against {:.1f}", "attention", 21.43, 17.02)
    Phrase("{model} scores {bleu:.1f} BLEU", model="attention", bleu=21.43)
    Phrase("p {}", PValue(p)) + Phrase("; the interval lies above 0.")
"""

from __future__ import annotations

import string
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


class PValue(float):
    """A p-value that formats with its relation: ``= 0.011``, or ``< 0.001`` where three decimals
    would show 0.000 (a format spec gives the digits: ``{:.2f}`` -> ``= 0.01``, ``< 0.01``)."""

    def __format__(self, spec: str) -> str:
        digits = int(spec[1:-1]) if spec.startswith(".") and spec.endswith("f") else 3
        floor = 10.0**-digits
        return f"< {floor:.{digits}f}" if self < floor / 2 else f"= {float(self):.{digits}f}"


@dataclass(frozen=True)
class Slot:
    """One filled slot: a value and its format spec (``.1f``, ``+.1f``, ``,``)."""

    value: Any
    spec: str = ""

    def __str__(self) -> str:
        text = format(self.value, self.spec)
        # a value that rounds to zero from below prints as 0 (-0.0 reads as a difference that has a sign)
        if isinstance(self.value, float) and text.startswith("-") and not text.strip("-0.,%x "):
            text = format(0.0, self.spec)
        return text


class Phrase:
    """A sentence as fixed words and slots; ``str()`` renders it, ``words()`` gives the fixed words
    alone, ``slots()`` the filled slots."""

    def __init__(self, template: str = "", *values: Any, **named: Any):
        """``template``'s slots filled in order from ``values`` (``{}``) or by name from ``named``
        (``{accuracy:.1f}``, the texts files' templates)."""
        self.parts: list[str | Slot] = []
        values = list(values)
        for text, field_name, spec, _ in string.Formatter().parse(template):
            if text:
                self.parts.append(text)
            if field_name is not None:
                if field_name:
                    if field_name not in named:
                        raise ValueError(f"no value for {{{field_name}}} in {template!r}")
                    self.parts.append(Slot(named[field_name], spec or ""))
                    continue
                if not values:
                    raise ValueError(f"too few values for {template!r}")
                self.parts.append(Slot(values.pop(0), spec or ""))
        if values:
            raise ValueError(f"too many values for {template!r}")

    @classmethod
    def of(cls, parts: Iterable[str | Slot]) -> Phrase:
        phrase = cls()
        phrase.parts = list(parts)
        return phrase

    def __add__(self, other: Phrase | str) -> Phrase:
        return Phrase.of([*self.parts, *(other.parts if isinstance(other, Phrase) else [other])])

    def __radd__(self, other: str) -> Phrase:
        return Phrase.of([other, *self.parts])

    def __str__(self) -> str:
        return "".join(map(str, self.parts))

    def __repr__(self) -> str:
        return f"Phrase({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Phrase) and str(self) == str(other)

    def words(self) -> str:
        """The fixed words, the slots left out."""
        return "".join(p for p in self.parts if isinstance(p, str))

    def slots(self) -> list[Slot]:
        return [p for p in self.parts if isinstance(p, Slot)]


def joined(phrases: Iterable[Phrase], separator: str = ", ") -> Phrase:
    """``phrases`` one after the other with ``separator`` between them."""
    out = Phrase()
    for i, phrase in enumerate(phrases):
        out = out + (separator if i else "") + phrase
    return out
