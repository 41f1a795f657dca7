"""Human-written dates paired with ISO dates: the data source of the date-normalisation task.

Each example is ``(human, iso)``, e.g. ``("saturday, 4 march 1995", "1995-03-04")``. The human
side is rendered through Babel's CLDR data (the locale's named formats 'short', 'medium',
'long', 'full' plus many explicit CLDR patterns) and then cased the way people type
(as rendered, lower, UPPER or Title). Dates are drawn uniformly between ``start`` and ``end``.

The task is kept learnable: every source string maps to exactly one ISO date.

* Numeric day/month order. A locale writes numeric dates in the day/month order of its own
  CLDR 'short' format (en: M/d/yy, en_GB/de/fr/...: d/M/y, sv: y-MM-dd). Patterns are grouped
  by *shape*: the literal text (case-folded) with each 1–2 digit field (day, numeric month,
  two-digit year) replaced by one placeholder, each four-digit year by another, and month and
  weekday names by theirs. Two patterns of the same shape whose fields come in a different
  order could render the same string for different dates ("3/4/95"), so the first locale in
  ``locales`` that uses a shape owns it; later locales' patterns of that shape with another
  field order are left out. Patterns with two digit fields side by side ("yyyyMMdd") are left
  out too.
* Two-digit years. ``yy`` is read as the one year in ``[start.year, start.year + 99]`` with
  those last two digits (see :func:`expand_two_digit_year`); for the default range 1950–2049,
  50–99 mean 1950–1999 and 00–49 mean 2000–2049. When the range spans more than 100 calendar
  years that rule cannot be unique, and two-digit-year patterns are not used at all.
* Four-digit years. Years must lie in 1000–9999 so that a full year always has four digits.
* As a last guard, :func:`generate_dates` skips a draw whose source string was already paired
  with another date in the same set (by construction this does not happen for the supported
  locales; the tests check it pattern by pattern).

All randomness comes from ``random.Random(seed)``; the global RNG is never used. A corpus of
millions of pairs is drawn in blocks (:class:`DateBlocks`), each from its own seeded stream, so
that several processes can draw it (attnseq/data/generated.py). Rendering looks each field up in
tables that Babel filled once per pattern (:func:`_renderer`), the same strings as Babel's own
formatting, several times faster.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date
from functools import cache

from babel import Locale, UnknownLocaleError
from babel.dates import DateTimeFormat, get_date_format, tokenize_pattern

from ...utils import stream_seed

Pair = tuple[str, str]

DEFAULT_START = date(1950, 1, 1)
DEFAULT_END = date(2049, 12, 31)
# ``attnseq data dates --locales all``: western European languages whose CLDR data gives
# unambiguous day/month orders and month names in Latin script
ALL_LOCALES = ("en", "de", "fr", "es", "it", "nl", "pt", "sv")
NAMED_FORMATS = ("short", "medium", "long", "full")

# Explicit CLDR patterns, grouped by the field order they encode.
DAY_FIRST_NUMERIC = (
    "d/M/y",
    "dd/MM/y",
    "d/M/yy",
    "dd/MM/yy",
    "d.M.y",
    "dd.MM.y",
    "dd.MM.yy",
    "d-M-y",
    "dd-MM-y",
    "dd-MM-yy",
)
MONTH_FIRST_NUMERIC = ("M/d/y", "MM/dd/y", "M/d/yy", "MM/dd/yy", "M-d-y", "MM-dd-y", "MM-dd-yy")
YEAR_FIRST_NUMERIC = ("yyyy-MM-dd", "yyyy/MM/dd", "yyyy/M/d", "yyyy.MM.dd", "yyyy-M-d")
DAY_FIRST_NAMED = (
    "d MMM y",
    "d MMMM y",
    "dd MMM y",
    "dd MMMM y",
    "d MMM yy",
    "dd-MMM-y",
    "dd-MMM-yy",
    "EEEE, d MMMM y",
    "EEEE d MMMM y",
    "EEE, d MMM y",
    "EEE d MMM y",
)
MONTH_FIRST_NAMED = (
    "MMMM d, y",
    "MMM d, y",
    "MMMM dd, y",
    "MMM d, yy",
    "MMMM d y",
    "MMM d y",
    "EEEE, MMMM d, y",
    "EEE, MMM d, y",
)
YEAR_FIRST_NAMED = ("y MMMM d", "y MMM d", "y-MMM-dd")

CASINGS = ("as-is", "lower", "upper", "title")

# Shape placeholders: a 1–2 digit number, a 4-digit year, a month name, a weekday name.
_SHORT_NUMBER, _FULL_YEAR, _MONTH_NAME, _WEEKDAY_NAME = "<n>", "<yyyy>", "<month>", "<weekday>"
_LITERAL = "="  # prefix of literal text in a shape


class UnsupportedPattern(ValueError):
    """A CLDR pattern the generator does not use (other fields, adjacent digits, ...)."""


@dataclass(frozen=True)
class DatePattern:
    """One way of writing a date: a CLDR ``pattern`` rendered in ``locale``.

    ``order`` is the field order, a permutation of "DMY"; ``shape`` is the tuple of literal
    texts and placeholders that decides which patterns could be confused (module docstring);
    ``two_digit_year`` tells whether the year is written with two digits.
    """

    locale: str
    pattern: str
    order: str
    shape: tuple[str, ...]
    two_digit_year: bool

    def render(self, day: date) -> str:
        """``day`` written with this pattern: one line, single spaces, no tab."""
        return normalize_spaces(_renderer(self.locale, self.pattern)(day))


def normalize_spaces(text: str) -> str:
    """``text`` with every run of whitespace (tabs, no-break spaces ...) turned into one space."""
    return " ".join(text.split())


def expand_two_digit_year(yy: int, start_year: int = DEFAULT_START.year) -> int:
    """The year in ``[start_year, start_year + 99]`` whose last two digits are ``yy`` (0–99)."""
    if not 0 <= yy <= 99:
        raise ValueError(f"a two-digit year must be in 0..99, got {yy}")
    return start_year + (yy - start_year) % 100


def analyse_pattern(pattern: str) -> tuple[str, tuple[str, ...], bool]:
    """``(order, shape, two_digit_year)`` of a CLDR date pattern (see :class:`DatePattern`).

    Raises UnsupportedPattern for fields other than day, month, year and weekday, for a
    missing or repeated day/month/year, for narrow names and for two digit fields side by side.
    """
    order, shape, two_digit = "", [], False
    digits = (_SHORT_NUMBER, _FULL_YEAR)
    for kind, value in tokenize_pattern(pattern):
        if kind == "chars":
            shape.append(_LITERAL + value)
            continue
        letter, count = value
        placeholder, field = _classify_field(pattern, letter, count)
        if placeholder in digits and shape and shape[-1] in digits:
            raise UnsupportedPattern(f"{pattern!r}: two digit fields side by side")
        shape.append(placeholder)
        order += field
        two_digit = two_digit or (letter == "y" and count == 2)
    if sorted(order) != sorted("DMY"):
        raise UnsupportedPattern(f"{pattern!r}: needs exactly one day, month and year field")
    return order, _normalize_shape(shape), two_digit


def _normalize_shape(shape: list[str]) -> tuple[str, ...]:
    """``shape`` with adjacent literals merged, spaced like a rendering and case-folded."""
    merged: list[str] = []
    for item in shape:
        if item.startswith(_LITERAL) and merged and merged[-1].startswith(_LITERAL):
            merged[-1] += item[len(_LITERAL) :]
        else:
            merged.append(item)
    normalized = [
        _LITERAL + re.sub(r"\s+", " ", item[len(_LITERAL) :]).casefold() if item.startswith(_LITERAL) else item
        for item in merged
    ]
    for end in (0, -1):
        if normalized[end].startswith(_LITERAL):
            normalized[end] = _LITERAL + normalized[end][len(_LITERAL) :].strip()
    return tuple(item for item in normalized if item != _LITERAL)


def _classify_field(pattern: str, letter: str, count: int) -> tuple[str, str]:
    """``(placeholder, field)`` of one CLDR field; field is 'D', 'M', 'Y' or '' (weekday)."""
    if letter == "d" and count <= 2:
        return _SHORT_NUMBER, "D"
    if letter in "ML" and count <= 2:
        return _SHORT_NUMBER, "M"
    if letter in "ML" and count in (3, 4):
        return _MONTH_NAME, "M"
    if letter == "y":
        return (_SHORT_NUMBER if count == 2 else _FULL_YEAR), "Y"
    if letter in "Eec" and count in (3, 4) or letter == "E" and count < 3:
        return _WEEKDAY_NAME, ""
    raise UnsupportedPattern(f"{pattern!r}: field {letter * count!r} is not used")


def locale_numeric_order(locale: str) -> str:
    """The field order ("DMY", "MDY", "YMD", ...) of ``locale``'s CLDR 'short' date format."""
    order, _, _ = analyse_pattern(get_date_format("short", _parse_locale(locale)).pattern)
    return order


