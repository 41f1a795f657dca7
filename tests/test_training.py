"""Training: exact resume, checkpoints, the metrics log, data errors."""

from __future__ import annotations

import json
import os

import pytest
import torch
from helpers import ROOT, TINY
from safetensors.torch import load_file

import attnseq
from attnseq.config import load_config
from attnseq.data.corpus import read_tsv
from attnseq.engines.torch_engine.trainer import Trainer
from attnseq.errors import DataError


def config(data_dir, *extra):
    return load_config(
        None,
        TINY
        + [
            f"data.dir={data_dir}",
            "model.dropout=0.3",
            "train.label_smoothing=0.1",
            "train.eval_max_sentences=20",
            *extra,
        ],
    )


@pytest.mark.parametrize(
    "common, stop",
    [
        (("train.batch_size=128",), "train.epochs=1"),
        (("train.batch_size=128", "train.eval_every=4"), "train.max_steps=10"),
        pytest.param(
            ("train.eval_every=10", "train.batch_tokens=150", "train.batch_size=40"),
            "train.max_steps=45",
            marks=pytest.mark.slow,
        ),
    ],
    ids=["at-an-epoch-end", "mid-epoch", "mid-epoch-token-batches"],
)
def test_resume_continues_exactly(reverse_data, tmp_path, common, stop):
    """2 epochs straight == stopped (after epoch 1, or at step 10 of its 16) and resumed: identical
    weights (dropout's random stream included)."""
    straight, split = tmp_path / "straight", tmp_path / "split"
    steps = Trainer(config(reverse_data, "train.epochs=2", *common), straight).fit()["step"]
    assert 0 < Trainer(config(reverse_data, "train.epochs=2", *common, stop), split).fit()["step"] < steps
    assert Trainer(config(reverse_data, "train.epochs=2", *common), split, resume=True).fit()["step"] == steps
    a, b = load_file(straight / "last.safetensors"), load_file(split / "last.safetensors")
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key


def test_a_run_says_why_it_ended_and_a_resumed_one_where_it_resumed(reverse_data, tmp_path, caplog):
    """On the console and in the summary: why training ended, whether a limit or the epochs running
    out (stopped_by was None then), and on --resume the step and the checkpoint it continues from."""
    run, common = tmp_path / "run", ("train.batch_size=128", "train.threads=1")
    with caplog.at_level("INFO", logger="attnseq"):
        first = Trainer(config(reverse_data, "train.epochs=1", *common), run).fit()
        assert first["stopped_by"] == "1 epochs (train.epochs)"
        assert f"training ended at step {first['step']}: 1 epochs (train.epochs)" in caplog.messages
        caplog.clear()
        cap = first["step"] + 2
        later = Trainer(config(reverse_data, "train.epochs=3", f"train.max_steps={cap}", *common), run, resume=True)
        later = later.fit()
    assert f"resuming at step {first['step']} (epoch 2) from {run / 'last.safetensors'}" in caplog.messages
    assert later["stopped_by"] == f"{cap} updates (train.max_steps)" and later["step"] == cap
    assert f"training ended at step {cap}: {cap} updates (train.max_steps)" in caplog.messages


@pytest.mark.parametrize(
    "limit, warned", [((), False), (("data.max_vocab=3",), True), (("data.min_freq=100000",), True)]
)
def test_a_vocabulary_that_leaves_tokens_unknown_is_said_with_its_share_and_setting(
    reverse_data, tmp_path, caplog, limit, warned
):
    """A start whose vocabulary limits leave more than 5% of the training tokens unknown warns with
    the share and the setting (it trained without a word); the vocabulary of all the data does not."""
    with caplog.at_level("WARNING", logger="attnseq"):
        Trainer(config(reverse_data, "train.max_steps=1", "train.threads=1", *limit), tmp_path / "run").fit()
    said = [m for m in caplog.messages if "tokens are outside the vocabulary" in m]
    assert bool(said) == warned, caplog.messages
    if warned:
        assert limit[0].replace("=", " ") in said[0] and "% of its tokens" in said[0], said


