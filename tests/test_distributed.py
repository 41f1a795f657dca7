"""Data-parallel training with torchrun: two gloo processes on the CPU."""
from __future__ import annotations

import pytest

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import TINY


@pytest.mark.slow
def test_torchrun_two_processes(reverse_data, tmp_path):
    run_dir = tmp_path / "run"
    sets = [x for s in TINY + ["train.max_steps=6", "train.eval_every=3"] for x in ("--set", s)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    result = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
         "-m", "attnseq.cli", "-q", "train", "configs/book-attention.yaml",
         "--data", str(reverse_data), "--out", str(run_dir), "--set", "data.strip=true", *sets],
        capture_output=True, text=True, timeout=300, env=env, cwd=Path(__file__).parents[1])
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])  # printed once, by process 0
    assert summary["step"] == 6
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["type"] for r in records].count("start") == 1  # only process 0 logs
    assert [r["step"] for r in records if r["type"] == "eval"] == [3, 6]
    assert (run_dir / "last.safetensors").exists() and (run_dir / "best.safetensors").exists()
