"""Training the torch models: teacher forcing, accumulation, clipping, schedules, DDP, and the
run folder; the epoch loop, the run's data, evaluation and resume are EpochLoop's (loop.py)."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
import random
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...config import Config
from ...data.inputs import build_input
from ...data.sampler import EpochBatches, LengthSampler, evaluation_batches
from ...data.sources import check_data
from ...data.store import ExampleStore
from ...errors import ConfigError
from ...hardware import bf16_pays, cpu_model
from ...nn.attention.local import orient_local_windows
from ...nn.frontends import FRONTENDS
from ...nn.model import build_model, check_model, count_parameters, load_model_weights, model_weights
from ...runs import LAST, read_checkpoint, restoring, write_checkpoint
from ...schema import Variant
from ...train.distributed import Distributed, LossModule
from ...train.loop import EpochLoop, Progress, selection_score
from ...train.optim import build_optimizer, build_schedule, check_train
from .translator import TorchTranslator

log = logging.getLogger("attnseq")
# train.precision auto on a CPU: bfloat16 where this model's passes over PROBE_BATCHES batches,
# timed PROBE_ROUNDS times each way (the first a warm-up), run BF16_GAIN times as fast (docs/benchmarks.md)
PROBE_BATCHES, PROBE_ROUNDS, BF16_GAIN = 2, 8, 1.1
PROBE_MIN_PARAMETERS = 300_000  # a model smaller than this trains in float32 unprobed: its products gain nothing
# a dev-loss batch (Trainer.dev_loss) holds at most DEV_BATCH pairs, DEV_POSITIONS padded positions
# (pairs x the longest side) and the target tokens whose logits (float32, over the target
# vocabulary) fit in DEV_LOGIT_BYTES: 2,000 tokens of an 8,000-piece vocabulary
DEV_BATCH, DEV_POSITIONS, DEV_LOGIT_BYTES = 256, 1 << 15, 1 << 26


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError(
            "train.device: cuda was asked for but no GPU is available; use cpu or auto", key="train.device"
        )
    return torch.device(name)


def check_config(config: Config) -> Config:
    """``config`` with its data, model and training settings checked for the torch engine and
    every variant's options written out (ConfigError naming the key otherwise)."""
    config = check_source(config)
    model = orient_local_windows(check_model(config.model), config.data.reverse_source)
    config = dataclasses.replace(config, model=model, train=check_train(config.train))
    check_data(config.data)
    check_copy(config)
    if config.train.compile and config.train.device != "cuda" and not shutil.which(os.environ.get("CXX", "g++")):
        raise ConfigError(
            "train.compile: torch.compile needs a C++ compiler on the CPU and none was found (install g++, or set CXX)",
            key="train.compile",
        )
    return config


def check_source(config: Config) -> Config:
    """``config`` with the model's encoder matched to what the source column holds (data.input):
    a source that is a file is encoded by a frontend (model.frontend, the input kind's own when
    unset) that reads that kind; text has none. A ConfigError naming the key otherwise: a
    frontend for text or for another kind, an architecture without frontends, copying from a
    source without tokens."""
    kind = build_input(config.data)
    frontend = getattr(config.model, "frontend", None)
    if kind.reads_text:
        if frontend is not None:
            raise ConfigError(
                "model.frontend: encodes a source that is a file, and data.input is text; remove "
                "model.frontend or set data.input (e.g. image)",
                key="model.frontend",
            )
        return config
    if not hasattr(config.model, "frontend"):
        raise ConfigError(
            f"data.input: the {config.model.arch} architecture reads text alone; choose model.arch "
            f"rnn or transformer for data.input {kind.name}",
            key="data.input",
        )
    if getattr(config.model, "copy", False):
        raise ConfigError(
            f"model.copy: copies source tokens, and data.input {kind.name} has none; set model.copy: false",
            key="model.copy",
        )
    if frontend is None:
        frontend = Variant(kind.default_frontend)
    reads = FRONTENDS.get(frontend.name, "model.frontend").reads
    if reads != kind.name:
        raise ConfigError(
            f"model.frontend: {frontend.name} reads {reads} features, and data.input is {kind.name}; "
            f"choose a frontend of {kind.name} (e.g. {kind.default_frontend})",
            key="model.frontend",
        )
    return dataclasses.replace(config, model=dataclasses.replace(config.model, frontend=frontend))