def candidate_patterns(locale: str) -> list[str]:
    """The CLDR patterns tried for ``locale``: its named formats first, then explicit ones.

    Numeric patterns follow the locale's own day/month order; month-first patterns with a
    month name ("MMMM d, y") are used for English and for locales whose 'long' format is
    month-first.
    """
    loc = _parse_locale(locale)
    named = [get_date_format(name, loc).pattern for name in NAMED_FORMATS]
    order = locale_numeric_order(locale)
    if order.startswith("Y"):
        numeric: tuple[str, ...] = ()
    elif order.index("D") < order.index("M"):
        numeric = DAY_FIRST_NUMERIC
    else:
        numeric = MONTH_FIRST_NUMERIC
    long_order, _, _ = analyse_pattern(named[2])
    month_first = loc.language == "en" or long_order.startswith("M")
    explicit = (
        numeric + YEAR_FIRST_NUMERIC + DAY_FIRST_NAMED + (MONTH_FIRST_NAMED if month_first else ()) + YEAR_FIRST_NAMED
    )
    return list(dict.fromkeys(named + list(explicit)))


def date_patterns(
    locales: Sequence[str] = ("en",), start: date = DEFAULT_START, end: date = DEFAULT_END
) -> list[DatePattern]:
    """The unambiguous patterns used for ``locales`` (a sequence, or one locale name) and
    the date range ``[start, end]``.

    Returns a list of DatePattern, grouped by locale in the given order. A shape belongs to
    the first pattern that uses it; patterns of an owned shape with another field order, and
    two-digit-year patterns when the range spans more than 100 calendar years, are left out.
    """
    _check_range(start, end)
    if isinstance(locales, str):
        locales = (locales,)
    if not locales:
        raise ValueError("locales must name at least one locale")
    two_digit_ok = end.year - start.year < 100
    owners: dict[tuple[str, ...], str] = {}
    chosen: list[DatePattern] = []
    for locale in locales:
        for pattern in candidate_patterns(locale):
            try:
                order, shape, two_digit = analyse_pattern(pattern)
            except UnsupportedPattern:
                continue
            if two_digit and not two_digit_ok or owners.setdefault(shape, order) != order:
                continue
            candidate = DatePattern(str(locale), pattern, order, shape, two_digit)
            if candidate not in chosen:
                chosen.append(candidate)
    return chosen


