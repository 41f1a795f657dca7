"""One-command comparison: train several configs under one time budget and tabulate them.

    attnseq compare configs/bahdanau2014.yaml configs/luong2015-*.yaml --data data/dates \\
        --budget-minutes 5 --out runs/compare

Each config trains in ``OUT/<config name>`` for at most ``budget_minutes`` of training time
(``train.max_minutes``), then its best checkpoint (the evaluation with the best
``train.select_by``, ties broken by the lower dev loss; ``best_step`` says which) is evaluated on
dev and test, as ``attnseq evaluate`` does. The table (config, parameters, steps, the best
checkpoint's step, training tokens/s, dev and test exact match and BLEU, and the step at which a
run's loss diverged, if it did: that run is scored from its last good checkpoint and the others
still train) is printed and written as ``comparison.md`` and ``comparison.csv`` in OUT, and
``curves.png`` draws each run's dev score against minutes of training. Those files, like the
runs, are replaced only with ``overwrite`` (``--overwrite``), and that is checked before anything
trains.
"""

from __future__ import annotations

import csv
import io
import logging
from collections.abc import Sequence
from pathlib import Path

from .config import load_config
from .data.corpus import read_tsv
from .engines import trainer_for
from .errors import UserError
from .files import check_output, write_output
from .runs import read_metrics
from .train.loop import scored_if_diverged

log = logging.getLogger(__name__)

COLUMNS = (
    "config",
    "parameters",
    "steps",
    "best_step",
    "train_seconds",
    "tokens_per_second",
    "dev_exact_match",
    "test_exact_match",
    "dev_bleu",
    "test_bleu",
    "diverged",
)
TABLE_FILES = ("comparison.md", "comparison.csv", "curves.png")  # what a comparison writes beside its runs
RULE = (
    "Scores are those of each run's best checkpoint (best.safetensors: the evaluation with the best "
    "train.select_by, ties broken by the lower dev loss), evaluated on the whole dev and test sets; "
    "best_step is its step."
)


def run_names(configs: Sequence[str | Path]) -> list[str]:
    """One run-folder name per config: its file stem, numbered when stems repeat."""
    names: list[str] = []
    for path in configs:
        stem, name, k = Path(path).stem, Path(path).stem, 2
        while name in names:
            name, k = f"{stem}-{k}", k + 1
        names.append(name)
    return names


def train_and_evaluate(
    config_path: str | Path,
    name: str,
    data_dir: str | Path,
    budget_minutes: float,
    out_dir: Path,
    overrides: Sequence[str] = (),
    overwrite: bool = False,
    resume: bool = False,
) -> dict:
    """Train one config under the budget (continuing the run there with ``resume``); its row of
    the table."""
    from .api import load

    config = load_config(
        config_path,
        [
            "data.format=tsv",
            f"data.dir={data_dir}",
            "data.train=",
            "data.dev=",
            "data.test=",
            f"train.max_minutes={budget_minutes}",
            *overrides,
        ],
    )
    engine = trainer_for(config)
    config = engine.check(config)
    run_dir = out_dir / name
    log.info("compare: training %s -> %s", config_path, run_dir)
    summary = scored_if_diverged(lambda: engine.train(config, run_dir, resume=resume, overwrite=overwrite))
    bests = [r["step"] for r in read_metrics(run_dir) if r.get("type") == "eval" and r.get("best")]
    row = {
        "config": name,
        "parameters": summary["parameters"],
        "steps": summary["step"],
        "best_step": bests[-1] if bests else summary["step"],
        "train_seconds": round(summary["train_seconds"], 1),
        "tokens_per_second": summary["tokens_per_second"],
        "diverged": summary.get("diverged"),  # the update its loss diverged at (None: it did not)
    }
    translator = load(run_dir)  # the best checkpoint, as users evaluate it
    for split in ("dev", "test"):
        path = Path(data_dir) / f"{split}.tsv"
        if not path.exists():
            row[f"{split}_exact_match"] = row[f"{split}_bleu"] = None
            continue
        metrics = translator.evaluate(read_tsv(path, strip=config.data.strip), bleu=True)
        row[f"{split}_exact_match"] = metrics["exact_match"]
        row[f"{split}_bleu"] = metrics.get("bleu")  # none where the references are too short for it
    return row


def _cell(column: str, value) -> str:
    """A table cell: percentages for exact match, one decimal for BLEU, thousands separators."""
    if value is None:
        return "-"
    if column.endswith("exact_match"):
        return f"{100 * value:.2f}%"
    if column.endswith("bleu"):
        return f"{value:.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def markdown_table(rows: Sequence[dict]) -> str:
    """The rows as a Markdown table with the columns of ``COLUMNS``."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" for _ in COLUMNS) + "|"]
    lines += ["| " + " | ".join(_cell(c, row.get(c)) for c in COLUMNS) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def csv_table(rows: Sequence[dict]) -> str:
    """The rows as CSV (raw numbers, exact match as a fraction, empty when missing)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({c: "" if row.get(c) is None else row[c] for c in COLUMNS})
    return buffer.getvalue()


def run_compare(
    configs: Sequence[str | Path],
    data_dir: str | Path,
    budget_minutes: float,
    out_dir: str | Path,
    overrides: Sequence[str] = (),
    overwrite: bool = False,
) -> list[dict]:
    """Train and evaluate every config; print the table, write comparison.md/.csv; the rows."""
    if not configs:
        raise UserError("compare: give at least one config")
    if budget_minutes <= 0:
        raise UserError(f"compare: --budget-minutes must be positive, got {budget_minutes}")
    if not (Path(data_dir) / "train.tsv").exists():
        raise UserError(f"compare: {data_dir} has no train.tsv (make one with attnseq data ...)")
    out_dir = Path(out_dir)
    inputs = [*configs, *(Path(data_dir) / f"{split}.tsv" for split in ("train", "dev", "test"))]
    for name in TABLE_FILES:  # refused before anything is trained
        check_output(out_dir / name, inputs=inputs, overwrite=overwrite)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = [
        train_and_evaluate(path, name, data_dir, budget_minutes, out_dir, overrides, overwrite)
        for path, name in zip(configs, run_names(configs))
    ]
    table = markdown_table(rows)
    write_output(
        out_dir / "comparison.md",
        f"Budget: {budget_minutes:g} training minutes per config; data: {data_dir}\n\n{RULE}\n\n" + table,
        inputs=inputs,
        overwrite=overwrite,
    )
    write_output(out_dir / "comparison.csv", csv_table(rows), inputs=inputs, overwrite=overwrite)
    from .viz.curves import plot_progress

    plot_progress({row["config"]: read_metrics(out_dir / row["config"]) for row in rows}, out_dir / "curves.png")
    print(table, end="")
    print(RULE)
    return rows
