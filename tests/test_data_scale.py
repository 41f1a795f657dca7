"""Data at scale: corpora read a line at a time in memory that does not grow with them, split in
three streaming passes, generated in seeded blocks (the same corpus whoever makes which block),
sentencepiece's sample drawn by a reservoir, and progress shown as training's display shows it."""

from __future__ import annotations

import inspect
import io
import logging
import random
import sys
import tracemalloc
from collections import Counter
from datetime import date
from pathlib import Path

import pytest
from babel.dates import parse_pattern

import attnseq.data.corpora.generated as generated
import attnseq.data.corpus as corpus
import attnseq.data.splits as splits
import attnseq.files as files
from attnseq.cli import main
from attnseq.data.corpora.dates import ALL_LOCALES, DateBlocks, _parse_locale, date_patterns, normalize_spaces
from attnseq.data.corpora.generated import blocks, date_corpus
from attnseq.data.corpora.passages import MAX_WORDS, PassageBlocks
from attnseq.data.corpus import CorpusChecks, decode_lines, iter_aligned, iter_tsv, read_tsv
from attnseq.data.splits import SPLIT_NAMES, ShuffleBuffer, make_date_splits, split_corpus, split_pairs, write_split_dir
from attnseq.data.subword import sample_sentences
from attnseq.errors import DataError, UserError
from attnseq.files import open_outputs
from attnseq.progress import StepProgress


def tsv_lines(n: int, sources: int | None = None, seed: int = 0) -> list[str]:
    """``n`` lines ``source<TAB>target``; ``sources`` distinct sources (default: all distinct)."""
    rng = random.Random(seed)
    return [f"sentence number {i % (sources or n)} of {rng.random():.6f}\tsatz {i}\n" for i in range(n)]


def read_split(folder: Path) -> dict[str, list[tuple[str, str]]]:
    return {name: read_tsv(folder / f"{name}.tsv") for name in SPLIT_NAMES}


