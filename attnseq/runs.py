"""Run folders: what a training run writes and what loading a trained model reads.

A run folder holds ``config.yaml`` (the resolved config), the vocabularies (and sentencepiece
models), ``best.safetensors`` and ``last.safetensors``, the engine's training state for
``--resume``, and ``metrics.jsonl`` (one JSON record per line: start, train, eval).
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Sequence

from .config import Config, apply_overrides, from_dict, read_yaml
from .errors import ConfigError, UserError

log = logging.getLogger("attnseq")

CONFIG_FILE = "config.yaml"
METRICS_FILE = "metrics.jsonl"
BEST, LAST = "best.safetensors", "last.safetensors"
CHECKPOINTS = {"best": BEST, "last": LAST}
# what may be changed in a trained run's config when it is loaded to translate or evaluate
INFERENCE_SECTIONS = ("decode",)


def read_run_config(run_dir: str | Path, overrides: Sequence[str] = ()) -> Config:
    """The config a run was trained with, with ``overrides`` of its decode settings (changing
    anything the model was trained with is refused, naming the key)."""
    run_dir = Path(run_dir)
    if not (run_dir / CONFIG_FILE).exists():
        raise UserError(f"{run_dir}: not a run folder (no {CONFIG_FILE})")
    for text in overrides:
        key = text.split("=", 1)[0].strip()
        if key.split(".")[0] not in INFERENCE_SECTIONS:
            raise ConfigError(f"{key}: fixed when the model was trained; only decode.* settings can be "
                              "changed for a trained run")
    return from_dict(apply_overrides(read_yaml(run_dir / CONFIG_FILE), list(overrides)))


def checkpoint_path(run_dir: str | Path, checkpoint: str = "best") -> Path:
    """The weights file of ``checkpoint`` ("best" or "last"); best falls back to last when a run
    has not written one yet."""
    run_dir = Path(run_dir)
    if checkpoint not in CHECKPOINTS:
        raise UserError(f"checkpoint: expected best or last, got {checkpoint!r}")
    path = run_dir / CHECKPOINTS[checkpoint]
    if checkpoint == "best" and not path.exists():
        path = run_dir / LAST
    if not path.exists():
        raise UserError(f"{run_dir}: no checkpoint to load (no {BEST} or {LAST})")
    return path


def log_metrics(run_dir: str | Path, record: dict) -> None:
    """Append ``record`` as one JSON line to the run's metrics log; evaluation records are also
    summarised in one line of the program's log."""
    with open(Path(run_dir) / METRICS_FILE, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")
    if record.get("type") == "eval":
        parts = [f"epoch {record['epoch']:.2f}", f"step {record['step']}"]
        for key in ("dev_loss", "dev_exact_match", "dev_token_accuracy", "dev_bleu"):
            if key in record:
                value = record[key]
                parts.append(f"{key[4:]} {value:.2%}" if key in ("dev_exact_match", "dev_token_accuracy")
                             else f"{key[4:]} {value:.3f}")
        log.info("  ".join(parts))


def read_metrics(path: str | Path) -> list[dict]:
    """The records of a ``metrics.jsonl`` file (a run folder or the file itself)."""
    path = Path(path)
    if path.is_dir():
        path = path / METRICS_FILE
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise UserError(f"{path}: cannot read the metrics log ({err.strerror})") from None
    return [json.loads(line) for line in lines if line.strip()]
