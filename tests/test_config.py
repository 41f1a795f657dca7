"""Configs: defaults, overrides, variants with their own options, arch-specific model settings,
and errors that name the key."""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnseq.config import MODEL_CONFIGS, Config, RNNConfig, TransformerConfig, from_dict, load_config
from attnseq.engines import ENGINES, TrainingEngine, engine_for, trainer_for
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
    c = checked(
        "model.attention={name: local_p, window: 3}",
        "data.reverse_source=true",
        "train.schedule={name: noam, warmup_steps: 10}",
    )
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
    c = load_config(
        None,
        [
            "model.attention=local_m",
            "model.attention.window=2",
            "model.decoder.input_feeding=false",
            "model.encoder.bidirectional=false",
        ],
    )
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


@pytest.mark.parametrize(
    "override, words",
    [
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
    ],
)
def test_errors_name_the_key_and_choices(override, words):
    with pytest.raises(ConfigError) as err:
        checked(override)
    message = str(err.value)
    assert "\n" not in message
    for word in words:
        assert word in message, (word, message)
    named = words[0].split(" ")[0]  # the first word is the key ("decode.n_best (3)"), but for a --set without one
    assert err.value.key == (None if override == "noequals" else named)


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
    assert set(ENGINES.names()) == {"numpy", "torch", "ctranslate2"}
    with pytest.raises(ConfigError, match=r"^engine: ctranslate2 decodes Transformer runs exported") as error:
        trainer_for(load_config(None, ["engine=ctranslate2", "data.dir=data"]))
    assert error.value.key == "engine"  # it trains nothing
    assert {name for name in ENGINES.names() if issubclass(ENGINES.get(name), TrainingEngine)} == {"numpy", "torch"}


# -- every key: an invalid value is refused naming that key ------------------------------------
NEEDED = {("data", "dir"): "data"}  # what the engine's check needs beside the key under test


def nested(settings: dict[tuple[str, ...], Any]) -> dict[str, Any]:
    """``{("model", "arch"): "rnn"}`` -> ``{"model": {"arch": "rnn"}}``."""
    values: dict[str, Any] = {}
    for path, value in settings.items():
        node = values
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return values


