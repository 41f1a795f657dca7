"""``engine: numpy`` end to end: train through the CLI, evaluate, translate, resume, errors."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file

import attnseq
from attnseq.cli import main
from attnseq.errors import UserError
from attnseq.scratch.engine import source_array, target_array

from conftest import ROOT, TINY, write_reverse_dir

BOOK = str(ROOT / "configs" / "book-attention.yaml")
NUMPY = ["engine=numpy", "data.strip=true", "train.lr=0.01", "decode.max_len=10"]
EVAL_KEYS = {"type", "epoch", "step", "train_seconds", "dev_loss", "dev_exact_match",
             "dev_token_accuracy", "eval_seconds", "best"}


def sets(*settings: str) -> list[str]:
    return [x for s in settings for x in ("--set", s)]


def train(data: Path, out: Path, *settings: str, resume: bool = False) -> int:
    """``attnseq train`` of the book's attention preset, small, with the numpy engine."""
    return main(["-q", "train", BOOK, "--data", str(data), "--out", str(out), *(["--resume"] if resume else []),
                 *sets(*TINY, *NUMPY, *settings)])


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    return write_reverse_dir(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module")
def trained(data_dir, tmp_path_factory) -> Path:
    """The book's attention model, small, trained on the reversal task with the numpy engine."""
    run_dir = tmp_path_factory.mktemp("runs") / "numpy"
    assert train(data_dir, run_dir, "train.epochs=5") == 0
    return run_dir


def test_training_learns_and_writes_the_run_folder(trained):
    for name in ("config.yaml", "vocab.source.json", "vocab.target.json", "metrics.jsonl",
                 "best.safetensors", "last.safetensors", "last.state.pkl"):
        assert (trained / name).exists(), name
    records = [json.loads(line) for line in (trained / "metrics.jsonl").read_text().splitlines()]
    evals = [r for r in records if r["type"] == "eval"]
    assert [r["epoch"] for r in evals] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert all(EVAL_KEYS <= set(r) for r in evals)
    assert evals[-1]["dev_loss"] < evals[0]["dev_loss"] / 10
    assert evals[-1]["dev_exact_match"] >= 0.95
    assert "engine: numpy" in (trained / "config.yaml").read_text()
    weights = load_file(str(trained / "best.safetensors"))
    assert weights["decoder.affine.W"].shape == (64, 10)  # rows [context; h], 6 letters + 4 specials
    assert weights["encoder.lstm.Wx"].dtype == np.float32


def test_evaluate_and_translate(trained, data_dir, capsys):
    assert main(["-q", "evaluate", str(trained), "--data", str(data_dir / "test.tsv"), "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert metrics["sentences"] == 40 and metrics["exact_match"] >= 0.95
    assert {"token_accuracy", "bleu", "chrf", "seconds"} <= set(metrics)

    result = subprocess.run([sys.executable, "-m", "attnseq.cli", "translate", str(trained)],
                            input="abc\nfedd\n", capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["cba", "ddef"]

    model = attnseq.load(trained)
    outputs, attention = model.translate(["abcd", "fed"], return_attention=True)
    assert outputs == ["dcba", "def"]
    assert attention[0].shape == (5, 4) and attention[1].shape == (4, 3)  # output tokens + eos, by source
    assert attention[0][:4].argmax(1).tolist() == [3, 2, 1, 0]  # reading order: d, c, b, a
    assert model.search(["abc"])[0].scores[0] < 0
    assert isinstance(model.translate("abcdefabcdef"), str)  # longer than any training source


def test_beam_search_is_torch_only(trained, data_dir, capsys):
    assert main(["-q", "evaluate", str(trained), "--data", str(data_dir / "test.tsv"), "--beam", "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "torch-only" in err
    with pytest.raises(UserError, match="torch-only"):
        attnseq.load(trained).translate(["abc"], beam=3)


def test_unsupported_design_is_one_config_error(data_dir, tmp_path, capsys):
    assert train(data_dir, tmp_path / "run", "model.decoder=luong") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "model.decoder" in err and "engine" in err and "none, peeky, book" in err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("decoder,bidirectional", [("none", False), ("peeky", False), ("book", True)])
def test_other_designs_train_and_translate(data_dir, tmp_path, decoder, bidirectional):
    run_dir = tmp_path / decoder
    assert train(data_dir, run_dir, f"model.decoder={decoder}", f"model.bidirectional={bidirectional}",
                 "train.max_steps=3") == 0
    outputs, attention = attnseq.load(run_dir).translate(["abc", "fed"], return_attention=True)
    assert len(outputs) == 2 and all(isinstance(o, str) for o in outputs)
    assert (attention[0] is not None) == (decoder == "book")


def test_resume_continues_exactly(data_dir, tmp_path):
    """Stopping after 40 steps and resuming gives the very weights of one uninterrupted run."""
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    assert train(data_dir, straight, "train.epochs=2") == 0
    assert train(data_dir, resumed, "train.epochs=2", "train.max_steps=40") == 0
    assert train(data_dir, resumed, "train.epochs=2", resume=True) == 0
    a, b = load_file(str(straight / "last.safetensors")), load_file(str(resumed / "last.safetensors"))
    assert all(np.array_equal(a[k], b[k]) for k in a)
    records = [json.loads(line) for line in (resumed / "metrics.jsonl").read_text().splitlines()]
    starts = [r["resumed_at_step"] for r in records if r["type"] == "start"]
    assert starts == [None, 40]
    assert [r["step"] for r in records if r["type"] == "eval"] == [40, 62, 124]


def test_sources_are_padded_and_flipped_as_the_book():
    # reading order a b c / d: the pipeline gives the encoder c b a / d with reverse_source
    xs = source_array([[7, 6, 5], [8]], 4, reverse=True)
    assert xs.tolist() == [[0, 7, 6, 5], [0, 0, 0, 8]]  # == right-padded rows, then x[:, ::-1]
    assert source_array([[5, 6, 7], [8]], 4, reverse=False).tolist() == [[5, 6, 7, 0], [8, 0, 0, 0]]
    assert target_array([[5, 6], [7]]).tolist() == [[1, 5, 6, 2], [1, 7, 2, 0]]


# ---------------------------------------------------------------- data.format book

def write_book_file(path: Path, lines: int = 400, seed: int = 5) -> Path:
    """A file in the book's format: space-padded questions, '_', fixed-width answers (the
    question's letters sorted), like date.txt."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(lines):
        word = "".join(rng.choice(list("abcdef"), rng.integers(2, 7)))
        rows.append(f"{word:<8}_{''.join(sorted(word)):<6}\n")
    path.write_text("".join(rows))
    return path


def test_book_file_through_the_cli_is_the_books_run(tmp_path):
    """``--data date.txt --set engine=numpy`` retraces run_book (the book's experiment) exactly:
    the same vocabulary, split, random stream, weights after every update and accuracy."""
    from attnseq.scratch import run_book

    book_file = write_book_file(tmp_path / "toy.txt")
    run_dir = tmp_path / "run"
    code = main(["-q", "train", BOOK, "--data", str(book_file), "--out", str(run_dir),
                 *sets("engine=numpy", "model.embed_size=8", "model.hidden_size=16",
                       "train.batch_size=16", "train.epochs=2", "train.progress=false",
                       "train.log_every=0")])
    assert code == 0
    book = run_book(book_file, epochs=2, wordvec_size=8, hidden_size=16, batch_size=16)
    ours = load_file(str(run_dir / "last.safetensors"))
    theirs = book["model"].named_params()
    assert set(ours) == set(theirs)
    for name, value in theirs.items():
        np.testing.assert_allclose(ours[name], value, rtol=1e-5, atol=1e-7, err_msg=name)
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    accuracy = [r["dev_exact_match"] for r in records if r["type"] == "eval"]
    assert accuracy == pytest.approx(book["accuracy"])
    assert records[0]["train_pairs"] == 360 and records[0]["dev_pairs"] == 40   # 400 lines

    # evaluate on the book file scores its test set; translate gives answers of the fixed width
    metrics = attnseq.load(run_dir, checkpoint="last").evaluate(
        [(q, a) for q, a in zip(*_book_test(book_file))])
    assert metrics["exact_match"] == pytest.approx(book["accuracy"][-1])
    assert main(["-q", "evaluate", str(run_dir), "--data", str(book_file), "--json",
                 "--checkpoint", "last"]) == 0
    assert len(attnseq.load(run_dir).translate("abc     ")) == 6


def _book_test(path: Path):
    from attnseq.data.book import load_book

    test = load_book(path, dev_size=0)[2]
    return [q for q, _ in test], [a for _, a in test]


def test_book_file_with_the_torch_engine(tmp_path):
    book_file = write_book_file(tmp_path / "toy.txt", lines=200)
    run_dir = tmp_path / "run"
    assert main(["-q", "train", BOOK, "--data", str(book_file), "--out", str(run_dir),
                 *sets(*TINY, "train.max_steps=3")]) == 0
    vocab = json.loads((run_dir / "vocab.source.json").read_text())
    in_file_order = list(dict.fromkeys(book_file.read_text().replace("\n", "")))
    assert vocab == in_file_order                     # the book's ids ('_' included), shifted by 4
    assert json.loads((run_dir / "vocab.target.json").read_text()) == vocab


def test_book_format_errors_name_the_key(tmp_path, capsys):
    book_file = write_book_file(tmp_path / "toy.txt", lines=50)
    assert main(["-q", "train", BOOK, "--data", str(book_file), "--out", str(tmp_path / "a"),
                 *sets(*TINY, "data.tokenizer=word")]) == 2
    assert "data.tokenizer" in capsys.readouterr().err
    assert main(["-q", "train", BOOK, "--out", str(tmp_path / "b"),
                 *sets(*TINY, "data.format=book")]) == 2
    assert "data.train" in capsys.readouterr().err
    bad = tmp_path / "bad.txt"
    bad.write_text("abc_def\nno separator here\n")
    assert main(["-q", "train", BOOK, "--data", str(bad), "--out", str(tmp_path / "c"),
                 *sets(*TINY)]) == 2
    assert f"{bad}:2" in capsys.readouterr().err
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("abc\tcba\n")
    assert main(["-q", "train", BOOK, "--data", str(tsv), "--out", str(tmp_path / "d"), *sets(*TINY)]) == 2
    assert "attnseq data split" in capsys.readouterr().err
