"""The GPU path: bench/gpu.py's pipeline run on a CPU as its smoke test (slow), and what only a
GPU can show (marked cuda; skipped, with the reason, where torch sees none): training on cuda puts
the model, its batches and its optimiser's state on the GPU; bf16 training ends within noise of
fp32; greedy and beam search on the GPU give the CPU's outputs; a run trained on a GPU loads, and
resumes, in a process that sees no GPU. Two settings of the GPU path that read the GPU (bf16 in
hardware, the random generators' states) are checked against a torch that pretends to have one."""

from __future__ import annotations

import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import ROOT, write_reverse_dir

import attnseq

NO_GPU = not torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(NO_GPU, reason="needs a CUDA GPU (torch sees none here)")
CONFIGS = ROOT / "configs"
# recommended-char (a bidirectional GRU read per direction, a Luong decoder) and transformer-tiny, small
SMALL = {
    "recommended-char": ["model.embed_size=16", "model.hidden_size=64"],
    "transformer-tiny": ["model.hidden_size=32", "model.ff_size=64", "model.heads=4", "train.schedule=constant"],
}
QUIET = ["train.batch_size=32", "train.progress=false", "train.log_every=0", "train.eval_max_sentences=100"]


# -- bench/gpu.py on a CPU ---------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.minutes
def test_the_gpu_table_runs_its_whole_pipeline_on_a_cpu(tmp_path):
    out = tmp_path / "gpu.md"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "gpu.py"), "--device", "cpu", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    rows = record["rows"]
    assert [(r["measure"], r["setting"].split(",")[0], r["device"]) for r in rows] == [
        ("train recommended-subword", "fp32", "cpu"),
        ("train recommended-subword", "bf16", "cpu"),
        ("train transformer-gettext-de", "fp32", "cpu"),
        ("train transformer-gettext-de", "bf16", "cpu"),
        ("recommended-char to 99% dev exact", "fp32", "cpu"),
        *[("decode recommended-char", s, "cpu") for s in ("greedy", "beam 5") * 2],
        *[("decode transformer-gettext-de", s, "cpu") for s in ("greedy", "beam 5")],
        *[("CTranslate2 transformer-gettext-de", s, "cpu") for s in ("greedy", "beam 5")],
    ]
    ctranslate2 = importlib.util.find_spec("ctranslate2")  # (not imported here: attnseq imports it its own way)
    for row in rows:
        assert not row["failed"] and row["peak_mib"] is None, row  # no GPU memory on a CPU
        if row["measure"].startswith("recommended-char to"):  # 20 updates reach no target: its figures are in the JSON
            assert row["extra"]["updates"] > 0 and row["extra"]["seconds"] > 0, row
            assert row["value"] is None or row["value"] > 0, row
        elif row["measure"].startswith("CTranslate2") and ctranslate2 is None:
            assert row["value"] is None and row["notes"].startswith("skipped: ctranslate2 is not installed"), row
            continue
        else:
            assert row["value"] > 0, row
        assert row["seconds"] > 0, row
    table = out.read_text(encoding="utf-8")
    assert done.stdout.endswith(table)  # the file is the table the run printed
    lines = table.splitlines()
    assert lines[0].startswith("bench/gpu.py --device cpu") and f"torch {torch.__version__}" in lines[1]
    assert sum(line.startswith("|") for line in lines) == 2 + len(rows)  # header, rule, a line a row


def test_the_gpu_table_refuses_cuda_where_there_is_none():
    if not NO_GPU:
        pytest.skip("this machine has a GPU")
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "gpu.py")], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1 and "--device cpu" in done.stderr


# -- what the GPU path reads of the GPU, against a torch that pretends to have one -------------------
def test_bf16_on_a_gpu_is_hardware_only(monkeypatch):
    """A GPU before Ampere emulates bfloat16 (torch counts it unless told not to): no bf16 there."""
    from attnseq import hardware

    asked = []

    def is_bf16_supported(including_emulation: bool = True) -> bool:
        asked.append(including_emulation)
        return including_emulation  # a GPU that emulates it

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", is_bf16_supported)
    assert hardware.bf16_in_hardware("cuda") is False and asked == [False]
    assert hardware.bf16_pays("cuda")[0] is False


def test_a_state_saved_beside_more_gpus_restores_on_fewer(monkeypatch):
    """A run saved by a process that saw two GPUs resumes where there is one: each GPU's generator
    state is restored where that GPU exists."""
    from attnseq.engines.torch_engine import trainer as loop

    restored = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "set_rng_state", lambda state, device: restored.append((device, state)))
    states = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
        "cuda": [torch.ones(4, dtype=torch.uint8), torch.zeros(4, dtype=torch.uint8)],
    }  # two GPUs' states
    loop.set_rng_states(states)
    assert [device for device, _ in restored] == [0] and torch.equal(restored[0][1], states["cuda"][0])


# -- on a GPU ------------------------------------------------------------------------------------------
def small(preset: str, data: Path, *settings: str) -> list[str]:
    return [f"data.dir={data}", *SMALL[preset], *QUIET, "model.dropout=0", *settings]


@pytest.fixture(scope="module")
def reversal(tmp_path_factory) -> Path:
    return write_reverse_dir(tmp_path_factory.mktemp("reverse"))


