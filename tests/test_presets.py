"""Every preset in configs/ loads and trains two steps on a tiny generated date set.

Sizes are shrunk so that all presets run in seconds; the architecture keys (cell, encoder,
decoder, attention, layers, bridge, reversal, ...) stay as each preset has them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import FILE_RUNS, ROOT

from attnseq.cli import main
from attnseq.config import load_config
from attnseq.data.splits import make_date_splits, write_split_dir
from attnseq.engines import engine_for
from attnseq.schema import plain

CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))
COMMON = [
    "train.max_steps=2",
    "train.batch_size=16",
    "train.eval_max_sentences=8",
    "train.progress=false",
    "train.log_every=0",
    "train.threads=1",
]
SIZES = {"hidden_size": 16, "embed_size": 16, "ff_size": 32}  # shrunk where the architecture has them


def shrink(config) -> list[str]:
    """Overrides that make the preset ``config`` train in seconds without changing its design."""
    sets = [f"model.{key}={value}" for key, value in SIZES.items() if hasattr(config.model, key)]
    attention = getattr(config.model, "attention", None)
    if attention is not None and attention.options.get("size"):
        sets.append("model.attention.size=16")
    if config.data.tokenizer.name == "sentencepiece":
        sets += ["data.tokenizer.vocab_size=80", "data.tokenizer.max_sentences=1000"]
    if config.train.select_by == "bleu":  # the test data are one-word dates, where BLEU means nothing
        sets.append("train.select_by=chrf")
    return sets + COMMON


def design(config) -> dict:
    """The model settings that make the design: everything but the sizes."""
    model = plain(config.model)
    if isinstance(model.get("attention"), dict):
        model["attention"] = {k: v for k, v in model["attention"].items() if k != "size"}
    return {k: v for k, v in model.items() if k not in SIZES}


PAPER_PRESETS = [
    "sutskever2014",
    "cho2014",
    "bahdanau2014",
    "luong2015-dot",
    "luong2015-general",
    "luong2015-concat",
    "luong2015-local-m",
    "luong2015-local-p",
    "gnmt",
    "book-baseline",
    "book-peeky",
    "memn2n",
    "ntm-copy",
    "han",
]


@pytest.fixture(scope="module")
def dates(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("dates")
    write_split_dir(folder, *make_date_splits(96, 8, 8, seed=0))
    return folder


def test_every_paper_has_its_preset_with_a_comment_citing_it():
    assert set(PAPER_PRESETS) <= {path.stem for path in CONFIGS}
    for path in CONFIGS:
        if path.stem in PAPER_PRESETS:
            text = path.read_text(encoding="utf-8")
            assert text.startswith("#") and ("Scaled down" in text or "Nothing is scaled down" in text), path


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_preset_loads_and_trains_two_steps(path, dates, tmp_path, capsys):
    config = load_config(path)
    if config.data.input.name == "image":  # a preset that reads images trains on images of bars
        from helpers import write_bars_dir

        dates = write_bars_dir(tmp_path / "bars")
    small = shrink(config)
    assert design(load_config(path, small)) == design(config)
    overrides = [arg for item in small for arg in ("--set", item)]
    kind = config.data.input.name
    data = dates if kind == "text" else FILE_RUNS[kind](tmp_path / "data")  # a preset that reads files gets some
    code = main(["--quiet", "train", str(path), "--data", str(data), "--out", str(tmp_path / "run"), *overrides])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary = json.loads(captured.out.strip().splitlines()[-1])
    assert summary["step"] == 2
    saved = load_config(tmp_path / "run" / "config.yaml")  # the resolved config the run keeps
    assert design(saved) == design(engine_for(config).check(load_config(path, ["data.dir=x"])))
