"""Tests of the data sources: generated dates, TSV splits and the book's data sets."""

from __future__ import annotations

import logging
import re
from datetime import date, datetime

import numpy as np
import pytest
from helpers import book_file

from attnseq.data.corpora.book import book_split_indices, load_book, read_book_pairs
from attnseq.data.corpora.dates import (
    CASINGS,
    apply_casing,
    date_patterns,
    expand_two_digit_year,
    generate_dates,
    generate_unique_dates,
)
from attnseq.data.corpus import read_aligned, read_tsv
from attnseq.data.splits import make_date_splits, split_pairs, write_split_dir, write_splits, write_tsv
from attnseq.errors import DataError, UserError

LOCALES = ("en", "de", "fr", "es", "it", "nl", "pt", "sv")


# ---------------------------------------------------------------- generated dates


def test_same_seed_same_pairs_and_different_seed_different_pairs():
    assert generate_dates(300, seed=7) == generate_dates(300, seed=7)
    assert generate_dates(300, seed=7) != generate_dates(300, seed=8)
    many = generate_dates(50, seed=3, locales=LOCALES)
    assert many == generate_dates(50, seed=3, locales=LOCALES)


def test_generation_leaves_the_global_rng_alone():
    import random

    state = random.getstate()
    generate_dates(100, seed=1)
    assert random.getstate() == state


def test_sources_are_clean_single_lines_and_targets_valid_iso_dates_in_range():
    start, end = date(1950, 1, 1), date(2049, 12, 31)
    pairs = generate_dates(2000, seed=0, locales=LOCALES)
    assert len(pairs) == 2000
    for source, target in pairs:
        assert source.strip() == source and source
        assert "\t" not in source and "\n" not in source and "\r" not in source
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", target)
        assert start <= date.fromisoformat(target) <= end


_EN_TEXT_FORMATS = (
    "%B %d, %Y",
    "%b %d, %Y",
    "%d %B %Y",
    "%d %b %Y",
    "%A, %B %d, %Y",
    "%a, %b %d, %Y",
    "%A, %d %B %Y",
    "%a, %d %b %Y",
    "%A %d %B %Y",
    "%a %d %b %Y",
    "%B %d %Y",
    "%b %d %Y",
    "%Y %B %d",
    "%Y %b %d",
    "%d-%b-%Y",
    "%Y-%b-%d",
)


def _parse_english(source: str) -> date | None:
    """An independent reading of an English source, or None for formats not covered here."""
    numeric = re.fullmatch(r"(\d{1,2})([/-])(\d{1,2})\2(\d{2}|\d{4})", source)
    if numeric:
        month, day, year = int(numeric[1]), int(numeric[3]), numeric[4]
        full = int(year) if len(year) == 4 else (1900 if int(year) >= 50 else 2000) + int(year)
        return date(full, month, day)
    year_first = re.fullmatch(r"(\d{4})([-/.])(\d{1,2})\2(\d{1,2})", source)
    if year_first:
        return date(int(year_first[1]), int(year_first[3]), int(year_first[4]))
    for fmt in _EN_TEXT_FORMATS:
        try:
            return datetime.strptime(source, fmt).date()
        except ValueError:
            continue
    return None


def test_english_targets_equal_an_independent_parse_of_the_source():
    pairs = generate_dates(1500, seed=11)
    parsed = [(_parse_english(source), target) for source, target in pairs]
    checked = [(day, target) for day, target in parsed if day is not None]
    assert len(checked) > 0.6 * len(pairs)
    for day, target in checked:
        assert day.isoformat() == target


def test_two_digit_years_follow_the_documented_window():
    assert expand_two_digit_year(50) == 1950 and expand_two_digit_year(99) == 1999
    assert expand_two_digit_year(0) == 2000 and expand_two_digit_year(49) == 2049
    assert expand_two_digit_year(5, start_year=1980) == 2005
    assert expand_two_digit_year(80, start_year=1980) == 1980


