"""Inputs the model never saw get the right answer or one clear line, never a silent made-up one:
the book's fixed-width sources laid out at inference as at training, pieces outside the
vocabulary counted and reported, Unicode normalised alike at training and inference, blank
inputs given blank outputs, and evaluate scoring the references as the user gave them."""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path

import numpy as np
import pytest
from helpers import LEARN, ROOT, TINY, reverse_pairs, write_tsv
from learning import at_least, learns

import attnseq
from attnseq.cli import main
from attnseq.config import load_config
from attnseq.data.pipeline import PIPELINE_FILE, FixedWidth, TextPipeline, normalise
from attnseq.decoding.common import Hypothesis
from attnseq.translator import Translator

BOOK = str(ROOT / "configs" / "book-attention.yaml")
PRESET = str(ROOT / "configs" / "luong2015-general.yaml")
WIDTH = 8


def sets(*settings: str) -> list[str]:
    return [x for s in settings for x in ("--set", s)]


def write_book_file(path: Path, lines: int = 300, seed: int = 5) -> Path:
    """The book's format: questions (2-6 letters) padded with spaces to 8, '_', the answer (the
    letters reversed) padded to 6."""
    rng = random.Random(seed)
    rows = []
    for _ in range(lines):
        word = "".join(rng.choice("abcdef") for _ in range(rng.randint(2, 6)))
        rows.append(f"{word:<{WIDTH}}_{word[::-1]:<6}\n")
    path.write_text("".join(rows))
    return path


@pytest.fixture(scope="module")
def book_runs(tmp_path_factory) -> dict[str, Path]:
    """Three steps of the book's preset on a book-format file: through ``attnseq data book``
    (TSV, the torch engine), and the file itself (data.format book) with each engine."""
    root = tmp_path_factory.mktemp("book")
    book_file = write_book_file(root / "toy.txt")
    assert main(["-q", "data", "book", "--file", str(book_file), "--out", str(root / "D"), "--dev-size", "20"]) == 0
    small = [*TINY, "train.max_steps=3", "train.eval_max_sentences=10", "decode.max_len=8"]
    runs = {"tsv": (root / "D", []), "book": (book_file, []), "numpy": (book_file, ["engine=numpy"])}
    for name, (data, extra) in runs.items():
        assert main(["-q", "train", BOOK, "--data", str(data), "--out", str(root / name), *sets(*small, *extra)]) == 0
    return {name: root / name for name in runs}


@pytest.mark.parametrize("run", ["tsv", "book", "numpy"])
def test_a_fixed_width_run_lays_inputs_out_as_its_training_sources(book_runs, run):
    """The run records the width and padding of its sources; an unpadded input is read padded,
    so it gets the answer of its padded form (torch and numpy engines alike)."""
    recorded = json.loads((book_runs[run] / PIPELINE_FILE).read_text())
    assert recorded == {"unicode": "nfc", "fixed_width": {"width": WIDTH, "pad": " "}}
    model = attnseq.load(book_runs[run])
    unpadded, padded = model.search(["abc", "abc" + " " * 5, "abc  "], keep_attention=True)[:2]
    assert unpadded.source_tokens == padded.source_tokens == list("abc     ")
    assert model.translate(["abc", "abc  ", "abc     "]) == [padded.outputs[0]] * 3
    assert unpadded.attention[0].shape[1] == WIDTH  # what the encoder read: the padded source


def test_an_input_wider_than_the_training_sources_is_reported(book_runs, caplog):
    model = attnseq.load(book_runs["tsv"])
    with caplog.at_level(logging.WARNING, logger="attnseq"):
        result = model.search(["abc", "abcdefabcdef"])
    assert "input 2 wider than the run's training sources (all 8 characters, padded with ' ')" in caplog.text
    assert result[1].source_tokens == list("abcdefabcdef")


def test_fixed_width_is_recorded_only_for_padded_character_sources():
    assert FixedWidth.of(["ab  ", "abc ", "abcd"]) == FixedWidth(4, " ")
    assert FixedWidth.of(["ab", "abc"]) is None  # widths differ
    assert FixedWidth.of(["abc", "cba"]) is None  # one width, but no padding
    assert FixedWidth.of(["ab "]) is None  # one source tells nothing
    assert FixedWidth(4).lay_out("ab") == "ab  " and FixedWidth(4).lay_out("ab      ") == "ab  "
    assert FixedWidth(4).lay_out("abcdef") == "abcdef" and FixedWidth(4).lay_out("   ") == ""
    pairs = [("ab  ", "x"), ("abc ", "y")]
    for settings, width in [([], FixedWidth(4)), (["data.strip=true"], None), (["data.tokenizer=word"], None)]:
        config = load_config(BOOK, settings).data
        assert TextPipeline.fit(config, pairs, Path("/nonexistent")).fixed_width == width, settings


