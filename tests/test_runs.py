"""Run folders lose nothing: a run is never overwritten silently, --resume continues exactly what
was trained (or refuses, naming the key), damaged files and torn logs are said plainly, a
diverging run stops keeping its last good checkpoint, and a run killed at any moment resumes
to the very weights of an uninterrupted one."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import PRESET, SMALL, last_step, reverse_pairs, same_records, sets, weights, write_tsv

import attnseq
from attnseq.cli import main
from attnseq.runs import read_metrics


def train(data: Path, out: Path, *settings: str, flags: tuple = ()) -> int:
    return main(["-q", "train", PRESET, "--data", str(data), "--out", str(out), *flags, *sets(*SMALL, *settings)])


def digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha1(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def one_line_error(capsys) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_a_run_is_never_overwritten_silently(reverse_data, tmp_path, capsys):
    run = tmp_path / "run"
    assert train(reverse_data, run, "train.max_steps=3") == 0
    before = digest(run)
    assert train(reverse_data, run, "train.max_steps=3") == 2
    error = one_line_error(capsys)
    assert "holds a run already" in error and "--resume" in error and "--overwrite" in error
    assert digest(run) == before  # nothing touched
    (run / "notes.txt").write_text("mine")
    assert train(reverse_data, run, "train.max_steps=2", flags=("--overwrite",)) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["step"] == 2
    assert (run / "notes.txt").read_text() == "mine"  # --overwrite removes the run's files only
    assert [r["type"] for r in read_metrics(run)][0] == "start" and len(
        [r for r in read_metrics(run) if r["type"] == "start"]
    ) == 1


def test_resume_continues_as_trained_or_names_the_key(reverse_data, tmp_path, capsys):
    empty = tmp_path / "empty"
    assert train(reverse_data, empty, flags=("--resume",)) == 2
    assert f"nothing to resume in {empty}" in one_line_error(capsys)
    run = tmp_path / "run"
    assert train(reverse_data, run, "train.max_steps=3") == 0
    for change, key in (
        ("train.lr=0.01", "train.lr"),
        ("model.hidden_size=64", "model.hidden_size"),
        ("model.attention=dot", "model.attention"),
        ("train.schedule=plateau", "train.schedule"),
    ):
        assert train(reverse_data, run, "train.max_steps=6", change, flags=("--resume",)) == 2
        error = one_line_error(capsys)
        assert error.startswith(f"attnseq: error: {key}: the run was trained with"), error
    assert (
        train(reverse_data, run, "train.max_steps=6", "train.log_every=1", "decode.max_len=20", flags=("--resume",))
        == 0
    )
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["step"] == 6


def test_a_run_killed_before_its_first_checkpoint_starts_again(reverse_data, tmp_path, capsys):
    run = tmp_path / "run"
    assert train(reverse_data, run, "train.max_steps=3") == 0
    (run / "last.safetensors").unlink()
    (run / "best.safetensors").unlink()
    (run / ".last.safetensors.x1y2.tmp").write_bytes(b"half a file")  # left by an interrupted write
    assert train(reverse_data, run, "train.max_steps=3", flags=("--resume",)) == 0
    assert not list(run.glob("*.tmp"))
    assert [r["step"] for r in read_metrics(run) if r["type"] == "eval"] == [3]


def test_damaged_checkpoints_are_said_plainly(reverse_data, tmp_path, capsys):
    run = tmp_path / "run"
    assert train(reverse_data, run, "train.max_steps=3") == 0
    capsys.readouterr()
    (run / "best.safetensors").write_bytes((run / "best.safetensors").read_bytes()[:100])
    assert main(["evaluate", str(run), "--data", str(reverse_data / "test.tsv")]) == 2
    error = one_line_error(capsys)
    assert "best.safetensors: a damaged or incomplete checkpoint" in error and "--checkpoint last" in error
    assert main(["-q", "evaluate", str(run), "--data", str(reverse_data / "test.tsv"), "--checkpoint", "last"]) == 0
    other = tmp_path / "other"  # weights of another model size: the keys that differ are named
    assert train(reverse_data, other, "train.max_steps=1", "model.hidden_size=16") == 0
    (run / "best.safetensors").write_bytes((other / "best.safetensors").read_bytes())
    assert main(["evaluate", str(run), "--data", str(reverse_data / "test.tsv")]) == 2
    assert "not weights of this model (other shapes" in one_line_error(capsys)


def test_missing_pieces_of_a_run_are_named_as_they_are(reverse_data, tmp_path, capsys, caplog):
    """A run with best alone: --checkpoint last names best and the flag that loads it, and a
    resume says that it starts again for want of last (not that the run has no checkpoint); a
    metrics log that is not text, a --set that is not key=value and a run's config.yaml edited
    into one the engine refuses are named as such."""
    run = tmp_path / "run"
    assert train(reverse_data, run, "train.max_steps=2") == 0
    (run / "last.safetensors").unlink()
    capsys.readouterr()
    assert main(["translate", str(run), "--checkpoint", "last"]) == 2
    assert "no last.safetensors (the run has best.safetensors: --checkpoint best loads it)" in one_line_error(capsys)
    for bad in ("=", "=3", "decode"):
        assert main(["translate", str(run), "--set", bad]) == 2
        assert f"--set {bad}:" in one_line_error(capsys)
    with caplog.at_level("INFO", logger="attnseq"):
        assert train(reverse_data, run, "train.max_steps=2", flags=("--resume",)) == 0
    assert any("no last.safetensors to resume from yet" in m for m in caplog.messages)
    config = (run / "config.yaml").read_text()
    (run / "config.yaml").write_text(config.replace("model:\n", "model:\n  what: 3\n", 1))  # edited by hand
    for command in (
        ["translate", str(run)],
        ["train", PRESET, "--data", str(reverse_data), "--out", str(run), "--resume"],
    ):
        assert main(command) == 2
        assert one_line_error(capsys).startswith(f"attnseq: error: {run / 'config.yaml'}: model.what: unknown key")
    (run / "metrics.jsonl").write_bytes(b"\xff\xfe not a log\n")
    assert main(["plot", "curve", str(run), "--out", str(tmp_path / "curve.png")]) == 2
    assert "metrics.jsonl: the metrics log is not UTF-8 text" in one_line_error(capsys)


def test_resume_onto_data_the_vocabulary_covers_less_is_said(reverse_data, tmp_path, caplog):
    """--resume with data changed under the run: a warning with the share of tokens now outside
    its vocabulary against the share when it began; the same data resumes without one."""
    run = tmp_path / "run"
    assert train(reverse_data, run, "train.max_steps=2") == 0
    with caplog.at_level("WARNING", logger="attnseq"):
        assert train(reverse_data, run, "train.max_steps=3", flags=("--resume",)) == 0
    assert not [m for m in caplog.messages if "outside the run's vocabulary" in m]
    write_tsv(reverse_data / "train.tsv", reverse_pairs(2000, seed=1, symbols="abcxyz", lengths=(3, 6)))
    with caplog.at_level("WARNING", logger="attnseq"):
        assert train(reverse_data, run, "train.max_steps=4", flags=("--resume",)) == 0
    [warning] = [m for m in caplog.messages if "outside the run's vocabulary" in m]
    assert "(0.00% when the run began)" in warning and "the data has changed since" in warning
    assert [r["unknown_share"] > 0.2 for r in read_metrics(run) if r["type"] == "start"] == [False, False, True]


def test_resume_drops_records_of_unsaved_steps_and_torn_lines(reverse_data, tmp_path, capsys):
    straight, cut = tmp_path / "straight", tmp_path / "cut"
    common = ("train.epochs=2", "train.batch_size=128", "train.eval_every=4", "train.log_every=3")  # 16 steps an epoch
    assert train(reverse_data, straight, *common) == 0
    assert train(reverse_data, cut, *common, "train.max_steps=12") == 0
    with open(cut / "metrics.jsonl", "a") as fh:  # an eval logged but never saved, then a torn line
        fh.write(json.dumps({"type": "eval", "step": 16, "epoch": 1.0}) + "\n" + '{"type": "train", "st')
    assert [r["step"] for r in read_metrics(cut) if r["type"] == "eval"] == [4, 8, 12, 16]  # the torn line skipped
    assert main(["-q", "plot", "curve", str(cut), "--out", str(tmp_path / "curve.png")]) == 0
    assert train(reverse_data, cut, *common, flags=("--resume",)) == 0
    same_records(straight, cut)
    assert all(
        np.array_equal(weights(straight / "last.safetensors")[k], v)
        for k, v in weights(cut / "last.safetensors").items()
    )


@pytest.mark.parametrize("engine", ["torch", "numpy"])
@pytest.mark.parametrize("lr, saved_step", [(1e6, None), (1, 1)], ids=["at-the-first-update", "after-an-evaluation"])
def test_a_diverging_run_stops_and_keeps_its_last_good_checkpoint(
    reverse_data, tmp_path, capsys, engine, lr, saved_step
):
    """A rate of 1e6 diverges at the first update, before anything is saved; a rate of 1 after the
    first evaluation (step 1), whose checkpoint is kept, finite, and loads."""
    run = tmp_path / "run"
    settings = [f"train.lr={lr}", "train.clip_norm=0", "train.eval_every=1", "train.max_steps=60"]
    if engine == "numpy":
        settings = [
            *settings,
            "engine=numpy",
            "model.decoder=book",
            "model.attention=dot",
            "model.bridge=copy",
            "model.init=book",
            "model.encoder.bidirectional=false",
            "model.dropout=0",
            "decode.max_len=10",
        ]
    assert train(reverse_data, run, *settings) == 2
    error = one_line_error(capsys)
    assert "training diverged at step" in error and "lower train.lr" in error
    assert read_metrics(run)[-1]["type"] == "diverged"  # the log ends saying so (a resume drops it)
    evals = [r for r in read_metrics(run) if r["type"] == "eval"]
    assert all(np.isfinite(r["dev_loss"]) for r in evals)
    if saved_step is None:
        assert evals == [] and f"nothing was saved in {run}" in error
        assert not (run / "last.safetensors").exists()
    else:
        assert evals[-1]["step"] == saved_step and f"last good checkpoint (step {saved_step})" in error
        for name in ("best.safetensors", "last.safetensors"):
            assert all(np.isfinite(v).all() for v in weights(run / name).values())
        attnseq.load(run).translate(["abc"])


def kill_and_resume(data: Path, out: Path, args: list[str], kills: int, steps: int, seed: int = 0) -> int:
    """Train with ``args`` into ``out`` (a run of ``steps`` steps), killing the process (SIGKILL)
    ``kills`` times, each time resuming (and checking the run loads); the number of kills that landed.

    Each kill waits until the run has logged a step drawn at random from its first three quarters, then a
    random fraction of a second more, so it lands mid-run however fast this machine trains."""
    rng = random.Random(seed)
    command = [
        sys.executable,
        "-m",
        "attnseq.cli",
        "-q",
        "train",
        PRESET,
        "--data",
        str(data),
        "--out",
        str(out),
        *args,
    ]
    targets = sorted(rng.sample(range(1, max(steps * 3 // 4, kills + 1)), kills))
    landed = 0
    for attempt in range(kills + 1):
        resume = ["--resume"] if (out / "config.yaml").exists() else []
        process = subprocess.Popen(command + resume, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if attempt < kills:
            deadline = time.monotonic() + 120
            while process.poll() is None and last_step(out) < targets[attempt] and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 0.2))
            if process.poll() is None:
                os.kill(process.pid, signal.SIGKILL)
                landed += 1
        _, err = process.communicate(timeout=300)
        if attempt == kills:
            assert process.returncode == 0, err.decode()
        elif (out / "last.safetensors").exists():
            attnseq.load(out).translate(["abc"])  # whatever moment it died, the run loads
    return landed


@pytest.mark.slow
@pytest.mark.minutes
def test_killed_runs_resume_to_the_uninterrupted_run(reverse_data, tmp_path):
    args = sets(*SMALL, "train.epochs=2", "train.eval_every=5", "train.log_every=2", "model.dropout=0.2")
    straight = tmp_path / "straight"
    assert (
        subprocess.run(
            [
                sys.executable,
                "-m",
                "attnseq.cli",
                "-q",
                "train",
                PRESET,
                "--data",
                str(reverse_data),
                "--out",
                str(straight),
                *args,
            ],
            capture_output=True,
        ).returncode
        == 0
    )
    killed = tmp_path / "killed"
    assert kill_and_resume(reverse_data, killed, args, kills=2, steps=last_step(straight)) >= 1
    a, b = weights(straight / "last.safetensors"), weights(killed / "last.safetensors")
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    same_records(straight, killed)


def test_a_checkpoint_the_system_refuses_is_an_os_error_with_its_errno(tmp_path):
    """Over the file-size limit (EFBIG) the checkpoint writer raises the system's OSError, which
    the CLI's boundary turns into one line (not the library's own error type), and leaves no file."""
    import errno
    import resource

    from attnseq.runs import write_checkpoint

    limits, handler = resource.getrlimit(resource.RLIMIT_FSIZE), signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1000, limits[1]))
        with pytest.raises(OSError) as raised:
            write_checkpoint(tmp_path / "last.safetensors", {"w": np.zeros(1000, np.float32)})
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limits)
        signal.signal(signal.SIGXFSZ, handler)
    assert raised.value.errno == errno.EFBIG and list(tmp_path.iterdir()) == []


def test_a_run_from_before_tie_embeddings_named_its_choices_resumes():
    """A run whose config.yaml says tie_embeddings: false (the default before it named none,
    decoder and all) resumes with today's preset, which says none; true stays as written."""
    from attnseq.config import load_config
    from attnseq.errors import ConfigError
    from attnseq.runs import check_resumable

    today = load_config(PRESET, [])
    check_resumable(load_config(PRESET, ["model.tie_embeddings=false"]), today)
    with pytest.raises(ConfigError, match="model.tie_embeddings: the run was trained with true"):
        check_resumable(load_config(PRESET, ["model.tie_embeddings=true"]), today)
