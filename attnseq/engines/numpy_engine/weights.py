"""The numpy models' checkpoints: safetensors files of runs.py with the design and array
widths as metadata (and, in last.safetensors, the training state)."""

from __future__ import annotations

from pathlib import Path

from ...errors import UserError
from ...runs import read_checkpoint, write_checkpoint


def save_numpy_weights(model, path: Path, metadata: dict[str, str], state: dict | None = None) -> None:
    """The model's named parameters (and the training ``state``) in one file, atomically."""
    write_checkpoint(path, model.named_params(), state, metadata)


def load_params(model, weights: dict, path: Path) -> None:
    """Copy ``weights`` into ``model``; a UserError when they are another model's."""
    try:
        model.load_params(weights)
    except (KeyError, ValueError) as err:
        raise UserError(f"{path}: not weights of this numpy model ({err})") from None


def load_numpy_weights(model, path: Path, with_state: bool = False):
    """Load a checkpoint written by ``save_numpy_weights`` into ``model``; its training state
    with ``with_state``."""
    found = read_checkpoint(path, with_state=with_state)
    load_params(model, found[0], path)
    return found[2] if with_state else None
