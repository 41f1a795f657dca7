"""The training loop: teacher forcing, clipping, dev evaluation, checkpoints, exact resume."""
from __future__ import annotations

import math
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch
from tqdm import tqdm

from ..api import Translator
from ..config import Config, save_config
from ..data.batching import Example, batch_indices, iterate_batches, sorted_batches
from ..data.corpus import read_tsv
from ..data.pipeline import TextPipeline
from ..errors import ConfigError, DataError
from ..nn.model import build_model, count_parameters
from .distributed import Distributed, LossModule
from .checkpoint import (BEST, CONFIG_FILE, LAST, STATE_FILE, load_state, load_weights, log_metrics,
                         rng_states, save_state, save_weights, set_rng_states)
from .optim import build_optimizer, build_scheduler


Pair = tuple[str, str]


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("train.device: cuda was asked for but no GPU is available; use cpu or auto")
    return torch.device(name)


def load_splits(config: Config) -> dict[str, list[Pair]]:
    """Train and dev (and test, when given) pairs from the config's data paths."""
    data = config.data
    paths = {"train": data.train, "dev": data.dev, "test": data.test}
    if data.dir:
        for split in paths:
            paths[split] = paths[split] or str(Path(data.dir) / f"{split}.tsv")
    if not paths["train"]:
        raise ConfigError("data.train: no training data; give --data DIR or set data.dir / data.train")
    splits = {}
    for split, path in paths.items():
        if path and (split != "test" or Path(path).exists()):
            splits[split] = read_tsv(path, strip=data.strip)
    if not splits["train"]:
        raise DataError(f"{paths['train']}: no training pairs")
    return splits


def encode_pairs(pipeline: TextPipeline, pairs: Sequence[Pair], max_src: int = 0, max_tgt: int = 0
                 ) -> list[Example]:
    """Examples of ``pairs``; pairs longer than the limits (tokens, 0 = none) are dropped."""
    examples = []
    for src, tgt in pairs:
        ex = Example(pipeline.encode_source(src), pipeline.encode_target(tgt))
        if not ex.src or (max_src and len(ex.src) > max_src) or (max_tgt and len(ex.tgt) > max_tgt):
            continue
        examples.append(ex)
    return examples


def evaluation_record(progress: "Progress", epoch: float, translator, dev_pairs: Sequence[Pair],
                      dev_loss: Callable[[], float], max_sentences: int, select_by: str) -> dict:
    """The metrics-log record of one evaluation: dev loss, dev metrics of the first
    ``max_sentences`` dev pairs, and whether it is the best so far by ``select_by``."""
    record = {"type": "eval", "epoch": epoch, "step": progress.step,
              "train_seconds": round(progress.train_seconds, 3)}
    if dev_pairs:
        started = time.perf_counter()
        record["dev_loss"] = dev_loss()
        metrics = translator.evaluate(dev_pairs[:max_sentences], bleu=True)
        record.update({f"dev_{k}": v for k, v in metrics.items()
                       if k in ("exact_match", "token_accuracy", "bleu", "chrf")})
        record["eval_seconds"] = round(time.perf_counter() - started, 3)
    score = selection_score(record, select_by)
    record["best"] = score is not None and (progress.best is None or score > progress.best)
    return record


def selection_score(record: dict, select_by: str) -> float | None:
    """Higher is better: the dev metric ``select_by`` names (``loss`` counts negated)."""
    if select_by == "loss":
        return -record["dev_loss"] if "dev_loss" in record else None
    return record.get(f"dev_{select_by}")


@dataclass
class Progress:
    """Where training stands; saved with every checkpoint so ``--resume`` continues exactly."""

    epoch: int = 0  # epochs finished
    batch_in_epoch: int = 0  # batches of the current epoch already trained
    step: int = 0  # optimizer updates so far
    best: float | None = None
    train_seconds: float = 0.0
    history: list[dict] = field(default_factory=list)