def test_two_digit_year_patterns_are_dropped_for_ranges_over_a_century():
    wide = date_patterns(("en",), date(1900, 1, 1), date(2049, 12, 31))
    assert wide and not any(p.two_digit_year for p in wide)
    assert any(p.two_digit_year for p in date_patterns(("en",)))


def _sample_days() -> list[date]:
    """Days where day and month are interchangeable and two-digit years meet days."""
    return [
        date(year, month, day)
        for year in (1950, 1999, 2000, 2003, 2012, 2049)
        for month in range(1, 13)
        for day in (1, 3, 5, 10, 12, 13, 28)
    ]


def test_every_pattern_string_maps_to_exactly_one_date():
    patterns = date_patterns(LOCALES)
    target_of: dict[str, str] = {}
    for day in _sample_days():
        for pattern in patterns:
            text = pattern.render(day)
            for casing in CASINGS:
                source = apply_casing(text, casing)
                known = target_of.setdefault(source, day.isoformat())
                assert known == day.isoformat(), (source, known, day, pattern)


def test_numeric_order_follows_the_locale_and_first_locale_owns_a_shape():
    en = {p.pattern for p in date_patterns(("en",))}
    gb = {p.pattern for p in date_patterns(("en_GB",))}
    assert "M/d/yy" in en and "d/M/yy" not in en
    assert "d/M/yy" in gb and "M/d/yy" not in gb
    both = date_patterns(("en", "fr"))
    slash_orders = {p.order for p in both if p.shape[:2] == ("<n>", "=/")}
    assert slash_orders == {"MDY"}
    assert any(p.locale == "fr" and p.pattern == "dd.MM.yy" for p in both)


def test_a_generated_set_never_maps_one_source_to_two_targets():
    pairs = generate_dates(6000, seed=5, locales=("en", "en_GB", "de", "fr"))
    target_of: dict[str, str] = {}
    for source, target in pairs:
        assert target_of.setdefault(source, target) == target


def test_locales_give_native_month_names():
    day = date(1995, 3, 4)
    rendered = {p.locale: set() for p in date_patterns(LOCALES)}
    for pattern in date_patterns(LOCALES):
        rendered[pattern.locale].add(pattern.render(day))
    assert any("März" in text for text in rendered["de"])
    assert any("março" in text for text in rendered["pt"])
    assert any("sábado" in text for text in rendered["es"])
    assert any("lördag" in text for text in rendered["sv"])
    sources = [s for s, _ in generate_dates(400, seed=2, locales=("de", "fr", "es"))]
    assert any(not s.isascii() for s in sources)


def test_casings_all_appear():
    sources = [s for s, _ in generate_dates(400, seed=4)]
    assert any(s.isupper() for s in sources)
    assert any(s.islower() for s in sources)
    assert any(s.istitle() for s in sources)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="locale"):
        generate_dates(3, locales=("xx_NOPE",))
    with pytest.raises(ValueError, match="after"):
        generate_dates(3, start=date(2000, 1, 2), end=date(2000, 1, 1))
    with pytest.raises(ValueError, match="distinct"):
        generate_unique_dates(1000, start=date(2000, 1, 1), end=date(2000, 1, 3))


# ---------------------------------------------------------------- splits and TSV


def test_make_date_splits_sizes_no_leakage_and_determinism():
    train, dev, test = make_date_splits(800, 100, 100, seed=9)
    assert (len(train), len(dev), len(test)) == (800, 100, 100)
    sources = [s for s, _ in train + dev + test]
    assert len(set(sources)) == len(sources)
    assert make_date_splits(800, 100, 100, seed=9) == (train, dev, test)
    assert make_date_splits(800, 100, 100, seed=10) != (train, dev, test)


def test_split_pairs_keeps_a_source_in_one_split():
    pairs = [(f"s{i % 50}", f"t{i}") for i in range(200)]
    train, dev, test = split_pairs(pairs, dev_fraction=0.2, test_fraction=0.2, seed=1)
    assert sorted(train + dev + test) == sorted(pairs)
    splits = [{s for s, _ in part} for part in (train, dev, test)]
    assert not (splits[0] & splits[1] or splits[0] & splits[2] or splits[1] & splits[2])
    assert (len(splits[1]), len(splits[2])) == (10, 10)
    assert split_pairs(pairs, 0.2, 0.2, seed=1) == (train, dev, test)