def check_copy(config: Config) -> None:
    """Raise a ConfigError naming the key where a copying model (model.copy) cannot train as
    configured: its loss is the log of a mixture over the extended vocabulary, where label
    smoothing is not defined; and it writes source tokens into its output, which two
    sentencepiece models would spell differently."""
    if not getattr(config.model, "copy", False):
        return
    if config.train.label_smoothing:
        raise ConfigError(
            "train.label_smoothing: a copying model (model.copy) is trained on the log of its mixture "
            "over the extended vocabulary, where label smoothing is not defined; set it to 0",
            key="train.label_smoothing",
        )
    tokenizer = config.data.tokenizer
    if tokenizer.name == "sentencepiece" and not tokenizer.options.get("joint", True):
        raise ConfigError(
            "data.tokenizer.joint: a copying model writes source pieces into its output, which the "
            "target's own sentencepiece model cannot spell; set it to true",
            key="data.tokenizer.joint",
        )


def rng_states() -> dict[str, Any]:
    """Every random number generator's state (python, numpy, torch CPU and CUDA)."""
    states = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def set_rng_states(states: dict[str, Any]) -> None:
    random.setstate(states["python"])
    np.random.set_state(states["numpy"])
    torch.set_rng_state(states["torch"])
    if "cuda" in states and torch.cuda.is_available():
        # one state per GPU the saving process saw: a machine with fewer restores those it has
        for index, state in enumerate(states["cuda"][: torch.cuda.device_count()]):
            torch.cuda.set_rng_state(state, index)


