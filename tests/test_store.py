"""The training data prepared once (data.prepare): a store of the pipeline's very ids, made by
one or several processes, found again in the cache without tokenising, made again when the data
or the settings change; what reading the text says (and refuses) said the same way."""

from __future__ import annotations

import logging
import mmap
import re
import threading
from operator import attrgetter
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import reverse_pairs, write_tsv

import attnseq.data.prepare as prepare
import attnseq.data.texts as texts
from attnseq.config import load_config
from attnseq.data.batching import collate
from attnseq.data.corpus import CorpusChecks, read_tsv
from attnseq.data.pipeline import TextPipeline
from attnseq.data.prepare import prepare_training
from attnseq.data.texts import PairsText, TsvText
from attnseq.errors import DataError, UserError


def corpus(path: Path) -> Path:
    """A TSV file of reversal pairs of 1 to 12 symbols, with blank lines, a pair with an empty
    side and a few long pairs among them."""
    pairs = [f"{s}\t{t}" for s, t in reverse_pairs(600, seed=5, symbols="abcdefgh xy", lengths=(1, 12))]
    pairs[10:10] = ["", "  \tonly a target"]
    pairs[300:300] = ["\u00e9t\u00e9\tsummer", "e\u0301te\u0301\tsummer"]  # one word, composed and decomposed
    path.write_text("\n".join(pairs) + "\n", encoding="utf-8")
    return path


def settings(path: Path, cache: Path, *extra: str):
    return load_config(None, [f"data.train={path}", f"data.cache={cache}", "data.dir=", *extra]).data


@pytest.fixture
def counting(monkeypatch) -> list[int]:
    """How many times the training text was tokenised (run_parts called)."""
    calls: list[int] = []
    run = prepare.run_parts

    def counted(job, processes):
        calls.append(processes)
        return run(job, processes)

    monkeypatch.setattr(prepare, "run_parts", counted)
    return calls


@pytest.mark.parametrize(
    "processes, extra",
    [
        (1, ()),
        (2, ("data.tokenizer=word", "data.shared_vocab=true")),
        (2, ("data.tokenizer=sentencepiece", "data.tokenizer.vocab_size=30", "data.tokenizer.max_sentences=300")),
        (
            2,
            (
                "data.reverse_source=true",
                "data.max_source_len=8",
                "data.max_target_len=10",
                "data.min_freq=3",
                "data.lowercase=true",
            ),
        ),
    ],
    ids=["char", "word-shared", "sentencepiece", "reversed-limits-min-freq"],
)
def test_the_store_holds_the_pipelines_ids_of_every_pair_kept(tmp_path, monkeypatch, counting, extra, processes):
    """Made in parts of 500 bytes by one or two processes: the vocabularies TextPipeline.fit
    builds from the pairs in memory, and each pair's ids its encode_pairs gives, in order."""
    monkeypatch.setattr(texts, "PART_BYTES", 500)
    monkeypatch.setattr(prepare, "PROCESS_BYTES", 1000)
    path = corpus(tmp_path / "train.tsv")
    data = settings(path, tmp_path / "cache", f"data.processes={processes}", *extra)
    pipeline, store = prepare_training(data, TsvText(path))
    assert counting == [processes]
    pairs = read_tsv(path)
    expected = TextPipeline.fit(data, pairs, tmp_path)
    assert pipeline.src_vocab == expected.src_vocab and pipeline.tgt_vocab == expected.tgt_vocab
    examples = expected.encode_pairs(pairs, data.max_source_len, data.max_target_len)
    assert len(store) == len(examples) < len(pairs) + ("data.min_freq=3" not in extra)
    assert store.examples() == examples
    assert store.src_lengths.tolist() == [len(e.src) for e in examples]
    unknown = sum((e.src + e.tgt).count(3) for e in examples) / sum(len(e.src) + len(e.tgt) for e in examples)
    assert store.unknown_share == pytest.approx(unknown) and (unknown > 0) == ("data.min_freq=3" in extra)


def test_a_batch_read_from_the_store_is_the_batch_of_its_examples(tmp_path):
    path = write_tsv(tmp_path / "train.tsv", reverse_pairs(200, seed=2, lengths=(1, 9)))
    _, store = prepare_training(settings(path, tmp_path / "cache"), TsvText(path))
    for index in ([0], [5, 3, 199, 7], list(range(0, 200, 3))):
        a, b = store.batch(np.array(index)), collate(store.examples(index), index)
        for name in ("source.ids", "source.mask", "tgt_in", "tgt_out", "tgt_mask"):
            assert torch.equal(attrgetter(name)(a), attrgetter(name)(b)), name
        assert a.index == b.index == index


