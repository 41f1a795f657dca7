"""Every preset in configs/ loads and trains two steps on a tiny generated date set.

Sizes are shrunk so that all presets run in seconds; the architecture keys (cell, encoder,
decoder, attention, layers, bridge, reversal, ...) stay as each preset has them.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from attnseq.cli import main
from attnseq.config import load_config
from attnseq.data.splits import make_date_splits, write_split_dir

CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.yaml"))
SMALL = [
    "model.embed_size=16", "model.hidden_size=16", "model.attention_size=16", "model.ff_size=32",
    "data.spm_vocab_size=80", "data.spm_max_sentences=1000",
    "train.max_steps=2", "train.batch_size=16", "train.eval_max_sentences=8", "train.progress=false",
    "train.log_every=0", "train.threads=1",
]
PAPER_PRESETS = ["sutskever2014", "cho2014", "bahdanau2014", "luong2015-dot", "luong2015-general",
                 "luong2015-concat", "luong2015-local-m", "luong2015-local-p", "gnmt", "book-baseline",
                 "book-peeky"]


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
    small = load_config(path, SMALL)
    for key in ("arch", "cell", "encoder", "decoder", "attention", "encoder_layers", "decoder_layers",
                "bidirectional", "bridge", "input_feeding", "context_into_input", "layers"):
        assert getattr(small.model, key) == getattr(config.model, key)
    overrides = [arg for item in SMALL for arg in ("--set", item)]
    code = main(["--quiet", "train", str(path), "--data", str(dates), "--out", str(tmp_path / "run"), *overrides])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary = json.loads(captured.out.strip().splitlines()[-1])
    assert summary["step"] == 2