class Trainer:
    """Trains the model a Config describes and writes the run folder."""

    def __init__(self, config: Config, run_dir: str | Path, resume: bool = False,
                 on_eval: Callable[[dict], None] | None = None):
        self.config, self.run_dir, self.resume = config, Path(run_dir), resume
        self.on_eval = on_eval
        tc = config.train
        if tc.threads:
            torch.set_num_threads(tc.threads)
        self.dist = Distributed.from_env()
        self.device = self.dist.setup(resolve_device(tc.device))
        self._seed(tc.seed + self.dist.rank)  # different dropout masks in each process
        self.run_dir.mkdir(parents=True, exist_ok=True)
        splits = load_splits(config)
        self.train_pairs, self.dev_pairs = splits["train"], splits.get("dev", [])
        if resume:
            self.pipeline = TextPipeline.load(config.data, self.run_dir)
        else:
            self.pipeline = TextPipeline.fit(config.data, self.train_pairs, self.run_dir)
            if self.dist.is_main:
                self.pipeline.save(self.run_dir)
                save_config(config, self.run_dir / CONFIG_FILE)
        self.train_examples = encode_pairs(self.pipeline, self.train_pairs,
                                           config.data.max_source_len, config.data.max_target_len)
        if not self.train_examples:
            raise DataError("no training pair is left after the length limits (data.max_*_len)")
        self.dev_examples = encode_pairs(self.pipeline, self.dev_pairs)
        self.model = build_model(config.model, len(self.pipeline.src_vocab), len(self.pipeline.tgt_vocab))
        self.model.to(self.device)
        self.loss_module = self.dist.wrap(LossModule(self.model), self.device)
        self.optimizer = build_optimizer(self.model.parameters(), tc)
        self.scheduler = build_scheduler(self.optimizer, tc)
        self.progress = Progress()
        if resume:
            self._restore()
        self.translator = Translator(self.model, self.pipeline, config, self.device)

    # -- set-up -----------------------------------------------------------------------------
    @staticmethod
    def _seed(seed: int) -> None:
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)

    def _restore(self) -> None:
        state = load_state(self.run_dir / STATE_FILE)
        load_weights(self.model, self.run_dir / LAST)
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.progress = Progress(**state["progress"])
        set_rng_states(state["rng"])

    @property
    def parameters(self) -> int:
        return count_parameters(self.model)

    # -- the loop -----------------------------------------------------------------------------
    def fit(self) -> dict:
        """Train until ``epochs`` or ``max_steps`` or ``max_minutes``; the final summary."""
        tc, p = self.config.train, self.progress
        self._log({"type": "start", "parameters": self.parameters, "train_pairs": len(self.train_examples),
                   "dev_pairs": len(self.dev_examples), "resumed_at_step": p.step if self.resume else None})
        stop = self._should_stop()
        while not stop and p.epoch < tc.epochs:
            indices = self.dist.shard(
                batch_indices(self.train_examples, tc.batch_size, True, tc.seed, p.epoch, tc.bucket))
            todo = indices[p.batch_in_epoch :]
            bar = tqdm(total=len(indices), initial=p.batch_in_epoch, desc=f"epoch {p.epoch + 1}/{tc.epochs}",
                       disable=not (tc.progress and self.dist.is_main), leave=False, dynamic_ncols=True, unit="batch",
                       mininterval=0.2 if sys.stderr.isatty() else 30.0)
            stop = self._train_epoch(todo, bar)
            bar.close()
            if p.batch_in_epoch == len(indices):
                p.epoch, p.batch_in_epoch = p.epoch + 1, 0
                if not tc.eval_every:
                    self.evaluate_and_save()
            stop = stop or self._should_stop()
        if not p.history or p.history[-1]["step"] != p.step:
            self.evaluate_and_save()
        self.dist.close()
        return p.history[-1]

    def _should_stop(self) -> bool:
        tc, p = self.config.train, self.progress
        if tc.max_steps and p.step >= tc.max_steps:
            return True
        return bool(tc.max_minutes) and self.dist.any(p.train_seconds >= 60 * tc.max_minutes)

    def _train_epoch(self, todo: list[list[int]], bar) -> bool:
        """Train on the given batches; True when a step or time limit stopped the run."""
        tc, p = self.config.train, self.progress
        self.model.train()
        self._window = [0.0, 0, time.perf_counter()]  # loss, tokens, start
        group: list = []
        for number, batch in enumerate(iterate_batches(self.train_examples, todo), start=1):
            group.append(batch)
            if len(group) < tc.accumulate and number < len(todo):
                continue
            self._step(group, bar)
            group = []
            if tc.eval_every and p.step % tc.eval_every == 0:
                self.evaluate_and_save()
                self.model.train()
            if self._should_stop():
                return True
        return False

    def _step(self, group, bar) -> None:
        """One update, with its bookkeeping: progress, bar, metrics log."""
        tc, p = self.config.train, self.progress
        started = time.perf_counter()
        loss_sum, tokens = self._update(group)
        p.train_seconds += time.perf_counter() - started
        p.batch_in_epoch += len(group)
        window = self._window
        window[0] += loss_sum
        window[1] += tokens
        elapsed = max(time.perf_counter() - window[2], 1e-9)
        bar.update(len(group))
        bar.set_postfix(loss=f"{window[0] / max(window[1], 1):.3f}", tok_s=f"{window[1] / elapsed:,.0f}")
        if tc.log_every and p.step % tc.log_every == 0:
            self._log({"type": "train", "epoch": p.epoch + 1, "step": p.step,
                       "loss": window[0] / max(window[1], 1), "tokens_per_second": window[1] / elapsed,
                       "lr": self.optimizer.param_groups[0]["lr"]})
            self._window = [0.0, 0, time.perf_counter()]

    def _update(self, group) -> tuple[float, int]:
        """One optimizer update over the batches of ``group``: (summed loss, target tokens)."""
        tc = self.config.train
        self.optimizer.zero_grad(set_to_none=True)
        total_tokens = sum(b.target_tokens for b in group)
        loss_sum = 0.0
        for batch in group:
            batch = batch.to(self.device)
            with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=tc.precision == "bf16"):
                loss, tokens = self.loss_module(batch.src, batch.src_mask, batch.tgt_in, batch.tgt_out,
                                                batch.tgt_mask, tc.label_smoothing)
            (loss / total_tokens).backward()
            loss_sum += float(loss.detach())
        if tc.clip_norm:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), tc.clip_norm)
        self.optimizer.step()
        self.scheduler.step()
        self.progress.step += 1
        if not math.isfinite(loss_sum):
            raise FloatingPointError(f"the loss became {loss_sum} at step {self.progress.step}")
        return loss_sum, total_tokens

    # -- evaluation and checkpoints -----------------------------------------------------------
    @torch.no_grad()
    def dev_loss(self) -> float:
        """Mean cross-entropy per target token on the dev set."""
        self.model.eval()
        total = tokens = 0.0
        for batch in iterate_batches(self.dev_examples, sorted_batches(self.dev_examples, 256)):
            batch = batch.to(self.device)
            loss, n = self.model.loss(batch.src, batch.src_mask, batch.tgt_in, batch.tgt_out, batch.tgt_mask)
            total += float(loss)
            tokens += n
        return total / tokens if tokens else float("nan")

    def evaluate_and_save(self) -> dict:
        """Dev loss and accuracy, the metrics log, last (and if better, best) checkpoint.

        With several processes, process 0 evaluates and saves; the others take its record.
        """
        tc, p = self.config.train, self.progress
        record = self.dist.share(self._evaluate() if self.dist.is_main else None)
        improved = record["best"]
        if improved:
            p.best = self._selection_score(record)
        p.history.append(record)
        if self.dist.is_main:
            self._log(record)
            self._save(improved)
        if tc.schedule == "plateau" and not improved and self._selection_score(record) is not None:
            self._decay_learning_rate(tc.lr_decay)
        if self.on_eval and self.dist.is_main:
            self.on_eval(record)
        return record

    def _evaluate(self) -> dict:
        """The evaluation record: dev loss and metrics, and whether it is the best so far."""
        tc, p = self.config.train, self.progress
        epoch = p.epoch + p.batch_in_epoch / max(1, self._batches_per_epoch())
        return evaluation_record(p, epoch, self.translator, self.dev_pairs, self.dev_loss,
                                 tc.eval_max_sentences, tc.select_by)

    def _decay_learning_rate(self, factor: float) -> None:
        """Multiply the learning rate by ``factor`` for the rest of training."""
        self.scheduler.base_lrs = [lr * factor for lr in self.scheduler.base_lrs]
        for group, lr in zip(self.optimizer.param_groups, self.scheduler.get_last_lr()):
            group["lr"] = lr * factor

    def _batches_per_epoch(self) -> int:
        batches = math.ceil(len(self.train_examples) / self.config.train.batch_size)
        return batches // self.dist.world_size if self.dist.enabled else batches

    def _selection_score(self, record: dict) -> float | None:
        return selection_score(record, self.config.train.select_by)

    def _save(self, best: bool) -> None:
        save_weights(self.model, self.run_dir / LAST)
        save_state(self.run_dir / STATE_FILE, {
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "progress": self.progress.__dict__,
            "rng": rng_states(),
        })
        if best or not (self.run_dir / BEST).exists():
            save_weights(self.model, self.run_dir / BEST)

    def _log(self, record: dict) -> None:
        if not self.dist.is_main:
            return
        log_metrics(self.run_dir, record)