@pytest.mark.slow
@learns
def test_a_trained_fixed_width_run_translates_unpadded_inputs_right(tmp_path):
    """Sources padded with spaces to 8 (the book's layout) and reversed: trained to translate
    them, the run translates the unpadded test sources (which it never saw) as well as the padded."""
    data = tmp_path / "data"
    data.mkdir()
    for name, n, seed in (("train", 2000, 1), ("dev", 100, 2), ("test", 100, 3)):
        write_tsv(data / f"{name}.tsv", [(f"{s:<{WIDTH}}", t) for s, t in reverse_pairs(n, seed=seed, lengths=(3, 6))])
    settings = [
        *TINY,
        *LEARN,
        "data.strip=false",
        "data.reverse_source=false",
        "model.encoder.bidirectional=true",
        "model.bridge=linear",
        "model.attention=general",
        "model.init=default",
    ]  # as test_cli's
    assert main(["-q", "train", BOOK, "--data", str(data), "--out", str(tmp_path / "run"), *sets(*settings)]) == 0
    model = attnseq.load(tmp_path / "run")
    test = reverse_pairs(100, seed=3, lengths=(3, 6))
    padded = model.evaluate([(f"{s:<{WIDTH}}", t) for s, t in test])["exact_match"]
    unpadded = model.evaluate(test)["exact_match"]
    at_least("padded test exact match", padded, 0.95)
    assert unpadded == padded
    (tmp_path / "run" / PIPELINE_FILE).unlink()  # as a run written before the layout was recorded
    assert attnseq.load(tmp_path / "run").evaluate(test)["exact_match"] < padded


# -- pieces outside the vocabulary ------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["local_p", "numpy"])
def test_unknown_pieces_are_listed_per_input_and_warned_in_one_line(quick_runs, kind, tmp_path, caplog, capsys):
    model = attnseq.load(quick_runs[kind])
    results = model.search(["abc", "abzq", "x\x00"])
    assert [r.unknown for r in results] == [[], ["z", "q"], ["x", "\x00"]]
    source = tmp_path / "in.txt"
    source.write_text("abc\n" + "abz\n" * 40 + "q\n")
    with caplog.at_level(logging.WARNING, logger="attnseq"):
        assert main(["translate", str(quick_runs[kind]), "--input", str(source)]) == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    warnings = [w for w in warnings if "get an empty output" not in w]  # (a two-step model may answer nothing)
    assert warnings == [
        "translate: 41 of 42 lines (2, 3, 4, 5, 6 and 36 more) hold pieces outside the model's "
        "vocabulary, each read as unknown: 'z' x40, 'q'"
    ]
    assert len(capsys.readouterr().out.splitlines()) == 42

    metrics = model.evaluate([("abc", "cba"), ("abz", "zba"), ("zz", "zz")])
    assert metrics["unknown_sources"] == [2, 3] and metrics["unknown_pieces"] == {"z": 3}


def test_translate_warns_on_the_attnseq_logger(quick_runs, caplog):
    with caplog.at_level(logging.WARNING, logger="attnseq"):
        assert attnseq.load(quick_runs["local_p"]).translate(["abc", "abz"])[0] is not None
    assert "1 of 2 inputs (2) hold pieces outside the model's vocabulary, each read as unknown: 'z'" in caplog.text


# -- Unicode normal forms -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def accented_runs(tmp_path_factory) -> dict[str, Path]:
    """Two-step runs on words with é (composed, as most text is), NFC (the default) and unicode: none."""
    root = tmp_path_factory.mktemp("unicode")
    data = root / "data"
    data.mkdir()
    pairs = [(w.replace("a", "\u00e9"), w[::-1]) for w, _ in reverse_pairs(200, seed=1)]
    for name in ("train", "dev", "test"):
        write_tsv(data / f"{name}.tsv", pairs)
    runs = {
        "nfc": (PRESET, []),
        "none": (PRESET, ["data.unicode=none"]),
        "numpy": (BOOK, ["engine=numpy", "data.strip=true", "decode.max_len=10"]),
    }
    for name, (config, extra) in runs.items():
        assert (
            main(
                [
                    "-q",
                    "train",
                    config,
                    "--data",
                    str(data),
                    "--out",
                    str(root / name),
                    *sets(*TINY, "train.max_steps=2", "train.eval_max_sentences=5", *extra),
                ]
            )
            == 0
        )
    return {name: root / name for name in runs}


@pytest.mark.parametrize("run", ["nfc", "numpy"])
def test_composed_and_decomposed_text_are_one_input(accented_runs, run):
    assert "unicode: nfc" in (accented_runs[run] / "config.yaml").read_text()
    model = attnseq.load(accented_runs[run])
    composed, decomposed = model.search(["b\u00e9c", "be\u0301c"])
    assert decomposed.source_tokens == composed.source_tokens == ["b", "\u00e9", "c"]
    assert decomposed.outputs == composed.outputs and decomposed.unknown == []


def test_unicode_none_keeps_text_as_given_and_older_runs_keep_their_behaviour(accented_runs):
    assert "unicode: none" in (accented_runs["none"] / "config.yaml").read_text()
    assert attnseq.load(accented_runs["none"]).search(["be\u0301c"])[0].unknown == ["\u0301"]
    old = accented_runs["nfc"].parent / "old"
    old.mkdir()
    for path in accented_runs["nfc"].iterdir():
        if path.name != PIPELINE_FILE:  # a run written before the normal form was recorded
            (old / path.name).write_bytes(path.read_bytes())
    assert attnseq.load(old).search(["be\u0301c"])[0].source_tokens == ["b", "e", "\u0301", "c"]