def test_a_second_start_maps_the_store_without_tokenising(tmp_path, counting):
    path = corpus(tmp_path / "train.tsv")
    data = settings(path, tmp_path / "cache")
    first, store = prepare_training(data, TsvText(path))
    again, mapped = prepare_training(data, TsvText(path))  # a second start
    resumed, kept = prepare_training(data, TsvText(path), TextPipeline.load(data, store.folder.parent / "pipeline"))
    assert counting == [1]  # tokenised once
    assert mapped.folder == kept.folder == store.folder and isinstance(mapped.src_lengths.base.obj, mmap.mmap)
    assert again.src_vocab == resumed.src_vocab == first.src_vocab
    elsewhere = tmp_path / "copy.tsv"  # the same bytes in another file: the same store
    elsewhere.write_bytes(path.read_bytes())
    assert prepare_training(data, TsvText(elsewhere))[1].folder == store.folder and counting == [1]


def test_processes_preparing_the_same_data_wait_for_the_first_and_map_its_store(tmp_path, counting):
    """As torchrun's processes do at once: one tokenises, the other waits on the lock, then maps."""
    path = corpus(tmp_path / "train.tsv")
    data = settings(path, tmp_path / "cache")
    folders: list[Path] = []
    starts = [
        threading.Thread(target=lambda: folders.append(prepare_training(data, TsvText(path))[1].folder))
        for _ in range(2)
    ]
    for start in starts:
        start.start()
    for start in starts:
        start.join()
    assert counting == [1] and len(folders) == 2 and folders[0] == folders[1]


@pytest.mark.parametrize("change", ["data", "tokenizer", "limit", "vocabulary"])
def test_the_store_is_made_again_when_the_data_or_the_settings_change(tmp_path, counting, change):
    path = corpus(tmp_path / "train.tsv")
    data = settings(path, tmp_path / "cache")
    pipeline, store = prepare_training(data, TsvText(path))
    given = None
    if change == "data":  # the same size, a byte changed
        text = path.read_bytes()
        path.write_bytes(text[:40] + (b"a" if text[40:41] != b"a" else b"b") + text[41:])
    elif change == "tokenizer":
        data = settings(path, tmp_path / "cache", "data.tokenizer=word")
    elif change == "limit":
        data = settings(path, tmp_path / "cache", "data.max_source_len=5")
    else:  # a resumed run whose vocabulary is not the one the data gives (its data changed since)
        given = TextPipeline.fit(data, reverse_pairs(50, seed=9, symbols="abc"), tmp_path)
    _, again = prepare_training(data, TsvText(path), given)
    assert counting == [1, 1] and again.folder != store.folder
    if change == "vocabulary":
        assert again.folder.parent == store.folder.parent  # the same text and settings: beside it
        assert again.examples() == given.encode_pairs(read_tsv(path))


def test_what_the_text_says_is_said_again_at_every_start(tmp_path, caplog, counting):
    path = corpus(tmp_path / "train.tsv")
    data = settings(path, tmp_path / "cache", "data.max_source_len=10")
    said = []
    for _ in range(2):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            prepare_training(data, TsvText(path))
        said.append([r.getMessage() for r in caplog.records if r.levelno == logging.WARNING])
    assert counting == [1] and said[0] == said[1] and len(said[0]) == 2
    caplog.clear()
    with caplog.at_level(logging.WARNING):  # what the in-memory path says: reading, then encoding
        pairs = read_tsv(path)
        TextPipeline.fit(data, pairs, tmp_path).encode_pairs(pairs, 10, data.max_target_len, str(path))
    assert said[0] == [r.getMessage() for r in caplog.records] and "(lines 11, 12, " in said[0][0]
    assert said[0][1].startswith(f"{path}: dropped ") and " and " in said[0][1]
    elsewhere = tmp_path / "copy.tsv"  # the same bytes: the same store, the file named as given
    elsewhere.write_bytes(path.read_bytes())
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        prepare_training(data, TsvText(elsewhere))
    assert [r.getMessage() for r in caplog.records] == [m.replace(str(path), str(elsewhere)) for m in said[0]]
    assert counting == [1]


