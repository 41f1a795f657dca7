"""Data-parallel training with torchrun: two gloo processes on the CPU."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, TINY, sets


def torchrun(data: Path, out: Path, *settings: str) -> subprocess.CompletedProcess:
    """``attnseq train`` of the book's attention preset in two gloo processes (torchrun)."""
    return subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
         "-m", "attnseq.cli", "-q", "train", "configs/book-attention.yaml", "--data", str(data), "--out", str(out),
         *sets(*settings)],
        capture_output=True, text=True, timeout=300, env=dict(os.environ, OMP_NUM_THREADS="1"), cwd=ROOT)


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
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE="2",
                      LOCAL_RANK=str(rank))
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