def test_normal_forms():
    config = load_config(None).data
    assert normalise(config, "nfc", " e\u0301 ") == "\u00e9"
    assert normalise(config, "nfkc", "\ufb01") == "fi" and normalise(config, "nfc", "\ufb01") == "\ufb01"
    assert normalise(config, "none", "e\u0301") == "e\u0301"


# -- blank inputs ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["local_p", "numpy"])
def test_blank_inputs_get_blank_outputs_and_are_counted(quick_runs, kind, tmp_path, caplog, capsys):
    model = attnseq.load(quick_runs[kind])
    assert model.translate(["", "   ", "\t"]) == ["", "", ""]
    outputs, attention = model.translate("  ", return_attention=True)
    assert outputs == "" and attention.shape == (0, 0)
    blank = model.search(["abc", " "])[1]
    assert blank.blank and blank.outputs == [""] and blank.output_tokens == [[]] and blank.source_tokens == []
    source = tmp_path / "in.txt"
    source.write_text("abc\n\n  \nabc\n")
    with caplog.at_level(logging.WARNING, logger="attnseq"):
        assert main(["translate", str(quick_runs[kind]), "--input", str(source)]) == 0
    lines = capsys.readouterr().out.split("\n")
    assert lines[1] == lines[2] == "" and lines[0] == lines[3] and len(lines) == 5  # in line with the input
    assert "translate: 2 blank line(s) (2, 3) get blank outputs" in caplog.text


# -- evaluate: the references as given -----------------------------------------------------------------
class Echo(Translator):
    """A translator whose output is its source, read through the run's vocabulary (unknown
    words come out as <unk>, runs of spaces as one): what a perfect model of the copy task says."""

    def decode_batch(self, src_ids, decode, keep_attention=False):
        return [[Hypothesis(list(ids), 0.0)] for ids in src_ids]


@pytest.fixture
def echo(tmp_path) -> Echo:
    config = load_config(None, ["data.tokenizer=word", "data.shared_vocab=true"])
    pairs = [("the cat sat on the mat", "the cat sat on the mat"), ("a dog ran", "a dog ran")]
    return Echo(TextPipeline.fit(config.data, pairs, tmp_path), config)


def test_evaluate_scores_against_the_references_as_given(echo):
    right = echo.evaluate([("the cat sat on the mat", "the cat sat on the mat")])
    assert right["exact_match"] == 1.0 and right["bleu"] == pytest.approx(100.0)
    # a reference the model's vocabulary cannot spell is not made to match: the output
    # "the <unk> sat on the mat" is not the reference "the cow sat on the mat"
    unspelled = echo.evaluate([("the cow sat on the mat", "the cow sat on the mat")])
    assert unspelled["exact_match"] == 0.0 and unspelled["bleu"] < 100.0 and unspelled["chrf"] < 100.0
    # nor one the tokenizer would change: "the cat sat ..." is not exactly "the cat  sat ..."
    # (BLEU and chrF, sacrebleu's, read both alike)
    spaced = echo.evaluate([("the cat  sat on the mat", "the cat  sat on the mat")])
    assert spaced["exact_match"] == 0.0 and spaced["bleu"] == pytest.approx(100.0)
    assert echo.evaluate([("the cow sat on the mat", "x")])["unknown_pieces"] == {"cow": 1}


def test_evaluate_gives_sacrebleus_signatures(echo, quick_runs, capsys):
    metrics = echo.evaluate([("the cat sat on the mat", "the cat sat on the mat")])
    assert metrics["bleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:")
    assert metrics["chrf_signature"].startswith("nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:")
    assert "bleu_signature" not in echo.evaluate([("a dog", "a dog")])  # too short for BLEU: no BLEU
    run = quick_runs["local_p"]
    pairs = quick_runs.data / "test.tsv"
    assert main(["-q", "evaluate", str(run), "--data", str(pairs)]) == 0
    table = capsys.readouterr().out
    assert "chrf_signature: nrefs:1|case:mixed|eff:yes|nc:6" in table and "unknown_pieces" not in table
    assert main(["-q", "evaluate", str(run), "--data", str(pairs), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["chrf_signature"].startswith("nrefs:1|") and answer["unknown_sources"] == []
    assert np.isfinite(answer["chrf"])


def test_an_n_best_list_has_n_lines_for_every_input_even_a_blank_one(quick_runs, tmp_path, capsys):
    """translate --n-best N writes N lines an input, so blocks stay in step: a blank input's one
    blank output is followed by lines of score -inf."""
    source = tmp_path / "in.txt"
    source.write_text("abc\n\nab\n")
    assert (
        main(["-q", "translate", str(quick_runs["local_p"]), "--input", str(source), "--beam", "3", "--n-best", "3"])
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 9 and lines[3:6] == ["0.0000\t", "-inf\t", "-inf\t"]
