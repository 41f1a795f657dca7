"""``engine: numpy`` end to end: train through the CLI, evaluate, translate, resume, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import ROOT, TINY, sets, write_reverse_dir
from learning import at_least, learns, seed
from safetensors.numpy import load_file

import attnseq
from attnseq.cli import main
from attnseq.config import load_config
from attnseq.engines.numpy_engine.designs import check_numpy
from attnseq.engines.numpy_engine.layouts import source_array, target_array
from attnseq.errors import ConfigError, UserError
from attnseq.runs import read_checkpoint

BOOK = str(ROOT / "configs" / "book-attention.yaml")
NUMPY = ["engine=numpy", "data.strip=true", "train.lr=0.01", "decode.max_len=10"]
EVAL_KEYS = {
    "type",
    "epoch",
    "step",
    "train_seconds",
    "dev_loss",
    "dev_exact_match",
    "dev_token_accuracy",
    "eval_seconds",
    "wall_seconds",
    "cpu_seconds",
    "best",
}


def train(data: Path, out: Path, *settings: str, resume: bool = False) -> int:
    """``attnseq train`` of the book's attention preset, small, with the numpy engine."""
    return main(
        [
            "-q",
            "train",
            BOOK,
            "--data",
            str(data),
            "--out",
            str(out),
            *(["--resume"] if resume else []),
            *sets(*TINY, *NUMPY, *settings),
        ]
    )


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    return write_reverse_dir(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module")
def trained(data_dir, tmp_path_factory) -> Path:
    """The book's attention model, small, trained on the reversal task with the numpy engine."""
    run_dir = tmp_path_factory.mktemp("runs") / "numpy"
    assert train(data_dir, run_dir, "train.epochs=5", f"train.seed={seed(1)}") == 0
    return run_dir


@pytest.mark.slow
@learns
def test_training_learns_and_writes_the_run_folder(trained):
    for name in (
        "config.yaml",
        "vocab.source.json",
        "vocab.target.json",
        "metrics.jsonl",
        "best.safetensors",
        "last.safetensors",
    ):
        assert (trained / name).exists(), name
    records = [json.loads(line) for line in (trained / "metrics.jsonl").read_text().splitlines()]
    evals = [r for r in records if r["type"] == "eval"]
    assert [r["epoch"] for r in evals] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert all(EVAL_KEYS <= set(r) for r in evals)
    assert evals[-1]["dev_loss"] < evals[0]["dev_loss"] / 10
    at_least("dev exact match", evals[-1]["dev_exact_match"], 0.95)
    assert "engine: numpy" in (trained / "config.yaml").read_text()
    weights = load_file(str(trained / "best.safetensors"))
    assert weights["decoder.affine.W"].shape == (64, 10)  # rows [context; h], 6 letters + 4 specials
    assert weights["encoder.lstm.Wx"].dtype == np.float32


@pytest.mark.slow
@learns
def test_evaluate_and_translate(trained, data_dir, capsys):
    assert main(["-q", "evaluate", str(trained), "--data", str(data_dir / "test.tsv"), "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert metrics["sentences"] == 40
    at_least("test exact match", metrics["exact_match"], 0.95)
    assert {"token_accuracy", "chrf", "seconds"} <= set(metrics) and "bleu" not in metrics  # one-word references

    result = subprocess.run(
        [sys.executable, "-m", "attnseq.cli", "translate", str(trained)],
        input="abc\nfedd\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["cba", "ddef"]

    model = attnseq.load(trained)
    outputs, attention = model.translate(["abcd", "fed"], return_attention=True)
    assert outputs == ["dcba", "def"]
    assert attention[0].shape == (5, 4) and attention[1].shape == (4, 3)  # output tokens + eos, by source
    assert attention[0][:4].argmax(1).tolist() == [3, 2, 1, 0]  # reading order: d, c, b, a
    assert model.search(["abc"])[0].scores[0] < 0
    assert isinstance(model.translate("abcdefabcdef"), str)  # longer than any training source


def test_beam_search_is_torch_only(quick_runs, capsys):
    run = quick_runs["numpy"]
    assert main(["-q", "evaluate", str(run), "--data", str(quick_runs.data / "test.tsv"), "--beam", "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "torch-only" in err
    with pytest.raises(UserError, match="torch-only"):
        attnseq.load(run).translate(["abc"], beam_size=3)


def test_unsupported_design_is_one_config_error(data_dir, tmp_path, capsys):
    assert train(data_dir, tmp_path / "run", "model.decoder=luong") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "model.decoder" in err and "engine" in err and "none, peeky, book" in err
    assert not (tmp_path / "run").exists()


BOOK_DESIGN = [
    "engine=numpy",
    "model.bridge=copy",
    "model.init=book",
    "model.decoder=book",
    "model.attention=dot",
    "model.encoder.bidirectional=false",
]


@pytest.mark.parametrize(
    "settings, key",
    [
        (["model.decoder=luong"], "model.decoder"),
        (["train.optimizer={name: adam, amsgrad: true}"], "train.optimizer.amsgrad"),
        (["model.decoder={name: book, context_into_input: true}"], "model.decoder.context_into_input"),
        (["model.dropout=0.1"], "model.dropout"),
        (["model.decoder=none"], "model.attention"),
        (["model.attention=general"], "model.attention"),
        (
            ["model.decoder=none", "model.attention=null", "model.encoder.bidirectional=true"],
            "model.encoder.bidirectional",
        ),
        (["model.encoder.bidirectional=true", "model.hidden_size=7"], "model.hidden_size"),
    ],
)
def test_config_errors_carry_the_key(settings, key):
    """Each setting the numpy engine cannot run is a ConfigError whose key is the one at fault."""
    check_numpy(load_config(None, BOOK_DESIGN))
    with pytest.raises(ConfigError, match=f"^{key}:") as caught:
        check_numpy(load_config(None, BOOK_DESIGN + settings))
    assert caught.value.key == key


@pytest.mark.parametrize("decoder,bidirectional", [("none", False), ("peeky", False), ("book", True)])
def test_other_designs_train_and_translate(data_dir, tmp_path, decoder, bidirectional):
    run_dir = tmp_path / decoder
    attention = "model.attention=dot" if decoder == "book" else "model.attention=null"  # none, peeky: no scorer
    assert (
        train(
            data_dir,
            run_dir,
            f"model.decoder={decoder}",
            f"model.encoder.bidirectional={bidirectional}",
            attention,
            "train.max_steps=3",
        )
        == 0
    )
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


def the_books_recipe(path: Path, epochs: int, wordvec_size: int, hidden_size: int, batch_size: int) -> dict:
    """Chapter 8 as the book's code runs it, written out here independently of attnseq's data
    and engine code: its loader (ids by first appearance, seed 1984 and a shuffle on NumPy's
    global generator, the last tenth for test), reversed questions, the model drawn from the
    global generator (built from the fused layers the engine trains with), a permutation per
    epoch, the last partial batch dropped, clip 5, Adam."""
    from attnseq.scratch import Adam, build_model, clip_grads, fused

    questions, answers = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        cut = line.find("_")
        questions.append(line[:cut])
        answers.append(line[cut:])
    char_to_id: dict[str, int] = {}
    for q, a in zip(questions, answers):
        for ch in q + a:
            char_to_id.setdefault(ch, len(char_to_id))
    x = np.array([[char_to_id[c] for c in q] for q in questions])
    t = np.array([[char_to_id[c] for c in a] for a in answers])
    np.random.seed(1984)
    order = np.arange(len(x))
    np.random.shuffle(order)
    x, t = x[order][:, ::-1], t[order]
    split = len(x) - len(x) // 10
    x_train, t_train, x_test, t_test = x[:split], t[:split], x[split:], t[split:]
    model = build_model("attention", len(char_to_id), wordvec_size, hidden_size, layers=fused)
    optimizer = Adam()
    accuracy = []
    for _ in range(epochs):
        perm = np.random.permutation(len(x_train))
        for k in range(len(x_train) // batch_size):
            rows = perm[k * batch_size : (k + 1) * batch_size]
            model.forward(x_train[rows], t_train[rows])
            model.backward()
            clip_grads(model.grads, 5.0)
            optimizer.update(model.params, model.grads)
        guess = model.generate(x_test, t_test[0, 0], t_test.shape[1] - 1)
        accuracy.append(float(np.all(guess == t_test[:, 1:], axis=1).mean()))
    return {"model": model, "accuracy": accuracy}


def test_book_file_through_the_cli_is_the_books_run(tmp_path):
    """``--data date.txt --set engine=numpy`` retraces the book's experiment exactly: the same
    vocabulary, split, random stream, weights after every update, and accuracy per epoch."""
    book_file = write_book_file(tmp_path / "toy.txt")
    run_dir = tmp_path / "run"
    code = main(
        [
            "-q",
            "train",
            BOOK,
            "--data",
            str(book_file),
            "--out",
            str(run_dir),
            *sets(
                "engine=numpy",
                "model.embed_size=8",
                "model.hidden_size=16",
                "train.batch_size=16",
                "train.epochs=2",
                "train.progress=false",
                "train.log_every=0",
            ),
        ]
    )
    assert code == 0
    book = the_books_recipe(book_file, epochs=2, wordvec_size=8, hidden_size=16, batch_size=16)
    ours, _ = read_checkpoint(run_dir / "last.safetensors")  # the weights, without the training state
    theirs = book["model"].named_params()
    assert set(ours) == set(theirs)
    for name, value in theirs.items():
        np.testing.assert_allclose(ours[name], value, rtol=1e-5, atol=1e-7, err_msg=name)
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    accuracy = [r["dev_exact_match"] for r in records if r["type"] == "eval"]
    assert accuracy == pytest.approx(book["accuracy"])
    assert records[0]["train_pairs"] == 360 and records[0]["dev_pairs"] == 40  # 400 lines

    # evaluate on the book file scores its test set; translate gives answers of the fixed width
    metrics = attnseq.load(run_dir, checkpoint="last").evaluate([(q, a) for q, a in zip(*_book_test(book_file))])
    assert metrics["exact_match"] == pytest.approx(book["accuracy"][-1])
    assert main(["-q", "evaluate", str(run_dir), "--data", str(book_file), "--json", "--checkpoint", "last"]) == 0
    assert len(attnseq.load(run_dir).translate("abc     ")) == 6


def _book_test(path: Path):
    from attnseq.data.corpora.book import load_book

    test = load_book(path, dev_size=0)[2]
    return [q for q, _ in test], [a for _, a in test]


def test_book_file_with_the_torch_engine(tmp_path):
    book_file = write_book_file(tmp_path / "toy.txt", lines=200)
    run_dir = tmp_path / "run"
    assert (
        main(["-q", "train", BOOK, "--data", str(book_file), "--out", str(run_dir), *sets(*TINY, "train.max_steps=3")])
        == 0
    )
    vocab = json.loads((run_dir / "vocab.source.json").read_text())
    in_file_order = list(dict.fromkeys(book_file.read_text().replace("\n", "")))
    assert vocab == in_file_order  # the book's ids ('_' included), shifted by 4
    assert json.loads((run_dir / "vocab.target.json").read_text()) == vocab


def test_book_format_errors_name_the_key(tmp_path, capsys):
    book_file = write_book_file(tmp_path / "toy.txt", lines=50)
    assert (
        main(
            [
                "-q",
                "train",
                BOOK,
                "--data",
                str(book_file),
                "--out",
                str(tmp_path / "a"),
                *sets(*TINY, "data.tokenizer=word"),
            ]
        )
        == 2
    )
    assert "data.tokenizer" in capsys.readouterr().err
    assert main(["-q", "train", BOOK, "--out", str(tmp_path / "b"), *sets(*TINY, "data.format=book")]) == 2
    assert "data.train" in capsys.readouterr().err
    bad = tmp_path / "bad.txt"
    bad.write_text("abc_def\nno separator here\n")
    assert main(["-q", "train", BOOK, "--data", str(bad), "--out", str(tmp_path / "c"), *sets(*TINY)]) == 2
    assert f"{bad}:2" in capsys.readouterr().err
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("abc\tcba\n")
    assert main(["-q", "train", BOOK, "--data", str(tsv), "--out", str(tmp_path / "d"), *sets(*TINY)]) == 2
    assert "attnseq data split" in capsys.readouterr().err


def test_run_book_is_that_run_from_python(tmp_path):
    """run_book: the same run as the CLI's (one code path), its per-epoch figures and model."""
    from attnseq.engines.numpy_engine.book import run_book
    from attnseq.scratch import AttentionSeq2seq

    book_file = write_book_file(tmp_path / "toy.txt", lines=300)
    seen = []
    result = run_book(
        book_file,
        epochs=2,
        wordvec_size=8,
        hidden_size=16,
        batch_size=32,
        run_dir=tmp_path / "run",
        on_epoch=lambda epoch, info: seen.append(epoch),
    )
    assert seen == [1, 2] and result["iterations_per_epoch"] == 270 // 32
    assert len(result["accuracy"]) == len(result["train_seconds"]) == len(result["iter_seconds"]) == 2
    assert isinstance(result["model"], AttentionSeq2seq)
    book = the_books_recipe(book_file, epochs=2, wordvec_size=8, hidden_size=16, batch_size=32)
    assert result["accuracy"] == pytest.approx(book["accuracy"])
    test = [(q, a) for q, a in zip(*_book_test(book_file))]
    assert attnseq.load(tmp_path / "run", checkpoint="last").evaluate(test)["exact_match"] == result["accuracy"][-1]


def test_the_numpy_engine_trains_and_translates_without_torch(data_dir, tmp_path):
    """engine: numpy needs NumPy alone: train, evaluate and translate with torch unimportable."""
    run_dir = tmp_path / "run"
    args = [
        "-q",
        "train",
        BOOK,
        "--data",
        str(data_dir),
        "--out",
        str(run_dir),
        *sets(*TINY, *NUMPY, "train.max_steps=5"),
    ]
    code = f"""
import sys
sys.modules['torch'] = None  # any 'import torch' now fails
from attnseq.cli import main
assert main({args!r}) == 0
assert main(['-q', 'evaluate', {str(run_dir)!r}, '--data', {str(data_dir / "test.tsv")!r}, '--json']) == 0
import attnseq
assert len(attnseq.load({str(run_dir)!r}).translate(['abc'])) == 1
loaded = [m for m in sys.modules if m.split('.')[0] == 'torch' and sys.modules[m] is not None]
assert not loaded, loaded
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=str(ROOT))
    assert result.returncode == 0, result.stderr
