"""How training stops, and that it loses no work: a checkpoint the system refuses to write stops
the run with one line, the one before kept; a folder another process trains is refused, naming
it.

The loop's rules are tested on ScriptedLoop, an EpochLoop whose updates and evaluations take the
time they are given on a fake clock (milliseconds a test); models train only in the slow tests."""
from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import attnseq
from attnseq.cli import main
from attnseq.config import load_config
from attnseq.errors import UserError
from attnseq.runs import RunLock, read_checkpoint, read_metrics, write_checkpoint
from attnseq.train.epochs import EpochLoop, Progress, SaveFailed

from test_runs import PRESET, SMALL, same_records, sets, weights

# Hypothesis runs each example in a fresh folder of its own; the fixtures' tmp_path is shared
EXAMPLES = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


class ScriptedLoop(EpochLoop):
    """An EpochLoop without a model. An update takes ``step_seconds`` and an evaluation
    ``eval_seconds`` on a fake clock (``now``); the weights count the updates; evaluation ``i``
    scores ``scores[i]`` (exact match, dev loss); ``on_update(loop)`` runs inside each update.
    Checkpoints are real safetensors files."""

    def __init__(self, run_dir: Path, *settings: str, steps_per_epoch: int = 7, step_seconds: float = 1.0,
                 eval_seconds: float = 0.0, scores=None, on_update=None, set_up_seconds: float = 0.0):
        self.now = 0.0
        super().__init__()
        self.config = load_config(None, ["train.progress=false", "train.log_every=1", "train.epochs=1000", *settings])
        self.run_dir, self.resume, self.restore = run_dir, False, False
        run_dir.mkdir(parents=True, exist_ok=True)
        self.progress = Progress()
        self.pipeline = SimpleNamespace(tgt_vocab=range(10))
        self.dev_pairs = self.dev_examples = [("abc", "cba")]
        self.train_examples = list(range(steps_per_epoch))
        self.translator = SimpleNamespace(evaluate=self._evaluate_dev)
        self.steps_per_epoch, self.step_seconds, self.eval_seconds = steps_per_epoch, step_seconds, eval_seconds
        self.scores, self.on_update, self.evaluations, self.writes = scores, on_update, 0, []
        self.weights = np.zeros(3)
        self.now = set_up_seconds  # reading the data, building the model: before fit(), on the clock

    def _epoch_batches(self) -> list:
        return list(range(self.steps_per_epoch))

    def _update(self, group: list) -> tuple[float, int]:
        self.now += self.step_seconds
        self.weights = self.weights + 1
        if self.on_update:
            self.on_update(self)
        return 10.0, 10

    def _score(self) -> tuple[float, float]:
        return self.scores[self.evaluations] if self.scores else (0.0, 1.0)

    def dev_loss(self) -> float:
        return self._score()[1]

    def _evaluate_dev(self, pairs, bleu=True) -> dict:
        self.now += self.eval_seconds
        exact_match = self._score()[0]
        self.evaluations += 1
        return {"exact_match": exact_match, "token_accuracy": exact_match}

    def _write_checkpoint(self, path: Path, state: dict | None = None) -> None:
        self.writes.append(path.name)
        write_checkpoint(path, {"w": self.weights}, state)

    def _training_state(self) -> dict:
        return {}

    def _learning_rate(self) -> float:
        return 0.1

    @property
    def batches_per_epoch(self) -> int:
        return self.steps_per_epoch

    @property
    def parameters(self) -> int:
        return 3


def saved_step(path: Path) -> int:
    """The step of the training state in a checkpoint."""
    return read_checkpoint(path, with_state=True)[2]["progress"]["step"]


def scripted_step(path: Path) -> int:
    """The step of a ScriptedLoop's checkpoint, whose weights count the updates."""
    step = round(weights(path)["w"][0])
    assert np.all(weights(path)["w"] == step) and (path.name == "best.safetensors" or saved_step(path) == step)
    return step


def no_temporary_files(run: Path) -> bool:
    return not list(run.glob(".*.tmp"))


