"""How training stops, and that it loses no work: a checkpoint the system refuses to write stops
the run with one line, the one before kept; a folder another process trains is refused, naming
it; Ctrl-C and SIGTERM save the run and it resumes to the very weights of an uninterrupted one; a
second signal stops at once, the checkpoint before kept; train.max_minutes counts from the start
of training and stops before an update that would not fit; the best checkpoint and the early
stop follow the metric the run reports (train.select_by).

The loop's rules are tested on ScriptedLoop, an EpochLoop whose updates and evaluations take the
time they are given on a fake clock (milliseconds a test); models train only in the slow tests."""

from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from helpers import PRESET, ROOT, SMALL, last_step, same_records, sets, weights
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import attnseq
from attnseq.cli import main
from attnseq.config import load_config
from attnseq.errors import ConfigError, UserError
from attnseq.runs import RunLock, check_resumable, read_checkpoint, read_metrics, write_checkpoint
from attnseq.train.budget import Clock
from attnseq.train.interrupts import Interrupted
from attnseq.train.loop import EpochLoop, Progress, SaveFailed, selection_metric
from attnseq.utils import atomic_write

# Hypothesis runs each example in a fresh folder of its own; the fixtures' tmp_path is shared
EXAMPLES = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


class StandInStore(list):
    """The training pairs' store as the loop sees it: how many, and no unknown tokens among them."""

    unknown_share = 0.0


class ScriptedLoop(EpochLoop):
    """An EpochLoop without a model. An update takes ``step_seconds`` and an evaluation
    ``eval_seconds`` on a fake clock (``now``); the weights count the updates; evaluation ``i``
    scores ``scores[i]`` (exact match, dev loss); ``on_update(loop)`` runs inside each update.
    Checkpoints are real safetensors files."""

    def __init__(
        self,
        run_dir: Path,
        *settings: str,
        steps_per_epoch: int = 7,
        step_seconds: float = 1.0,
        eval_seconds: float = 0.0,
        scores=None,
        on_update=None,
        set_up_seconds: float = 0.0,
    ):
        self.now = 0.0
        super().__init__()
        self.clock = Clock(lambda: self.now)
        self.config = load_config(None, ["train.progress=false", "train.log_every=1", "train.epochs=1000", *settings])
        self.run_dir, self.resume, self.restore = run_dir, False, False
        run_dir.mkdir(parents=True, exist_ok=True)
        self.progress = Progress()
        self.pipeline = SimpleNamespace(tgt_vocab=range(10))
        self.dev_pairs = self.dev_examples = [("abc", "cba")]
        self.train_store = StandInStore(range(steps_per_epoch))
        self.select_by = selection_metric(self.config.train.select_by, ["cba"])
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
    assert str(raised.value).startswith(
        f"cannot write {run / name}: No space left on device (ENOSPC); training stopped at step {step}; "
    )
    if kept:
        assert str(raised.value).endswith(
            f"{run / 'last.safetensors'} holds step {kept}, whole, and --resume continues from it"
        )
        assert scripted_step(run / "last.safetensors") == kept
    else:
        assert str(raised.value).endswith("no checkpoint was saved before: --resume starts again")
        assert not (run / "last.safetensors").exists()


@pytest.mark.slow
def test_a_disk_full_at_a_save_is_one_line_and_resume_continues(reverse_data, tmp_path, capsys, monkeypatch):
    """The system refuses the checkpoints of the second evaluation (half a file written, then
    ENOSPC): exit 2, one line naming the file and the error, the first evaluation's checkpoints
    whole; --resume continues from them to the weights of a run never refused."""
    common = ("train.eval_every=3", "train.max_steps=9", "model.dropout=0.2")
    straight, refused = tmp_path / "straight", tmp_path / "refused"
    assert (
        main(["-q", "train", PRESET, "--data", str(reverse_data), "--out", str(straight), *sets(*SMALL, *common)]) == 0
    )
    fsync, calls = os.fsync, []

    def disk_full_after_two(fd):  # the file is written; the system reports ENOSPC when it is synced
        name = os.readlink(f"/proc/self/fd/{fd}")
        if ".safetensors." in name:
            calls.append(name)
            if len(calls) > 2:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), name)
        return fsync(fd)

    monkeypatch.setattr(os, "fsync", disk_full_after_two)
    capsys.readouterr()
    assert (
        main(["-q", "train", PRESET, "--data", str(reverse_data), "--out", str(refused), *sets(*SMALL, *common)]) == 2
    )
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("attnseq: error: cannot write ") and "(ENOSPC)" in lines[0]
    assert f"{refused / 'last.safetensors'} holds step 3, whole" in lines[0]
    assert saved_step(refused / "last.safetensors") == 3 and no_temporary_files(refused)
    attnseq.load(refused).translate(["abc"])  # best.safetensors is whole too
    monkeypatch.setattr(os, "fsync", fsync)
    assert (
        main(
            [
                "-q",
                "train",
                PRESET,
                "--data",
                str(reverse_data),
                "--out",
                str(refused),
                "--resume",
                *sets(*SMALL, *common),
            ]
        )
        == 0
    )
    assert [r["resumed_at_step"] for r in read_metrics(refused) if r["type"] == "start"] == [None, 3]
    a, b = weights(straight / "last.safetensors"), weights(refused / "last.safetensors")
    assert all(np.array_equal(a[k], b[k]) for k in a)
    same_records(straight, refused)


