"""The epoch loop both engines train with: the run's data and text pipeline, stop limits,
interrupts, progress bar, metrics log, evaluation, checkpoints and exact resume. The torch
Trainer and the NumPy engine's trainer differ only in how an epoch's batches are drawn, how one
update is made, and how weights and training state are written."""

from __future__ import annotations

import errno
import logging
import math
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..config import Config, save_config
from ..data.inputs import build_input
from ..data.pipeline import TextPipeline, unknown_share
from ..data.prepare import prepare_training
from ..data.sources import SOURCES
from ..data.store import ExampleStore, TokenStore
from ..errors import ConfigError, DataError, UserError
from ..eval.metrics import BLEU_MIN_WORDS, bleu_applies
from ..progress import StepProgress
from ..runs import (
    BEST,
    CONFIG_FILE,
    LAST,
    METRICS_FILE,
    RunLock,
    kept_checkpoint_path,
    log_metrics,
    prepare_run_dir,
    prune_kept_checkpoints,
    read_metrics,
    truncate_metrics,
)
from .budget import Budget, Clock
from .interrupts import Interrupted, StopRequests, signal_name

Pair = tuple[str, str]
log = logging.getLogger("attnseq")
DEV_PART = 10_000  # dev pairs encoded at a time, then packed (EpochLoop._encode_dev)
UNKNOWN_WARNING = 0.05  # a start warns when more of its training tokens than this lie outside the vocabulary
# what the metrics log's wall_seconds measure, said in its start record
WALL_CLOCK = (
    "wall_seconds: since the run's training began, set-up, data loading and evaluations included, "
    "over resumed sessions (what train.max_minutes bounds); cpu_seconds: the CPU time of the training "
    "process's threads over the same time"
)


class TrainingDiverged(UserError):
    """The loss became non-finite or exploded: training stopped, the last good checkpoint kept.

    ``step`` is the update at which it diverged; ``summary`` what ``fit`` would have returned at
    the last evaluation (the last good checkpoint's), None where nothing was evaluated yet.
    """

    def __init__(self, message: str, step: int, summary: dict | None = None):
        super().__init__(message)
        self.step, self.summary = step, summary


def scored_if_diverged(train: Callable[[], dict]) -> dict:
    """``train()``'s summary, or where the run diverged after an evaluation, the summary of its
    last good checkpoint with ``diverged`` (the update), the error logged as a warning: for
    commands that train several runs (compare, reproduce), so that one diverging run is a row
    that says so and the others still train. A run that diverged before any evaluation raises."""
    try:
        return train()
    except TrainingDiverged as err:
        if err.summary is None:
            raise
        log.warning("%s; scored from that checkpoint", err)
        return {**err.summary, "diverged": err.step, "stopped_by": f"diverged at step {err.step}"}


class SaveFailed(UserError):
    """A checkpoint or the metrics log could not be written (a full disk, a read-only folder):
    training stopped; the checkpoint written before is whole and ``--resume`` continues from it."""


class ProgressDisplay(StepProgress):
    """Where an epoch stands (the rule of attnseq.progress): a tqdm bar on a terminal; elsewhere
    (a log file, a pipe) a plain log line every ``interval`` seconds, and nothing with ``-q``."""

    def __init__(self, total: int, done: int, description: str, enabled: bool = True, interval: float = 30.0):
        super().__init__(description, total, unit="batch", enabled=enabled, interval=interval, done=done)

    def line(self, figures: dict[str, str]) -> str:
        return "  ".join([f"batch {self.done}/{self.total}", *(f"{k} {v}" for k, v in figures.items())])


__all__ = [
    "Progress",
    "EpochLoop",
    "ProgressDisplay",
    "SaveFailed",
    "TrainingDiverged",
    "scored_if_diverged",
    "evaluation_record",
    "patience_renewal",
    "at_ceiling",
    "selection_metric",
    "selection_score",
]