# -- reading ------------------------------------------------------------------------------------------
def old_decode_lines(data: bytes) -> list[str] | str:
    """How attnseq decoded a whole file before it streamed (the reference the reader must equal)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        return f"x:{line}: not valid UTF-8"
    lines = text.removeprefix("\ufeff").split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def test_lines_read_in_chunks_are_the_lines_of_the_whole_file():
    rng = random.Random(0)
    pieces = [b"a", b"\n", b"\r", b"\xef\xbb\xbf", b"\xc3\xa9", b"\xff", b"\t", b" ", b"\xc3"]
    for _ in range(3000):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        for chunk in (1, 2, 5, None):
            try:
                got = list(corpus._decoded(io.BytesIO(data), "x", chunk))
            except DataError as err:
                got = str(err)
            assert got == old_decode_lines(data), (data, chunk)


def test_a_corpus_is_read_a_line_at_a_time_in_bounded_memory(tmp_path, monkeypatch):
    path = tmp_path / "big.tsv"
    path.write_text("".join(tsv_lines(15_000)), encoding="utf-8")  # 0.6 MB
    monkeypatch.setattr(corpus, "CHUNK_BYTES", 1 << 13)
    assert inspect.isgenerator(iter_tsv(path)) and inspect.isgenerator(iter_aligned(path, path))
    tracemalloc.start()
    try:
        assert sum(1 for _ in iter_tsv(path)) == 15_000
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < path.stat().st_size / 8, peak  # a few chunks, never the file


def test_checks_count_what_they_find_and_name_the_first_lines(tmp_path, caplog):
    lines = ["source\ttarget"] + ["a b\tc"] * 3 + ["", "x\t ", " \ty"] * 3 + ["w " * 9 + "\tz"] * 2
    path = tmp_path / "c.tsv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    checks = CorpusChecks(str(path), long_words=8)
    with caplog.at_level(logging.WARNING):
        pairs = list(iter_tsv(path, checks=checks))
        checks.warn()
    assert (checks.lines, checks.pairs, len(pairs)) == (15, 6, 6)
    assert (checks.skipped.count, checks.skipped.first) == (9, [5, 6, 7, 8, 9])
    assert (checks.long.count, checks.long.first, checks.header) == (2, [14, 15], "source\ttarget")
    assert f"{path}: skipped 9 empty lines or pairs with an empty side (lines 5, 6, 7, 8, 9 and 4 more)" in caplog.text
    assert f"{path}:1: 'source\\ttarget' looks like a header row" in caplog.text
    assert f"{path}: 2 pair(s) with a side of more than 8 words (lines 14, 15), kept" in caplog.text


def test_a_line_that_cannot_be_read_stops_the_stream_naming_file_and_line(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_bytes(b"a\tb\n" * 5 + b"c\td\te\n" + b"f\tg\n")
    stream = iter_tsv(path)
    assert [next(stream) for _ in range(5)] == [("a", "b")] * 5  # read as it comes, before the bad line
    with pytest.raises(DataError, match=r"bad.tsv:6: expected 'source<TAB>target', found 2 tabs"):
        next(stream)
    path.write_bytes(b"a\tb\n" * 3 + b"\xff\tx\n")
    with pytest.raises(DataError, match=r"bad.tsv:4: not valid UTF-8"):
        read_tsv(path)
    assert decode_lines(b"\xef\xbb\xbfa\r\nb", "x") == ["a", "b"]
    (tmp_path / "s").write_text("1\n2\n3\n")
    (tmp_path / "t").write_text("1\n2\n")
    with pytest.raises(DataError, match=r"s has 3 lines but .*t has 2"):
        list(iter_aligned(tmp_path / "s", tmp_path / "t"))


# -- splitting ------------------------------------------------------------------------------------------
def split_file(tmp_path: Path, lines: list[str], name: str, *args, **kwargs) -> dict[str, list]:
    source = tmp_path / f"{name}.tsv"
    if not source.exists():
        source.write_text("".join(lines), encoding="utf-8")
    split_corpus(lambda checks: iter_tsv(source, checks=checks), tmp_path / name, *args, **kwargs)
    return read_split(tmp_path / name)


def test_a_split_is_complete_disjoint_deterministic_and_exact(tmp_path):
    lines = tsv_lines(3000, sources=1200, seed=1)
    parts = split_file(tmp_path, lines, "a", 0.1, 0.05, seed=3)
    every = [pair for name in SPLIT_NAMES for pair in parts[name]]
    assert Counter(every) == Counter(tuple(line.rstrip("\n").split("\t")) for line in lines)  # complete
    sources = {name: {s for s, _ in parts[name]} for name in SPLIT_NAMES}
    assert not (
        sources["train"] & sources["dev"] or sources["train"] & sources["test"] or sources["dev"] & sources["test"]
    )  # a source in one split only
    assert len(parts["dev"]) in range(300, 303) and len(parts["test"]) in range(150, 153)  # groups of 2-3 pairs
    again = split_file(tmp_path, lines, "a", 0.1, 0.05, seed=3, overwrite=True)
    assert again == parts
    assert split_pairs(every, 0.1, 0.05, seed=3) != tuple(parts[name] for name in SPLIT_NAMES)  # another order in
    assert split_file(tmp_path, lines, "b", 0.1, 0.05, seed=4)["dev"] != parts["dev"]
    unique = split_file(tmp_path, tsv_lines(1000, seed=2), "c", 70, 30, seed=1)
    assert [len(unique[name]) for name in SPLIT_NAMES] == [900, 70, 30]  # counts exact: sources distinct


def test_split_pairs_in_memory_is_the_split_of_the_file(tmp_path):
    lines = tsv_lines(500, sources=200, seed=5)
    parts = split_file(tmp_path, lines, "f", 0.2, 0.1, seed=7)
    pairs = [tuple(line.rstrip("\n").split("\t")) for line in lines]
    assert split_pairs(pairs, 0.2, 0.1, seed=7) == tuple(parts[name] for name in SPLIT_NAMES)


def traced_peak(work) -> int:
    """The most memory (bytes) Python held at once while ``work()`` ran."""
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_split_holds_a_bounded_part_of_the_corpus_in_memory(tmp_path, monkeypatch):
    """The same peak for a corpus 4 times as large, and far below what holding its pairs takes
    (the buffers made small, so that a small corpus shows it)."""
    monkeypatch.setattr(corpus, "CHUNK_BYTES", 1 << 12)
    monkeypatch.setattr(splits, "SHUFFLE_PAIRS", 50)
    monkeypatch.setattr(splits, "HASH_BUCKET_BITS", 8)
    monkeypatch.setattr(files, "STREAM_BUFFER", 1 << 12)
    peaks = {}
    for n in (2000, 8000):
        source = tmp_path / f"{n}.tsv"
        source.write_text("".join(tsv_lines(n)), encoding="utf-8")
        read = lambda checks, source=source: iter_tsv(source, checks=checks)  # noqa: E731
        peaks[n] = traced_peak(lambda read=read, n=n: split_corpus(read, tmp_path / f"out{n}", 100, 100))
    held = traced_peak(lambda: read_tsv(tmp_path / "8000.tsv"))
    assert peaks[8000] < 1.3 * peaks[2000], peaks  # does not grow with the corpus
    assert peaks[8000] < held / 4, (peaks, held)


def test_the_shuffle_buffer_is_uniform_when_all_fits_and_local_beyond():
    firsts = Counter()
    for seed in range(600):
        buffer = ShuffleBuffer(random.Random(seed), 10)
        assert all(buffer.push(i) is None for i in range(6))
        out = buffer.drain()
        assert sorted(out) == list(range(6))
        firsts[out[0]] += 1
    assert all(70 <= firsts[i] <= 130 for i in range(6)), firsts  # 100 each
    buffer = ShuffleBuffer(random.Random(0), 10)
    out = [x for i in range(1000) if (x := buffer.push(i)) is not None] + buffer.drain()
    assert sorted(out) == list(range(1000)) and out != list(range(1000))


def test_data_split_command_reports_and_names_the_file(tmp_path, capsys, caplog):
    source = tmp_path / "in.tsv"
    source.write_text("".join(tsv_lines(40)) + "\n" + "word " * 300 + "\tlong\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert main(["data", "split", "--input", str(source), "--out", str(tmp_path / "out")]) == 0
    assert f"{source}: skipped 1 empty lines or pairs with an empty side (line 41)" in caplog.text
    assert f"{source}: 1 pair(s) with a side of more than 256 words (line 42), kept" in caplog.text
    assert "wrote 37 train, 2 dev, 2 test pairs" in capsys.readouterr().out
    assert (
        main(
            [
                "-q",
                "data",
                "split",
                "--input",
                str(source),
                "--out",
                str(tmp_path / "o2"),
                "--dev",
                "30",
                "--test",
                "20",
            ]
        )
        == 2
    )
    assert "in.tsv: --dev/--test: 30 dev and 20 test pairs asked of a corpus of 41" in capsys.readouterr().err
    assert not (tmp_path / "o2").exists()


# -- writing as it comes ----------------------------------------------------------------------------------
def test_outputs_streamed_appear_whole_or_not_at_all(tmp_path):
    with open_outputs(tmp_path / "new" / "deeper", ["a.tsv", "b.tsv"]) as streams:
        streams["a.tsv"].write("x\ty\n")
        assert not (tmp_path / "new" / "deeper" / "a.tsv").exists()  # a temporary file until the end
    assert (tmp_path / "new" / "deeper" / "a.tsv").read_text() == "x\ty\n"
    assert sorted(p.name for p in (tmp_path / "new" / "deeper").iterdir()) == ["a.tsv", "b.tsv"]
    with pytest.raises(RuntimeError):
        with open_outputs(tmp_path / "other" / "deeper", ["a.tsv"]) as streams:
            streams["a.tsv"].write("half")
            raise RuntimeError("stopped")
    assert not (tmp_path / "other").exists()  # nothing left, not even the folders it made
    with pytest.raises(UserError, match="holds files already"):
        with open_outputs(tmp_path / "new" / "deeper", ["a.tsv"]):
            pass


def test_a_full_disk_while_streaming_is_one_line_naming_the_folder(tmp_path):
    with pytest.raises(UserError, match=rf"^{tmp_path / 'out'}: no space left on the device"):
        with open_outputs(tmp_path / "out", ["a.tsv"]):
            raise OSError(28, "No space left on device")  # as write() raises it: no file name
    assert not (tmp_path / "out").exists()


# -- generating ----------------------------------------------------------------------------------------------
def test_dates_are_written_as_babel_writes_them():
    patterns = date_patterns(list(ALL_LOCALES) + ["en_GB"])
    rng = random.Random(0)
    days = [
        date.fromordinal(rng.randint(date(1950, 1, 1).toordinal(), date(2049, 12, 31).toordinal())) for _ in range(12)
    ] + [date(2000, 2, 29), date(1950, 1, 1), date(2049, 12, 31)]
    for pattern in patterns:
        for day in days:
            babel = normalize_spaces(parse_pattern(pattern.pattern).apply(day, _parse_locale(pattern.locale)))
            assert pattern.render(day) == babel, (pattern, day)


def test_data_dates_writes_what_make_date_splits_gives_at_small_sizes(tmp_path, capsys):
    assert (
        main(
            [
                "-q",
                "data",
                "dates",
                "--out",
                str(tmp_path / "cli"),
                "--train",
                "300",
                "--dev",
                "20",
                "--test",
                "20",
                "--seed",
                "4",
            ]
        )
        == 0
    )
    write_split_dir(tmp_path / "list", *make_date_splits(300, 20, 20, seed=4))
    for name in SPLIT_NAMES:
        assert (tmp_path / "cli" / f"{name}.tsv").read_bytes() == (tmp_path / "list" / f"{name}.tsv").read_bytes()


def test_date_blocks_depend_on_the_seed_and_index_alone():
    a, b = DateBlocks(3), DateBlocks(3)
    forward = [a(i, 50) for i in range(1, 4)]
    backward = [b(i, 50) for i in (3, 2, 1)][::-1]
    assert forward == backward  # whoever makes them, in any order
    assert DateBlocks(4)(1, 50) != forward[0] and forward[0] != forward[1]


def test_a_large_date_corpus_keeps_its_head_and_never_repeats_dev_or_test(monkeypatch, tmp_path):
    monkeypatch.setattr(generated, "DISTINCT_DATES", 120)
    monkeypatch.setattr(generated, "BLOCK_PAIRS", 100)
    parts = {name: "".join(text for _, text in made) for name, made in date_corpus(450, 30, 30, seed=2).items()}
    head, dev, test = make_date_splits(120, 30, 30, seed=2)
    train = [tuple(line.split("\t")) for line in parts["train"].splitlines()]
    assert len(train) == 450 and train[:120] == head
    assert parts["dev"] == "".join(f"{s}\t{t}\n" for s, t in dev)
    held = {s for s, _ in dev + test}
    assert not held & {s for s, _ in train}
    targets = {}
    assert all(targets.setdefault(s, t) == t for s, t in train)  # a source means one date
    again = {name: "".join(text for _, text in made) for name, made in date_corpus(450, 30, 30, seed=2).items()}
    assert again == parts


@pytest.mark.slow
def test_the_corpus_is_the_same_whatever_number_of_processes_makes_it(monkeypatch):
    """Blocks made by two spawned processes, in whatever order they finish, are written in order."""
    monkeypatch.setattr(generated, "BLOCK_PAIRS", 500)
    one = list(blocks(DateBlocks(5), 4000, workers=1))
    two = list(blocks(DateBlocks(5), 4000, workers=2))
    assert one == two and len(one) == 8 and sum(n for n, _ in one) == 4000


def messages(n: int, seed: int = 0) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    return [(" ".join(f"w{rng.randrange(1000)}" for _ in range(rng.randint(1, 9))), f"m{i}") for i in range(n)]


def test_passages_have_the_lengths_of_news_sentences_and_their_split_s_messages():
    pool = messages(300)
    made = PassageBlocks(pool, seed=1, split="train")(0, 2000)
    words = [len(s.split()) for s, _ in made]
    assert 22 <= sum(words) / len(words) <= 28 and max(words) <= MAX_WORDS + 9
    assert {t for _, target in made for t in target.split()} <= {t for _, t in pool}
    assert PassageBlocks(pool, seed=1, split="train")(0, 50) == made[:50]  # deterministic
    assert PassageBlocks(pool, seed=1, split="dev")(0, 50) != made[:50]


def test_data_passages_makes_dev_and_test_of_messages_no_training_passage_holds(tmp_path, capsys):
    import polib

    catalog = polib.POFile()
    catalog.metadata = {"Content-Type": "text/plain; charset=UTF-8"}
    for source, target in messages(400, seed=3):
        catalog.append(polib.POEntry(msgid=source + " " + target, msgstr=target.upper()))
    catalog.save(str(tmp_path / "de.po"))
    argv = [
        "-q",
        "data",
        "passages",
        "--lang",
        "de",
        "--from",
        str(tmp_path / "de.po"),
        "--train",
        "500",
        "--dev",
        "20",
        "--test",
        "20",
        "--out",
    ]
    assert main(argv + [str(tmp_path / "p")]) == 0
    parts = read_split(tmp_path / "p")
    assert [len(parts[name]) for name in SPLIT_NAMES] == [500, 20, 20]
    used = {name: {m for _, t in parts[name] for m in t.split()} for name in SPLIT_NAMES}
    assert not used["train"] & used["dev"] and not used["train"] & used["test"]
    assert main(argv + [str(tmp_path / "q")]) == 0
    assert read_split(tmp_path / "q") == parts


# -- sentencepiece's sample ------------------------------------------------------------------------------------
def test_the_reservoir_sample_is_uniform_deterministic_and_in_corpus_order():
    texts = [f"text {i}" for i in range(200)]
    chosen = Counter()
    for seed in range(300):
        sample = sample_sentences(iter(texts), 20, seed=seed)  # a stream, read once
        assert len(sample) == 20 and sample == sorted(sample, key=texts.index)
        chosen.update(sample)
    assert all(10 <= chosen[t] <= 55 for t in texts), chosen.most_common(3)  # 30 each
    assert sample_sentences(texts, 20, seed=1) == sample_sentences(texts, 20, seed=1)
    assert sample_sentences(["a", " ", "b"], 5) == ["a", "b"]  # all of them when they fit, blanks left out


# -- progress ---------------------------------------------------------------------------------------------------
def test_progress_is_a_bar_on_a_terminal_log_lines_elsewhere_nothing_when_quiet(monkeypatch, caplog):
    with caplog.at_level(logging.INFO, logger="attnseq"):
        with StepProgress("step", total=10, interval=0) as shown:
            assert shown.bar is None
            shown.update(4)
        assert "step: 4 of 10 pairs, " in caplog.text and "pairs/s" in caplog.text
        monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
        with StepProgress("step", total=10) as shown:
            assert shown.bar is not None
            assert list(shown.over(range(10), every=3)) == list(range(10)) and shown.done == 10
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="attnseq"):  # -q
        with StepProgress("step", total=10, interval=0) as shown:
            shown.update(4)
            assert shown.bar is None
    assert not caplog.text


def test_the_epoch_display_is_a_step_progress_counting_batches(monkeypatch, caplog):
    """Training's display follows the same rule, its log line the batch of the epoch and the
    figures; resumed mid-epoch, its bar and count start from the batches already trained."""
    from attnseq.train.loop import ProgressDisplay

    with caplog.at_level(logging.INFO, logger="attnseq"):
        display = ProgressDisplay(7, 3, "epoch 1/2", interval=0)
        display.update(2, loss="2.31")
        display.close()
    assert "epoch 1/2: batch 5/7  loss 2.31" in caplog.text
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    with caplog.at_level(logging.INFO, logger="attnseq"):
        display = ProgressDisplay(7, 3, "epoch 1/2")
        assert display.bar.n == 3 and display.bar.total == 7
        display.close()


@pytest.mark.slow
def test_reading_is_linear_in_the_input_whatever_its_line_lengths(tmp_path):
    """A file of one line of 128 MB reads (corpus.iter_lines, and texts.TsvText cut into parts) in
    about the time a file of the same size in short lines takes: no step re-joins or re-searches
    what it has read for each new block (that made a line of a gigabyte quadratic)."""
    import time

    from attnseq.data.texts import TsvText

    size = 128 << 20
    long, short = tmp_path / "long.tsv", tmp_path / "short.tsv"
    long.write_bytes(b"a" * (size - 3) + b"\tb\n")
    line = b"a" * 60 + b"\t" + b"b" * 37 + b"\n"  # 99 bytes a line
    short.write_bytes(line * (size // len(line)))

    def seconds(path: Path) -> float:
        started = time.perf_counter()
        assert sum(1 for _ in corpus.iter_lines(path)) >= 1
        assert sum(end - start for start, end, _ in TsvText(path).parts()) == path.stat().st_size
        return time.perf_counter() - started

    seconds(short)  # the page cache warm for both
    normal, one_line = seconds(short), seconds(long)
    assert one_line < 3 * normal + 1.0, (one_line, normal)
    assert corpus.read_lines(long)[0].endswith("\tb") and len(corpus.read_lines(long)) == 1