def section_keys(cls: type = Config, path: tuple = (), fixed: tuple = (), tag: str | None = None):
    """Every key of the config sections, read from their dataclasses: (path, type, field
    metadata, the settings it needs beside it). A tagged section's tag (``model.arch``) comes
    once, then each dataclass it chooses with the tag set to choose it."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        key, hint, meta = (*path, f.name), hints[f.name], dict(f.metadata)
        if f.name == tag:
            continue
        if "tag" in meta:
            yield (*key, meta["tag"]), str, {"choices": tuple(meta["classes"])}, fixed
            for name, section in meta["classes"].items():
                yield from section_keys(section, key, (*fixed, ((*key, meta["tag"]), name)), meta["tag"])
        elif dataclasses.is_dataclass(hint) and hint is not Variant:
            yield from section_keys(hint, key, fixed)
        else:
            yield key, hint, meta, fixed


def engine_registries() -> dict[str, Any]:
    """The registries the torch engine resolves variant fields from, by the config key they
    serve (``model.attention``: the scorers), from every Registry its modules make."""
    import attnseq.engines.torch_engine.trainer  # noqa: F401  (the torch engine's models, optimizers, schedules)
    from attnseq.registry import Registry

    return {registry.key: registry for registry in Registry.every if registry.key}


def registry_of(path: tuple, meta: dict):
    """The registry of the variant field at ``path``: the one its field names, else the engine's
    for its config key (a scorer's head is a scorer: ``model.attention.head`` names SCORERS)."""
    return meta.get("variant") or engine_registries().get(".".join(path))


def variant_cases(path: tuple, hint: Any, meta: dict, fixed: tuple, depth: int = 0):
    """The options of every variant the field at ``path`` can name, each with the settings that
    choose it; a variant's own variant fields (a multihead scorer's head) one level down."""
    registry = registry_of(path, meta) if hint in (Variant, Variant | None) else None
    for name in registry.names() if registry is not None and depth < 2 else ():
        chosen = (*fixed, ((*path, "name"), name))
        reads = getattr(registry.get(name), "reads", None)  # a frontend needs the input kind it reads
        chosen += ((("data", "input"), reads),) if isinstance(reads, str) else ()
        for case in section_keys(registry.options_class(name), path, chosen):
            yield case
            yield from variant_cases(*case, depth=depth + 1)


def variant_option_keys():
    """Every option of every registered variant of every variant field, as section_keys gives
    them (the field's registry, or the engine's for its key), and the options a checked config
    writes out for each architecture's default variants that no registry holds."""
    found = {}
    for path, hint, meta, fixed in section_keys():
        for case in variant_cases(path, hint, meta, fixed):
            found[case[0], case[3]] = case
    for arch in MODEL_CONFIGS:
        config = from_dict(nested({**NEEDED, ("model", "arch"): arch}))
        config = engine_for(config).check(config)
        for path, hint, meta, fixed in section_keys():
            if hint not in (Variant, Variant | None) or registry_of(path, meta) or (fixed and fixed[0][1] != arch):
                continue
            variant = functools.reduce(getattr, path, config)
            for option, default in variant.options.items() if variant else ():
                # an int default may be a float field's: float's invalid values are int's too
                kind = {bool: bool, int: float, float: float, str: str, dict: Variant}.get(type(default))
                kind = kind or tuple[(float,) * len(default)]  # a list of numbers
                fixed_name = (*fixed, ((*path, "name"), variant.name))
                found.setdefault(((*path, option), fixed_name), ((*path, option), kind, {}, fixed_name))
    return list(found.values())


def test_every_variant_field_has_a_registry():
    """Each variant field of the config sections names its registry, or an engine registry
    serves its key: so the cases above reach every option of every registered variant."""
    fields = [(path, meta) for path, hint, meta, _ in section_keys() if hint in (Variant, Variant | None)]
    assert len(fields) > 10
    assert [".".join(path) for path, meta in fields if registry_of(path, meta) is None] == []


def not_a_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return True
    return False


def invalid_values(hint: Any, meta: dict) -> st.SearchStrategy:
    """Values a field of type ``hint`` (``meta``: its choices or range) refuses."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):  # X | None: None is allowed
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    containers = st.one_of(
        st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(), min_size=1, max_size=2)
    )
    if hint is bool:
        return st.one_of(st.integers(), st.floats(), st.text(), containers)
    if hint in (int, float):  # a value no float field takes, no int field takes either
        wrong = [st.booleans(), st.text().filter(not_a_number), st.just(math.inf), st.just(-math.inf), containers]
        low, high, low_open, high_open = meta.get("range", (None, None, False, False))
        if hint is int:
            wrong.append(st.floats().filter(lambda x: not x.is_integer()))
            wrong += [] if low is None else [st.integers(max_value=low if low_open else low - 1)]
            wrong += [] if high is None else [st.integers(min_value=high if high_open else high + 1)]
        else:
            wrong += [] if low is None else [st.floats(max_value=low, exclude_max=not low_open)]
            wrong += [] if high is None else [st.floats(min_value=high, exclude_min=not high_open)]
            wrong += [] if "range" not in meta else [st.just(math.nan)]
        return st.one_of(wrong)
    if hint is str:
        choices = meta.get("choices")
        if choices is None:
            return st.one_of(st.booleans(), containers)
        allowed = tuple(choices.names()) if hasattr(choices, "names") else choices
        flags = [] if meta.get("booleans") else [st.booleans()]  # a choice that was a flag takes true/false
        return st.one_of(st.text().filter(lambda s: s not in allowed), st.integers(), *flags, containers)
    if hint is Variant:  # not a name or a mapping, no name, or a name nothing registers
        return st.one_of(
            st.integers(),
            st.booleans(),
            st.lists(st.text(), max_size=2),
            st.just(""),
            st.text(min_size=1).map(lambda s: f"not registered: {s}"),
        )
    if typing.get_origin(hint) is tuple:
        n = len(typing.get_args(hint))
        numbers = st.floats(0, 1)
        return st.one_of(
            st.integers(),
            st.text(),
            st.lists(numbers, max_size=n - 1),
            st.lists(numbers, min_size=n + 1, max_size=n + 2),
        )
    raise TypeError(f"no invalid values for {hint!r}")


def case_id(case) -> str:
    path, _, _, fixed = case
    return ".".join(path) + "".join(f",{'.'.join(p)}={v}" for p, v in fixed)


KEYS = list(section_keys()) + variant_option_keys()


@pytest.mark.parametrize("case", KEYS, ids=case_id)
@settings(max_examples=12, deadline=None)  # deadline: a shared machine's timings vary
@given(data=st.data())
def test_an_invalid_value_is_refused_naming_its_key(case, data):
    """For every key of every section and of every variant's options: an invalid value raises
    a ConfigError whose ``key`` is that key and whose message names it."""
    path, hint, meta, fixed = case
    key = ".".join(path)
    value = data.draw(invalid_values(hint, meta), label=key)
    with pytest.raises(ConfigError) as err:
        config = from_dict(nested({**NEEDED, **dict(fixed), path: value}))
        engine_for(config).check(config)
    assert err.value.key == key, (value, str(err.value))
    assert key in str(err.value)


def test_the_keys_come_from_every_section():
    keys = {".".join(path) for path, *_ in KEYS}
    assert {
        "engine",
        "data.tokenizer.vocab_size",
        "model.arch",
        "model.hops",
        "model.encoder.bidirectional",
        "train.optimizer.betas",
        "decode.max_source_len",
    } <= keys
    assert len(keys) > 80
    assert {
        "model.attention.width",
        "model.attention.head.window",
        "train.schedule.patience",
        "model.cell.projection_size",
    } <= keys  # options of variants that are not the defaults


def numeric_fields():
    """(key, type, metadata) of every int and float field a user can set: the config's sections
    and the options of every variant of every registry (the reproductions' too)."""
    import attnseq.engines.torch_engine.trainer  # noqa: F401  (every registry the torch engine fills)
    import attnseq.reproduce  # noqa: F401
    from attnseq.registry import Registry

    def walk(cls, prefix, seen):
        if cls in seen:
            return
        seen.add(cls)
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            hint = hints[f.name]
            if hint in (int, float):
                yield f"{prefix}{f.name}", hint, dict(f.metadata)
            elif dataclasses.is_dataclass(hint) and hint is not Variant:
                yield from walk(hint, f"{prefix}{f.name}.", seen)
            for tagged in (f.metadata.get("classes") or {}).values():
                yield from walk(tagged, f"{prefix}{f.name}.", seen)

    seen: set = set()
    yield from walk(Config, "", seen)
    for registry in Registry.every:
        for name in registry.names():
            yield from walk(registry.options_class(name), f"{registry.key or registry.kind}[{name}].", seen)


def test_every_number_a_user_sets_has_a_range_and_a_negative_one_is_refused_naming_it():
    """A number field with no range of its own is a count, a size or an amount (schema.COUNT):
    -1 is refused naming its key wherever the field's range does not admit it, so a setting can
    never reach the code outside the values it was written for (a seed of -1 ended in NumPy's
    traceback)."""
    from attnseq.schema import COUNT, convert

    fields = list(numeric_fields())
    assert len(fields) > 150  # the config's and every registry's
    for key, hint, meta in fields:
        low, _, low_open, _ = meta.get("range", COUNT)
        if low is None or low < -1 or (low == -1 and not low_open):
            continue  # this field takes -1
        with pytest.raises(ConfigError) as error:
            convert(key, hint, -1, meta)
        assert error.value.key == key and "expected a value" in str(error.value), key


@pytest.mark.parametrize("seed, ok", [(-1, False), (0, True), (2**32 - 1, True), (2**32, False)])
def test_a_seed_numpy_cannot_take_is_refused_naming_train_seed(seed, ok):
    if ok:
        assert load_config(None, [f"train.seed={seed}"]).train.seed == seed
    else:
        with pytest.raises(ConfigError, match=r"^train\.seed: expected a value in \[0, 4294967295\], got -?\d+$"):
            load_config(None, [f"train.seed={seed}"])


def test_a_tuple_of_any_length_takes_lists_of_one_or_more_and_names_its_key():
    """``tuple[int, ...]`` options (a reproduction's lengths, widths) take a list of any length,
    each item checked as the item type; an empty list or a wrong item is one ConfigError."""
    from attnseq.schema import build

    @dataclasses.dataclass
    class Lengths:
        lengths: tuple[int, ...] = (1, 2)

    assert build(Lengths, {"lengths": [8, 64, 512]}).lengths == (8, 64, 512)
    assert build(Lengths, {"lengths": [3]}).lengths == (3,)
    for bad, words in (([], "one or more"), ([1, "x"], "lengths[1]"), (5, "one or more")):
        with pytest.raises(ConfigError, match=r"lengths") as info:
            build(Lengths, {"lengths": bad})
        assert words in str(info.value)