# -- the run folder's lock ---------------------------------------------------------------------------
def hold_lock(folder: Path) -> subprocess.Popen:
    """Another process holding ``folder``'s lock until it is killed."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from attnseq.runs import RunLock; "
            "lock = RunLock(sys.argv[1]); print('locked', flush=True); time.sleep(120)",
            str(folder),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
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
            assert lines == [
                f"attnseq: error: {run} is being trained by process {holder.pid} on "
                f"{socket.gethostname()} (it holds {run / '.lock'}); wait for it to end or stop it "
                "(Ctrl-C or kill: it saves first), or train into another --out"
            ]
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


# -- interrupts ------------------------------------------------------------------------------------
@EXAMPLES
@given(at=st.integers(1, 30), eval_every=st.integers(0, 6), sig=st.sampled_from([signal.SIGINT, signal.SIGTERM]))
def test_a_signal_stops_after_the_update_in_progress_with_it_saved(tmp_path_factory, at, eval_every, sig):
    run = tmp_path_factory.mktemp("run")

    def signal_at(loop):
        if round(loop.weights[0]) == at:
            loop.requests.receive(sig)

    loop = ScriptedLoop(run, f"train.eval_every={eval_every}", on_update=signal_at)
    before = signal.getsignal(signal.SIGINT)  # default_int_handler, or ignored in a background job
    with pytest.raises(KeyboardInterrupt) as raised:  # what a caller of attnseq.fit sees
        loop.fit()
    assert isinstance(raised.value, Interrupted) and raised.value.exit_status == 128 + sig
    assert str(raised.value) == (
        f"interrupted ({signal.Signals(sig).name}); saved at step {at} in "
        f"{run / 'last.safetensors'}; resume=True continues"
    )
    assert loop.progress.step == at and scripted_step(run / "last.safetensors") == at
    evaluated_at = [r["step"] for r in loop.progress.history]
    assert loop.writes.count("last.safetensors") == len(evaluated_at) + (at not in evaluated_at)  # once a step
    assert max(r.get("step", 0) for r in read_metrics(run)) == at and no_temporary_files(run)
    assert signal.getsignal(signal.SIGINT) is before  # the handlers before are back


def test_a_second_signal_while_saving_stops_at_once_keeping_the_checkpoint_before(tmp_path):
    def signal_at_5(loop):
        if loop.weights[0] == 5:
            loop.requests.receive(signal.SIGTERM)

    loop = ScriptedLoop(tmp_path, "train.eval_every=3", on_update=signal_at_5)

    def write(path, state=None):
        if not loop.stopped_by:
            return ScriptedLoop._write_checkpoint(loop, path, state)
        # the interrupt's save: half a file written, then Ctrl-C
        atomic_write(path, lambda tmp: (Path(tmp).write_bytes(b"half a file"), loop.requests.receive(signal.SIGINT)))

    loop._write_checkpoint = write
    with pytest.raises(Interrupted) as raised:
        loop.fit()
    assert raised.value.exit_status == 130 and str(raised.value) == (
        f"interrupted again (SIGINT): stopped at once, without saving; {tmp_path / 'last.safetensors'} holds step 3; "
        "resume=True continues"
    )
    assert scripted_step(tmp_path / "last.safetensors") == 3 and no_temporary_files(tmp_path)  # step 3's, whole


def test_a_second_signal_before_any_checkpoint_says_nothing_was_saved(tmp_path):
    def twice_at_2(loop):
        if loop.weights[0] == 2:
            loop.requests.receive(signal.SIGTERM)
            loop.requests.receive(signal.SIGTERM)

    loop = ScriptedLoop(tmp_path, "train.eval_every=0", on_update=twice_at_2)
    with pytest.raises(Interrupted) as raised:
        loop.fit()
    assert raised.value.exit_status == 143 and str(raised.value) == (
        "interrupted again (SIGTERM): stopped at once, without saving; no checkpoint was saved before"
    )
    assert not (tmp_path / "last.safetensors").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    "sig, engine, at_fraction",
    [
        (signal.SIGINT, "torch", 0.1),
        (signal.SIGTERM, "torch", 0.7),
        (signal.SIGTERM, "numpy", 0.3),
        (signal.SIGINT, "tokens", 0.3),
    ],
)
def test_an_interrupted_run_resumes_to_the_uninterrupted_run(reverse_data, tmp_path, sig, engine, at_fraction):
    """Ctrl-C or SIGTERM mid-run (at 0.1 of the run, before the first evaluation: epochs end at
    0.5 and 1) to a process training: its exit status and its line; then --resume to the end: the
    very weights and records of a run never interrupted. The torch runs' checkpoint holds the
    sampler's position (epoch, batch), and the resumed run maps the training data's store
    instead of tokenising it again ("tokens": batches of train.batch_tokens)."""
    settings = [*SMALL, "train.batch_size=64", "train.epochs=2", "train.log_every=1", "train.threads=1"]
    if engine == "tokens":
        engine, settings = "torch", [*settings, "train.batch_tokens=300"]
    settings += (
        ["model.dropout=0.2"]
        if engine == "torch"
        else [
            "engine=numpy",
            "model.decoder=book",
            "model.attention=dot",
            "model.bridge=copy",
            "model.init=book",
            "model.encoder.bidirectional=false",
            "model.dropout=0",
            "decode.max_len=10",
        ]
    )
    straight, interrupted = tmp_path / "straight", tmp_path / "interrupted"
    train = ["-q", "train", PRESET, "--data", str(reverse_data), *sets(*settings)]
    assert main([*train, "--out", str(straight)]) == 0
    at = max(1, round(at_fraction * last_step(straight)))

    process = subprocess.Popen(
        [sys.executable, "-m", "attnseq.cli", *train, "--out", str(interrupted)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while process.poll() is None and last_step(interrupted) < at and time.monotonic() < deadline:
        time.sleep(0.01)
    assert process.poll() is None, "the run ended before the signal"
    process.send_signal(sig)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 128 + sig, err
    step = saved_step(interrupted / "last.safetensors")
    assert step >= at and err.strip().splitlines()[-1] == (
        f"attnseq: interrupted ({signal.Signals(sig).name}); saved at step {step} in {interrupted / 'last.safetensors'}; "
        f"attnseq train {' '.join(train[2:])} --out {interrupted} --resume continues"
    )
    assert bool([r for r in read_metrics(interrupted) if r["type"] == "eval"]) == (at_fraction > 0.5)
    state = read_checkpoint(interrupted / "last.safetensors", with_state=True)[2]
    if engine == "torch":
        assert {k: state["sampler"][k] for k in ("epoch", "batch")} == {
            "epoch": state["progress"]["epoch"],
            "batch": state["progress"]["batch_in_epoch"],
        }
    stores = {path: path.stat().st_mtime_ns for path in Path(os.environ["ATTNSEQ_CACHE"]).rglob("store.json")}

    assert main([*train, "--out", str(interrupted), "--resume"]) == 0
    assert {path: path.stat().st_mtime_ns for path in Path(os.environ["ATTNSEQ_CACHE"]).rglob("store.json")} == stores
    a, b = weights(straight / "last.safetensors"), weights(interrupted / "last.safetensors")
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    same_records(straight, interrupted)


@pytest.mark.slow
def test_under_torchrun_every_process_stops_after_the_same_update(reverse_data, tmp_path):
    """SIGTERM to torchrun, which sends it on to both processes: they stop after the same update,
    process 0 saves it, and torchrun --resume continues from it."""
    run = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        "-m",
        "attnseq.cli",
        "-q",
        "train",
        "configs/book-attention.yaml",
        "--data",
        str(reverse_data),
        "--out",
        str(run),
        *sets(*SMALL, "data.strip=true", "train.log_every=1", "train.max_steps=40"),
    ]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    torchrun = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    deadline = time.monotonic() + 120
    while torchrun.poll() is None and last_step(run) < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert torchrun.poll() is None, "the run ended before the signal"
    torchrun.send_signal(signal.SIGTERM)
    _, err = torchrun.communicate(timeout=120)
    step = saved_step(run / "last.safetensors")
    assert 5 <= step < 40
    assert f"attnseq: interrupted (SIGTERM); saved at step {step} in {run / 'last.safetensors'}; " in err
    assert f"attnseq: interrupted (SIGTERM); process 0 saved the run at step {step}; " in err
    resumed = subprocess.run([*command, "--resume"], capture_output=True, text=True, env=env, cwd=ROOT)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert [r["resumed_at_step"] for r in read_metrics(run) if r["type"] == "start"] == [None, step]
    assert saved_step(run / "last.safetensors") == 40


# -- the budget --------------------------------------------------------------------------------------
@EXAMPLES
@given(
    minutes=st.integers(1, 5),
    set_up=st.integers(0, 59),
    step=st.integers(5, 90),
    evaluation=st.integers(0, 90),
    eval_every=st.integers(0, 5),
)
def test_the_budget_counts_set_up_and_stops_before_what_would_not_fit(
    tmp_path_factory, minutes, set_up, step, evaluation, eval_every
):
    """Updates of ``step`` s and evaluations of ``evaluation`` s after ``set_up`` s of set-up:
    the run ends within the budget once an update and an evaluation have been timed, and at
    worst by those first two over it; it stops no earlier than an update and an evaluation
    before the end; wall_seconds is the clock from the start, set-up included."""
    run = tmp_path_factory.mktemp("run")
    loop = ScriptedLoop(
        run,
        f"train.max_minutes={minutes}",
        f"train.eval_every={eval_every}",
        step_seconds=step,
        eval_seconds=evaluation,
        set_up_seconds=set_up,
    )
    summary = loop.fit()
    budget, ended = 60 * minutes, loop.now
    assert loop.stopped_by == f"{minutes} minutes (train.max_minutes)"
    assert ended <= budget + step + evaluation
    if len(loop.progress.history) >= 2:  # an evaluation was timed before the last update
        assert ended <= budget
    assert ended > budget - step - evaluation
    assert summary["wall_seconds"] == ended and read_metrics(run)[0]["wall_seconds"] == set_up


@pytest.mark.slow
def test_max_minutes_counts_from_the_start_of_training_and_overshoots_little(reverse_data, tmp_path, monkeypatch):
    """3 seconds of budget, 1.5 of them reading the data: the run ends within a second of the
    budget, and its wall_seconds is the time since training began, the data's reading included."""
    import torch._dynamo  # noqa: F401  (torch's Adam imports it when first made: seconds this test does not measure)

    import attnseq.train.loop as epochs

    read = epochs.prepare_training  # reading (and preparing) the training data
    monkeypatch.setattr(epochs, "prepare_training", lambda *args: (time.sleep(1.5), read(*args))[1])
    started = time.perf_counter()
    summary = attnseq.fit(
        PRESET,
        tmp_path / "run",
        [f"data.dir={reverse_data}", *SMALL, "train.epochs=100", "train.max_minutes=0.05", "train.eval_every=20"],
    )
    took = time.perf_counter() - started
    assert took <= 3.0 + 1.0
    assert 1.5 <= summary["wall_seconds"] <= took and summary["wall_seconds"] >= took - 1.0
    start = read_metrics(tmp_path / "run")[0]
    assert start["wall_seconds"] >= 1.5 and "set-up, data loading and evaluations included" in start["clock"]


