"""Training the runs a reproduction compares: attnseq's presets with the context's settings,
one run per seed, and the curves of their metrics logs."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..presets import CONFIGS
from ..runs import read_metrics, read_run_config
from .base import Context, RunRecord

log = logging.getLogger("attnseq")


def preset(name: str) -> Path:
    """The preset ``configs/NAME.yaml``."""
    return CONFIGS / f"{name}.yaml"


def run_settings(context: Context, seed: int | None = None) -> list[str]:
    """What every run of a reproduction is trained with: the context's threads, no progress
    bar, no per-step log lines, and ``seed`` (train.seed) when given."""
    settings = [f"train.threads={context.threads}", "train.progress=false", "train.log_every=0"]
    return settings + ([f"train.seed={seed}"] if seed is not None else [])


def fit_preset(
    context: Context, name: str, run_dir: Path, data: str | Path, overrides: Sequence[str] = (), seed: int | None = None
) -> dict:
    """Train the preset ``name`` on ``data`` (a split folder or the book's file) into ``run_dir``
    (replacing a run there, or continuing it with the context's ``resume``); the run's summary
    (``attnseq.fit``; where its loss diverged, its last good checkpoint's, with ``diverged``)."""
    from ..api import fit
    from ..data.sources import data_overrides
    from ..train.loop import scored_if_diverged

    continues = context.continues(run_dir)
    log.info("%s: %s %s -> %s", context.name, "continuing" if continues else "training", name, run_dir)
    return scored_if_diverged(
        lambda: fit(
            preset(name),
            run_dir,
            [*data_overrides(data), *run_settings(context, seed), *overrides],
            resume=continues,
            overwrite=not continues,
        )
    )


def compare_preset(
    context: Context, name: str, run_name: str, data_dir: Path, overrides: Sequence[str] = (), seed: int | None = None
) -> dict:
    """Train the preset ``name`` (with ``overrides``) on the split folder ``data_dir`` into
    ``RUNS/run_name`` and evaluate its best checkpoint on dev and test as ``attnseq compare``
    does; its row of compare's table (parameters, steps, tokens/s, dev and test exact match and
    BLEU) with ``run_dir``."""
    from ..compare import train_and_evaluate

    # budget 0: no wall-clock limit; the reproduction's step budget is in ``overrides``
    continues = context.continues(context.runs_dir / run_name)
    row = train_and_evaluate(
        preset(name),
        run_name,
        data_dir,
        0,
        context.runs_dir,
        [*run_settings(context, seed), *overrides],
        overwrite=not continues,
        resume=continues,
    )
    return {**row, "run_dir": context.runs_dir / run_name}


@dataclass
class PlateauOptions:
    """The plateau rule of a reproduction's runs (train.patience, train.min_delta,
    train.min_loss_delta): a run stops once ``patience`` evaluations in a row neither raised its
    dev metric by more than ``min_delta`` (exact match as a fraction, BLEU in points) nor, the
    metric no lower, lowered its dev loss by more than the fraction ``min_loss_delta``; or at its
    cap of updates. Options dataclasses of reproductions inherit these fields."""

    patience: int = 4  # evaluations without a rise of more than min_delta that end a run
    min_delta: float = 0.005  # the rise of the dev metric that counts (exact match: a fraction)
    min_loss_delta: float = 0.02  # the fall of the dev loss that counts, a fraction of it

    def plateau(self) -> list[str]:
        return [
            f"train.patience={self.patience}",
            f"train.min_delta={self.min_delta}",
            f"train.min_loss_delta={self.min_loss_delta}",
        ]

    def plateau_words(self, unit: str = "points of exact match", scale: float = 100.0) -> str:
        """The rule in words, for a page's budget and setup."""
        return (
            f"until {self.patience} evaluations in a row neither raise the dev metric by more than "
            f"{self.min_delta * scale:g} {unit} nor lower the dev loss by more than {self.min_loss_delta:.0%} "
            "(the plateau)"
        )


def step_budget(steps: int, eval_every: int, dev_sentences: int, plateau: PlateauOptions | None = None) -> list[str]:
    """Overrides that train for at most ``steps`` updates (however many epochs that is), decoding
    ``dev_sentences`` dev pairs every ``eval_every`` updates, stopping earlier on the ``plateau``."""
    return [
        f"train.max_steps={steps}",
        "train.epochs=1000",
        f"train.eval_every={eval_every}",
        f"train.eval_max_sentences={dev_sentences}",
        *(plateau.plateau() if plateau else []),
    ]


def fit_seeds(
    context: Context, arms: Sequence[tuple[str, str, Sequence[str]]], data: Path, settings: Sequence[str], cap: int
) -> tuple[list[tuple[int, str, Path]], list[RunRecord]]:
    """Every arm (label, preset, overrides) trained with ``settings`` once per seed, seeds in the
    outer loop, into run folders ``LABEL-seedN``: ((seed, label, run folder) of each run, how
    each ended against its ``cap`` of updates)."""
    runs, records = [], []
    for seed in context.seed_list:
        for label, name, overrides in arms:
            run_dir = context.run_dir(f"{label}-seed{seed}")
            summary = fit_preset(context, name, run_dir, data, [*settings, *overrides], seed)
            runs.append((seed, label, run_dir))
            records.append(record_of(label, seed, summary["step"], cap, run_dir))
    return runs, records


def run_records(
    rows: dict[str, list[dict]], cap: int, seeds: Sequence[int], observed: Sequence[str] = ()
) -> list[RunRecord]:
    """How each run of ``rows`` (label -> one compare row per seed) ended (``record_of``: converged
    when the plateau rule ended it, before or at its ``cap`` of updates, and why); the runs of the
    ``observed`` labels feed no core finding (RunRecord.core false)."""
    return [
        record_of(label, seed, row["steps"], cap, row["run_dir"], core=label not in observed)
        for label, rs in rows.items()
        for seed, row in zip(seeds, rs)
    ]


def parameters(run_dir: str | Path) -> int:
    """A trained run's parameters, from its metrics log's start record."""
    return next(r["parameters"] for r in read_metrics(run_dir) if r.get("type") == "start")


def record_of(label: str, seed: int, steps: int, cap: int, run_dir: str | Path, core: bool = True) -> RunRecord:
    """How one run ended: converged when it stopped before its ``cap`` of updates, or when its
    last evaluation, at the cap, was the one at which the plateau rule would have ended it anyway
    (the rule's evaluations without a renewal were all in); diverged where its log's last session
    ended with its loss diverging (``steps``: its last good checkpoint's); else stopped by the cap."""
    why, by_loss, settled = replay_plateau(run_dir)
    diverged = diverged_at(run_dir)
    converged = diverged is None and (steps < cap or settled)
    return RunRecord(label, seed, steps, cap, converged, why=why, by_loss=by_loss, core=core, diverged=diverged)


def diverged_at(run_dir: str | Path) -> int | None:
    """The update at which the run's loss diverged (its metrics log's diverged record, which a
    resumed session drops with the steps past its checkpoint); None where it did not."""
    return next((r["step"] for r in read_metrics(run_dir) if r["type"] == "diverged"), None)


METRIC_NAMES = {
    "loss": "loss",
    "exact_match": "exact match",
    "token_accuracy": "token accuracy",
    "bleu": "BLEU",
    "chrf": "chrF",
}  # train.select_by's metrics as a page names them


def _value(metric: str, value: float) -> str:
    """A dev metric as a page shows it: fractions (exact match, token accuracy) in percent,
    BLEU and chrF in points, the loss with 3 significant digits."""
    if metric in ("exact_match", "token_accuracy"):
        return f"{value:.1%}"
    if metric == "loss":
        return f"{-value:.3g}"  # selection_score negates the loss
    return f"{value:.1f}"


def how_it_ended(run_dir: str | Path) -> dict:
    """Why a run's training ended where it did, measured from its metrics log and config: the
    plateau rule (train.patience, train.min_delta, train.min_loss_delta) replayed over its
    evaluations. RunRecord's ``why`` (the evaluation that last renewed its patience, by which
    number, from what to what, and how many evaluations came after it; "" when the log holds no
    evaluation) and ``by_loss`` (that renewal was the dev loss's alone)."""
    why, by_loss, _ = replay_plateau(run_dir)
    return {"why": why, "by_loss": by_loss}


def replay_plateau(run_dir: str | Path) -> tuple[str, bool, bool]:
    """how_it_ended's ``why`` and ``by_loss``, and whether the rule's evaluations without a
    renewal were all in by the run's last one (``settled``: the rule ended the run there, whatever
    else stopped it at the same update)."""
    from ..train.loop import at_ceiling, patience_renewal, selection_score

    records = read_metrics(run_dir)
    start = next((r for r in records if r.get("type") == "start"), {})
    train = read_run_config(run_dir).train
    metric = start.get("select_by")  # the metric train.select_by: auto resolved to
    metric = metric if isinstance(metric, str) and metric else train.select_by
    evals = [
        r
        for r in records
        if r.get("type") == "eval"
        and _number(r.get("step"))
        and (r.get("dev_loss") is None or _number(r["dev_loss"]))
        and _number(selection_score(r, metric))
    ]
    if not evals:
        return "", False, False
    name = "dev " + METRIC_NAMES.get(metric, str(metric).replace("_", " "))
    ref, last, reason, by_loss = None, None, "", False
    for record in evals:
        score, loss = selection_score(record, metric), record.get("dev_loss")
        if train.min_delta or train.min_loss_delta:  # the trainer's own rule, which says which clause
            renewal = patience_renewal(
                score,
                loss,
                ref and ref[0],
                ref and ref[1],
                train.min_delta,
                train.min_loss_delta,
                at_ceiling(score, metric),
            )
        elif record.get("best"):  # no plateau rule: a new best renews the patience
            renewal = "first" if ref is None else "metric"
        else:
            renewal = None
        if renewal is None:
            continue
        if renewal == "first":
            reason = f"the first evaluation ({name} {_value(metric, score)})"
        elif renewal == "metric":
            reason = f"{name} {_value(metric, ref[0])} -> {_value(metric, score)}"
        else:
            change = f"{loss / ref[1] - 1:+.0%}; " if ref[1] > 0 else ""  # a log's losses are not negative
            reason = f"the dev loss {ref[1]:.3g} -> {loss:.3g} ({change}{name} {_value(metric, score)})"
        ref, last, by_loss = (score, loss), record, renewal == "loss"
    if last is None:  # a log none of whose evaluations is marked a new best (not the trainer's)
        return f"none of its {len(evals)} evaluations marked a new best", False, False
    after = sum(r["step"] > last["step"] for r in evals)
    later = f"{after} evaluation{'s' if after != 1 else ''} after it"
    if not train.patience:
        why = f"no early stop (train.patience 0); its last new best at update {last['step']:,}: {reason}; {later}"
        return why, by_loss, False
    why = (
        f"patience last renewed at update {last['step']:,} by {reason}; {later} without a renewal (the "
        f"rule ends a run at {train.patience})"
    )
    return why, by_loss, after >= train.patience  # settled: the rule had ended it by its last evaluation


def compare_variants(
    context: Context, variants: Sequence[tuple[str, str, Sequence[str]]], data_dir: Path, common: Sequence[str] = ()
) -> dict[str, list[dict]]:
    """Every variant (label, preset, overrides) trained once per seed with ``common`` settings
    too, as ``compare_preset``; label -> its rows, one per seed (run folders ``LABEL-seedN``)."""
    rows: dict[str, list[dict]] = {}
    for seed in context.seed_list:
        for label, name, overrides in variants:
            rows.setdefault(label, []).append(
                compare_preset(context, name, f"{label}-seed{seed}", data_dir, [*common, *overrides], seed)
            )
    return rows


def best_dev_loss(run_dir: Path) -> float:
    """The dev loss (per target token) of the run's best evaluation; NaN when it has none."""
    best = [r for r in read_metrics(run_dir) if r.get("type") == "eval" and r.get("best") and "dev_loss" in r]
    return best[-1]["dev_loss"] if best else float("nan")


@dataclass
class Curve:
    """One run's evaluations: x (steps, epochs or training minutes) and y (a dev metric)."""

    x: list[float]
    y: list[float]


def curve(run_dir: Path, metric: str, x: str = "step") -> Curve:
    """``metric`` (e.g. ``dev_exact_match``) of every evaluation of the run, against ``x``
    (``step``, ``epoch``, or ``minutes`` of training time, evaluations not counted)."""
    xs, ys = [], []
    for record in read_metrics(run_dir):
        if record.get("type") != "eval" or metric not in record:
            continue
        xs.append(record["train_seconds"] / 60 if x == "minutes" else record[x])
        ys.append(record[metric])
    return Curve(xs, ys)


def value_at(c: Curve, x: float) -> float | None:
    """The curve's value at the last evaluation at or before ``x`` (None before the first)."""
    found = None
    for cx, cy in zip(c.x, c.y):
        if cx <= x + 1e-9:
            found = cy
    return found


def first_reaching(c: Curve, level: float) -> float | None:
    """The first x at which the curve reaches ``level`` (None if it never does)."""
    return next((cx for cx, cy in zip(c.x, c.y) if cy >= level), None)


def steps_to(reached: Sequence[float | None]) -> str:
    """The mean of the x at which each seed's curve first reached a level (``first_reaching``),
    with how many seeds got there when not all did; "not reached" when none did."""
    got = [x for x in reached if x is not None]
    if not got:
        return "not reached"
    mean = f"{sum(got) / len(got):,.0f}"
    return mean if len(got) == len(reached) else f"{mean} ({len(got)} of {len(reached)} seeds)"


def cpu_share(run_dir: Path, threads: int) -> float | None:
    """The share of ``threads`` cores the run's training process had: its CPU seconds over its
    wall-clock seconds times ``threads`` (1.0: the cores to itself; less: other work took some),
    from its metrics log's last record; None unless every record has its CPU time (a run of older
    code, or one such run resumed, did not count all of it)."""
    records = read_metrics(run_dir)
    if not records or not all(_number(r.get("cpu_seconds")) for r in records):
        return None
    cpu, wall = records[-1]["cpu_seconds"], records[-1].get("wall_seconds")
    return cpu / (wall * threads) if _number(wall) and wall > 0 and threads > 0 else None


def _number(value) -> bool:
    """Whether a metrics log's field holds a finite number (a hand-edited log may hold anything)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def cpu_shares(shares: dict[str, list[float | None]], threads: int) -> str:
    """A page's sentence of the runs' ``cpu_share``s (label -> one per seed)."""
    measured = {label: [s for s in values if s is not None] for label, values in shares.items()}
    if not any(measured.values()):
        return "How much of the CPU the runs had was not recorded (runs of older code)."
    said = "; ".join(
        f"{label} {', '.join(f'{100 * s:.0f}%' for s in values)}" for label, values in measured.items() if values
    )
    return (
        f"The training processes had this share of {threads} core{'s' if threads > 1 else ''} each (CPU "
        f"seconds over wall-clock seconds; 100%: the cores to themselves, less: other work took some): "
        f"{said}."
    )
