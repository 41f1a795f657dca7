"""The book's toy data sets (date.txt, addition.txt) and its chapter-8 experiment, end to end.

Loading follows the book exactly: each line is split at its first '_' (question before it,
spaces kept; answer = '_' + the rest, newline dropped), every character is a token, ids are
given in order of first appearance (question then answer, line by line), then
``np.random.seed(1984)`` and a shuffle of ``arange(N)`` on the global generator; the last N//10
samples are the test set.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .models import build_model
from .optim import Adam
from .trainer import Trainer, eval_exact_match

__all__ = ["BookData", "load_data", "run_book"]


@dataclass
class BookData:
    """Question/answer id arrays of one data file, split as the book splits it."""

    x_train: np.ndarray                 # (N_train, S) question ids
    t_train: np.ndarray                 # (N_train, 1 + L) '_' then answer ids
    x_test: np.ndarray
    t_test: np.ndarray
    char_to_id: dict[str, int]
    id_to_char: dict[int, str] = field(repr=False)

    @property
    def vocab_size(self) -> int:
        return len(self.char_to_id)

    def decode(self, ids) -> str:
        """Characters of a sequence of ids."""
        return "".join(self.id_to_char[int(i)] for i in ids)


def load_data(path: str | os.PathLike, seed: int | None = 1984) -> BookData:
    """Read a file of ``question_answer`` lines; see the module docstring for the exact rules."""
    questions, answers = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line[:-1] if line.endswith("\n") else line
            cut = line.find("_")
            questions.append(line[:cut])
            answers.append(line[cut:])

    char_to_id: dict[str, int] = {}
    for q, a in zip(questions, answers):
        for ch in q + a:
            if ch not in char_to_id:
                char_to_id[ch] = len(char_to_id)
    id_to_char = {i: ch for ch, i in char_to_id.items()}

    x = np.array([[char_to_id[ch] for ch in q] for q in questions], dtype=np.int64)
    t = np.array([[char_to_id[ch] for ch in a] for a in answers], dtype=np.int64)

    indices = np.arange(len(x))
    if seed is not None:
        np.random.seed(seed)
    np.random.shuffle(indices)
    x, t = x[indices], t[indices]
    split = len(x) - len(x) // 10
    return BookData(x[:split], t[:split], x[split:], t[split:], char_to_id, id_to_char)


def run_book(path: str | os.PathLike, model: str = "attention", epochs: int = 10,
             seed: int | None = None, reverse: bool = True,
             on_epoch: Callable[[int, dict], None] | None = None, *,
             wordvec_size: int = 16, hidden_size: int = 256, batch_size: int = 128,
             lr: float = 1e-3, max_grad: float = 5.0, eval_batch: int = 1000,
             dtype=np.float32, log: Callable[[str], None] | None = None) -> dict:
    """Chapter 8's experiment: train on ``path`` and measure test exact match after each epoch.

    The book's settings by default: source reversed, embedding 16, LSTM 256, batch 128, Adam
    1e-3, global-norm clip 5.  ``seed=None`` continues the global generator after the data
    shuffle, as the book does (so the weights and batch order are the book's); an integer
    reseeds it just before the model is built.  ``on_epoch(epoch, info)`` is called after every
    epoch with the same per-epoch ``info`` dict that is collected in the result's "epochs".

    Returns {"accuracy": [...], "loss": [...], "train_seconds": [...], "eval_seconds": [...],
    "iter_seconds": [...] (mean per epoch), "iterations_per_epoch", "vocab_size", "epochs",
    "model"} where "model" is the trained model.
    """
    data = load_data(path)
    x_train, x_test = data.x_train, data.x_test
    if reverse:
        x_train = np.ascontiguousarray(x_train[:, ::-1])
        x_test = np.ascontiguousarray(x_test[:, ::-1])
    if seed is not None:
        np.random.seed(seed)
    net = build_model(model, data.vocab_size, wordvec_size, hidden_size, dtype=dtype)
    trainer = Trainer(net, Adam(lr=lr))

    result = {"accuracy": [], "loss": [], "train_seconds": [], "eval_seconds": [],
              "iter_seconds": [], "iterations_per_epoch": len(x_train) // batch_size,
              "vocab_size": data.vocab_size, "epochs": []}
    for epoch in range(1, epochs + 1):
        n_iter = len(trainer.iter_seconds)
        loss, = trainer.fit(x_train, data.t_train, max_epoch=1, batch_size=batch_size,
                            max_grad=max_grad, log=log)
        iter_seconds = float(np.mean(trainer.iter_seconds[n_iter:]))
        start = time.perf_counter()
        acc = eval_exact_match(net, x_test, data.t_test, batch_size=eval_batch)
        info = {"epoch": epoch, "accuracy": acc, "loss": loss,
                "train_seconds": trainer.epoch_seconds[-1],
                "eval_seconds": time.perf_counter() - start, "iter_seconds": iter_seconds}
        for key in ("accuracy", "loss", "train_seconds", "eval_seconds", "iter_seconds"):
            result[key].append(info[key])
        result["epochs"].append(info)
        if on_epoch is not None:
            on_epoch(epoch, info)
    result["model"] = net
    return result