# -- selection and early stop by the reported metric --------------------------------------------------
@EXAMPLES
@given(
    scores=st.lists(st.tuples(st.sampled_from([0.0, 0.25, 0.5, 1.0]), st.integers(1, 4)), min_size=1, max_size=12),
    patience=st.integers(0, 4),
    select_by=st.sampled_from(["exact_match", "loss", "auto"]),
)
def test_the_best_checkpoint_and_the_early_stop_follow_select_by(tmp_path_factory, scores, patience, select_by):
    """Evaluation i scores scores[i] (exact match, dev loss). best.safetensors holds the step of
    the best score by train.select_by (auto: exact match, the metric a run on short strings
    reports), ties to the lower dev loss; patience stops after that many evaluations without one."""
    run = tmp_path_factory.mktemp("run")
    loop = ScriptedLoop(
        run,
        "train.eval_every=1",
        f"train.max_steps={len(scores)}",
        f"train.patience={patience}",
        f"train.select_by={select_by}",
        scores=[(e, float(l)) for e, l in scores],
    )
    loop.fit()
    metric = {"auto": "exact_match"}.get(select_by, select_by)
    assert loop.select_by == metric and read_metrics(run)[0]["select_by"] == metric
    key = (lambda s: (s[0], -s[1])) if metric == "exact_match" else (lambda s: (-s[1],))
    best, since, evaluated = None, 0, 0
    for step, score in enumerate(scores, start=1):  # the rule, evaluation by evaluation
        evaluated = step
        if best is None or key(score) > key(scores[best - 1]):
            best, since = step, 0
        else:
            since += 1
        if patience and since >= patience:
            break
    assert len(loop.progress.history) == evaluated
    assert scripted_step(run / "best.safetensors") == best


