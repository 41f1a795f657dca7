"""The numpy models' weights files: safetensors with the design and array widths as metadata."""
from __future__ import annotations

from pathlib import Path

from safetensors import safe_open
from safetensors.numpy import load_file, save_file

import numpy as np

from ...errors import UserError
from ...utils import atomic_write


def save_numpy_weights(model, path: Path, metadata: dict[str, str]) -> None:
    """The model's named parameters as safetensors (atomically), with ``metadata``."""
    tensors = {k: np.ascontiguousarray(v) for k, v in model.named_params().items()}
    atomic_write(path, lambda tmp: save_file(tensors, tmp, metadata=metadata))


def numpy_weights_metadata(path: Path) -> dict[str, str]:
    """The metadata saved with the weights at ``path`` (design, source and target widths)."""
    if not Path(path).exists():
        raise UserError(f"{path}: no such checkpoint")
    with safe_open(str(path), framework="np") as fh:
        return fh.metadata() or {}


def load_numpy_weights(model, path: Path) -> dict[str, str]:
    """Load weights written by ``save_numpy_weights`` into ``model``; their metadata."""
    metadata = numpy_weights_metadata(path)
    try:
        model.load_params(load_file(str(path)))
    except (KeyError, ValueError) as err:
        raise UserError(f"{path}: not weights of this numpy model ({err})") from None
    return metadata