def apply_casing(text: str, casing: str) -> str:
    """``text`` in one of CASINGS: 'as-is', 'lower', 'upper' or 'title'."""
    if casing == "lower":
        return text.lower()
    if casing == "upper":
        return text.upper()
    if casing == "title":
        return text.title()
    if casing == "as-is":
        return text
    raise ValueError(f"unknown casing {casing!r}; expected one of {', '.join(CASINGS)}")


def iter_dates(
    rng: random.Random, patterns: Sequence[DatePattern], start: date = DEFAULT_START, end: date = DEFAULT_END
) -> Iterator[Pair]:
    """An endless stream of ``(human, iso)`` pairs drawn with ``rng``.

    Each draw takes, in this order: a day uniform in ``[start, end]``, a locale uniform among
    the patterns' locales, a pattern uniform among that locale's patterns, and a casing.
    """
    by_locale: dict[str, list[DatePattern]] = {}
    for pattern in patterns:
        by_locale.setdefault(pattern.locale, []).append(pattern)
    locales = list(by_locale)
    first, span = start.toordinal(), end.toordinal() - start.toordinal()
    while True:
        day = date.fromordinal(first + rng.randint(0, span))
        pattern = rng.choice(by_locale[rng.choice(locales)])
        casing = rng.choice(CASINGS)
        yield apply_casing(pattern.render(day), casing), day.isoformat()


def generate_dates(
    n: int, seed: int = 0, locales: Sequence[str] = ("en",), start: date = DEFAULT_START, end: date = DEFAULT_END
) -> list[Pair]:
    """``n`` pairs ``(human, iso)``, deterministic in ``seed``; sources may repeat.

    Sources are non-empty, one line, without tabs; targets are ``YYYY-MM-DD``. Within the
    returned list a source never maps to two different targets.
    """
    return _collect(n, seed, locales, start, end, distinct=False)


def generate_unique_dates(
    n: int, seed: int = 0, locales: Sequence[str] = ("en",), start: date = DEFAULT_START, end: date = DEFAULT_END
) -> list[Pair]:
    """Like :func:`generate_dates` but with ``n`` distinct sources (first occurrences kept).

    Raises ValueError when the range and locales cannot give ``n`` distinct sources.
    """
    return _collect(n, seed, locales, start, end, distinct=True)