def test_the_plateau_rule_stops_when_the_curve_flattens_not_at_a_small_new_best(tmp_path):
    """train.min_delta: a new best by less than the delta does not renew the patience, a rise by
    more does; with train.min_loss_delta a falling dev loss at an unchanged score (the loss
    plateau before exact match climbs) renews it too; the best checkpoint still follows any gain."""
    scores = [(0.0, 4.0), (0.0, 3.0), (0.0, 2.0), (0.5, 1.9), (0.504, 1.8), (0.503, 1.7), (0.505, 1.6), (0.9, 1.0)]

    def run(name, *settings):
        loop = ScriptedLoop(
            tmp_path / name, "train.eval_every=1", f"train.max_steps={len(scores)}", *settings, scores=scores
        )
        loop.fit()
        return len(loop.progress.history), loop.stopped_by, scripted_step(tmp_path / name / "best.safetensors")

    # the loss renews at 2, 3 (-25%, -33%) and 6 (0.503 >= 0.5, 1.7 < 0.9 x 1.9); the score at 4 and 8
    assert run("a", "train.patience=3", "train.min_delta=0.005", "train.min_loss_delta=0.1")[:2] == (
        8,
        "8 updates (train.max_steps)",
    )
    # without the loss, the loss plateau at 0% stops a patience of 2 at the third evaluation
    evaluated, why, best = run("b", "train.patience=2", "train.min_delta=0.005")
    assert (evaluated, best) == (3, 3) and "train.patience" in why
    # 5, 6 and 7 are within 0.005 of 0.5 (7 a new best by 0.001, kept as best.safetensors)
    evaluated, why, best = run("c", "train.patience=3", "train.min_delta=0.005")
    assert (evaluated, best) == (7, 7) and "train.patience" in why
    assert run("d", "train.patience=3")[0] == 8  # no deltas: every new best renews it, as before


