"""The recurrent encoder-decoder (``model.arch: rnn``): its check, builder and initialisations."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch
from torch import nn

from ...errors import ConfigError
from ...registry import Registry
from ...schema import number
from ..attention import SCORERS, Covering
from ..frontends.base import FRONTENDS, build_frontend
from ..model import ARCHS, Seq2Seq, embedding_ties
from .cells import CELLS
from .decoders import DECODERS, DEFAULT_ATTENTION, build_decoder
from .encoders import ENCODERS, build_encoder

INITS: Registry = Registry("initialisation", key="model.init")  # model.init: functions (model, options) -> None


@INITS.register("default")
def keep_default(model: nn.Module, options) -> None:
    """torch's own initialisation of every layer."""


@dataclass
class UniformOptions:
    range: float = number(0.1, 0.0, low_open=True)  # r: every parameter ~ U(-r, r)


@INITS.register("uniform", options=UniformOptions)
def uniform(model: nn.Module, options: UniformOptions) -> None:
    """Every parameter drawn from U(-r, r) (Sutskever et al.; Luong et al.)."""
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_(-options.range, options.range)
    zero_padding_embeddings(model)


@INITS.register("book")
def book(model: nn.Module, options) -> None:
    """The book's: embeddings N(0, 1)/100, weights N(0, 1)/sqrt(fan_in), biases 0."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "embed" in name and p.dim() == 2:
                p.normal_().div_(100)
            elif p.dim() >= 2:
                p.normal_().div_(math.sqrt(p.shape[1]))
            else:
                p.zero_()
    zero_padding_embeddings(model)


def zero_padding_embeddings(model: nn.Module) -> None:
    """The padding row of every embedding back to zero."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.Embedding) and module.padding_idx is not None:
                module.weight[module.padding_idx].zero_()


def check_frontend(cfg):
    """``cfg.frontend`` resolved (None when unset); with a frontend, the text encoder's settings
    (model.encoder, model.encoder_layers) must keep their defaults, else a ConfigError naming
    the key."""
    if cfg.frontend is None:
        return None
    default = type(cfg)()  # the model settings' defaults
    for key in ("encoder", "encoder_layers"):
        value, unset = getattr(cfg, key), getattr(default, key)
        if key == "encoder":
            value, unset = ENCODERS.resolve(value, "model.encoder"), ENCODERS.resolve(unset, "model.encoder")
        if value != unset:
            raise ConfigError(
                f"model.{key}: the source is encoded by model.frontend ({cfg.frontend.name}), not by "
                f"the text encoder this setting shapes; remove model.{key}",
                key=f"model.{key}",
            )
    return FRONTENDS.resolve(cfg.frontend, "model.frontend")


@ARCHS.register("rnn")
class RNNArch:
    """A recurrent encoder (``model.encoder``) and one of the decoder designs (``model.decoder``);
    for a source that is a file, a frontend (``model.frontend``, nn/frontends) is the encoder."""

    reads_features = True

    @staticmethod
    def check(cfg):
        """``cfg`` (an RNNConfig) with every variant checked and its options written out. The
        attention scorer belongs to attending designs only: set on another one, it is an error."""
        decoder = DECODERS.resolve(cfg.decoder, "model.decoder")
        attends = DECODERS.get(decoder.name).uses_attention
        if cfg.attention is not None and not attends:
            raise ConfigError(
                f"model.attention: the {decoder.name} decoder does not attend; remove "
                "model.attention or choose an attending decoder (bahdanau, luong, book)",
                key="model.attention",
            )
        for key, what in (("copy", "copies where it attends"), ("coverage", "sums the attention of earlier steps")):
            if getattr(cfg, key) and not attends:
                raise ConfigError(
                    f"model.{key}: {what}, and the {decoder.name} decoder does not attend; choose an "
                    f"attending decoder (bahdanau, luong, book) or set model.{key}: false",
                    key=f"model.{key}",
                )
        attention = SCORERS.resolve(cfg.attention or DEFAULT_ATTENTION, "model.attention") if attends else None
        if cfg.coverage and not issubclass(SCORERS.get(attention.name), Covering):
            raise ConfigError(
                f"model.coverage: the coverage term w_c c_i is defined in the additive energy of the "
                f"concat scorer (See et al. 2017), not in {attention.name}'s; set model.attention: "
                "concat or model.coverage: false",
                key="model.coverage",
            )
        if not cfg.coverage and cfg.coverage_loss_weight != 1.0:
            raise ConfigError(
                "model.coverage_loss_weight: weighs the coverage loss, and model.coverage is false; "
                "set model.coverage: true or drop the weight",
                key="model.coverage_loss_weight",
            )
        frontend = check_frontend(cfg)
        return dataclasses.replace(
            cfg,
            decoder=decoder,
            frontend=frontend,
            cell=CELLS.resolve(cfg.cell, "model.cell"),
            encoder=ENCODERS.resolve(cfg.encoder, "model.encoder"),
            attention=attention,
            init=INITS.resolve(cfg.init, "model.init"),
        )

    @staticmethod
    def build(cfg, src_vocab_size: int, tgt_vocab_size: int, shares_vocab: bool = False, features: int = 0) -> Seq2Seq:
        """The model, embeddings tied as ``model.tie_embeddings`` says (the decoder's embedding
        with the output layer; with all, and one vocabulary, the encoder's too), initialised as
        ``model.init`` says. With ``model.frontend`` the encoder is the frontend, reading
        ``features`` values a position (its Memory's final state has one layer)."""
        if cfg.frontend is not None:
            encoder = build_frontend(cfg.frontend, features, cfg.hidden_size, cfg)
            decoder = build_decoder(cfg, tgt_vocab_size, encoder.output_size, 1)
        else:
            encoder = build_encoder(cfg, src_vocab_size)
            decoder = build_decoder(cfg, tgt_vocab_size, encoder.output_size, cfg.encoder_layers)
        tie = embedding_ties(cfg, shares_vocab)
        if tie != "none":
            if decoder.feature_size != cfg.embed_size:
                raise ConfigError(
                    f"model.tie_embeddings: the output layer reads {decoder.feature_size} features (the "
                    f"{cfg.decoder.name} decoder's) and its matrix cannot be the embedding of model.embed_size "
                    f"{cfg.embed_size}; set model.embed_size to {decoder.feature_size}, or tie_embeddings: none",
                    key="model.tie_embeddings",
                )
            decoder.generator.weight = decoder.embed.weight
        if tie == "all":
            encoder.embed.weight = decoder.embed.weight
        model = Seq2Seq(encoder, decoder)
        INITS.get(cfg.init.name, "model.init")(model, INITS.options(cfg.init, "model.init"))
        return model