@pytest.fixture(scope="module")
def gpu_run(reversal, tmp_path_factory) -> Path:
    """recommended-char, small, trained on cuda until it reverses strings (400 updates)."""
    if NO_GPU:
        pytest.skip("needs a CUDA GPU (torch sees none here)")
    run = tmp_path_factory.mktemp("gpu") / "run"
    attnseq.fit(
        CONFIGS / "recommended-char.yaml",
        run,
        small("recommended-char", reversal, "train.device=cuda", "train.max_steps=400", "train.eval_every=200"),
    )
    return run


@pytest.fixture
def fp32_on_gpu():
    """cuDNN's recurrent kernels and matmuls in float32, not TF32, for the test's duration: the
    GPU's search is then the CPU's arithmetic, up to the order of sums."""
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("preset", list(SMALL))
def test_training_on_cuda_puts_the_model_its_batches_and_its_optimiser_on_the_gpu(preset, reversal, tmp_path):
    from attnseq.config import load_config
    from attnseq.engines.torch_engine.trainer import Trainer

    trainer = Trainer(
        load_config(CONFIGS / f"{preset}.yaml", small(preset, reversal, "train.device=cuda", "train.max_steps=3")),
        tmp_path / "run",
    )
    assert {p.device.type for p in trainer.model.parameters()} == {"cuda"}
    seen = set()  # the devices of every tensor the encoder and the decoder are given

    def record(module, args, kwargs):
        seen.update(t.device.type for t in [*args, *kwargs.values()] if isinstance(t, torch.Tensor))

    hooks = [
        trainer.model.encoder.register_forward_pre_hook(record, with_kwargs=True),
        trainer.model.decoder.register_forward_pre_hook(record, with_kwargs=True),
    ]
    trainer.fit()
    for hook in hooks:
        hook.remove()
    assert seen == {"cuda"}
    state = [t for s in trainer.optimizer.state.values() for t in s.values() if isinstance(t, torch.Tensor)]
    assert state and {t.device.type for t in state} == {"cuda"}

    translator = attnseq.load(tmp_path / "run", device="cuda")  # the search's inputs go to the model's device
    assert {p.device.type for p in translator.model.parameters()} == {"cuda"}
    seen.clear()
    hook = translator.model.encoder.register_forward_pre_hook(record, with_kwargs=True)
    assert len(translator.translate(["abc", "fedcba"], beam_size=5)) == 2
    hook.remove()
    assert seen == {"cuda"}


@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("preset", list(SMALL))
def test_bf16_training_ends_within_noise_of_fp32(preset, reversal, tmp_path):
    """The same seed, batches and updates in fp32 and in bf16 (autocast: attnseq.hardware says it
    pays on this GPU); the dev loss after 80 updates (computed in fp32) within 10% of fp32's."""
    from attnseq.config import load_config
    from attnseq.engines.torch_engine.trainer import Trainer
    from attnseq.hardware import bf16_pays

    pays, why_not = bf16_pays("cuda")
    if not pays:
        pytest.skip(f"this GPU {why_not}")
    losses = {}
    for precision in ("fp32", "bf16"):
        trainer = Trainer(
            load_config(
                CONFIGS / f"{preset}.yaml",
                small(
                    preset,
                    reversal,
                    "train.device=cuda",
                    f"train.precision={precision}",
                    "train.max_steps=80",
                    "train.eval_every=80",
                ),
            ),
            tmp_path / precision,
        )
        assert trainer.bf16 is (precision == "bf16")
        losses[precision] = trainer.fit()["dev_loss"]
    assert abs(losses["bf16"] - losses["fp32"]) <= 0.1 * losses["fp32"], losses


def dev_sources(data: Path) -> list[str]:
    return [line.split("\t")[0] for line in (data / "dev.tsv").read_text(encoding="utf-8").splitlines()]


@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("beam", [1, 5])
def test_search_on_cuda_gives_the_cpus_outputs(gpu_run, reversal, beam, fp32_on_gpu):
    sources = dev_sources(reversal)
    on_gpu = attnseq.load(gpu_run, device="cuda").translate(sources, beam_size=beam)
    on_cpu = attnseq.load(gpu_run, device="cpu").translate(sources, beam_size=beam)
    differ = [(s, g, c) for s, g, c in zip(sources, on_gpu, on_cpu) if g != c]
    assert not differ, differ[:5]
    assert sum(o == s[::-1] for s, o in zip(sources, on_cpu)) >= 0.9 * len(sources)  # a model that learned


CPU_ONLY = """
import json, sys
import torch
import attnseq

assert not torch.cuda.is_available()
run, sources = sys.argv[1], json.loads(sys.argv[2])
outputs = attnseq.load(run).translate(sources)
summary = attnseq.fit(run + "/config.yaml", run, ["train.device=cpu", "train.max_steps=402"], resume=True)
print(json.dumps({"outputs": outputs, "step": summary["step"]}))
"""


@pytest.mark.cuda
@needs_cuda
def test_a_run_trained_on_a_gpu_loads_and_resumes_where_there_is_none(gpu_run, reversal, tmp_path):
    """A process that sees no GPU (CUDA_VISIBLE_DEVICES empty) translates with the run's
    checkpoint as the GPU process does on its CPU, and resumes it on the CPU (the optimiser's
    state and the generators' states saved on the GPU)."""
    run = tmp_path / "run"
    shutil.copytree(gpu_run, run)
    sources = dev_sources(reversal)[:20]
    expected = attnseq.load(run, device="cpu").translate(sources)
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run(
        [sys.executable, "-c", CPU_ONLY, str(run), json.dumps(sources)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert found == {"outputs": expected, "step": 402}