def test_auto_selects_by_bleu_for_text_and_exact_match_for_short_strings():
    assert selection_metric("auto", ["1994-09-27", "2001-01-01"]) == "exact_match"
    assert selection_metric("auto", ["the cat sat on the mat", "a dog ran off"]) == "bleu"
    assert selection_metric("loss", ["the cat sat on the mat"]) == "loss"
    with pytest.raises(ConfigError, match="^train.select_by: unknown value 'best'; choose one of .*, auto$"):
        load_config(None, ["train.select_by=best"])


def test_the_recommended_presets_select_by_what_they_report():
    for preset in ("recommended-char", "recommended-subword"):
        assert load_config(Path(PRESET).parent / f"{preset}.yaml").train.select_by == "auto"


def test_resume_may_change_the_target_but_not_the_metric_that_selects():
    saved = load_config(None, ["train.target_exact_match=0.9"])
    check_resumable(saved, load_config(None, ["train.target_exact_match=1.0"]))
    with pytest.raises(ConfigError) as raised:
        check_resumable(saved, load_config(None, ["train.target_exact_match=0.9", "train.select_by=loss"]))
    assert raised.value.key == "train.select_by"


def test_the_plateau_schedule_waits_patience_evaluations_and_resumes_its_count():
    """decay 0.5, patience 1: the rate halves at the second evaluation in a row without a new
    best, and the count starts again; a schedule loaded from a checkpoint keeps the count."""
    import torch

    from attnseq.config import load_config
    from attnseq.train.optim import build_optimizer, build_schedule, check_train

    tc = check_train(
        load_config(
            None,
            ["train.lr=1.0", "train.schedule.name=plateau", "train.schedule.decay=0.5", "train.schedule.patience=1"],
        ).train
    )
    weight = torch.nn.Parameter(torch.zeros(1))
    optimizer = build_optimizer([weight], tc)
    schedule = build_schedule(optimizer, tc)
    rates = []
    for improved in (False, False, False, True, False, False, False):
        schedule.after_evaluation(improved)
        schedule.step()
        rates.append(optimizer.param_groups[0]["lr"])
    assert rates == [1.0, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25]
    again = build_schedule(build_optimizer([weight], tc), tc)
    again.load_state_dict(schedule.state_dict())
    again.after_evaluation(False)  # the second in a row: halves
    assert again.scheduler.optimizer.param_groups[0]["lr"] == 0.125


