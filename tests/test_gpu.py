"""The GPU path: bench/gpu.py's pipeline run on a CPU as its smoke test, and what only a GPU can
show (marked cuda; skipped, with the reason, where torch sees none): the model's placement, bf16
training within noise of fp32, greedy search on the GPU equal to the CPU's, and a checkpoint
trained on a GPU that loads on a CPU."""
from __future__ import annotations

import subprocess
import sys

import pytest
import torch

import attnseq

from conftest import ROOT, SMALL, PRESET, write_reverse_dir

NO_GPU = not torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(NO_GPU, reason="needs a CUDA GPU (torch sees none here)")


@pytest.mark.slow
def test_the_gpu_table_runs_its_whole_pipeline_on_a_cpu(tmp_path):
    out = tmp_path / "gpu.md"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu.py"), "--device", "cpu", "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line.split(" | ") for line in out.read_text().splitlines() if line.startswith("| ") and "---" not in line]
    names = [r[0].removeprefix("| ") for r in rows[1:]]
    assert names == ["train recommended-subword"] * 2 + ["train transformer-gettext-de"] * 2 + [
        "recommended-char to 99% dev exact", "decode recommended-char on cpu", "decode recommended-char on cpu",
        "CTranslate2 transformer-gettext-de"]
    assert all(float(r[2].replace(",", "")) > 0 for r in rows[1:]), rows


def test_the_gpu_table_refuses_cuda_where_there_is_none():
    if not NO_GPU:
        pytest.skip("this machine has a GPU")
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu.py")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1 and "--device cpu" in done.stderr


def fit(tmp_path, name: str, *settings: str):
    data = write_reverse_dir(tmp_path / "data")
    return attnseq.fit(PRESET, tmp_path / name, [f"data.dir={data}", *SMALL, "train.max_steps=30",
                                                 "train.eval_every=30", "model.dropout=0", *settings])


@pytest.mark.cuda
@needs_cuda
def test_training_on_cuda_places_the_model_on_the_gpu(tmp_path):
    from attnseq.config import load_config
    from attnseq.train.loop import Trainer

    data = write_reverse_dir(tmp_path / "data")
    trainer = Trainer(load_config(PRESET, [f"data.dir={data}", *SMALL, "train.max_steps=2", "train.device=cuda"]),
                      tmp_path / "run")
    assert all(p.device.type == "cuda" for p in trainer.model.parameters())
    trainer.fit()
    translator = attnseq.load(tmp_path / "run", device="cuda")
    assert next(translator.model.parameters()).device.type == "cuda"


@pytest.mark.cuda
@needs_cuda
def test_bf16_training_ends_within_noise_of_fp32(tmp_path):
    fp32 = fit(tmp_path, "fp32", "train.device=cuda", "train.precision=fp32")
    bf16 = fit(tmp_path, "bf16", "train.device=cuda", "train.precision=bf16")
    assert abs(bf16["dev_loss"] - fp32["dev_loss"]) <= 0.1 * fp32["dev_loss"], (fp32["dev_loss"], bf16["dev_loss"])


@pytest.mark.cuda
@needs_cuda
def test_greedy_on_cuda_equals_the_cpu_and_a_gpu_checkpoint_loads_on_a_cpu(tmp_path):
    fit(tmp_path, "run", "train.device=cuda")
    sources = ["abc", "fedd", "abcdef", "cab"]
    on_gpu = attnseq.load(tmp_path / "run", device="cuda").translate(sources)
    on_cpu = attnseq.load(tmp_path / "run", device="cpu").translate(sources)  # the weights were saved from the GPU
    assert on_gpu == on_cpu
