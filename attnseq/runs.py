"""Run folders: what a training run writes and what loading a trained model reads.

A run folder holds ``config.yaml`` (the resolved config), the vocabularies (and sentencepiece
models), ``best.safetensors`` (the weights of the best evaluation), ``last.safetensors`` (the
latest weights together with the whole training state: optimizer, schedule, random generators,
progress), and ``metrics.jsonl`` (one JSON record per line: start, train, eval). With
``train.keep_checkpoints: N`` it also keeps the weights of its last N evaluations in
``checkpoints/step-NNNNNNNN.safetensors`` (what ``attnseq average`` averages).

Every file is written atomically (a temporary file renamed into place), and weights and state
share one file, so a run killed at any moment keeps a consistent checkpoint to resume from. The
process training a run holds the lock of ``.lock`` in its folder (RunLock), so a second training
into the same folder is refused.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import socket
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .config import Config, apply_overrides, from_dict, parse_override, read_yaml
from .data.pipeline import PIPELINE_FILE
from .errors import ConfigError, UserError
from .schema import plain
from .utils import atomic_write, atomic_write_bytes

log = logging.getLogger("attnseq")

CONFIG_FILE = "config.yaml"
METRICS_FILE = "metrics.jsonl"
BEST, LAST = "best.safetensors", "last.safetensors"
CHECKPOINTS = {"best": BEST, "last": LAST}
STATE = "state/"  # the prefix of training-state arrays in last.safetensors
LOCK = ".lock"  # locked by the process training the run (RunLock); not a run file, kept by --overwrite
KEPT = "checkpoints"  # the folder of the weights of the last train.keep_checkpoints evaluations
KEPT_NAME = re.compile(r"step-(\d+)\.safetensors")  # a kept checkpoint's name in KEPT (its step)
TARGET_VOCAB = "vocab.target.json"
# how the run reads and writes text: vocabularies, tokenizer models, the text layout (data/pipeline.py)
PIPELINE_FILES = (
    "vocab.source.json",
    TARGET_VOCAB,
    "spm.joint.model",
    "spm.source.model",
    "spm.target.model",
    PIPELINE_FILE,
)
# what a run writes (``--overwrite`` removes these, and the kept checkpoints, and nothing else)
RUN_FILES = (CONFIG_FILE, METRICS_FILE, BEST, LAST, *PIPELINE_FILES)
# an exported model (attnseq export): its record (format, quantization, checkpoint, run, positions)
# and the files an export to CTranslate2 writes beside the run's pipeline files
EXPORT_FILE = "export.json"
CTRANSLATE2_FILES = (
    "model.bin",
    "config.json",
    "shared_vocabulary.json",
    "source_vocabulary.json",
    "target_vocabulary.json",
    EXPORT_FILE,
)
# what ``--resume`` may change: limits and display of the run, decode settings, where the data is
RESUMABLE = (
    "train.epochs",
    "train.max_steps",
    "train.max_minutes",
    "train.target_exact_match",
    "train.patience",  # when to stop, as max_steps: a run a smaller patience ended goes on where it stopped
    "train.log_every",
    "train.progress",
    "train.threads",
    "train.device",
    "train.keep_checkpoints",
    "decode.",
    "data.dir",
    "data.train",
    "data.dev",
    "data.test",
    "data.cache",
    "data.processes",
)
# what may be changed in a trained run's config when it is loaded to translate or evaluate
INFERENCE_SECTIONS = ("decode",)


def read_run_config(run_dir: str | Path, overrides: Sequence[str] = ()) -> Config:
    """The config a run was trained with, with ``overrides`` of its decode settings (changing
    anything the model was trained with is refused, naming the key)."""
    run_dir = Path(run_dir)
    if not (run_dir / CONFIG_FILE).exists():
        raise UserError(f"{run_dir}: not a run folder (no {CONFIG_FILE})")
    for text in overrides:
        key = ".".join(parse_override(text)[0])  # a malformed --set is refused as such, naming it
        if key.split(".")[0] not in INFERENCE_SECTIONS:
            raise ConfigError(
                f"{key}: fixed when the model was trained; only decode.* settings can be changed for a trained run",
                key=key,
            )
    saved = read_yaml(run_dir / CONFIG_FILE)
    try:
        from_dict(saved)
    except ConfigError as err:  # the run's own file (edited by hand, or of another version): say so
        raise ConfigError(
            f"{run_dir / CONFIG_FILE}: {err} (the config the run was trained with)", key=err.key
        ) from None
    return from_dict(apply_overrides(saved, list(overrides)))


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
        if (run_dir / BEST).exists():  # only last was asked for, and the run has best alone
            raise UserError(f"{run_dir}: no {LAST} (the run has {BEST}: --checkpoint best loads it)")
        raise UserError(f"{run_dir}: no checkpoint to load (no {BEST} or {LAST})")
    return path


def log_metrics(run_dir: str | Path, record: dict) -> None:
    """Append ``record`` as one JSON line to the run's metrics log; evaluation records are also
    summarised in one line of the program's log."""
    with open(Path(run_dir) / METRICS_FILE, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")
    if record.get("type") == "eval":
        parts = [f"epoch {record['epoch']:.2f}", f"step {record['step']}"]
        for key in ("dev_loss", "dev_exact_match", "dev_token_accuracy", "dev_bleu", "dev_chrf"):
            if key in record:
                value = record[key]
                parts.append(
                    f"{key[4:]} {value:.2%}"
                    if key in ("dev_exact_match", "dev_token_accuracy")
                    else f"{key[4:]} {value:.3f}"
                )
        log.info("  ".join(parts))


# the metrics log's fields that time the run (they differ between two runs of equal updates)
TIMING_FIELDS = frozenset(
    {
        "train_seconds",
        "wall_seconds",
        "cpu_seconds",
        "eval_seconds",
        "tokens_per_second",
        "seconds",
        "sentences_per_second",
    }
)


def read_metrics(path: str | Path) -> list[dict]:
    """The records of a ``metrics.jsonl`` file (a run folder or the file itself): its JSON objects
    with a ``type`` (a name), a line that holds none skipped with a warning naming it, so every
    reader of the log may take ``r["type"]``."""
    path = Path(path)
    if path.is_dir():
        path = path / METRICS_FILE
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise UserError(f"{path}: cannot read the metrics log ({err.strerror})") from None
    except UnicodeDecodeError as err:
        raise UserError(
            f"{path}: the metrics log is not UTF-8 text ({err.reason} at byte {err.start}); "
            "it was not written by attnseq, or was damaged"
        ) from None
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            log.warning("%s:%d: a half-written record, skipped (the run was interrupted there)", path, number)
            continue
        if isinstance(record, dict) and isinstance(record.get("type"), str):
            records.append(record)
        else:  # JSON, but no record attnseq writes (edited by hand, or another program's)
            log.warning(
                "%s:%d: not a record (%s), skipped",
                path,
                number,
                "an object without its type" if isinstance(record, dict) else "a JSON value that is no object",
            )
    return records


# -- starting, resuming, replacing a run ----------------------------------------------------------
class RunLock:
    """``run_dir`` locked for this process: an exclusive ``fcntl.flock`` on its ``.lock`` file,
    which holds ``pid host`` of the process. The system releases it when the process ends,
    however it ends, so a killed run leaves no stale lock. A folder locked by another process is
    a UserError naming the folder and that process."""

    def __init__(self, run_dir: str | Path):
        run_dir = Path(run_dir)
        self.path, self.fd = run_dir / LOCK, None
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as err:
            raise UserError(f"{run_dir}: cannot lock it for training ({self.path}: {err.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 256, 0).decode(errors="replace").split()
            os.close(fd)
            who = f"process {holder[0]} on {holder[1]}" if len(holder) == 2 else "another process"
            raise UserError(
                f"{run_dir} is being trained by {who} (it holds {self.path}); wait for it to end or "
                "stop it (Ctrl-C or kill: it saves first), or train into another --out"
            ) from None
        # written in place, not atomically: a new file would be a lock nobody holds
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
        self.fd = fd

    def release(self) -> None:
        """Unlock the folder (closing the file releases the lock); again does nothing."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    __del__ = release  # a trainer dropped without finishing (its set-up failed) unlocks too


def prepare_run_dir(
    run_dir: str | Path, config: Config, resume: bool = False, overwrite: bool = False
) -> tuple[bool, RunLock]:
    """Lock ``run_dir`` and make it ready for training ``config``: (True when there is a
    checkpoint to resume, the folder's RunLock, to release when training ends).

    A folder another process trains is refused first, naming it; a folder that already holds a
    run is refused unless ``resume`` (continue it; only the keys of RESUMABLE may differ from its
    config) or ``overwrite`` (its files are removed first). Nothing is created in a folder that
    is refused. Temporary files that an interrupted write left behind are removed.
    """
    run_dir = Path(run_dir)
    if resume and overwrite:
        raise UserError("--resume and --overwrite: choose one")
    exists = (run_dir / CONFIG_FILE).exists()
    lock = RunLock(run_dir) if exists or (run_dir / LOCK).exists() else None
    try:
        if resume and not exists:
            raise UserError(f"nothing to resume in {run_dir} (no run there: no {CONFIG_FILE})")
        if exists and not (resume or overwrite):
            raise UserError(
                f"{run_dir} holds a run already: continue it with --resume, or replace it with "
                "--overwrite (or give another --out)"
            )
        run_dir.mkdir(parents=True, exist_ok=True)
        lock = lock or RunLock(run_dir)  # a run started into the same new folder at the same time is refused
        return _clear_run_dir(run_dir, config, resume, overwrite), lock
    except BaseException:
        if lock is not None:
            lock.release()
        raise


def _clear_run_dir(run_dir: Path, config: Config, resume: bool, overwrite: bool) -> bool:
    """prepare_run_dir's work in a locked folder: True when there is a checkpoint to resume."""
    for tmp in [*run_dir.glob(".*.tmp"), *(run_dir / KEPT).glob(".*.tmp")]:  # left by a write that was interrupted
        tmp.unlink()
    if overwrite:
        remove_run_files(run_dir)
        return False
    if resume:
        check_resumable(read_run_config(run_dir), config)
        if not (run_dir / LAST).exists():
            log.warning(
                "%s: no %s to resume from yet (it holds the training state); training starts from the beginning",
                run_dir,
                LAST,
            )
            return False
    return resume


def remove_run_files(run_dir: Path, keep: Iterable[str] = ()) -> None:
    """Remove the files a run writes (RUN_FILES and the kept checkpoints) from ``run_dir``, but
    those named in ``keep``, and nothing else."""
    keep = set(keep)
    for name in RUN_FILES:
        if name not in keep:
            (run_dir / name).unlink(missing_ok=True)
    for _, path in kept_checkpoints(run_dir):
        path.unlink()
    try:
        (run_dir / KEPT).rmdir()
    except OSError:  # absent, or holding files that are not the run's
        pass


def _flat(values: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(values, dict):
        return {k: v for key, value in values.items() for k, v in _flat(value, f"{prefix}{key}.").items()}
    return {prefix.rstrip("."): values}


def check_resumable(saved: Config, wanted: Config) -> None:
    """A ConfigError naming the first key that differs between the run's config and the one
    ``--resume`` was given, unless --resume may change it (RESUMABLE)."""
    before, after = (_flat(plain(c)) for c in (saved, wanted))
    for key in sorted(set(before) | set(after)):
        if before.get(key) != after.get(key) and not key.startswith(RESUMABLE):
            raise ConfigError(
                f"{key}: the run was trained with {json.dumps(before.get(key))}, not {json.dumps(after.get(key))}; "
                "--resume continues a run as it was (it may change train.epochs, max_steps, max_minutes, "
                "target_exact_match, patience, log_every, progress, threads, device, keep_checkpoints, decode.*, where the "
                "data is and how it is prepared: data.cache, data.processes); "
                "start a new run (--out) to change it",
                key=key,
            )


# -- checkpoints -----------------------------------------------------------------------------------
def _encode(value: Any, arrays: dict[str, np.ndarray]) -> Any:
    """``value`` as JSON, its arrays and tensors moved into ``arrays`` (as state/N)."""
    if isinstance(value, np.ndarray) or type(value).__module__.startswith("torch"):
        is_torch = not isinstance(value, np.ndarray)
        key = f"{STATE}{len(arrays)}"
        arrays[key] = np.ascontiguousarray(value.detach().cpu().numpy() if is_torch else value)
        return {"__array__": key, "torch": is_torch}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v, arrays) for v in value]}
    if isinstance(value, list):
        return [_encode(v, arrays) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {k: _encode(v, arrays) for k, v in value.items()}
        return {"__items__": [[_encode(k, arrays), _encode(v, arrays)] for k, v in value.items()]}
    return value


def _decode(value: Any, arrays: dict[str, np.ndarray]) -> Any:
    if isinstance(value, list):
        return [_decode(v, arrays) for v in value]
    if not isinstance(value, dict):
        return value
    if "__array__" in value:
        array = arrays[value["__array__"]]
        if value["torch"]:
            import torch

            return torch.from_numpy(array.copy())
        return array
    if "__tuple__" in value:
        return tuple(_decode(v, arrays) for v in value["__tuple__"])
    if "__items__" in value:
        return {_decode(k, arrays): _decode(v, arrays) for k, v in value["__items__"]}
    return {k: _decode(v, arrays) for k, v in value.items()}


def _checkpoint_arrays(
    weights: dict[str, np.ndarray], state: dict | None, metadata: dict[str, str] | None
) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """(the arrays, the metadata) of a checkpoint file: ``weights`` contiguous, the ``state``'s
    arrays among them and the rest of it in the metadata."""
    arrays = {name: np.ascontiguousarray(value) for name, value in weights.items()}
    metadata = dict(metadata or {})
    if state is not None:
        metadata["attnseq.state"] = json.dumps(_encode(state, arrays))
    return arrays, metadata


def write_checkpoint(
    path: str | Path, weights: dict[str, np.ndarray], state: dict | None = None, metadata: dict[str, str] | None = None
) -> None:
    """Write ``weights`` (name -> array) and, for a checkpoint to resume from, the training
    ``state`` (nested dicts, lists, tuples, numbers, arrays and tensors) into one safetensors file,
    atomically. Serialised in memory, then written by Python: a failing disk raises an OSError
    with its errno (safetensors' own file writer wraps it in a SafetensorError with none)."""
    atomic_write_bytes(path, checkpoint_bytes(weights, state, metadata))


def checkpoint_bytes(
    weights: dict[str, np.ndarray], state: dict | None = None, metadata: dict[str, str] | None = None
) -> bytes:
    """The safetensors file write_checkpoint writes, as bytes (for a command that writes it
    through attnseq.files)."""
    from safetensors.numpy import save

    return save(*_checkpoint_arrays(weights, state, metadata))


def read_checkpoint(path: str | Path, with_state: bool = False):
    """(weights, metadata) of a checkpoint, or (weights, metadata, state) with ``with_state``.

    A missing, truncated or damaged file is a UserError that says so (and that the other
    checkpoint, ``--checkpoint last`` or ``best``, may be whole)."""
    from safetensors import SafetensorError, safe_open

    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: no such checkpoint")
    try:
        with safe_open(str(path), framework="np") as fh:
            metadata = fh.metadata() or {}
            arrays = {key: fh.get_tensor(key) for key in fh.keys()}
    except (SafetensorError, OSError, ValueError) as err:
        other = "last" if path.name == BEST else "best"
        raise UserError(
            f"{path}: a damaged or incomplete checkpoint ({err}); the run's other "
            f"checkpoint may be whole (--checkpoint {other})"
        ) from None
    weights = {k: v for k, v in arrays.items() if not k.startswith(STATE)}
    if not with_state:
        return weights, metadata
    if "attnseq.state" not in metadata:
        raise UserError(f"{path}: holds no training state to resume from")
    with restoring(path):
        return weights, metadata, _decode(json.loads(metadata["attnseq.state"]), arrays)


@contextlib.contextmanager
def restoring(path: str | Path):
    """Around reading and applying a run's training state saved in ``path`` (``--resume``):
    whatever a damaged state makes that raise (its JSON, a key or a value of another kind
    where the optimiser, the schedule or the random generators take it) is one UserError
    naming the file; a UserError passes as it is."""
    try:
        yield
    except UserError:
        raise
    except Exception as err:  # noqa: BLE001  (the state is the file's: anything in it can be wrong)
        raise UserError(
            f"{path}: its training state does not restore ({type(err).__name__}: {err}); resume "
            "from a whole checkpoint, or train the run anew (--overwrite)"
        ) from None


def truncate_metrics(run_dir: str | Path, step: int) -> None:
    """Keep the metrics log's records up to ``step`` (a resumed run's checkpoint), dropping the
    records of steps that were logged but never saved and a half-written last line."""
    path = Path(run_dir) / METRICS_FILE
    if not path.exists():
        return
    kept = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            break  # a line cut short by the interruption: nothing after it was written whole
        if record.get("step", 0) > step:
            break
        kept.append(line)
    atomic_write(path, lambda tmp: Path(tmp).write_text("".join(k + "\n" for k in kept), encoding="utf-8"))


# -- the kept checkpoints (train.keep_checkpoints) -----------------------------------------------
def kept_checkpoint_path(run_dir: str | Path, step: int) -> Path:
    """Where the weights of the evaluation at ``step`` are kept: ``RUN/checkpoints/step-NNNNNNNN.safetensors``."""
    return Path(run_dir) / KEPT / f"step-{step:08d}.safetensors"


def kept_checkpoints(run_dir: str | Path) -> list[tuple[int, Path]]:
    """(step, path) of every kept checkpoint of the run, oldest first."""
    folder = Path(run_dir) / KEPT
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), path) for path in folder.iterdir() if (m := KEPT_NAME.fullmatch(path.name))]
    return sorted(found)


def prune_kept_checkpoints(run_dir: str | Path, keep: int | None, after: int | None = None) -> None:
    """Remove the run's kept checkpoints of steps after ``after`` (a resumed run's: saved after
    the checkpoint it resumes from), then all but the newest ``keep`` (None: no limit)."""
    kept = kept_checkpoints(run_dir)
    if after is not None:
        for _, path in (item for item in kept if item[0] > after):
            path.unlink()
        kept = [item for item in kept if item[0] <= after]
    for _, path in kept[: max(0, len(kept) - keep) if keep is not None else 0]:
        path.unlink()
