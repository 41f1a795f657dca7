"""Run folders: weights in safetensors, training state, config and vocabularies, all written
atomically so an interrupted run never leaves a half-written file."""
from __future__ import annotations

import json
import logging
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_model, save_model

from ..errors import UserError
from ..utils import atomic_write

log = logging.getLogger(__name__)

CONFIG_FILE = "config.yaml"
METRICS_FILE = "metrics.jsonl"
BEST, LAST = "best.safetensors", "last.safetensors"
STATE_FILE = "last.state.pt"


def save_weights(model: torch.nn.Module, path: str | Path) -> None:
    """The model's parameters and buffers as safetensors (shared tensors stored once)."""
    atomic_write(path, lambda tmp: save_model(model, tmp))


def load_weights(model: torch.nn.Module, path: str | Path) -> None:
    """Load weights written by ``save_weights`` into ``model``."""
    if not Path(path).exists():
        raise UserError(f"{path}: no such checkpoint")
    load_model(model, str(path), device=str(next(model.parameters()).device))


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
        torch.cuda.set_rng_state_all(states["cuda"])


def save_state(path: str | Path, state: dict[str, Any]) -> None:
    """Training state (optimizer, schedule, RNGs, progress) written atomically."""
    atomic_write(path, lambda tmp: torch.save(state, tmp))


def load_state(path: str | Path) -> dict[str, Any]:
    if not Path(path).exists():
        raise UserError(f"{path}: nothing to resume (no training state in the run folder)")
    return torch.load(path, map_location="cpu", weights_only=False)


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
