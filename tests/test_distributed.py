"""Data-parallel training with torchrun: two gloo processes on the CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT, TINY, sets
from hypothesis import given, settings
from hypothesis import strategies as st


def torchrun(data: Path, out: Path, *settings: str) -> subprocess.CompletedProcess:
    """``attnseq train`` of the book's attention preset in two gloo processes (torchrun)."""
    return subprocess.run(
        [
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
            str(data),
            "--out",
            str(out),
            *sets(*settings),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, OMP_NUM_THREADS="1"),
        cwd=ROOT,
    )


@pytest.mark.slow
def test_torchrun_two_processes(reverse_data, tmp_path):
    run_dir = tmp_path / "run"
    result = torchrun(reverse_data, run_dir, "data.strip=true", *TINY, "train.max_steps=6", "train.eval_every=3")
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])  # printed once, by process 0
    assert summary["step"] == 6
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["type"] for r in records].count("start") == 1  # only process 0 logs
    assert [r["step"] for r in records if r["type"] == "eval"] == [3, 6]
    assert (run_dir / "last.safetensors").exists() and (run_dir / "best.safetensors").exists()


@pytest.mark.slow
def test_torchrun_refuses_fewer_batches_than_processes(reverse_data, tmp_path):
    """One batch for two processes: an error naming the key, not epochs of no training."""
    result = torchrun(reverse_data, tmp_path / "run", "train.batch_size=100000", "train.max_steps=2")
    assert result.returncode != 0
    assert "attnseq: error: train.batch_size: " in result.stderr and "fewer than the 2 processes" in result.stderr


def _decide_in_process(rank: int, port: int, answers) -> None:
    """One of two gloo processes: each would measure something different."""
    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank)
    )
    import torch

    from attnseq.train.distributed import Distributed

    group = Distributed.from_env()
    group.setup(torch.device("cpu"))
    measured = []

    def measure():
        measured.append(rank)
        return (rank == 1, f"measured by process {rank}")

    answers.put((rank, group.decided_by_main(measure), measured))
    group.close()


@pytest.mark.slow  # two spawned processes, each importing torch and joining a gloo group
def test_a_choice_resting_on_a_measurement_is_process_0s_on_every_process():
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    context = mp.get_context("spawn")
    answers = context.Queue()
    processes = [context.Process(target=_decide_in_process, args=(rank, port, answers)) for rank in (0, 1)]
    for process in processes:
        process.start()
    results = {}
    for _ in processes:
        rank, verdict, measured = answers.get(timeout=120)
        results[rank] = (verdict, measured)
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    assert results[0] == ((False, "measured by process 0"), [0])
    assert results[1] == ((False, "measured by process 0"), [])  # process 1 never measured


VARIABLES = ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
SETTING = st.one_of(
    st.none(), st.integers(-2, 70000).map(str), st.sampled_from(["", " 1", "²", "1.0", "0x2"]), st.text(max_size=6)
)


@settings(max_examples=300, deadline=None)
@given(environ=st.fixed_dictionaries({name: SETTING for name in VARIABLES}))
def test_torchruns_variables_give_a_place_or_one_line_naming_the_variable(environ):
    """Whatever the environment holds in torchrun's variables: one process where WORLD_SIZE is
    unset or 1 (RANK and LOCAL_RANK then do not apply), else this process's place in the job, or
    a UserError whose message starts with the variable at fault; never int()'s ValueError or
    torch's rendezvous error from inside the trainer."""
    from attnseq.errors import UserError
    from attnseq.train.distributed import Distributed

    environ = {name: value for name, value in environ.items() if value is not None}
    try:
        place = Distributed.from_env(environ)
    except UserError as err:
        assert str(err).split("=", 1)[0] in VARIABLES and "\n" not in str(err), err
        return
    if place.world_size == 1:
        assert place.rank == 0 and int(environ.get("WORLD_SIZE", "1")) == 1
    else:
        assert 0 <= place.rank < place.world_size == int(environ["WORLD_SIZE"])
        assert place.local_rank >= 0 and environ["MASTER_ADDR"] and 0 < int(environ["MASTER_PORT"]) < 65536


def test_train_with_a_stray_world_size_says_so_in_one_line(reverse_data, tmp_path, monkeypatch, capsys):
    """WORLD_SIZE=2 left in a shell, no torchrun: exit 2 and one line naming what is missing (was
    torch's ValueError from init_process_group, a traceback)."""
    from attnseq.cli import main

    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert (
        main(
            [
                "-q",
                "train",
                "configs/book-attention.yaml",
                "--data",
                str(reverse_data),
                "--out",
                str(tmp_path / "run"),
                *sets(*TINY, "train.max_steps=1"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [err[0]] and err[0].startswith("attnseq: error: WORLD_SIZE=2: a job of 2 processes needs RANK"), err
    assert not (tmp_path / "run").exists()


def test_a_rendezvous_that_fails_is_one_line_naming_where(monkeypatch):
    """torch's error when the processes cannot meet at MASTER_ADDR:MASTER_PORT (refused, not
    resolved) is a UserError naming both, its first line kept."""
    import torch
    import torch.distributed as dist

    from attnseq.errors import UserError
    from attnseq.train.distributed import Distributed

    def refuse(*args, **kwargs):
        raise RuntimeError("The client socket has failed to connect to [nowhere]:29500\nmore detail")

    monkeypatch.setattr(dist, "init_process_group", refuse)
    monkeypatch.setenv("MASTER_ADDR", "nowhere")
    monkeypatch.setenv("MASTER_PORT", "29500")
    with pytest.raises(
        UserError,
        match=r"^MASTER_ADDR='nowhere', MASTER_PORT='29500': the processes could not "
        r"meet there \(The client socket has failed to connect to \[nowhere\]:29500\);",
    ):
        Distributed(1, 2, 1).setup(torch.device("cpu"))