@pytest.mark.slow
def test_cpu_seconds_count_the_processes_cpu_time_beside_the_wall_clock(reverse_data, tmp_path, monkeypatch):
    """cpu_seconds: the training process's CPU time since training began (a second of sleep in
    the set-up counts in wall_seconds, not in it), never more than the threads can spend, and
    carried over a resumed session."""
    import attnseq.train.loop as epochs

    read = epochs.prepare_training
    monkeypatch.setattr(epochs, "prepare_training", lambda *args: (time.sleep(1.0), read(*args))[1])
    settings = [f"data.dir={reverse_data}", *SMALL, "train.threads=1", "train.eval_every=4"]
    attnseq.fit(PRESET, tmp_path / "run", [*settings, "train.max_steps=8"])
    records = [r for r in read_metrics(tmp_path / "run") if "cpu_seconds" in r]
    assert records[0]["type"] == "start"
    cpu = [r["cpu_seconds"] for r in records]
    assert cpu == sorted(cpu) and cpu[-1] > 0
    for r in records:
        assert r["cpu_seconds"] <= r["wall_seconds"] - 0.9  # the sleep is wall time only (one thread)
    attnseq.fit(PRESET, tmp_path / "run", [*settings, "train.max_steps=12"], resume=True)
    resumed = [r for r in read_metrics(tmp_path / "run") if "cpu_seconds" in r]
    assert resumed[-1]["step"] == 12 and resumed[-1]["cpu_seconds"] > cpu[-1]


def test_a_ctrl_c_python_wraps_in_another_exception_is_still_one_line(monkeypatch, capsys):
    """Python 3.11 wraps an exception raised in a class body's __set_name__ (a Ctrl-C while a
    module defining a dataclass is imported) in a RuntimeError: the command still ends as stopped."""
    import attnseq.cli.data as data_command

    def wrapped(args):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as err:
            raise RuntimeError("Error calling __set_name__") from err

    monkeypatch.setattr(data_command, "run", wrapped)
    assert main(["data", "dates", "--out", "x"]) == 130
    assert capsys.readouterr().err.strip() == "attnseq: interrupted"