def test_tsv_round_trip_keeps_trailing_spaces(tmp_path):
    pairs = [("september 27, 1994           ", "1994-09-27"), ("16+75  ", "91  "), ("4. März 1995", "1995-03-04")]
    path = write_tsv(tmp_path / "pairs.tsv", pairs)
    assert read_tsv(path, strip=False) == pairs
    assert path.read_bytes().count(b"\n") == 3 and b"\r" not in path.read_bytes()
    assert [p.name for p in tmp_path.iterdir()] == ["pairs.tsv"]


def test_writer_refuses_tabs_and_newlines_naming_the_pair(tmp_path):
    path = tmp_path / "bad.tsv"
    with pytest.raises(ValueError, match="pair 1: the source contains a tab"):
        write_tsv(path, [("a", "b"), ("c\td", "e")])
    with pytest.raises(ValueError, match="pair 2: the target contains a newline"):
        write_tsv(path, [("a", "b"), ("c", "d"), ("e", "f\n")])
    with pytest.raises(ValueError, match="pair 0: the target is empty"):
        write_tsv(path, [("a", "")])
    assert list(tmp_path.iterdir()) == []


def test_write_split_dir_and_write_splits(tmp_path):
    train, dev, test = make_date_splits(80, 10, 10, seed=0)
    paths = write_split_dir(tmp_path / "dates" / "v1", train, dev, test)
    assert sorted(p.name for p in paths.values()) == ["dev.tsv", "test.tsv", "train.tsv"]
    assert read_tsv(paths["dev"], strip=False) == dev
    with pytest.raises(ValueError, match="test split: pair 0"):
        write_split_dir(tmp_path / "other", train, dev, [("x\ty", "z")])
    assert not (tmp_path / "other").exists()
    written = write_splits(train + dev + test, tmp_path / "again", seed=3)
    total = sum(len(read_tsv(p, strip=False)) for p in written.values())
    assert total == 100


def test_write_split_dir_writes_the_extra_files_and_replaces_only_with_overwrite(tmp_path):
    train, dev, test = make_date_splits(20, 4, 4, seed=0)
    paths = write_split_dir(tmp_path / "d", train, dev, test, {"test-long": test[:2]})
    assert read_tsv(paths["test-long"], strip=False) == test[:2]
    with pytest.raises(UserError, match="holds files already .*give --overwrite"):
        write_split_dir(tmp_path / "d", train, dev, test)
    write_split_dir(tmp_path / "d", dev, train, test, overwrite=True)
    assert read_tsv(paths["train"], strip=False) == dev