def test_run_folder_contents(reverse_data, tmp_path):
    run = tmp_path / "run"
    summary = Trainer(config(reverse_data, "train.epochs=2", "train.batch_size=128", "train.log_every=5"), run).fit()
    for name in (
        "config.yaml",
        "vocab.source.json",
        "vocab.target.json",
        "best.safetensors",
        "last.safetensors",
        "metrics.jsonl",
    ):
        assert (run / name).exists(), name
    assert not list(run.glob("*.tmp")), "temporary files left behind"
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    kinds = {r["type"] for r in records}
    assert {"start", "train", "eval"} <= kinds
    evals = [r for r in records if r["type"] == "eval"]
    assert [round(e["epoch"]) for e in evals] == [1, 2]
    # the summary is the last evaluation: the last checkpoint scored on the first 20 dev pairs
    assert summary["dev_exact_match"] == evals[-1]["dev_exact_match"]
    dev = read_tsv(reverse_data / "dev.tsv")[:20]
    assert summary["dev_exact_match"] == attnseq.load(run, checkpoint="last").evaluate(dev)["exact_match"]
    assert summary["target_tokens"] > 0 and summary["parameters"] == records[0]["parameters"]


def test_max_steps_stops_early(reverse_data, tmp_path):
    summary = Trainer(config(reverse_data, "train.max_steps=3"), tmp_path / "run").fit()
    assert summary["step"] == 3


def test_gradient_accumulation_counts_updates(reverse_data, tmp_path):
    """accumulate=2 makes one update per two batches."""
    trainer = Trainer(config(reverse_data, "train.epochs=1", "train.accumulate=2"), tmp_path / "run")
    trainer.fit()
    batches = -(-len(trainer.train_store) // trainer.config.train.batch_size)
    assert trainer.progress.step == -(-batches // 2)


def test_malformed_tsv_names_file_and_line(reverse_data, tmp_path):
    bad = reverse_data / "train.tsv"
    lines = bad.read_text().splitlines()
    lines[6] = "no tab on this line"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r"train\.tsv:7:"):
        Trainer(config(reverse_data), tmp_path / "run")


def test_missing_data_is_a_clear_error(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        Trainer(config(tmp_path / "nowhere"), tmp_path / "run")


@pytest.mark.parametrize("engine", ["torch", "numpy"])
def test_fit_from_python_with_either_engine(reverse_data, tmp_path, engine, monkeypatch):
    """attnseq.fit: a preset and overrides, trained by the engine the config names."""
    from attnseq import allocator as malloc

    allocator = []
    monkeypatch.setattr(malloc, "keep_freed_memory", lambda: allocator.append("set"))
    summary = attnseq.fit(
        ROOT / "configs" / "book-attention.yaml",
        tmp_path / "run",
        [f"data.dir={reverse_data}", f"engine={engine}", "data.strip=true", *TINY, "train.max_steps=4"],
    )
    assert summary["step"] == 4 and summary["parameters"] > 0
    assert allocator == (["set"] if engine == "torch" else [])  # the torch engine's steps reuse large blocks
    assert attnseq.load(tmp_path / "run").config.engine == engine


@pytest.mark.slow
@pytest.mark.minutes
def test_compiled_training_matches_eager_and_reports_compile_time(reverse_data, tmp_path, caplog):
    """train.compile: the same losses as eager steps (within float noise), the first update's time logged."""
    if os.environ.get("ATEN_CPU_CAPABILITY", "").lower() in ("avx2", "default"):
        pytest.skip(
            "torch.compile's code diverges to nan at the first update with ATEN_CPU_CAPABILITY set below "
            "the CPU's own (torch 2.13; seen on an AVX-512 Xeon held to avx2), not on the CPU's own kernels"
        )

    def losses(run, *extra):
        Trainer(config(reverse_data, "train.max_steps=4", "train.log_every=1", "model.dropout=0", *extra), run).fit()
        return [
            json.loads(line)["loss"]
            for line in (run / "metrics.jsonl").read_text().splitlines()
            if json.loads(line)["type"] == "train"
        ]

    eager = losses(tmp_path / "eager")
    with caplog.at_level("INFO", logger="attnseq"):
        compiled = losses(tmp_path / "compiled", "train.compile=true")
    assert compiled == pytest.approx(eager, rel=1e-4)
    assert len(eager) == 4
    assert any("compilation included" in r.getMessage() for r in caplog.records)


def test_compile_without_a_compiler_is_a_config_error(monkeypatch, tmp_path, reverse_data):
    from attnseq.engines.torch_engine import trainer as loop
    from attnseq.errors import ConfigError

    monkeypatch.setattr(loop.shutil, "which", lambda name: None)
    with pytest.raises(ConfigError, match="train.compile"):
        Trainer(config(reverse_data, "train.compile=true"), tmp_path / "run")