@dataclass
class Progress:
    """Where training stands; saved with every checkpoint so ``--resume`` continues exactly."""

    epoch: int = 0  # epochs finished
    batch_in_epoch: int = 0  # batches of the current epoch already trained
    step: int = 0  # optimizer updates so far
    select_by: str | None = None  # the dev metric that selects (train.select_by, auto resolved)
    best: float | None = None  # the best evaluation's score by that metric
    best_loss: float | None = None  # and its dev loss, which breaks ties (all 0% exact match early on)
    since_best: int = 0  # evaluations since the best one (train.patience)
    plateau_score: float | None = None  # the score and dev loss that last renewed the patience
    plateau_loss: float | None = None  # (train.min_delta, train.min_loss_delta)
    train_seconds: float = 0.0
    target_tokens: int = 0  # target tokens trained on so far
    # wall-clock seconds since the run's training began: set-up, data loading and evaluations
    # included, over resumed sessions (what train.max_minutes bounds)
    wall_seconds: float = 0.0
    # CPU seconds of the training process (all its threads) over the same time: beside
    # wall_seconds x threads, the share of the cores the run had (another program's work shows)
    cpu_seconds: float = 0.0
    window_loss: float = 0.0  # summed loss, tokens and update seconds since the last train record
    window_tokens: int = 0
    window_seconds: float = 0.0
    window_real: int = 0  # real tokens and padded positions of the batches since then
    window_slots: int = 0
    history: list[dict] = field(default_factory=list)


def evaluation_record(
    progress: Progress,
    epoch: float,
    translator,
    dev_pairs: Sequence[Pair],
    dev_loss: Callable[[], float],
    max_sentences: int,
    select_by: str,
) -> dict:
    """The metrics-log record of one evaluation: dev loss, dev metrics of the first
    ``max_sentences`` dev pairs, and whether it is the best so far by ``select_by``."""
    record = {"type": "eval", "epoch": epoch, "step": progress.step, "train_seconds": round(progress.train_seconds, 3)}
    if dev_pairs:
        started = time.perf_counter()
        record["dev_loss"] = dev_loss()
        metrics = translator.evaluate(dev_pairs[:max_sentences], bleu=True)
        record.update(
            {f"dev_{k}": v for k, v in metrics.items() if k in ("exact_match", "token_accuracy", "bleu", "chrf")}
        )
        record["eval_seconds"] = round(time.perf_counter() - started, 3)
    score = selection_score(record, select_by)
    loss, best_loss = record.get("dev_loss"), progress.best_loss
    tie_won = score == progress.best and loss is not None and best_loss is not None and loss < best_loss
    record["best"] = score is not None and (progress.best is None or score > progress.best or tie_won)
    return record


# The least fall of the dev loss (nats per target token) the plateau rule's loss clause counts:
# a model whose dev outputs are all right goes on shrinking an already tiny loss by a steady
# fraction forever (1e-5 -> 1e-6), which would renew its patience to the cap.
LOSS_FLOOR = 1e-4


# The highest value of each dev metric train.select_by can name (exact match and token accuracy
# as fractions, BLEU and chrF in points); the loss has none.
CEILINGS = {"exact_match": 1.0, "token_accuracy": 1.0, "bleu": 100.0, "chrf": 100.0}


def at_ceiling(score: float, select_by: str) -> bool:
    """Whether ``score`` of the dev metric ``select_by`` is at the highest it can be (sacrebleu's
    100 may come out a hair above or below it)."""
    ceiling = CEILINGS.get(select_by)
    return ceiling is not None and score >= ceiling - 1e-9 * ceiling


def patience_renewal(
    score: float,
    loss: float | None,
    ref_score: float | None,
    ref_loss: float | None,
    min_delta: float,
    min_loss_delta: float,
    ceiling: bool = False,
) -> str | None:
    """The plateau rule (train.min_delta, train.min_loss_delta): whether an evaluation of
    ``score`` (higher is better) and dev ``loss`` renews the patience against the evaluation that
    last renewed it (``ref_score``, ``ref_loss``; None: none yet, so it does), and by which clause:
    "first" (none before it), "metric" (its score is higher by more than ``min_delta``) or "loss"
    (its score no lower, its loss lower by more than the fraction ``min_loss_delta`` of that
    one's and by more than LOSS_FLOOR); None when it does not. The loss clause is for a metric
    that has not moved yet while the model learns; with the score at its ``ceiling`` (every dev
    output right: at_ceiling) there is nothing left for it to show, and a model sure of right
    outputs goes on shrinking its loss by a steady fraction for as long as it trains, so the loss
    renews nothing there."""
    if ref_score is None:
        return "first"
    if score > ref_score + min_delta:
        return "metric"
    if (
        min_loss_delta > 0
        and not ceiling
        and score >= ref_score
        and loss is not None
        and ref_loss is not None
        and loss < ref_loss * (1.0 - min_loss_delta)
        and ref_loss - loss > LOSS_FLOOR
    ):
        return "loss"
    return None


def selection_metric(select_by: str, dev_references: Sequence[str]) -> str:
    """The dev metric ``train.select_by`` names; ``auto`` is the one a run reports for its task:
    BLEU where it means something for the dev references (eval.metrics.bleu_applies: text),
    else exact match (short strings: dates, codes, words)."""
    if select_by != "auto":
        return select_by
    return "bleu" if bleu_applies(dev_references) else "exact_match"


