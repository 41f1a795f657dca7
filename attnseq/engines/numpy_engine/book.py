"""The book's chapter-7/8 experiment through the numpy engine, as a function.

``run_book(path)`` is ``attnseq train configs/book-attention.yaml --data date.txt --set
engine=numpy`` from Python: the book's split, vocabulary, arrays, random stream, batches and
optimizer (data.format book, BookLayout), trained by the same epoch loop as every run, with
the test dates scored after every epoch. ``book_arrays(path)`` gives the arrays the book's own
code reads, for comparing with it.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...config import Config, load_config
from ...data.corpora.book import load_book
from ...data.pipeline import TextPipeline
from .layouts import BookLayout

# the book's models -> the settings that make them (decoder, encoder, attention)
BOOK_MODELS = {
    "baseline": ["model.decoder=none", "model.encoder.bidirectional=false"],
    "peeky": ["model.decoder=peeky", "model.encoder.bidirectional=false"],
    "attention": ["model.decoder=book", "model.attention=dot", "model.encoder.bidirectional=false"],
    "bi-attention": ["model.decoder=book", "model.attention=dot", "model.encoder.bidirectional=true"],
}


def book_config(
    path: str | Path,
    model: str = "attention",
    epochs: int = 10,
    *,
    wordvec_size: int = 16,
    hidden_size: int = 256,
    batch_size: int = 128,
    lr: float = 1e-3,
    max_grad: float = 5.0,
    eval_batch: int = 1000,
) -> Config:
    """The config of the book's experiment on ``path`` with the book's settings by default."""
    if model not in BOOK_MODELS:
        raise ValueError(f"model must be one of {', '.join(BOOK_MODELS)}, got {model!r}")
    return load_config(
        None,
        [
            "engine=numpy",
            "data.format=book",
            f"data.train={path}",
            "data.strip=false",
            "data.reverse_source=true",
            "model.bridge=copy",
            "model.init=book",
            f"model.embed_size={wordvec_size}",
            f"model.hidden_size={hidden_size}",
            *BOOK_MODELS[model],
            f"train.epochs={epochs}",
            f"train.batch_size={batch_size}",
            f"train.lr={lr}",
            "train.optimizer={name: adam, eps: 1.0e-7}",
            f"train.clip_norm={max_grad}",
            "train.bucket=false",
            "train.eval_max_sentences=1000000",
            "train.progress=false",
            "train.log_every=0",
            f"decode.batch_size={eval_batch}",
        ],
    )


def run_book(
    path: str | Path,
    model: str = "attention",
    epochs: int = 10,
    *,
    run_dir: str | Path | None = None,
    on_epoch: Callable[[int, dict], None] | None = None,
    **settings,
) -> dict:
    """Chapter 8's experiment: train the book's ``model`` on ``path`` and score its test set
    after each epoch. ``settings``: see ``book_config``.

    Returns {"accuracy", "loss" (test loss), "train_seconds", "eval_seconds", "iter_seconds":
    lists by epoch; "epochs": the per-epoch dicts also passed to ``on_epoch(epoch, info)``;
    "iterations_per_epoch", "vocab_size", "model" (the trained numpy model), "run_dir"}.
    """
    from .trainer import NumpyTrainer

    config = book_config(path, model, epochs, **settings)
    result: dict = {key: [] for key in ("accuracy", "loss", "train_seconds", "eval_seconds", "iter_seconds", "epochs")}
    state = {"seconds": 0.0}

    def record(r: dict) -> None:
        epoch = round(r["epoch"])
        seconds = r["train_seconds"] - state["seconds"]
        state["seconds"] = r["train_seconds"]
        info = {
            "epoch": epoch,
            "accuracy": r["dev_exact_match"],
            "loss": r["dev_loss"],
            "train_seconds": seconds,
            "eval_seconds": r["eval_seconds"],
            "iter_seconds": seconds / trainer.batches_per_epoch,
        }
        for key in ("accuracy", "loss", "train_seconds", "eval_seconds", "iter_seconds"):
            result[key].append(info[key])
        result["epochs"].append(info)
        if on_epoch is not None:
            on_epoch(epoch, info)

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(run_dir) if run_dir is not None else Path(scratch) / "run"
        trainer = NumpyTrainer(config, folder, on_eval=record)
        trainer.fit()
    result.update(
        iterations_per_epoch=trainer.batches_per_epoch,
        model=trainer.model,
        run_dir=run_dir,
        vocab_size=trainer.model.encoder.embed.params[0].shape[0],
    )
    return result


@dataclass
class BookArrays:
    """The book's arrays of one data file: questions reversed as the book feeds them."""

    x_train: np.ndarray  # (N_train, S) question ids
    t_train: np.ndarray  # (N_train, 1 + L) '_' then answer ids
    x_test: np.ndarray
    t_test: np.ndarray
    vocab_size: int


def book_arrays(path: str | Path) -> BookArrays:
    """The arrays the book's code trains on (load_data and the reversal of chapter 7-8)."""
    config = book_config(path)
    train, _, test = load_book(path, dev_size=0)
    pipeline = TextPipeline.fit(config.data, train, Path(tempfile.gettempdir()))
    examples = {name: pipeline.encode_pairs(pairs) for name, pairs in (("train", train), ("test", test))}
    layout = BookLayout(
        pipeline, max(len(e.src) for e in examples["train"]), max(len(e.tgt) for e in examples["train"])
    )
    arrays = {
        name: (layout.sources([e.src for e in ex], True), layout.targets([e.tgt for e in ex]))
        for name, ex in examples.items()
    }
    return BookArrays(*arrays["train"], *arrays["test"], layout.vocab_size(pipeline.src_vocab))