class Trainer(EpochLoop):
    """Trains the torch model a Config describes and writes the run folder (the loop itself is
    EpochLoop's)."""

    def __init__(
        self,
        config: Config,
        run_dir: str | Path,
        resume: bool = False,
        on_eval: Callable[[dict], None] | None = None,
        overwrite: bool = False,
    ):
        super().__init__()
        config = check_config(config)
        self.config, self.run_dir, self.resume, self.on_eval = config, Path(run_dir), resume, on_eval
        tc = config.train
        if tc.threads:
            torch.set_num_threads(tc.threads)
        self.dist = Distributed.from_env()
        self.device = self.dist.setup(resolve_device(tc.device))
        self.bf16 = False  # autocast the products to bfloat16 (train.precision; _decide_precision)
        self._saved_precision: str | None = None  # what a restored run trained in
        self._seed(tc.seed + self.dist.rank)  # different dropout masks in each process
        self.prepare_data(overwrite)
        store = self.train_store
        self.sampler = LengthSampler(
            store.src_lengths, store.tgt_lengths, tc.batch_size, tc.batch_tokens, tc.bucket, seed=tc.seed
        )
        self.model = build_model(
            config.model,
            len(self.pipeline.src_vocab),
            len(self.pipeline.tgt_vocab),
            self.pipeline.shares_vocab,
            src_vocab=self.pipeline.src_vocab,
            features=self.pipeline.inputs.feature_size,
        )
        self.model.to(self.device)
        self.loss_module = self.dist.wrap(LossModule(self.model), self.device)
        self._compiling = tc.compile
        if tc.compile:
            self.loss_module = torch.compile(self.loss_module)
        self.optimizer = build_optimizer(self.model.parameters(), tc)
        self.schedule = build_schedule(self.optimizer, tc)
        self.schedule.budget_used = self.budget_used
        self.progress = Progress()
        self._unproven: Path | None = None  # a restored state the optimiser has not stepped with yet
        if self.restore:
            self._restore()
            self._unproven = self.run_dir / LAST
        self._decide_precision()
        self.translator = TorchTranslator(self.model, self.pipeline, config, self.device)

    # -- set-up -----------------------------------------------------------------------------
    @staticmethod
    def _seed(seed: int) -> None:
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)

    def _restore(self) -> None:
        weights, _, state = read_checkpoint(self.run_dir / LAST, with_state=True)
        load_model_weights(self.model, weights, self.run_dir / LAST)
        self._saved_precision = state.get("precision")
        with restoring(self.run_dir / LAST):
            self.optimizer.load_state_dict(state["optimizer"])
            self.schedule.load_state_dict(state["scheduler"])
            self.progress = Progress(**state["progress"])
            set_rng_states(state["rng"])
            changes = self.sampler.changes(state["sampler"], self.dist.world_size) if "sampler" in state else []
        if changes and self.progress.batch_in_epoch and self.is_main:
            log.warning(
                "--resume: the rest of epoch %d is dealt anew, as the batches are drawn otherwise than when "
                "it was saved (%s)",
                self.progress.epoch + 1,
                ", ".join(changes),
            )

    def _decide_precision(self) -> None:
        """Set ``bf16`` from train.precision: fp32 never autocasts; bf16 autocasts wherever
        bfloat16 products pay on this device (hardware.bf16_pays), else warns; auto (the default)
        autocasts where they pay and, on a CPU, this model's updates are measured faster in
        bfloat16 (_bf16_faster: a small model's products gain nothing and its casts cost; one of
        fewer than PROBE_MIN_PARAMETERS is not measured), without a word. A resumed run goes on in the precision it was saved in, so that it resumes exactly:
        auto decides once per run (a run saved in bfloat16 resumed where the hardware has none goes
        on in float32, with a warning that it no longer repeats the uninterrupted run)."""
        asked, saved = self.config.train.precision, self._saved_precision
        where = "GPU" if self.device.type == "cuda" else f"CPU ({cpu_model()})"
        if asked == "fp32":
            return
        if asked == "auto" and saved is not None:
            from ...hardware import bf16_in_hardware  # (looked up now: tests stand in for the hardware)

            self.bf16 = saved == "bf16" and bf16_in_hardware(self.device.type)
            if saved == "bf16" and not self.bf16 and self.is_main:
                log.warning(
                    "--resume: the run trained in bfloat16 (train.precision auto) and this %s has none; it goes "
                    "on in float32, no longer exactly as the uninterrupted run",
                    where,
                )
            return

        def decided() -> tuple[bool, str]:
            pays, why_not = bf16_pays(self.device.type)
            if not pays or asked == "bf16" or self.device.type == "cuda":
                return pays, why_not
            if self.parameters < PROBE_MIN_PARAMETERS:
                return False, f"has {self.parameters:,} parameters, too few for bfloat16 products to gain"
            return self._bf16_faster()

        self.bf16, why_not = self.dist.decided_by_main(decided)
        if not self.bf16 and asked == "bf16" and self.is_main:
            log.warning("train.precision bf16: this %s %s; training in fp32", where, why_not)

    def _bf16_faster(self, batches: int = PROBE_BATCHES, rounds: int = PROBE_ROUNDS) -> tuple[bool, str]:
        """(whether this model's forward and backward passes over the first ``batches`` batches
        run at least BF16_GAIN times as fast with bfloat16 autocast as in float32 here, and the
        measured gain), timed ``rounds`` times in each precision in turn, the first round a warm-up.
        Nothing of the run changes: no update is made, and the gradients, the buffers (a conv
        frontend's batch statistics) and every random stream are put back as they were."""
        probe = LossModule(self.model)  # not the distributed wrapper: this process alone measures
        todo = [self.train_store.batch(index).to(self.device) for index in self._epoch_batches()[:batches]]
        streams, buffers = rng_states(), {k: v.clone() for k, v in self.model.named_buffers()}
        seconds: dict[bool, list[float]] = {False: [], True: []}
        smoothing = self.config.train.label_smoothing
        for _ in range(rounds):
            for bf16 in (False, True):
                started = time.perf_counter()
                for batch in todo:
                    with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=bf16):
                        loss, _ = probe(batch.source, batch.tgt_in, batch.tgt_out, batch.tgt_mask, smoothing)
                    loss.backward()
                seconds[bf16].append(time.perf_counter() - started)
        self.optimizer.zero_grad(set_to_none=True)
        with torch.no_grad():
            for name, value in self.model.named_buffers():
                value.copy_(buffers[name])
        set_rng_states(streams)
        gain = min(seconds[False][1:]) / min(seconds[True][1:])
        return gain >= BF16_GAIN, f"ran this model's updates {gain:.2f}x as fast in bfloat16 (not {BF16_GAIN}x)"

    @property
    def precision(self) -> str:
        """What the products train in: "bf16" (autocast) or "fp32"."""
        return "bf16" if self.bf16 else "fp32"

    @property
    def parameters(self) -> int:
        return count_parameters(self.model)

    @property
    def is_main(self) -> bool:
        return self.dist.is_main

    @property
    def description(self) -> str:
        return f"torch {self.config.model.arch}" + (", bfloat16 products" if self.bf16 else "")

    # -- what EpochLoop asks of an engine ------------------------------------------------------
    def _epoch_batches(self) -> EpochBatches:
        """This process's share of the epoch's batches (index arrays of the store's pairs),
        bucketed by length."""
        every = self.sampler.epoch(self.progress.epoch)
        batches = every.shard(self.dist.rank, self.dist.world_size)
        if len(every) and not len(batches):  # each process would wait for a batch that never comes
            raise ConfigError(
                f"train.batch_size: the {len(self.train_store):,} training pairs make "
                f"{len(every)} batch(es), fewer than the {self.dist.world_size} processes; "
                f"lower train.batch_size (or train.batch_tokens) or start fewer processes",
                key="train.batch_size",
            )
        self._epoch_length = len(batches)
        return batches

    def _batches(self, todo: EpochBatches):
        """The batches ``todo`` read from the store, each when its turn comes."""
        return (self.train_store.batch(index) for index in todo)

    def _most(self, values: list[float]) -> list[float]:
        return self.dist.maximum(values)

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
        started = time.perf_counter()
        self.optimizer.zero_grad(set_to_none=True)
        total_tokens = sum(b.target_tokens for b in group)
        loss_sum = 0.0
        for batch in group:
            batch = batch.to(self.device)
            with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16):
                loss, tokens = self.loss_module(
                    batch.source, batch.tgt_in, batch.tgt_out, batch.tgt_mask, tc.label_smoothing
                )
            (loss / total_tokens).backward()
            loss_sum += float(loss.detach())
        if tc.clip_norm:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), tc.clip_norm)
        # the first update after --resume is where the optimiser first reads its restored state
        with restoring(self._unproven) if self._unproven else contextlib.nullcontext():
            self.optimizer.step()
            self.schedule.step()
        self._unproven = None
        if self._compiling:  # the first update compiled the step
            self._compiling = False
            if self.is_main:
                log.info(
                    "train.compile: the first update took %.1f s, compilation included", time.perf_counter() - started
                )
        return loss_sum, total_tokens

    # -- evaluation and checkpoints -----------------------------------------------------------
    @torch.no_grad()
    def dev_loss(self) -> float:
        """Mean cross-entropy per target token on the dev set, in batches whose memory is bounded
        however long or many the dev pairs (sampler.evaluation_batches: at most DEV_BATCH pairs,
        DEV_POSITIONS padded positions, and as many target tokens as DEV_LOGIT_BYTES of logits
        hold; without gradients the output layer's logits of a whole batch exist at once)."""
        self.model.eval()
        dev = self.dev_examples
        if not hasattr(dev, "batch"):  # a list of Examples
            dev = ExampleStore(dev)
        logit_rows = max(1, DEV_LOGIT_BYTES // (4 * len(self.pipeline.tgt_vocab)))
        total = tokens = 0.0
        for index in evaluation_batches(dev.src_lengths, dev.tgt_lengths, DEV_BATCH, DEV_POSITIONS, logit_rows):
            batch = dev.batch(index).to(self.device)
            loss, n = self.model.loss(batch.source, batch.tgt_in, batch.tgt_out, batch.tgt_mask)
            total += float(loss)
            tokens += n
        return total / tokens if tokens else float("nan")

    def _after_evaluation(self, record: dict, improved: bool) -> None:
        if selection_score(record, self.select_by) is not None:
            self.schedule.after_evaluation(improved)

    @property
    def batches_per_epoch(self) -> int:
        if getattr(self, "_epoch_length", None):  # token batches: as many as this epoch has
            return self._epoch_length
        batches = math.ceil(len(self.train_store) / self.config.train.batch_size)
        return batches // self.dist.world_size if self.dist.enabled else batches

    def _slots(self, group) -> tuple[int, int]:
        """(real tokens, positions) of the batches of ``group``, source and target together."""
        real = sum(int(b.source.mask.sum()) + int(b.tgt_mask.sum()) for b in group)
        return real, sum(b.source.mask.numel() + b.tgt_mask.numel() for b in group)

    def _write_checkpoint(self, path: Path, state: dict | None = None) -> None:
        write_checkpoint(path, model_weights(self.model), state)

    def _training_state(self) -> dict:
        p = self.progress
        return {
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.schedule.state_dict(),
            "rng": rng_states(),
            "sampler": self.sampler.state(p.epoch, p.batch_in_epoch, self.dist.world_size),
            "precision": self.precision,
        }
