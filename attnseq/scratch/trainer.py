"""Mini-batch training loop and exact-match evaluation, as chapters 7-8 of the book run them."""
from __future__ import annotations

import time
from typing import Callable

import numpy as np

from .optim import clip_grads

__all__ = ["Trainer", "eval_exact_match"]


class Trainer:
    """Runs epochs of shuffled mini-batches: forward, backward, optional clipping, update.

    Each epoch draws one ``numpy.random.permutation`` of the training set (the global
    generator, as the book) and runs ``len(x) // batch_size`` iterations: the last partial batch
    is dropped.  ``loss_list`` holds the mean loss of every ``eval_interval`` iterations,
    ``epoch_seconds`` the wall time of every epoch, ``iter_seconds`` of every iteration.
    """

    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.loss_list: list[float] = []
        self.epoch_seconds: list[float] = []
        self.iter_seconds: list[float] = []
        self.current_epoch = 0

    def fit(self, x: np.ndarray, t: np.ndarray, max_epoch: int = 10, batch_size: int = 32,
            max_grad: float | None = None, eval_interval: int = 20,
            log: Callable[[str], None] | None = print) -> list[float]:
        """Train for max_epoch epochs; returns the mean loss of each epoch."""
        model, optimizer = self.model, self.optimizer
        data_size = len(x)
        max_iters = data_size // batch_size
        epoch_losses = []
        for _ in range(max_epoch):
            start = time.perf_counter()
            idx = np.random.permutation(data_size)
            total_loss, loss_count, epoch_loss = 0.0, 0, 0.0
            for iters in range(max_iters):
                tick = time.perf_counter()
                batch = idx[iters * batch_size:(iters + 1) * batch_size]
                loss = model.forward(x[batch], t[batch])
                model.backward()
                if max_grad is not None:
                    clip_grads(model.grads, max_grad)
                optimizer.update(model.params, model.grads)
                self.iter_seconds.append(time.perf_counter() - tick)
                total_loss += loss
                epoch_loss += loss
                loss_count += 1
                if eval_interval and (iters + 1) % eval_interval == 0:
                    mean = total_loss / loss_count
                    self.loss_list.append(mean)
                    if log is not None:
                        log(f"| epoch {self.current_epoch + 1} | iter {iters + 1} / {max_iters}"
                            f" | time {time.perf_counter() - start:.0f}s | loss {mean:.2f}")
                    total_loss, loss_count = 0.0, 0
            self.epoch_seconds.append(time.perf_counter() - start)
            epoch_losses.append(epoch_loss / max(max_iters, 1))
            self.current_epoch += 1
        return epoch_losses


def eval_exact_match(model, xs: np.ndarray, ts: np.ndarray, start_id=None,
                     batch_size: int = 1000) -> float:
    """Fraction of samples whose greedy answer equals ts[:, 1:] at every position.

    Decodes ``batch_size`` sources at a time, for exactly ts.shape[1] - 1 steps (no end token),
    starting from ``start_id`` (default: ts[:, 0], the book's '_').
    """
    N = len(xs)
    if N == 0:
        return 0.0
    length = ts.shape[1] - 1
    correct = 0
    for lo in range(0, N, batch_size):
        hi = min(lo + batch_size, N)
        start = ts[lo:hi, 0] if start_id is None else start_id
        guess = model.generate(xs[lo:hi], start, length)
        correct += int(np.all(guess == ts[lo:hi, 1:], axis=1).sum())
    return correct / N
