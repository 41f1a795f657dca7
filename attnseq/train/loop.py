"""Training the torch models: teacher forcing, accumulation, clipping, schedules, DDP, and the
run folder; the epoch loop, evaluation and resume are EpochLoop's (epochs.py)."""
from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch

from ..api import Translator
from ..config import Config, save_config
from ..data.batching import Example, batch_indices, iterate_batches, sorted_batches
from ..data.book import load_book
from ..data.corpus import read_tsv
from ..data.pipeline import TextPipeline
from ..errors import ConfigError, DataError
from ..nn.model import build_model, count_parameters
from .distributed import Distributed, LossModule
from .checkpoint import (BEST, CONFIG_FILE, LAST, STATE_FILE, load_state, load_weights, rng_states,
                         save_state, save_weights, set_rng_states)
from .epochs import EpochLoop, Pair, Progress, selection_score
from .optim import build_optimizer, build_scheduler



def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("train.device: cuda was asked for but no GPU is available; use cpu or auto")
    return torch.device(name)


def load_splits(config: Config) -> dict[str, list[Pair]]:
    """Train and dev (and test, when given) pairs from the config's data paths."""
    data = config.data
    if data.format == "book":
        if not data.train:
            raise ConfigError("data.train: data.format book needs the book's file (--data date.txt)")
        train, _, test = load_book(data.train, dev_size=0)
        return {"train": train, "dev": test, "test": test}  # the book evaluates its test set
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


class Trainer(EpochLoop):
    """Trains the torch model a Config describes and writes the run folder (the loop itself is
    EpochLoop's)."""

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

    @property
    def train_size(self) -> int:
        return len(self.train_examples)

    @property
    def is_main(self) -> bool:
        return self.dist.is_main

    # -- what EpochLoop asks of an engine ------------------------------------------------------
    def _epoch_batches(self) -> list[list[int]]:
        """This process's share of the epoch's batches (example indices), bucketed by length."""
        tc = self.config.train
        return self.dist.shard(batch_indices(self.train_examples, tc.batch_size, True, tc.seed,
                                             self.progress.epoch, tc.bucket))

    def _batches(self, todo: list[list[int]]):
        return iterate_batches(self.train_examples, todo)

    def _any(self, flag: bool) -> bool:
        return self.dist.any(flag)

    def _share(self, record: dict | None) -> dict:
        return self.dist.share(record)

    def _train_mode(self) -> None:
        self.model.train()

    def _close(self) -> None:
        self.dist.close()

    def _learning_rate(self) -> float:
        return self.optimizer.param_groups[0]["lr"]

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

    def _after_evaluation(self, record: dict, improved: bool) -> None:
        tc = self.config.train
        if tc.schedule == "plateau" and not improved and selection_score(record, tc.select_by) is not None:
            self._decay_learning_rate(tc.lr_decay)

    def _decay_learning_rate(self, factor: float) -> None:
        """Multiply the learning rate by ``factor`` for the rest of training."""
        self.scheduler.base_lrs = [lr * factor for lr in self.scheduler.base_lrs]
        for group, lr in zip(self.optimizer.param_groups, self.scheduler.get_last_lr()):
            group["lr"] = lr * factor

    @property
    def batches_per_epoch(self) -> int:
        batches = math.ceil(len(self.train_examples) / self.config.train.batch_size)
        return batches // self.dist.world_size if self.dist.enabled else batches

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
