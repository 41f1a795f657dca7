"""Configuration: dataclasses are the single source of defaults; YAML and ``--set`` only override.

An unknown key, a value of the wrong type or an unknown choice raises a ConfigError whose
message names the key (``model.attention``) and the allowed values.
"""
from __future__ import annotations

import dataclasses
import importlib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError


def choice(default: str, choices: tuple[str, ...] | str, help: str = "") -> Any:
    """A string field limited to ``choices``: a tuple, or ``"module:REGISTRY"`` for a registry."""
    return field(default=default, metadata={"choices": choices, "help": help})


@dataclass
class DataConfig:
    """Where the parallel text is and how it becomes token ids."""

    dir: str = ""  # folder with train.tsv, dev.tsv, test.tsv; fills the three paths below
    # tsv: source<TAB>target files.  book: data.train is one file of the book's question_answer
    # lines (date.txt, addition.txt), split, tokenized and (engine numpy) trained as the book does
    format: str = choice("tsv", ("tsv", "book"))
    train: str = ""
    dev: str = ""
    test: str = ""
    tokenizer: str = choice("char", "attnseq.data.tokenizers:TOKENIZERS")
    strip: bool = True  # strip surrounding whitespace; the book's data keeps padding spaces
    lowercase: bool = False
    reverse_source: bool = False  # Sutskever's and the book's reversal trick
    max_source_len: int = 0  # drop training pairs longer than this (tokens); 0 keeps all
    max_target_len: int = 0
    min_freq: int = 1
    max_vocab: int = 0  # 0: no limit
    shared_vocab: bool = False  # one vocabulary for source and target
    spm_vocab_size: int = 8000
    spm_model_type: str = choice("unigram", ("unigram", "bpe"))
    spm_joint: bool = True
    spm_character_coverage: float = 1.0
    spm_max_sentences: int = 200000  # sentences sampled to train sentencepiece


@dataclass
class ModelConfig:
    """The network: which encoder, decoder design, attention scorer and sizes."""

    arch: str = choice("rnn", ("rnn", "transformer"))
    embed_size: int = 64
    hidden_size: int = 128
    cell: str = choice("lstm", "attnseq.nn.cells:CELLS")
    projection_size: int = 0  # lstm_proj: width P of the projected state; 0: hidden_size // 2
    encoder_layers: int = 1
    decoder_layers: int = 1
    bidirectional: bool = True  # each direction gets hidden_size // 2, so outputs are hidden_size
    encoder: str = choice("stacked", "attnseq.nn.encoders:ENCODERS")
    dropout: float = 0.0
    decoder: str = choice("luong", "attnseq.nn.decoders:DECODERS")
    attention: str = choice("general", "attnseq.nn.attention:SCORERS")
    attention_size: int = 0  # hidden size of the concat (MLP) scorer; 0: hidden_size
    attention_heads: int = 4  # for the multihead scorer
    attention_window: int = 5  # D of local attention
    attention_head_scorer: str = "scaled_dot"  # scorer used inside each head
    input_feeding: bool = True  # luong: feed the attentional state into the next step
    context_into_input: bool = False  # book: also feed the context into the next step
    bridge: str = choice("linear", ("linear", "copy", "zero"))
    tie_embeddings: bool = False  # tie the decoder's embedding and output layer
    init: str = choice("default", ("default", "uniform", "book"))
    init_range: float = 0.1
    # transformer
    layers: int = 3
    heads: int = 4
    ff_size: int = 1024
    positional: str = choice("sinusoidal", "attnseq.nn.positional:POSITIONAL")
    pre_norm: bool = True
    max_positions: int = 1024


@dataclass
class TrainConfig:
    """The optimisation loop."""

    epochs: int = 10
    max_steps: int = 0  # stop after this many updates; 0: no limit
    max_minutes: float = 0.0  # stop after this much wall-clock training; 0: no limit
    batch_size: int = 64  # sentences per batch
    optimizer: str = choice("adam", ("adam", "sgd"))
    lr: float = 1e-3
    adam_betas: tuple[float, float] = (0.9, 0.999)
    adam_eps: float = 1e-8
    weight_decay: float = 0.0
    schedule: str = choice("constant", ("constant", "noam", "plateau"))
    warmup_steps: int = 4000
    lr_decay: float = 0.5  # plateau: factor applied when the dev score stops improving
    clip_norm: float = 5.0  # global gradient-norm clip; 0: none
    label_smoothing: float = 0.0
    accumulate: int = 1  # gradient accumulation: batches per update
    seed: int = 1
    eval_every: int = 0  # evaluate on dev every N updates; 0: at the end of each epoch
    eval_max_sentences: int = 2000  # dev sentences decoded for the accuracy during training
    select_by: str = choice("exact_match", ("exact_match", "loss", "bleu", "token_accuracy"))
    device: str = choice("cpu", ("cpu", "cuda", "auto"))
    precision: str = choice("fp32", ("fp32", "bf16"))  # bf16: autocast matmuls (CPU or GPU)
    threads: int = 0  # torch intra-op threads; 0: torch's default
    bucket: bool = True  # batch sentences of similar length together
    log_every: int = 50  # updates between metrics-log lines
    progress: bool = True  # show a progress bar