def selection_score(record: dict, select_by: str) -> float | None:
    """Higher is better: the dev metric ``select_by`` names (``loss`` counts negated)."""
    if select_by == "loss":
        return -record["dev_loss"] if "dev_loss" in record else None
    return record.get(f"dev_{select_by}")


class EpochLoop:
    """Trains until ``train.epochs``, ``train.max_steps`` or ``train.max_minutes``, an early stop
    (``train.patience``, ``train.target_exact_match``) or an interrupt (SIGINT, SIGTERM).

    Evaluates (dev loss and metrics) and checkpoints at every epoch end, or every
    ``train.eval_every`` updates; ``progress`` (epoch, batch within it, step, time, history)
    is saved with the checkpoint so a resumed run continues with the very next batch. An
    interrupt lets the update in progress finish, saves ``last`` and raises Interrupted.

    An engine calls ``EpochLoop.__init__()`` first (the run's clock starts there), sets
    ``config``, ``run_dir``, ``resume``, ``progress``, ``translator`` and ``on_eval``, calls
    ``prepare_data()`` (the run folder locked; dev and test, the pipeline, the training store) and provides:

    - ``_epoch_batches()``: the whole current epoch's batches, in order (the loop skips the
      ``progress.batch_in_epoch`` already trained);
    - ``_batches(todo)``: those batches ready for ``_update`` (default: as they are);
    - ``_update(group) -> (summed loss, target tokens)``: one optimizer update over the
      batches of ``group`` (``train.accumulate`` of them);
    - ``_write_checkpoint(path, state)``: the weights, and the training ``state`` when one is
      given, in one file written atomically; ``_training_state()``: what resuming needs besides
      ``progress`` (optimizer, random generators, ...);
    - ``dev_loss()``, ``_learning_rate()``, ``parameters``, ``train_size``.

    Hooks with defaults for a single process: ``is_main``, ``_most``, ``_share``, ``_train_mode``,
    ``_after_evaluation``, ``_close``.
    """

    config: Config
    run_dir: Path
    resume: bool
    progress: Progress
    pipeline: TextPipeline
    train_store: TokenStore | ExampleStore  # the training pairs, prepared once (data.prepare)
    dev_pairs: Sequence[Pair]
    dev_examples: TokenStore | ExampleStore  # the dev pairs as ids, held packed (_encode_dev)
    select_by: str  # the dev metric that selects the best checkpoint and stops early (train.select_by resolved)
    on_eval: Callable[[dict], None] | None = None
    is_main = True
    stopped_by: str | None = None  # why fit() stopped: a limit, or its train.epochs ran out
    interrupted_by: int | None = None  # the signal that stopped fit(), the same in every process
    lock: RunLock | None = None  # the run folder's, held by the main process from prepare_data() to fit()'s end
    _saved_step: int | None = None  # the step last.safetensors holds (None: none written or restored)
    precision: str = "fp32"  # what the products train in ("bf16": autocast, where the engine offers it)

    def __init__(self) -> None:
        self.clock = Clock()  # train.max_minutes and wall_seconds count from here: set-up and data included
        self.agreed_seconds = 0.0  # the clock as the processes agreed it after the last update
        self.cpu_started, self.cpu_earlier = time.process_time(), 0.0  # cpu_seconds, likewise

    def prepare_data(self, overwrite: bool = False) -> None:
        """Lock the run folder (runs.RunLock: a folder another process trains is refused) and make
        it ready (runs.prepare_run_dir: a run there is refused unless resumed or overwritten);
        read the dev and test splits; prepare the training pairs (data.prepare: tokenised once
        into a store in the cache, or mapped from it), with the text pipeline fitted to them (or,
        resuming, the run's), saved with the config; encode dev. Sets ``select_by`` and
        ``restore``: there is a checkpoint to continue from."""
        config = self.config
        source = SOURCES.get(config.data.format, "data.format")()
        held_out = source.held_out(config.data)  # bad data or settings are refused before anything is written
        self.dev_pairs, self.test_pairs = held_out.get("dev", []), held_out.get("test", [])
        references = [t for _, t in self.dev_pairs]
        self.select_by = selection_metric(config.train.select_by, references)
        if self.select_by == "bleu" and self.dev_pairs and not bleu_applies(references):
            raise ConfigError(
                "train.select_by: bleu means nothing for this dev set (its references average fewer "
                f"than {BLEU_MIN_WORDS} words); select by exact_match, chrf or loss",
                key="train.select_by",
            )
        text = source.training_text(config.data)
        # sources that are files (data.input: image, audio) train from their features in memory:
        # a store holds token ids; their pairs are read (and each file checked) before anything is written
        extended = bool(getattr(config.model, "copy", False))  # a copying model trains on extended ids
        reads_files = not build_input(config.data).reads_text
        pairs = source.splits(config.data)["train"] if reads_files or extended else None  # read once, for both
        files = pairs if reads_files else None
        if (
            not self.resume and files is None
        ):  # the training text is read (and checked) before the run folder is touched
            self.pipeline, self.train_store = prepare_training(config.data, text)
        if self.is_main:
            self.restore, self.lock = prepare_run_dir(self.run_dir, config, self.resume, overwrite)
        else:
            self.restore = self.resume and (self.run_dir / LAST).exists()
        if self.resume:
            self.pipeline = TextPipeline.load(config.data, self.run_dir)
            if files is None:
                self.pipeline, self.train_store = prepare_training(config.data, text, self.pipeline)
        elif files is not None:
            self.pipeline = TextPipeline.fit(config.data, files, self.run_dir)
        if not self.resume and self.is_main:
            self.pipeline.save(self.run_dir)
        if self.is_main:  # after the vocabularies: a folder with a config can always be resumed
            save_config(config, self.run_dir / CONFIG_FILE)
        if files is not None:
            examples = self.pipeline.encode_pairs(
                files, config.data.max_source_len, config.data.max_target_len, "training data"
            )
            if not examples:
                raise DataError(
                    "no training pair is left after the length limits (data.max_source_len, data.max_target_len)"
                )
            self.train_store = ExampleStore(examples, unknown_share(examples))
        if extended:  # which a store of vocabulary ids cannot hold: they are made from the text, in memory
            examples = self.pipeline.encode_pairs(
                pairs, config.data.max_source_len, config.data.max_target_len, extended=True, warn=False
            )  # the store's preparation warned
            self.train_store = ExampleStore(examples, self.train_store.unknown_share)
        self.dev_examples = self._encode_dev(extended)
        self.dev_pairs = self.dev_pairs[: config.train.eval_max_sentences]  # what the evaluations decode
        if not self.dev_pairs and self.is_main:
            log.warning("no dev pairs: the run is not evaluated, and best.safetensors is the last checkpoint")

    def _encode_dev(self, extended: bool) -> TokenStore | ExampleStore:
        """The dev pairs as ids (what dev_loss scores), encoded DEV_PART pairs at a time and held
        packed in arrays (TokenStore.packed: 2 bytes a token), so that a dev set of any size
        costs its ids, not a Python list per pair; a copying model's extended ids and the
        features of sources that are files are held as Examples (ExampleStore)."""
        pipeline, pairs = self.pipeline, self.dev_pairs
        if extended or not pipeline.inputs.reads_text:
            return ExampleStore(pipeline.encode_pairs(pairs, extended=extended))
        parts = (pipeline.encode_pairs(pairs[start : start + DEV_PART]) for start in range(0, len(pairs), DEV_PART))
        return TokenStore.packed(parts, max(len(pipeline.src_vocab), len(pipeline.tgt_vocab)))

    # -- what an engine provides ----------------------------------------------------------------
    def _epoch_batches(self) -> list:
        raise NotImplementedError

    def _batches(self, todo: list):
        return iter(todo)

    def _update(self, group: list) -> tuple[float, int]:
        raise NotImplementedError

    def dev_loss(self) -> float:
        raise NotImplementedError

    def _write_checkpoint(self, path: Path, state: dict | None = None) -> None:
        raise NotImplementedError

    def _training_state(self) -> dict:
        raise NotImplementedError

    def _learning_rate(self) -> float:
        raise NotImplementedError

    @property
    def batches_per_epoch(self) -> int:
        raise NotImplementedError

    @property
    def parameters(self) -> int:
        raise NotImplementedError

    @property
    def train_size(self) -> int:
        return len(self.train_store)

    @property
    def description(self) -> str:
        """What is trained, for the log line at the start (e.g. "numpy attention")."""
        return self.config.engine

    # -- hooks ---------------------------------------------------------------------------------
    def _most(self, values: list[float]) -> list[float]:
        """Each of ``values`` at its largest over the processes."""
        return values

    def _share(self, record: dict | None) -> dict:
        """The main process's evaluation record, in every process."""
        return record

    def _train_mode(self) -> None:
        """Put the model back in training mode (after an evaluation)."""

    def _after_evaluation(self, record: dict, improved: bool) -> None:
        """React to an evaluation (e.g. decay the learning rate on a plateau)."""

    def _close(self) -> None:
        """Release what the run holds (e.g. the process group)."""

    def _slots(self, group: list) -> tuple[int, int]:
        """(real tokens, padded positions) of ``group``'s batches, for the padding fraction."""
        return 0, 0

    # -- the loop -------------------------------------------------------------------------------
    def fit(self) -> dict:
        """Train until a limit is reached; the last evaluation record, with ``parameters``,
        ``target_tokens`` (trained on, in all) and ``tokens_per_second``.

        A loss that is not finite, or far worse than guessing uniformly, stops the run with a
        TrainingDiverged error before anything is saved: the run keeps its last good checkpoint.
        SIGINT or SIGTERM stop it once the update in progress is done and last.safetensors holds
        it (Interrupted); a checkpoint the system refuses to write stops it with SaveFailed, the
        one before kept whole. The run folder is unlocked at the end, whatever happened.
        """
        self.requests = StopRequests()
        try:
            with self.requests:
                self._train()
        except Interrupted as err:
            if err.again:  # say what the run keeps from before
                if self._saved_step is None:
                    err.what, err.resumable = f"{err.what}; no checkpoint was saved before", False
                else:
                    err.what = f"{err.what}; {self.run_dir / LAST} holds step {self._saved_step}"
            raise
        finally:
            if self.lock is not None:
                self.lock.release()
        return self._summary()

    def _summary(self) -> dict:
        """fit()'s summary: the last evaluation record with the run's figures."""
        p = self.progress
        return {
            **p.history[-1],
            "parameters": self.parameters,
            "target_tokens": p.target_tokens,
            "tokens_per_second": round(p.target_tokens / p.train_seconds) if p.train_seconds else 0,
            "stopped_by": self.stopped_by,
        }

    def _warn_of_unknown_tokens(self, unknown: float) -> None:
        """A warning when more than UNKNOWN_WARNING of the training tokens lie outside the
        vocabulary built from them: the model would learn to write unk for them. Only the
        vocabulary's limits leave a training token out; the warning names those that are set."""
        data = self.config.data
        limits = [f"data.{key} {value}" for key, value in (("min_freq", data.min_freq), ("max_vocab", data.max_vocab))]
        set_ = [limit for limit, default in zip(limits, ("data.min_freq 1", "data.max_vocab 0")) if limit != default]
        log.warning(
            "training data: %.1f%% of its tokens are outside the vocabulary%s, and the model learns to write "
            "the unknown token for them; lower data.min_freq or raise data.max_vocab (0: no limit)",
            100 * unknown,
            f" ({', '.join(set_)})" if set_ else "",
        )

    def _warn_if_the_vocabulary_covers_less(self, unknown: float) -> None:
        """On --resume: a warning when more of the training data lies outside the run's vocabulary
        than when the run began (the data was changed under it; the vocabulary stays the run's)."""
        # (no log yet where the run was stopped between its vocabularies and its first record)
        records = read_metrics(self.run_dir) if (self.run_dir / METRICS_FILE).exists() else []
        began = next((r.get("unknown_share") for r in records if r["type"] == "start"), None)
        if began is not None and unknown > began + 0.001:
            log.warning(
                "training data: %.2f%% of its tokens are outside the run's vocabulary (%.2f%% when the run "
                "began): the data has changed since; the run keeps its vocabulary (start a new run, --out, "
                "to build one from this data)",
                100 * unknown,
                100 * began,
            )

    def _train(self) -> None:
        """fit()'s loop, with stop requests received in ``self.requests``."""
        tc, p = self.config.train, self.progress
        if p.select_by not in (None, self.select_by):
            raise ConfigError(
                f"train.select_by: auto means {self.select_by} for this dev set, but the run "
                f"selected its best checkpoint by {p.select_by}; set train.select_by={p.select_by} "
                "to continue it",
                key="train.select_by",
            )
        p.select_by = self.select_by
        self.clock.earlier = p.wall_seconds  # the sessions before this one, when resumed
        self.cpu_earlier = p.cpu_seconds
        self.budget = Budget(tc.max_minutes, self.clock)
        self.agreed_seconds = p.wall_seconds
        self._saved_step = p.step if self.restore else None
        if self.is_main and self.restore:
            log.info("resuming at step %d (epoch %d) from %s", p.step, p.epoch + 1, self.run_dir / LAST)
        if self.is_main:
            log.info(
                "training %s parameters (%s) on %d pairs -> %s",
                f"{self.parameters:,}",
                self.description,
                self.train_size,
                self.run_dir,
            )
            if self.dev_examples:
                log.info(
                    "dev %s selects the best checkpoint%s (train.select_by %s)",
                    self.select_by,
                    " and stops early (train.patience)" if tc.patience else "",
                    tc.select_by,
                )
        if self.resume and self.is_main:  # records and kept weights of steps after the checkpoint were never saved
            with self._writing(self.run_dir / METRICS_FILE):
                truncate_metrics(self.run_dir, p.step)
            with self._writing(kept_checkpoint_path(self.run_dir, p.step).parent):
                prune_kept_checkpoints(self.run_dir, tc.keep_checkpoints or None, after=p.step)
        unknown = round(self.train_store.unknown_share, 6)  # of the training tokens, outside the vocabulary
        if self.resume and self.is_main:
            self._warn_if_the_vocabulary_covers_less(unknown)
        elif self.is_main and unknown > UNKNOWN_WARNING:
            self._warn_of_unknown_tokens(unknown)
        self._log(
            {
                "type": "start",
                "parameters": self.parameters,
                "train_pairs": self.train_size,
                "dev_pairs": len(self.dev_examples),
                "unknown_share": unknown,
                "precision": self.precision,
                "resumed_at_step": p.step if self.restore else None,
                "select_by": self.select_by,
                "wall_seconds": round(self._tick(), 3),
                "cpu_seconds": round(p.cpu_seconds, 3),
                "clock": WALL_CLOCK,
            }
        )
        stop = self._should_stop()
        while not stop and p.epoch < tc.epochs:
            batches = self._epoch_batches()
            display = ProgressDisplay(
                len(batches), p.batch_in_epoch, f"epoch {p.epoch + 1}/{tc.epochs}", tc.progress and self.is_main
            )
            stop = self._train_epoch(batches[p.batch_in_epoch :], display)
            display.close()
            if self.interrupted_by:
                break  # not even the evaluation of an epoch's end: it is done when resumed
            if p.batch_in_epoch == len(batches):
                p.epoch, p.batch_in_epoch = p.epoch + 1, 0
                if not tc.eval_every:
                    self.evaluate_and_save()
            stop = stop or self._should_stop()
        if self.interrupted_by:
            self._stop_interrupted()
        if not p.history or p.history[-1]["step"] != p.step:
            self.evaluate_and_save()
        if self.stopped_by is None:  # no limit came first: the epochs ran out
            self.stopped_by = f"{tc.epochs} epochs (train.epochs)"
        if self.is_main:
            log.info("training ended at step %d: %s", p.step, self.stopped_by)
        self._close()

    def budget_used(self, step: int) -> float:
        """The share of the run's budget spent after ``step`` updates: the larger of the clock's
        share of train.max_minutes (as the processes agreed it after the last update) and the
        updates' of train.max_steps; of the epochs' updates when neither is set."""
        tc = self.config.train
        shares = []
        if tc.max_minutes:
            shares.append(self.agreed_seconds / (60 * tc.max_minutes))
        if tc.max_steps:
            shares.append(step / tc.max_steps)
        if not shares:
            updates = tc.epochs * -(-self.batches_per_epoch // max(1, tc.accumulate))
            shares.append(step / max(1, updates))
        return min(1.0, max(shares))

    def _tick(self) -> float:
        """Wall-clock seconds since the run's training began (progress.wall_seconds); the CPU
        seconds of this process over the same time too (progress.cpu_seconds)."""
        self.progress.wall_seconds = self.clock.seconds()
        self.progress.cpu_seconds = self.cpu_earlier + time.process_time() - self.cpu_started
        return self.progress.wall_seconds

    def _should_stop(self) -> bool:
        """True when a stop is requested (SIGINT, SIGTERM: ``interrupted_by``) or a limit is
        reached; ``stopped_by`` then says which (the early stops, by patience or a target reached,
        are logged too). The processes agree on the requests and the clock in one exchange, so
        they all stop after the same update."""
        tc, p = self.config.train, self.progress
        self._tick()
        signum, late, self.agreed_seconds = self._most(
            [self.requests.signum or 0, 0 if self.budget.next_fits() else 1, self.progress.wall_seconds]
        )
        if signum:
            self.interrupted_by = int(signum)
            return self._stopping(f"interrupted ({signal_name(self.interrupted_by)})")
        if tc.max_steps and p.step >= tc.max_steps:
            return self._stopping(f"{tc.max_steps} updates (train.max_steps)")
        if tc.patience and p.since_best >= tc.patience:
            return self._stopping(
                f"{p.since_best} evaluations without a better {self.select_by} (train.patience)", logged=True
            )
        reached = p.history[-1].get("dev_exact_match") if p.history else None
        if tc.target_exact_match and reached is not None and reached >= tc.target_exact_match:
            return self._stopping(f"dev exact match reached {reached:.2%} (train.target_exact_match)", logged=True)
        if late:
            return self._stopping(f"{tc.max_minutes:g} minutes (train.max_minutes)")
        return False

    def _stopping(self, why: str, logged: bool = False) -> bool:
        """Keep ``why`` training stops as ``stopped_by`` (logged once with ``logged``); True."""
        if logged and self.is_main and self.stopped_by is None:
            log.info("stopping: %s", why)
        self.stopped_by = why
        return True

    def _stop_interrupted(self) -> None:
        """Save last.safetensors (unless it holds this step already), leave the process group and
        raise Interrupted, saying where the run was saved."""
        p, name = self.progress, signal_name(self.interrupted_by)
        if self.is_main and self._saved_step != p.step:
            self._tick()
            self._write(LAST, with_state=True)
        self._close()
        where = (
            f"saved at step {p.step} in {self.run_dir / LAST}"
            if self.is_main
            else f"process 0 saved the run at step {p.step}"
        )
        raise Interrupted(self.interrupted_by, f"interrupted ({name}); {where}")

    def _train_epoch(self, todo: list, display: ProgressDisplay) -> bool:
        """Train on the batches ``todo``; True when training stops (a limit, an early stop, an
        interrupt)."""
        tc, p = self.config.train, self.progress
        self._train_mode()
        group: list = []
        started = self.clock.seconds()
        for number, batch in enumerate(self._batches(todo), start=1):
            group.append(batch)
            if len(group) < tc.accumulate and number < len(todo):
                continue
            self._step(group, display)
            self.budget.step = self.clock.seconds() - started  # its batches' preparation included
            group = []
            if tc.eval_every and p.step % tc.eval_every == 0:
                self.evaluate_and_save()
                self._train_mode()
            if self._should_stop():
                return True
            started = self.clock.seconds()
        return False

    def _step(self, group: list, display: ProgressDisplay) -> None:
        """One update, with its bookkeeping: progress, display, metrics log."""
        tc, p = self.config.train, self.progress
        started = time.perf_counter()
        loss_sum, tokens = self._update(group)
        seconds = time.perf_counter() - started
        p.train_seconds += seconds
        p.step += 1
        p.batch_in_epoch += len(group)
        p.target_tokens += tokens
        self._check_loss(loss_sum / max(tokens, 1), "the training loss per token")
        real, slots = self._slots(group)
        p.window_loss += loss_sum
        p.window_tokens += tokens
        p.window_seconds += seconds
        p.window_real += real
        p.window_slots += slots
        loss, tok_s = p.window_loss / max(p.window_tokens, 1), p.window_tokens / max(p.window_seconds, 1e-9)
        padding = 1 - p.window_real / p.window_slots if p.window_slots else None
        display.update(
            len(group),
            loss=f"{loss:.3f}",
            tok_s=f"{tok_s:,.0f}",
            **({"pad": f"{padding:.0%}"} if padding is not None else {}),
        )
        if tc.log_every and p.step % tc.log_every == 0:
            record = {
                "type": "train",
                "epoch": p.epoch + 1,
                "step": p.step,
                "loss": loss,
                "tokens_per_second": tok_s,
                "lr": self._learning_rate(),
                "wall_seconds": round(self._tick(), 3),
                "cpu_seconds": round(p.cpu_seconds, 3),
            }
            if padding is not None:
                record["padding"] = round(padding, 4)  # fraction of batch positions that are padding
            self._log(record)
            p.window_loss, p.window_tokens, p.window_seconds = 0.0, 0, 0.0
            p.window_real = p.window_slots = 0

    def _check_loss(self, value: float, what: str) -> None:
        """TrainingDiverged when ``value`` is not finite or far above what guessing uniformly
        over the target vocabulary gives (5 ln V nats a token)."""
        limit = 5 * math.log(max(len(self.pipeline.tgt_vocab), 2))
        if not math.isfinite(value) or value > limit:
            p = self.progress
            kept = (
                f"{self.run_dir} keeps its last good checkpoint (step {p.history[-1]['step']})"
                if p.history
                else f"nothing was saved in {self.run_dir}"
            )
            self._log({"type": "diverged", "step": p.step, "what": what, "value": repr(value)})
            raise TrainingDiverged(
                f"training diverged at step {p.step}: {what} became {value:.4g} (over {limit:.1f}); "
                f"lower train.lr ({self._learning_rate():g}) or clip harder (train.clip_norm); {kept}",
                p.step,
                self._summary() if p.history else None,
            )

    # -- evaluation and checkpoints -------------------------------------------------------------
    def evaluate_and_save(self) -> dict:
        """Dev loss and accuracy, the metrics log, last (and if better, best) checkpoint.

        With several processes, the main one evaluates and saves; the others take its record.
        """
        p = self.progress
        started = self.clock.seconds()
        record = self._share(self._evaluate() if self.is_main else None)
        if "dev_loss" in record:
            self._check_loss(record["dev_loss"], "the dev loss per token")
        improved = record["best"]
        if improved:
            p.best = selection_score(record, self.select_by)
            p.best_loss = record.get("dev_loss")
        score = selection_score(record, self.select_by)
        if score is not None:
            tc = self.config.train
            renewed = improved
            if tc.min_delta or tc.min_loss_delta:
                renewed = (
                    patience_renewal(
                        score,
                        record.get("dev_loss"),
                        p.plateau_score,
                        p.plateau_loss,
                        tc.min_delta,
                        tc.min_loss_delta,
                        at_ceiling(score, self.select_by),
                    )
                    is not None
                )
                if renewed:
                    p.plateau_score, p.plateau_loss = score, record.get("dev_loss")
            p.since_best = 0 if renewed else p.since_best + 1
        p.history.append(record)
        if self.is_main:
            self._log(record)
            self._save(improved)
        self._after_evaluation(record, improved)
        if self.on_eval and self.is_main:
            self.on_eval(record)
        self.budget.evaluation = self.clock.seconds() - started  # its checkpoints included
        return record

    def _evaluate(self) -> dict:
        """The evaluation record: dev loss and metrics, and whether it is the best so far."""
        tc, p = self.config.train, self.progress
        epoch = p.epoch + p.batch_in_epoch / max(1, self.batches_per_epoch)
        record = evaluation_record(
            p, epoch, self.translator, self.dev_pairs, self.dev_loss, tc.eval_max_sentences, self.select_by
        )
        record["wall_seconds"] = round(self._tick(), 3)  # this evaluation included (train.max_minutes' clock)
        record["cpu_seconds"] = round(self.progress.cpu_seconds, 3)
        return record

    def _save(self, best: bool) -> None:
        """best.safetensors when the evaluation improved (or there is none yet), then
        last.safetensors with the training state; each written whole or not at all.

        With ``train.keep_checkpoints: N`` the weights are also kept as
        checkpoints/step-NNNNNNNN.safetensors, written before last (a run killed between the two
        resumes from the checkpoint before, and drops the kept weights of later steps) and the
        oldest beyond N removed after it."""
        if best or not (self.run_dir / BEST).exists():
            self._write(BEST)
        keep = self.config.train.keep_checkpoints
        kept = kept_checkpoint_path(self.run_dir, self.progress.step)
        if keep:
            with self._writing(kept):
                kept.parent.mkdir(exist_ok=True)
                self._write_checkpoint(kept)
        self._write(LAST, with_state=True)
        if keep:
            with self._writing(kept.parent):
                prune_kept_checkpoints(self.run_dir, keep)

    def _write(self, name: str, with_state: bool = False) -> None:
        """Write the checkpoint ``name``: the weights and, ``with_state``, the training state."""
        path = self.run_dir / name
        state = {**self._training_state(), "progress": asdict(self.progress)} if with_state else None
        with self._writing(path):
            self._write_checkpoint(path, state)
        if with_state:
            self._saved_step = self.progress.step

    @contextmanager
    def _writing(self, path: Path):
        """Turn an OSError while writing ``path`` (a full disk, a read-only folder) into SaveFailed,
        naming the file, the system's error and the checkpoint the run keeps."""
        try:
            yield
        except OSError as err:
            reason = err.strerror or str(err)
            if err.errno in errno.errorcode:
                reason += f" ({errno.errorcode[err.errno]})"
            kept = (
                f"{self.run_dir / LAST} holds step {self._saved_step}, whole, and --resume continues from it"
                if self._saved_step is not None
                else "no checkpoint was saved before: --resume starts again"
            )
            raise SaveFailed(
                f"cannot write {path}: {reason}; training stopped at step {self.progress.step}; {kept}"
            ) from None

    def _log(self, record: dict) -> None:
        if self.is_main:
            with self._writing(self.run_dir / METRICS_FILE):
                log_metrics(self.run_dir, record)
