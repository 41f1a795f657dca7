"""Configs: defaults, overrides, variants with their own options, arch-specific model settings,
and errors that name the key."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from attnseq.config import RNNConfig, TransformerConfig, from_dict, load_config
from attnseq.engines import ENGINES, engine_for
from attnseq.errors import ConfigError
from attnseq.schema import Variant

PRESETS = sorted((Path(__file__).parents[1] / "configs").glob("*.yaml"))


def checked(*overrides: str):
    """A config with ``overrides``, checked by its engine as ``attnseq train`` checks it."""
    config = load_config(None, ["data.dir=data", *overrides])
    return engine_for(config).check(config)


def test_defaults_and_overrides():
    c = load_config(None, ["model.hidden_size=512", "train.max_steps=20", "train.lr=3e-4", "engine=numpy"])
    assert c.model.hidden_size == 512 and c.train.max_steps == 20
    assert c.train.lr == pytest.approx(3e-4)  # YAML 1.1 reads 3e-4 as a string: converted
    assert c.engine == "numpy"
    default = from_dict({})
    assert isinstance(default.model, RNNConfig)
    assert default.model.decoder == Variant("luong") and default.model.attention is None
    assert default.train.optimizer == Variant("adam")


def test_round_trip_through_dict():
    c = checked("model.attention={name: local_p, window: 3}", "data.reverse_source=true",
                "train.schedule={name: noam, warmup_steps: 10}")
    assert from_dict(c.to_dict()) == c
    assert c.to_dict()["model"]["attention"] == {"name": "local_p", "window": 3, "size": 0}


def test_checked_config_writes_out_every_option():
    c = checked("model.attention=concat", "train.optimizer=sgd")
    assert c.model.attention == Variant("concat", {"size": 0})
    assert c.model.decoder == Variant("luong", {"input_feeding": True})
    assert c.model.encoder == Variant("stacked", {"bidirectional": True})
    assert c.train.optimizer == Variant("sgd", {"momentum": 0.0})
    assert checked().model.attention == Variant("general")  # an attending decoder's default scorer


def test_options_of_a_variant_set_in_short_form():
    c = load_config(None, ["model.attention=local_m", "model.attention.window=2",
                           "model.decoder.input_feeding=false", "model.encoder.bidirectional=false"])
    assert c.model.attention == Variant("local_m", {"window": 2})
    assert c.model.decoder == Variant("luong", {"input_feeding": False})  # the default design's name kept
    assert c.model.encoder == Variant("stacked", {"bidirectional": False})
    # naming another variant drops the old one's options
    c = load_config(None, ["model.attention={name: local_p, window: 4}", "model.attention=dot"])
    assert c.model.attention == Variant("dot")


def test_the_architecture_chooses_the_model_settings():
    c = load_config(None, ["model.arch=transformer", "model.layers=2"])
    assert isinstance(c.model, TransformerConfig) and c.model.layers == 2
    rnn_only = {f.name for f in dataclasses.fields(RNNConfig)} - {f.name for f in dataclasses.fields(TransformerConfig)}
    assert {"cell", "decoder", "attention", "bridge", "embed_size"} <= rnn_only
    for key in sorted(rnn_only):
        with pytest.raises(ConfigError, match=rf"model\.{key}: unknown key; model takes arch, hidden_size"):
            load_config(None, ["model.arch=transformer", f"model.{key}=1"])


@pytest.mark.parametrize("override, words", [
    ("model.hiden_size=3", ["model.hiden_size", "unknown key", "hidden_size"]),
    ("modle.x=1", ["modle", "unknown key", "model"]),
    ("model.hidden_size=abc", ["model.hidden_size", "whole number"]),
    ("model.hidden_size=0", ["model.hidden_size", ">= 1", "got 0"]),
    ("model.dropout=-0.5", ["model.dropout", "[0, 1)"]),
    ("train.lr=true", ["train.lr", "number"]),
    ("train.lr=-1", ["train.lr", "(0, 1e+06]"]),
    ("train.lr=1e40", ["train.lr", "(0, 1e+06]"]),
    ("train.max_minutes=.inf", ["train.max_minutes", "finite"]),
    ("train.lr=.nan", ["train.lr", "nan"]),
    ("train.batch_size=-4", ["train.batch_size", ">= 1"]),
    ("train.accumulate=0", ["train.accumulate", ">= 1"]),
    ("decode.max_len=-5", ["decode.max_len", ">= 1"]),
    ("decode.beam_size=0", ["decode.beam_size", ">= 1"]),
    ("decode.n_best=3", ["decode.n_best (3)", "decode.beam_size (1)"]),
    ("model.encoder_layers=-1", ["model.encoder_layers", ">= 1"]),
    ("model.bidirectional=3", ["model.bidirectional", "unknown key"]),
    ("model.encoder.bidirectional=3", ["model.encoder.bidirectional", "true or false"]),
    ("train.optimizer=rmsprop", ["train.optimizer", "adam", "sgd"]),
    ("train.optimizer.betas=[0.9]", ["train.optimizer.betas", "2 numbers"]),
    ("train.schedule.warmup_steps=10", ["train.schedule.warmup_steps", "unknown option", "constant"]),
    ("model.attention=magic", ["model.attention", "dot", "general", "concat"]),
    ("model.attention.window=3", ["model.attention", "name"]),  # no scorer named to take it
    ("model.attention={name: general, window: 3}", ["model.attention.window", "unknown option", "general"]),
    ("model.attention={name: multihead, head: {name: local_m, size: 3}}", ["model.attention.head.size", "window"]),
    ("model.decoder=magic", ["model.decoder", "luong", "bahdanau", "book", "none"]),
    ("model.cell=magic", ["model.cell", "lstm", "gru"]),
    ("model.init={name: book, range: 0.1}", ["model.init.range", "unknown option"]),
    ("data.tokenizer=bytes", ["data.tokenizer", "char", "word"]),
    ("data.tokenizer.vocab_size=100", ["data.tokenizer.vocab_size", "unknown option", "char"]),
    ("data.format=csv", ["data.format", "tsv", "book"]),
    ("engine=jax", ["engine", "torch", "numpy"]),
    ("noequals", ["key=value"]),
])
def test_errors_name_the_key_and_choices(override, words):
    with pytest.raises(ConfigError) as err:
        checked(override)
    message = str(err.value)
    assert "\n" not in message
    for word in words:
        assert word in message, (word, message)


@pytest.mark.parametrize("decoder", ["none", "cho2014", "peeky"])
def test_attention_on_a_decoder_that_does_not_attend_is_an_error(decoder):
    with pytest.raises(ConfigError, match=f"model.attention: the {decoder} decoder does not attend"):
        checked(f"model.decoder={decoder}", "model.attention=local_p")
    assert checked(f"model.decoder={decoder}").model.attention is None


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
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    with pytest.raises(ConfigError, match="binary.yaml: not a YAML config"):
        load_config(binary)


@pytest.mark.parametrize("path", PRESETS, ids=lambda p: p.stem)
def test_every_preset_is_valid_for_its_engine(path):
    config = load_config(path, ["data.dir=data"])
    resolved = engine_for(config).check(config)
    assert from_dict(resolved.to_dict()) == resolved


def test_engines_are_registered():
    assert set(ENGINES.names()) == {"numpy", "torch"}