@dataclass
class DecodeConfig:
    """How outputs are searched for at evaluation and translation time."""

    beam_size: int = 1
    n_best: int = 1
    length_penalty: float = 0.0  # GNMT alpha; 0: none
    max_len: int = 200  # absolute cap on output tokens
    max_len_ratio: float = 2.0  # cap relative to the source length
    max_len_offset: int = 10  # cap = ratio * source length + offset
    batch_size: int = 128


@dataclass
class Config:
    """A whole experiment."""

    engine: str = choice("torch", ("torch", "numpy"))
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    decode: DecodeConfig = field(default_factory=DecodeConfig)

    def to_dict(self) -> dict[str, Any]:
        """A plain dict (tuples as lists) that YAML can write and ``from_dict`` reads back."""
        return _plain(dataclasses.asdict(self))


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _choices(spec: tuple[str, ...] | str) -> tuple[str, ...]:
    if isinstance(spec, tuple):
        return spec
    module, name = spec.split(":")
    return tuple(getattr(importlib.import_module(module), name).names())


def _convert(key: str, hint: Any, value: Any, meta: Any) -> Any:
    """``value`` checked and converted to the field's type ``hint``."""
    origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a mapping of settings, got {value!r}")
        return _build(hint, value, key + ".")
    if origin is tuple:
        args = typing.get_args(hint)
        if not isinstance(value, (list, tuple)) or len(value) != len(args):
            raise ConfigError(f"{key}: expected a list of {len(args)} numbers, got {value!r}")
        return tuple(_convert(f"{key}[{i}]", a, v, {}) for i, (a, v) in enumerate(zip(args, value)))
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{key}: expected true or false, got {value!r}")
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise ConfigError(f"{key}: expected a whole number, got {value!r}")
    if hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):  # YAML 1.1 reads "3e-4" (no dot) as a string
            try:
                return float(value)
            except ValueError:
                pass
        raise ConfigError(f"{key}: expected a number, got {value!r}")
    if hint is str:
        if value is None:
            value = ""
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise ConfigError(f"{key}: expected a string, got {value!r}")
        value = str(value)
        if "choices" in meta:
            allowed = _choices(meta["choices"])
            if value not in allowed:
                raise ConfigError(f"{key}: unknown value {value!r}; choose one of {', '.join(allowed)}")
        return value
    raise TypeError(f"unsupported config type {hint!r} for {key}")


def _build(cls: type, values: dict[str, Any], prefix: str = "") -> Any:
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs = {}
    for name, value in values.items():
        if name not in fields:
            raise ConfigError(
                f"{prefix}{name}: unknown key; {prefix.rstrip('.') or 'the top level'} takes "
                f"{', '.join(fields)}"
            )
        kwargs[name] = _convert(prefix + name, hints[name], value, fields[name].metadata)
    obj = cls(**kwargs)
    for name, f in fields.items():  # check defaults of choice fields too (registries may change)
        if name not in kwargs and "choices" in f.metadata:
            _convert(prefix + name, str, getattr(obj, name), f.metadata)
    return obj


def from_dict(values: dict[str, Any] | None) -> Config:
    """A Config from nested dicts, every key and value checked."""
    return _build(Config, values or {})


def parse_override(text: str) -> tuple[list[str], Any]:
    """``"model.hidden_size=512"`` -> (["model", "hidden_size"], 512); the value is read as YAML."""
    if "=" not in text:
        raise ConfigError(f"--set {text}: expected key=value, e.g. model.hidden_size=512")
    key, raw = text.split("=", 1)
    path = [p for p in key.strip().split(".") if p]
    if not path:
        raise ConfigError(f"--set {text}: empty key")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return path, value


def apply_overrides(values: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """``values`` with each ``key=value`` of ``overrides`` set (nested dicts created as needed)."""
    for text in overrides:
        path, value = parse_override(text)
        node = values
        for part in path[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"{'.'.join(path)}: {part} is not a section")
            node = child
        node[path[-1]] = value
    return values


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> Config:
    """A Config from a YAML file (or the defaults) with ``--set`` overrides applied."""
    values: dict[str, Any] = {}
    if path is not None:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as err:
            raise ConfigError(f"{path}: cannot read config ({err.strerror})") from None
        try:
            values = yaml.safe_load(text) or {}
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            where = f" line {mark.line + 1}" if mark else ""
            raise ConfigError(f"{path}:{where} invalid YAML") from None
        if not isinstance(values, dict):
            raise ConfigError(f"{path}: expected a mapping of sections (data, model, train, decode)")
    return from_dict(apply_overrides(values, overrides or []))


def save_config(config: Config, path: str | Path) -> None:
    """Write ``config`` as YAML (atomically)."""
    from .utils import atomic_write_text

    atomic_write_text(path, yaml.safe_dump(config.to_dict(), sort_keys=False))
