from __future__ import annotations

import pytest

from attnseq.config import Config, from_dict, load_config
from attnseq.errors import ConfigError


def test_defaults_and_overrides():
    c = load_config(None, ["model.hidden_size=512", "train.max_steps=20", "train.adam_betas=[0.9, 0.98]",
                           "train.lr=3e-4", "engine=numpy"])
    assert c.model.hidden_size == 512 and c.train.max_steps == 20
    assert c.train.adam_betas == (0.9, 0.98) and c.train.lr == pytest.approx(3e-4)
    assert c.engine == "numpy"
    assert isinstance(from_dict({}), Config)


def test_round_trip_through_dict():
    c = load_config(None, ["model.attention=concat", "data.reverse_source=true"])
    assert from_dict(c.to_dict()) == c


@pytest.mark.parametrize("override, words", [
    ("model.hiden_size=3", ["model.hiden_size", "unknown key", "hidden_size"]),
    ("modle.x=1", ["modle", "unknown key", "model"]),
    ("model.hidden_size=abc", ["model.hidden_size", "whole number"]),
    ("train.lr=true", ["train.lr", "number"]),
    ("model.bidirectional=3", ["model.bidirectional", "true or false"]),
    ("train.optimizer=rmsprop", ["train.optimizer", "adam", "sgd"]),
    ("model.attention=magic", ["model.attention", "dot", "general", "concat"]),
    ("model.decoder=magic", ["model.decoder", "luong", "bahdanau", "book", "none"]),
    ("model.cell=magic", ["model.cell", "lstm", "gru"]),
    ("data.tokenizer=bytes", ["data.tokenizer", "char", "word"]),
    ("noequals", ["key=value"]),
])
def test_errors_name_the_key_and_choices(override, words):
    with pytest.raises(ConfigError) as err:
        load_config(None, [override])
    message = str(err.value)
    assert "\n" not in message
    for word in words:
        assert word in message


def test_yaml_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model:\n  hidden_size: [1,\n")
    with pytest.raises(ConfigError, match="bad.yaml"):
        load_config(bad)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("model:\n  dropout: lots\n")
    with pytest.raises(ConfigError, match="model.dropout"):
        load_config(wrong)
    with pytest.raises(ConfigError, match="missing.yaml"):
        load_config(tmp_path / "missing.yaml")


def test_every_preset_loads():
    from pathlib import Path

    configs = sorted((Path(__file__).parents[1] / "configs").glob("*.yaml"))
    assert configs
    for path in configs:
        load_config(path)