# -- failed saves ------------------------------------------------------------------------------------
@EXAMPLES
@given(failing=st.integers(1, 12))
def test_a_failed_save_stops_naming_the_file_and_keeps_the_checkpoint_before(tmp_path_factory, failing):
    run = tmp_path_factory.mktemp("run")
    loop = ScriptedLoop(run, "train.eval_every=2", scores=[(i / 20, 1.0) for i in range(20)])  # each a new best

    def write(path, state=None):
        if len(loop.writes) + 1 == failing:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path.parent / f".{path.name}.x.tmp"))
        ScriptedLoop._write_checkpoint(loop, path, state)

    loop._write_checkpoint = write
    with pytest.raises(SaveFailed) as raised:
        loop.fit()
    # writes: best, last at step 2; best, last at 4; ... the one at `failing` refused
    name, step = ("best.safetensors", "last.safetensors")[(failing - 1) % 2], 2 * ((failing + 1) // 2)
    kept = step - 2
    assert str(raised.value).startswith(f"cannot write {run / name}: No space left on device (ENOSPC); "
                                        f"training stopped at step {step}; ")
    if kept:
        assert str(raised.value).endswith(f"{run / 'last.safetensors'} holds step {kept}, whole, and --resume "
                                          "continues from it")
        assert scripted_step(run / "last.safetensors") == kept
    else:
        assert str(raised.value).endswith("no checkpoint was saved before: --resume starts again")
        assert not (run / "last.safetensors").exists()


@pytest.mark.slow
def test_a_disk_full_at_a_save_is_one_line_and_resume_continues(reverse_data, tmp_path, capsys, monkeypatch):
    """The system refuses the checkpoints of the second evaluation (half a file written, then
    ENOSPC): exit 2, one line naming the file and the error, the first evaluation's checkpoints
    whole; --resume continues from them to the weights of a run never refused."""
    import safetensors.numpy

    common = ("train.eval_every=3", "train.max_steps=9", "model.dropout=0.2")
    straight, refused = tmp_path / "straight", tmp_path / "refused"
    assert main(["-q", "train", PRESET, "--data", str(reverse_data), "--out", str(straight), *sets(*SMALL, *common)]) == 0
    write, calls = safetensors.numpy.save_file, []

    def disk_full_after_two(arrays, filename, metadata=None):
        calls.append(filename)
        if len(calls) <= 2:
            return write(arrays, filename, metadata=metadata)
        Path(filename).write_bytes(b"half a checkpoint")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), filename)

    monkeypatch.setattr(safetensors.numpy, "save_file", disk_full_after_two)
    capsys.readouterr()
    assert main(["-q", "train", PRESET, "--data", str(reverse_data), "--out", str(refused), *sets(*SMALL, *common)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("attnseq: error: cannot write ") and "(ENOSPC)" in lines[0]
    assert f"{refused / 'last.safetensors'} holds step 3, whole" in lines[0]
    assert saved_step(refused / "last.safetensors") == 3 and no_temporary_files(refused)
    attnseq.load(refused).translate(["abc"])  # best.safetensors is whole too
    monkeypatch.setattr(safetensors.numpy, "save_file", write)
    assert main(["-q", "train", PRESET, "--data", str(reverse_data), "--out", str(refused), "--resume",
                 *sets(*SMALL, *common)]) == 0
    assert [r["resumed_at_step"] for r in read_metrics(refused) if r["type"] == "start"] == [None, 3]
    a, b = weights(straight / "last.safetensors"), weights(refused / "last.safetensors")
    assert all(np.array_equal(a[k], b[k]) for k in a)
    same_records(straight, refused)


# -- the run folder's lock ---------------------------------------------------------------------------
def hold_lock(folder: Path) -> subprocess.Popen:
    """Another process holding ``folder``'s lock until it is killed."""
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from attnseq.runs import RunLock; "
                               "lock = RunLock(sys.argv[1]); print('locked', flush=True); time.sleep(120)", str(folder)],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "locked\n"
    return holder


def test_a_folder_another_process_trains_is_refused_naming_it(reverse_data, tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    holder = hold_lock(run)
    try:
        for flags in ([], ["--resume"], ["--overwrite"]):
            assert main(["-q", "train", PRESET, "--data", str(reverse_data), "--out", str(run), *flags]) == 2
            lines = capsys.readouterr().err.strip().splitlines()
            assert lines == [f"attnseq: error: {run} is being trained by process {holder.pid} on "
                             f"{socket.gethostname()} (it holds {run / '.lock'}); wait for it to end or stop it "
                             "(Ctrl-C or kill: it saves first), or train into another --out"]
    finally:
        holder.kill()  # SIGKILL: no clean-up; the system releases its lock
        holder.wait()
    lock = RunLock(run)  # a killed holder leaves no stale lock
    with pytest.raises(UserError, match=f"being trained by process {os.getpid()} "):
        RunLock(run)  # one process, two trainings: refused too
    lock.release()
    RunLock(run).release()


def test_a_refused_folder_gets_no_lock_file(reverse_data, tmp_path, capsys):
    assert main(["-q", "train", PRESET, "--data", str(reverse_data), "--out", str(tmp_path / "none"), "--resume"]) == 2
    assert not (tmp_path / "none").exists()