def test_a_bad_line_in_any_part_is_named_by_its_line_in_the_file(tmp_path, monkeypatch):
    monkeypatch.setattr(texts, "PART_BYTES", 300)
    monkeypatch.setattr(prepare, "PROCESS_BYTES", 1000)
    path = corpus(tmp_path / "train.tsv")
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[400] = "no tab here"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    data = settings(path, tmp_path / "cache", "data.processes=2")
    with pytest.raises(DataError, match=rf"^{path}:401: expected 'source<TAB>target', found 0 tabs$"):
        prepare_training(data, TsvText(path))
    path.write_bytes(path.read_bytes().replace(b"no tab here", b"\xff\tx"))
    with pytest.raises(DataError, match=rf"^{path}:401: not valid UTF-8$"):
        prepare_training(data, TsvText(path))
    assert not list((tmp_path / "cache").rglob("store-*"))  # nothing half made is kept


def test_the_parts_of_a_file_end_at_line_ends_and_number_its_lines(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_bytes(b"".join(b"%d\t%s\r\n" % (i, b"x" * (i % 37 + 1)) for i in range(1, 400)) + b"400\tlast")
    text = TsvText(path)
    parts = list(text.parts(100))
    assert parts[0][0] == 0 and parts[-1][1] == path.stat().st_size and len(parts) > 50
    assert all(a[1] == b[0] for a, b in zip(parts, parts[1:]))
    read = [pair for part in parts for pair in text.pairs(part, CorpusChecks(text.name))]
    assert [number for number, _ in read] == list(range(1, 401))
    assert [pair for _, pair in read] == read_tsv(path)
    assert text.head(7) == read_tsv(path)[:7] and text.head(10**6) == read_tsv(path)  # what a preset is chosen by


def test_pairs_in_memory_are_prepared_alike(tmp_path):
    """A data source that splits its file itself (the book's) gives its pairs in memory."""
    pairs = reverse_pairs(100, seed=4)
    data = settings(tmp_path / "unused.tsv", tmp_path / "cache")
    pipeline, store = prepare_training(data, PairsText(pairs, "pairs"))
    assert store.examples() == pipeline.encode_pairs(pairs)
    assert prepare_training(data, PairsText(pairs[:-1], "pairs"))[1].folder != store.folder


@pytest.mark.parametrize("chosen_by", ["data.cache", "$ATTNSEQ_CACHE", "$XDG_CACHE_HOME", "the default"])
def test_a_cache_that_cannot_be_written_is_one_line_naming_the_setting(tmp_path, monkeypatch, chosen_by):
    """The folder and what chose it (the setting, a variable of the environment, or the default
    under a home folder that is a file), and what to do."""
    path = write_tsv(tmp_path / "train.tsv", reverse_pairs(20))
    (tmp_path / "file").write_text("not a folder")
    for name in ("ATTNSEQ_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    if chosen_by.startswith("$"):
        monkeypatch.setenv(chosen_by[1:], str(tmp_path / "file"))
    monkeypatch.setenv("HOME", str(tmp_path / "file"))
    data = settings(path, tmp_path / "file" / "cache" if chosen_by == "data.cache" else "")
    with pytest.raises(
        UserError,
        match=rf"^{tmp_path / 'file'}\S* \({re.escape(chosen_by)}\): cannot keep the "
        r"prepared training data there \(.*\); set data.cache to a folder you can write$",
    ):
        prepare_training(data, TsvText(path))


def test_more_processes_than_cpus_is_one_line_naming_the_key(tmp_path, monkeypatch):
    """data.processes above the CPUs this process may use: a ConfigError naming the key (they gain
    nothing; a corpus of gigabytes has thousands of parts, each would have had its process)."""
    from attnseq.errors import ConfigError

    path = write_tsv(tmp_path / "train.tsv", reverse_pairs(20))
    monkeypatch.setattr(prepare, "usable_cpus", lambda: 2)
    with pytest.raises(ConfigError, match=r"^data.processes: 3 processes on the 2 CPUs .* give at most 2 \(0: one per"):
        prepare_training(settings(path, tmp_path / "cache", "data.processes=3"), TsvText(path))
    assert prepare_training(settings(path, tmp_path / "cache", "data.processes=2"), TsvText(path))[1]
