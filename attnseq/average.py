"""Checkpoint averaging (``attnseq average RUN --last N --out RUN2``): the weights of a run's last
N kept checkpoints (``train.keep_checkpoints``) averaged into a new run folder, as OpenNMT-py's
average_models and fairseq's average_checkpoints do.

- Floating-point arrays are averaged element by element in float64, as the first checkpoint's
  values plus the mean of the others' differences from them, and stored in their own dtype: the
  mean of N identical checkpoints is then the very same weights, bit for bit, whatever N and the
  dtype (a sum divided by N would round float64 weights).
- Integer and boolean arrays take, as in fairseq, the floor of their mean (the same value when
  every checkpoint holds it; attnseq's models have none today).

The new run is a complete run for ``translate``, ``evaluate``, ``serve`` and the API: the
config, the text pipeline (vocabularies, tokenizer models, pipeline.json) and ``best.safetensors``,
whose metadata says which run and steps it averages. It has no ``last.safetensors`` (it cannot
be resumed: there is no training state to average) and no metrics log.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .errors import UserError
from .files import check_folder, same_file, write_files
from .runs import (
    BEST,
    CONFIG_FILE,
    LOCK,
    PIPELINE_FILES,
    RUN_FILES,
    RunLock,
    checkpoint_bytes,
    kept_checkpoints,
    read_checkpoint,
    remove_run_files,
)

log = logging.getLogger("attnseq")
AVERAGED = "attnseq.averaged"  # the metadata entry of an averaged checkpoint: {"run": ..., "steps": [...]}


def average_weights(checkpoints: Sequence[tuple[Path, dict[str, np.ndarray]]]) -> dict[str, np.ndarray]:
    """The element-wise mean of the weights of ``checkpoints`` ((path, weights) each, weights
    name -> array): floating-point arrays averaged in float64 (the first's values plus the mean
    difference from them) and returned in their own dtype, integer and boolean ones the floor of
    their mean. A UserError naming the file when one holds
    other names, shapes or dtypes than the first (another model's weights)."""
    (first_path, first), rest = checkpoints[0], checkpoints[1:]
    for path, weights in rest:
        if weights.keys() != first.keys():
            differ = sorted(set(weights) ^ set(first))
            raise UserError(
                f"{path}: holds other weights than {first_path} ({', '.join(differ[:4])}); "
                "a run's checkpoints are of one model"
            )
        for name, value in weights.items():
            if value.shape != first[name].shape or value.dtype != first[name].dtype:
                raise UserError(
                    f"{path}: {name} is {value.dtype} {value.shape}, {first_path} holds "
                    f"{first[name].dtype} {first[name].shape}; a run's checkpoints are of one model"
                )
    n = len(checkpoints)
    averaged = {}
    for name, value in first.items():
        if np.issubdtype(value.dtype, np.floating):  # the first's plus the mean difference from it
            base = value.astype(np.float64)
            difference = np.zeros(value.shape, dtype=np.float64)
            for _, weights in rest:
                difference += weights[name].astype(np.float64) - base
            averaged[name] = (base + difference / n).astype(value.dtype)
        else:
            averaged[name] = (sum(weights[name].astype(np.int64) for _, weights in checkpoints) // n).astype(
                value.dtype
            )
    return averaged


def average_run(run_dir: str | Path, last: int, out: str | Path, overwrite: bool = False) -> dict:
    """Average the weights of the newest ``last`` kept checkpoints of the run in ``run_dir`` into
    a new run folder ``out`` (config, text pipeline, best.safetensors); a summary (the run, the
    folder written, the steps averaged).

    Refused with a UserError, before anything is written: ``run_dir`` is not a run, it keeps
    fewer than ``last`` checkpoints (train.keep_checkpoints), ``out`` is the run itself, ``out``
    holds files and ``overwrite`` is False, or another process trains into ``out``. With
    ``overwrite`` the files a run writes are removed from ``out`` first (a run trained there
    before leaves no last.safetensors or metrics beside the averaged weights), others kept."""
    run_dir, out = Path(run_dir), Path(out)
    if not (run_dir / CONFIG_FILE).is_file():
        raise UserError(f"{run_dir}: not a run folder (no {CONFIG_FILE})")
    if same_file(out, run_dir):
        raise UserError(f"{out}: this is the run averaged; give another --out folder for the averaged run")
    kept = kept_checkpoints(run_dir)
    if len(kept) < last:
        held = f"keeps {len(kept)} checkpoint(s)" if kept else "keeps no checkpoints"
        raise UserError(
            f"{run_dir}: {held}, fewer than --last {last}; average at most {len(kept)}, or train "
            f"with train.keep_checkpoints={last} (or more) to keep the weights of the last {last} "
            "evaluations"
        )
    chosen = kept[-last:]
    names = [name for name in PIPELINE_FILES if (run_dir / name).is_file()]
    inputs = [run_dir / name for name in RUN_FILES] + [path for _, path in kept]
    check_folder(out, [CONFIG_FILE, *names, BEST], inputs=inputs, overwrite=overwrite)
    lock = RunLock(out) if (out / LOCK).exists() else None  # a folder another process trains into is refused
    try:
        checkpoints = []
        for _, path in chosen:
            weights, metadata = read_checkpoint(path)
            checkpoints.append((path, weights))
        steps = [step for step, _ in chosen]
        metadata = {k: v for k, v in metadata.items() if k != AVERAGED}  # the newest one's (the numpy engine's widths)
        metadata[AVERAGED] = json.dumps({"run": str(run_dir), "steps": steps})
        files = {name: (run_dir / name).read_bytes() for name in [CONFIG_FILE, *names]}
        files[BEST] = checkpoint_bytes(average_weights(checkpoints), metadata=metadata)
        write_files(out, files, inputs=inputs, overwrite=True)  # all of them in place together
        if overwrite:  # then what an earlier run there had beside them (its last checkpoint, its log)
            remove_run_files(out, keep=files)
    finally:
        if lock is not None:
            lock.release()
    log.info("averaged the weights of %s at steps %s into %s", run_dir, ", ".join(map(str, steps)), out / BEST)
    return {"run": str(run_dir), "out": str(out), "steps": steps}