@pytest.mark.parametrize("first", ["source\ttarget", "src\ttgt", "en\tde", "Source\tTarget", "input\toutput"])
def test_a_header_row_is_read_with_a_warning_naming_file_and_line_1(tmp_path, caplog, first):
    path = tmp_path / "pairs.tsv"
    path.write_text(f"{first}\nabc\tcba\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert read_tsv(path) == [tuple(first.split("\t")), ("abc", "cba")]
    assert f"{path}:1: {first!r} looks like a header row" in caplog.text


@pytest.mark.parametrize("first", ["abc\tcba", "en\ten", "de\tthe"])
def test_a_first_pair_that_names_no_columns_is_read_silently(tmp_path, caplog, first):
    path = tmp_path / "pairs.tsv"
    path.write_text(f"{first}\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        read_tsv(path)
    assert "header" not in caplog.text


def test_a_carriage_return_inside_a_line_or_a_tab_in_an_aligned_file_names_file_and_line(tmp_path):
    path = tmp_path / "mac.tsv"
    path.write_bytes(b"a\tb\r\nc\td\re\tf\n")  # \r\n ends a line; a lone \r inside one is refused
    with pytest.raises(DataError, match=r"mac.tsv:2: a carriage return inside the line"):
        read_tsv(path)
    (tmp_path / "src.txt").write_text("one\ntw\to\n", encoding="utf-8")
    (tmp_path / "tgt.txt").write_text("eins\nzwei\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"src.txt:2: a tab inside the sentence"):
        read_aligned(tmp_path / "src.txt", tmp_path / "tgt.txt")


# ---------------------------------------------------------------- the book's data


def _reference_split(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The book's own code path on numpy's global RNG, restoring the global state afterwards."""
    state = np.random.get_state()
    try:
        indices = np.arange(n)
        np.random.seed(1984)
        np.random.shuffle(indices)
    finally:
        np.random.set_state(state)
    split_at = n - n // 10
    return indices[:split_at], indices[split_at:]


def test_book_split_matches_the_books_global_rng_shuffle():
    path = book_file("date.txt")
    lines = path.read_text(encoding="utf-8").splitlines()
    ref_train, ref_test = _reference_split(len(lines))
    state = np.random.get_state()
    train_idx, test_idx = book_split_indices(len(lines))
    assert np.array_equal(train_idx, ref_train) and np.array_equal(test_idx, ref_test)
    assert np.array_equal(np.random.get_state()[1], state[1])

    train, dev, test = load_book(path)
    assert (len(lines), len(train), len(dev), len(test)) == (50_000, 44_500, 500, 5_000)
    first = lines[ref_test[0]]
    assert test[0] == (first[: first.index("_")], first[first.index("_") + 1 :])
    assert dev[-1] == read_book_pairs(path)[ref_train[-1]]
    assert test[0][0].endswith(" ") and len(test[0][0]) == 29 and len(test[0][1]) == 10
    full_train, no_dev, _ = load_book(path, dev_size=0)
    assert no_dev == [] and full_train == train + dev


def test_addition_keeps_padding_on_both_sides():
    pairs = read_book_pairs(book_file("addition.txt"))
    assert pairs[0] == ("16+75  ", "91  ")
    assert all(len(s) == 7 and len(t) == 4 and "_" not in t for s, t in pairs[:100])


def test_malformed_book_line_names_file_and_line(tmp_path):
    path = tmp_path / "date.txt"
    path.write_text("march 4, 1995  _1995-03-04\nno separator here\n", encoding="utf-8")
    with pytest.raises(DataError, match=re.escape(f"{path}:2:")):
        read_book_pairs(path)
    with pytest.raises(DataError, match="no such file"):
        load_book(tmp_path / "missing.txt")


def test_book_vocabulary_is_in_order_of_first_appearance(tmp_path):
    """The book's ids: characters of whole lines (question, '_', answer) as they first appear."""
    from attnseq.data.corpora.book import book_vocab

    lines = [f"{a}+{b}".ljust(5) + "_" + str(a + b).ljust(3) for a, b in [(1, 2), (10, 5), (3, 44)]]
    path = tmp_path / "sums.txt"
    path.write_text("".join(line + "\n" for line in lines))
    assert book_vocab(path).itos[4:10] == ["1", "+", "2", " ", "_", "3"]


def test_the_books_arrays_of_date_txt():
    """book_arrays gives what the book's load_data and chapter 8 feed its model (questions reversed)."""
    from attnseq.engines.numpy_engine.book import book_arrays

    path = book_file("date.txt")
    arrays = book_arrays(path)
    assert arrays.vocab_size == 59
    assert arrays.x_train.shape == (45000, 29) and arrays.t_train.shape == (45000, 11)
    assert arrays.x_test.shape == (5000, 29) and arrays.t_test.shape == (5000, 11)
    start = arrays.t_train[0, 0]
    assert (arrays.t_train[:, 0] == start).all() and (arrays.t_test[:, 0] == start).all()  # '_' starts
    from attnseq.data.corpora.book import book_vocab

    assert book_vocab(path).itos[4] == "s"  # 'september 27, 1994' opens the file: 's' is 0
