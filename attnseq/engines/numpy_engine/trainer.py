"""Training the book's numpy models with attnseq's epoch loop: the same run folder, metrics
log, evaluation, checkpoints and exact resume as the torch engine.

Initialisation is always the book's (embeddings N(0,1)/100, weights N(0,1)/sqrt(fan_in),
biases 0); batches are plain random batches (``train.bucket`` is ignored) and the last partial
batch of an epoch is dropped, as the book's trainer does. Source and target keep their own
vocabularies (the models take ``target_vocab_size``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from ...config import Config
from ...runs import LAST, restoring
from ...scratch.optim import SGD, Adam, clip_grads
from ...train.loop import EpochLoop, Progress
from .blas import blas_threads
from .designs import check_numpy, numpy_design
from .layouts import LAYOUTS
from .translator import NumpyTranslator, build_numpy_model
from .weights import load_numpy_weights, save_numpy_weights


def book_adam(lr: float, options: dict) -> Adam:
    optimizer = Adam(lr, *options["betas"])
    optimizer.eps = options["eps"]  # added to sqrt(v), as the book and torch do
    return optimizer


# train.optimizer -> the book's optimizer, from train.lr and the options check_numpy wrote out
BOOK_OPTIMIZERS = {"adam": book_adam, "sgd": lambda lr, options: SGD(lr)}


def train_numpy(
    config: Config,
    run_dir: str | Path,
    resume: bool = False,
    on_eval: Callable[[dict], None] | None = None,
    overwrite: bool = False,
) -> dict:
    """Train the numpy model ``config`` describes into ``run_dir``; the summary of EpochLoop.fit."""
    with blas_threads(config.train.threads or 1):
        return NumpyTrainer(config, run_dir, resume, on_eval, overwrite).fit()


class NumpyTrainer(EpochLoop):
    """The torch Trainer's loop (EpochLoop) and run folder, for the book's numpy models."""

    def __init__(
        self,
        config: Config,
        run_dir: str | Path,
        resume: bool = False,
        on_eval: Callable[[dict], None] | None = None,
        overwrite: bool = False,
    ):
        super().__init__()
        config = check_numpy(config)
        self.config, self.run_dir, self.resume, self.on_eval = config, Path(run_dir), resume, on_eval
        self.design = numpy_design(config)
        tc = config.train
        self.prepare_data(overwrite)
        self.train_examples = train = self.train_store.examples()  # the book's arrays hold them all
        self.reverse = config.data.reverse_source
        # S and L: every source is padded to the longest training source, (book) every target
        # to the longest training target
        self.layout = LAYOUTS[config.data.format](
            self.pipeline, max(len(e.src) for e in train), max(len(e.tgt) for e in train)
        )
        self.xs = self.layout.sources([e.src for e in train], self.reverse)  # (N, S)
        self.ts = self.layout.targets([e.tgt for e in train])  # (N, T + 1)
        self.ts_lengths = (self.ts != self.layout.ignore_label).sum(axis=1)  # counted positions
        self.rng = self.layout.rng(config, self.train_store.manifest["read"] + len(self.test_pairs))
        self.model = build_numpy_model(self.design, config, self.pipeline, self.layout, self.rng)
        self.optimizer = BOOK_OPTIMIZERS[tc.optimizer.name](tc.lr, tc.optimizer.options)
        self.progress = Progress()
        self.order: np.ndarray | None = None  # this epoch's permutation of the training set
        if self.restore:
            self._restore()
        self.translator = NumpyTranslator(self.model, self.pipeline, config, self.layout, tc.threads or 1)

    @property
    def description(self) -> str:
        return f"numpy {self.design}"

    @property
    def parameters(self) -> int:
        return sum(p.size for p in self.model.params)

    @property
    def batches_per_epoch(self) -> int:
        """len // batch_size, as the book (the last partial batch is dropped), at least one."""
        return max(1, len(self.xs) // self.config.train.batch_size)

    # -- what EpochLoop asks of an engine ------------------------------------------------------
    def _epoch_batches(self) -> list[np.ndarray]:
        """Rows of the training set for each batch: slices of one permutation per epoch (drawn
        when the epoch starts, restored on resume)."""
        if self.progress.batch_in_epoch == 0 or self.order is None:
            self.order = self.rng.permutation(len(self.xs))
        size = self.config.train.batch_size
        return [self.order[k * size : (k + 1) * size] for k in range(self.batches_per_epoch)]

    def _update(self, group: list[np.ndarray]) -> tuple[float, int]:
        """One update on the training rows ``group[0]``: (summed loss, target tokens)."""
        tc, model = self.config.train, self.model
        (batch,) = group  # train.accumulate is 1
        ts = self.ts[batch, : self.ts_lengths[batch].max()]  # (B, T + 1): no all-pad columns
        loss = model.forward(self.xs[batch], ts)
        model.backward()
        if tc.clip_norm:
            clip_grads(model.grads, tc.clip_norm)
        self.optimizer.update(model.params, model.grads)
        tokens = int((ts[:, 1:] != self.layout.ignore_label).sum())
        return loss * tokens, tokens

    def _learning_rate(self) -> float:
        return self.config.train.lr

    def _slots(self, group: list[np.ndarray]) -> tuple[int, int]:
        """(real tokens, positions): the book's arrays pad every source to one width."""
        (batch,) = group
        ts = self.ts[batch, : self.ts_lengths[batch].max()]
        real = sum(len(self.train_examples[i].src) for i in batch) + int((ts != self.layout.ignore_label).sum())
        return real, self.xs[batch].size + ts.size

    # -- evaluation and checkpoints -------------------------------------------------------------
    def dev_loss(self, batch_size: int = 256) -> float:
        """Mean cross-entropy per counted target position (eos included) on the dev set."""
        total, tokens = 0.0, 0
        for start in range(0, len(self.dev_examples), batch_size):
            chunk = self.dev_examples[start : start + batch_size]
            xs = self.layout.sources([e.src for e in chunk], self.reverse)
            ts = self.layout.targets([e.tgt for e in chunk])
            n = int((ts[:, 1:] != self.layout.ignore_label).sum())
            total += self.model.forward(xs, ts) * n
            tokens += n
        return total / tokens if tokens else float("nan")

    def _write_checkpoint(self, path: Path, state: dict | None = None) -> None:
        """The weights (and ``state``) with the design and the array widths as metadata."""
        metadata = {
            "engine": "numpy",
            "design": self.design,
            "source_len": str(self.layout.source_len),
            "target_len": str(self.layout.target_len),
        }
        save_numpy_weights(self.model, path, metadata, state)

    def _training_state(self) -> dict:
        return {"optimizer": self._optimizer_state(), "rng": self.rng.get_state(), "order": self.order}

    def _optimizer_state(self) -> dict:
        """Adam's step count and moments by parameter name (SGD keeps nothing)."""
        m = getattr(self.optimizer, "m", None)
        if m is None:
            return {}
        names = self.model.param_names
        return {"iter": self.optimizer.iter, "m": dict(zip(names, m)), "v": dict(zip(names, self.optimizer.v))}

    def _restore(self) -> None:
        state = load_numpy_weights(self.model, self.run_dir / LAST, with_state=True)
        with restoring(self.run_dir / LAST):
            moments = state["optimizer"]
            if moments:
                names = self.model.param_names
                opt = self.optimizer
                opt.iter = moments["iter"]
                opt.m = [moments["m"][n] for n in names]
                opt.v = [moments["v"][n] for n in names]
                opt._tmp = [np.empty_like(x) for x in opt.m]  # Adam's scratch buffers
            self.rng.set_state(state["rng"])
            self.progress = Progress(**state["progress"])
            self.order = state["order"]
