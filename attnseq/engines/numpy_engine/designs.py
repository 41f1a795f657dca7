"""Which configs the NumPy engine runs, and as which of the book's models (scratch.MODELS).

The book's models have no knob for most of attnseq's settings: this table says which values
each key may take with ``engine: numpy``; anything else is a ConfigError naming the key.
Variants are checked against the options the numpy models implement (their defaults are the
torch variants' defaults; a test keeps the two equal).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from ...config import Config
from ...errors import ConfigError
from ...schema import Variant

# model.decoder -> {the encoder's bidirectional option: the numpy model}
NUMPY_DESIGNS = {
    "none": {False: "baseline"},
    "peeky": {False: "peeky"},
    "book": {False: "attention", True: "bi-attention"},
}
# variants the numpy models implement: key -> {name: {option: (default, allowed values)}}
VARIANTS: dict[str, dict[str, dict[str, tuple[Any, tuple]]]] = {
    "model.cell": {"lstm": {}},
    "model.encoder": {"stacked": {"bidirectional": (True, (True, False))}},
    "model.decoder": {"none": {}, "peeky": {}, "book": {"context_into_input": (False, (False,))}},
    "model.init": {"book": {}},  # the book's initialisation, always
    "train.optimizer": {"adam": {"betas": ((0.9, 0.999), None), "eps": (1e-8, None)}, "sgd": {}},
    "train.schedule": {"constant": {}},
}
ATTENTION = {"book": "dot"}  # decoder -> its one scorer (the book's unscaled dot); the others have none
# settings the numpy models have no knob for: key -> the values they implement
REQUIREMENTS = {
    "model.arch": ("rnn",),
    "model.encoder_layers": (1,),
    "model.decoder_layers": (1,),
    "model.bridge": ("copy",),
    "model.dropout": (0.0,),
    "model.tie_embeddings": ("none", False),
    "model.copy": (False,),
    "model.frontend": (None,),
    "model.coverage": (False,),
    "model.coverage_loss_weight": (1.0,),
    "train.accumulate": (1,),
    "train.label_smoothing": (0.0,),
    "train.weight_decay": (0.0,),
    "train.precision": ("fp32", "auto"),  # auto: float32, all the engine has
    "train.device": ("cpu", "auto"),
    "decode.beam_size": (1,),
    "decode.precision": ("fp32",),
}


def setting(config: Config, key: str) -> Any:
    """The value of ``key`` ("model.decoder") in ``config``."""
    value = config
    for part in key.split("."):
        value = getattr(value, part)
    return value


def _resolve(key: str, value: Variant) -> Variant:
    implemented = VARIANTS[key]
    if value.name not in implemented:
        raise ConfigError(
            f"{key}: the numpy engine (engine: numpy) has {', '.join(implemented)}; "
            f"got {value.name!r} (use engine: torch for it)",
            key=key,
        )
    options = implemented[value.name]
    for option, given in value.options.items():
        if option not in options:
            raise ConfigError(
                f"{key}.{option}: not an option of {value.name} in the numpy engine "
                f"(it takes {', '.join(options) or 'none'})",
                key=f"{key}.{option}",
            )
        allowed = options[option][1]
        if allowed is not None and given not in allowed:
            shown = ", ".join(json.dumps(v) for v in allowed)
            raise ConfigError(
                f"{key}.{option}: the numpy engine supports {shown}; got {json.dumps(given)}", key=f"{key}.{option}"
            )
    full = {option: value.options.get(option, default) for option, (default, _) in options.items()}
    return Variant(value.name, {k: list(v) if isinstance(v, tuple) else v for k, v in full.items()})


def check_numpy(config: Config) -> Config:
    """``config`` checked for the numpy engine, its variants' options written out."""
    model, train = config.model, config.train
    if config.data.input.name != "text":
        raise ConfigError(
            f"data.input: the numpy engine (engine: numpy) reads text; got {config.data.input.name} "
            "(use engine: torch for it)",
            key="data.input",
        )
    for key, allowed in REQUIREMENTS.items():
        value = setting(config, key)
        if value not in allowed:
            shown = ", ".join(json.dumps(v) for v in allowed)
            raise ConfigError(
                f"{key}: the numpy engine (engine: numpy) supports {shown}; got {json.dumps(value)}", key=key
            )
    resolved = {key: _resolve(key, setting(config, key)) for key in VARIANTS}
    decoder = resolved["model.decoder"].name
    scorer = ATTENTION.get(decoder)
    if scorer is None and model.attention is not None:
        raise ConfigError(
            f"model.attention: the {decoder} decoder does not attend; remove model.attention", key="model.attention"
        )
    if scorer is not None and (model.attention is None or model.attention.name != scorer or model.attention.options):
        got = model.attention.plain() if model.attention is not None else None
        raise ConfigError(
            f"model.attention: the numpy engine's {decoder} decoder scores with {scorer}; got {json.dumps(got)}",
            key="model.attention",
        )
    bidirectional = resolved["model.encoder"].options["bidirectional"]
    if bidirectional not in NUMPY_DESIGNS[decoder]:
        raise ConfigError(
            f"model.encoder.bidirectional: the numpy engine's {decoder} design needs "
            f"{str(not bidirectional).lower()} (engine: numpy)",
            key="model.encoder.bidirectional",
        )
    if bidirectional and model.hidden_size % 2:
        raise ConfigError(
            f"model.hidden_size: a bidirectional encoder needs an even size, got {model.hidden_size}",
            key="model.hidden_size",
        )
    model = dataclasses.replace(
        model,
        cell=resolved["model.cell"],
        encoder=resolved["model.encoder"],
        decoder=resolved["model.decoder"],
        init=resolved["model.init"],
    )
    train = dataclasses.replace(train, optimizer=resolved["train.optimizer"], schedule=resolved["train.schedule"])
    return dataclasses.replace(config, model=model, train=train)


def numpy_design(config: Config) -> str:
    """The numpy model (a key of attnseq.scratch.MODELS) that ``config`` describes."""
    config = check_numpy(config)
    return NUMPY_DESIGNS[config.model.decoder.name][config.model.encoder.options["bidirectional"]]