def _collect(n: int, seed: int, locales: Sequence[str], start: date, end: date, distinct: bool) -> list[Pair]:
    """The first ``n`` consistent (and, if ``distinct``, new) pairs of the seeded stream."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    stream = iter_dates(random.Random(seed), date_patterns(locales, start, end), start, end)
    return _drawn(stream, n, distinct, start, end)


def _drawn(
    stream: Iterator[Pair], n: int, distinct: bool, start: date, end: date, excluded: frozenset[str] = frozenset()
) -> list[Pair]:
    """The first ``n`` pairs of ``stream`` whose source is consistent (never paired with another
    date before), new if ``distinct``, and not one of ``excluded``."""
    target_of: dict[str, str] = {}
    pairs: list[Pair] = []
    max_draws = 20 * n + 1000
    for _, (source, target) in zip(range(max_draws if n else 0), stream):
        if source in excluded:
            continue
        known = target_of.get(source)
        if known is None:
            target_of[source] = target
            pairs.append((source, target))
        elif known == target and not distinct:
            pairs.append((source, target))
        if len(pairs) == n:
            break
    if len(pairs) < n:
        raise ValueError(
            f"could not draw {n} distinct date sources from {start}..{end} "
            f"in {max_draws} draws; widen the range or add locales"
        )
    return pairs


@dataclass
class DateBlocks:
    """Blocks of training pairs beyond a corpus's first ones: ``self(index, size)`` is block
    ``index``, ``size`` pairs drawn as :func:`generate_dates` draws them, from
    ``random.Random(stream_seed(seed, index))``; a source may repeat across the corpus (blocks
    are drawn apart), never one of ``excluded`` (the dev and test sources)."""

    seed: int
    locales: Sequence[str] = ("en",)
    start: date = DEFAULT_START
    end: date = DEFAULT_END
    excluded: frozenset[str] = frozenset()
    _patterns: list[DatePattern] = field(default_factory=list, repr=False)

    def __call__(self, index: int, size: int) -> list[Pair]:
        if not self._patterns:  # once per process
            self._patterns = date_patterns(self.locales, self.start, self.end)
        stream = iter_dates(random.Random(stream_seed(self.seed, index)), self._patterns, self.start, self.end)
        return _drawn(stream, size, False, self.start, self.end, self.excluded)


def _check_range(start: date, end: date) -> None:
    """Raise ValueError unless ``start <= end`` and both years lie in 1000–9999."""
    if start > end:
        raise ValueError(f"start {start} is after end {end}")
    if start.year < 1000:
        raise ValueError(f"start {start}: years before 1000 are not supported (a full year must have four digits)")


@cache
def _renderer(locale: str, pattern: str) -> Callable[[date], str]:
    """A function writing a date as Babel's ``parse_pattern(pattern).apply(day, locale)`` does,
    from tables Babel filled once: each field of the pattern (day, month, year, weekday) reads
    one part of the date, so its text is looked up by that part (a year's text is kept once
    it is first written)."""
    loc = _parse_locale(locale)
    template = ""  # the pattern as a str.format template, one {} per field
    fields: list[tuple[int, dict[int, str]]] = []  # (which part of the date, its texts)
    for kind, value in tokenize_pattern(pattern):
        if kind == "chars":
            template += value.replace("{", "{{").replace("}", "}}")
            continue
        letter, count = value
        name = letter * count
        if letter == "d":
            fields.append((2, {d: DateTimeFormat(date(2000, 1, d), loc)[name] for d in range(1, 32)}))
        elif letter in "ML":
            fields.append((1, {m: DateTimeFormat(date(2000, m, 1), loc)[name] for m in range(1, 13)}))
        elif letter in "Eec":  # 2024-01-01 is a Monday, weekday() 0
            fields.append((3, {w: DateTimeFormat(date(2024, 1, 1 + w), loc)[name] for w in range(7)}))
        elif letter == "y":
            fields.append((0, _YearTexts(loc, name)))
        else:
            raise UnsupportedPattern(f"{pattern!r}: field {name!r} is not used")
        template += "{}"

    def render(day: date) -> str:
        parts = (day.year, day.month, day.day, day.weekday())
        return template.format(*[texts[parts[which]] for which, texts in fields])

    return render


class _YearTexts(dict):
    """{year: its text for one year field}, each written by Babel the first time it is asked for."""

    def __init__(self, locale: Locale, name: str):
        super().__init__()
        self.locale, self.name = locale, name

    def __missing__(self, year: int) -> str:
        text = self[year] = DateTimeFormat(date(year, 1, 1), self.locale)[self.name]
        return text


@cache
def _parse_locale(locale: str) -> Locale:
    """Babel's Locale for ``locale`` ('en', 'en_GB', 'de-AT'); ValueError if unknown."""
    try:
        return Locale.parse(str(locale).replace("-", "_"))
    except (UnknownLocaleError, ValueError) as err:
        raise ValueError(f"unknown locale {locale!r}: {err}") from None