@pytest.mark.slow
def test_a_ctrl_c_while_the_command_is_imported_is_one_line(tmp_path):
    """SIGINT at moments of ``python -m attnseq.cli``'s start, from the package's import on: one
    line or a clean exit, never Python's traceback. (The first milliseconds are Python's own start,
    site and runpy, before any attnseq code runs: out of reach, so the first moment is after the
    interpreter has started.)"""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import attnseq.cli"], check=True)
    imported = time.perf_counter() - start
    for fraction in (0.5, 0.7, 0.85, 1.0, 1.3):
        proc = subprocess.Popen(
            [sys.executable, "-m", "attnseq.cli", "data", "dates", "--out", str(tmp_path / f"d{fraction}")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(imported * fraction)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert "Traceback" not in err, err
        assert proc.returncode in (0, 130), (proc.returncode, err)  # ended, or stopped as main() stops


@given(
    used=st.lists(st.floats(0.0, 1.0), min_size=2, max_size=20), warmup=st.floats(0.0, 0.5), final=st.floats(0.0, 1.0)
)
def test_the_budget_schedule_rises_over_its_warmup_then_falls_to_final_at_the_end(used, warmup, final):
    """budget_factor: rising up to the warm-up's end (1.0 there), never rising after it, ``final``
    where the budget is spent, and always in (0, 1]."""
    from attnseq.train.optim import budget_factor

    used = sorted(used)
    factors = [budget_factor(u, warmup, final) for u in used]
    assert all(0.0 < f <= 1.0 + 1e-12 or (f == final == 0.0 and u == 1.0) for f, u in zip(factors, used))
    after = [f for f, u in zip(factors, used) if u >= warmup]
    before = [f for f, u in zip(factors, used) if u < warmup]
    assert after == sorted(after, reverse=True) and before == sorted(before)
    assert abs(budget_factor(1.0, warmup, final) - final) < 1e-12
    assert abs(budget_factor(warmup, warmup, final) - 1.0) < 1e-12


@pytest.mark.slow
def test_the_budget_schedule_spends_max_steps(reverse_data, tmp_path):
    """train.schedule budget over train.max_steps: the rate logged after step s is lr x
    budget_factor(s / max_steps), so the last update runs at the final rate."""
    from attnseq.train.optim import budget_factor

    settings = [f"data.dir={reverse_data}", *SMALL, "train.threads=1", "train.max_steps=20", "train.lr=0.01"]
    schedule = ["train.schedule={name: budget, warmup: 0.2, final: 0.1}", "train.log_every=1"]
    attnseq.fit(PRESET, tmp_path / "run", [*settings, *schedule])
    logged = {r["step"]: r["lr"] for r in read_metrics(tmp_path / "run") if r.get("type") == "train"}
    assert set(logged) == set(range(1, 21))
    for step, lr in logged.items():
        assert lr == pytest.approx(0.01 * budget_factor(step / 20, 0.2, 0.1))


def test_a_run_stopped_before_its_first_record_resumes_from_the_beginning(reverse_data, tmp_path):
    """A run killed after its config and vocabularies were written but before its metrics log (the
    kill drill's case: every kill during the start-up) is resumed with --resume: it says it starts
    from the beginning and trains, to the same weights as a run that was never stopped."""
    settings = [f"data.dir={reverse_data}", *SMALL, "train.threads=1", "train.max_steps=4"]
    attnseq.fit(PRESET, tmp_path / "straight", settings)
    run = tmp_path / "run"
    attnseq.fit(PRESET, run, settings)
    for name in ("metrics.jsonl", "last.safetensors", "best.safetensors"):
        (run / name).unlink()
    assert (run / "config.yaml").exists()
    summary = attnseq.fit(PRESET, run, settings, resume=True)
    assert summary["step"] == 4
    a, b = weights(tmp_path / "straight" / "last.safetensors"), weights(run / "last.safetensors")
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_a_tiny_loss_shrinking_by_a_steady_fraction_does_not_renew_the_patience():
    """At 100% dev exact match the dev loss goes on falling by the same fraction (1e-5 -> 9e-6):
    above LOSS_FLOOR such a fall renews the patience, below it the run may end."""
    from attnseq.train.loop import LOSS_FLOOR, patience_renewal

    assert patience_renewal(1.0, 0.05, 1.0, 0.06, 0.005, 0.02) == "loss"
    assert patience_renewal(1.0, 0.9e-5, 1.0, 1e-5, 0.005, 0.02) is None
    assert patience_renewal(0.99, 1e-3, 0.99, 1e-3 + 2 * LOSS_FLOOR, 0.005, 0.02) == "loss"


@pytest.mark.parametrize(
    ("metric", "top", "below"), [("exact_match", 1.0, 0.98), ("bleu", 100.00000000000004, 97.0), ("chrf", 100.0, 99.0)]
)
def test_at_the_metrics_ceiling_a_falling_loss_renews_nothing(metric, top, below):
    """The NTM's copy at 100% dev exact match from update 1,250 shrank its dev loss 0.23 -> 0.0016
    by a steady fraction to its cap of 6,000, each fall above the floor: at the metric's ceiling
    the loss clause renews nothing, below it the clause holds, and the loss (no ceiling) keeps it."""
    from attnseq.train.loop import at_ceiling, patience_renewal

    assert at_ceiling(top, metric) and not at_ceiling(below, metric) and not at_ceiling(-0.001, "loss")
    assert patience_renewal(top, 0.0016, top, 0.0022, 0.005, 0.02, at_ceiling(top, metric)) is None
    assert patience_renewal(below, 0.0016, below, 0.0022, 0.005, 0.02, at_ceiling(below, metric)) == "loss"
    assert patience_renewal(top, 0.1, 0.5 * top, 0.2, 0.005, 0.02, True) == "metric"  # reaching it renews
