"""The encoder-decoder model and its builders (``model.arch``)."""
from __future__ import annotations

import math
from typing import Callable

import torch
from torch import nn

from ..registry import Registry
from .decoders import build_decoder
from .encoders import build_encoder
from .loss import linear_cross_entropy
from .state import Memory

ARCHS: Registry[Callable[..., "Seq2Seq"]] = Registry("architecture")


class Seq2Seq(nn.Module):
    """An encoder and a decoder that follows the decoder step protocol."""

    def __init__(self, encoder: nn.Module, decoder: nn.Module):
        super().__init__()
        self.encoder, self.decoder = encoder, decoder

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> Memory:
        """Memory of the source ids (B, S) with mask (B, S)."""
        return self.encoder(src, src_mask)

    def forward(self, src, src_mask, tgt_in):
        """Teacher forcing: (features (B, T, F), alignment (B, T, S) or None)."""
        return self.decoder(self.encode(src, src_mask), tgt_in)

    def logits(self, src, src_mask, tgt_in) -> torch.Tensor:
        """Next-token logits (B, T, V) under teacher forcing."""
        features, _ = self(src, src_mask, tgt_in)
        return self.decoder.generator(features)

    def loss(self, src, src_mask, tgt_in, tgt_out, tgt_mask, label_smoothing: float = 0.0):
        """(summed cross-entropy over real target tokens, number of those tokens).

        The output layer runs only on real (unpadded) positions.
        """
        features, _ = self(src, src_mask, tgt_in)  # (B, T, F)
        real = features[tgt_mask]  # (N, F)
        generator = self.decoder.generator
        loss = linear_cross_entropy(real, generator.weight, generator.bias, tgt_out[tgt_mask],
                                    label_smoothing)
        return loss, real.shape[0]


def initialize(model: nn.Module, scheme: str, init_range: float = 0.1) -> None:
    """Re-initialise parameters: ``default`` keeps torch's, ``uniform`` draws U(-r, r),
    ``book`` follows the book (embeddings N(0, 1)/100, weights N(0, 1)/sqrt(fan_in), biases 0)."""
    if scheme == "default":
        return
    with torch.no_grad():
        for name, p in model.named_parameters():
            if scheme == "uniform":
                p.uniform_(-init_range, init_range)
            elif "embed" in name and p.dim() == 2:
                p.normal_().div_(100)
            elif p.dim() >= 2:
                p.normal_().div_(math.sqrt(p.shape[1]))
            else:
                p.zero_()
        for module in model.modules():  # keep padding embeddings at zero
            if isinstance(module, nn.Embedding) and module.padding_idx is not None:
                module.weight[module.padding_idx].zero_()


@ARCHS.register("rnn")
def build_rnn_model(cfg, src_vocab_size: int, tgt_vocab_size: int) -> Seq2Seq:
    """A recurrent encoder with one of the registered decoder designs."""
    encoder = build_encoder(cfg, src_vocab_size)
    decoder = build_decoder(cfg, tgt_vocab_size, encoder.output_size, cfg.encoder_layers)
    if cfg.tie_embeddings:
        if decoder.feature_size != cfg.embed_size:
            from ..errors import ConfigError

            raise ConfigError(
                f"model.tie_embeddings: the output features ({decoder.feature_size}) must match "
                f"model.embed_size ({cfg.embed_size})"
            )
        decoder.generator.weight = decoder.embed.weight
    return Seq2Seq(encoder, decoder)


def build_model(cfg, src_vocab_size: int, tgt_vocab_size: int) -> Seq2Seq:
    """The model ``cfg`` (a ModelConfig) describes, initialised by ``cfg.init``."""
    if cfg.arch == "transformer":
        from . import transformer  # noqa: F401  (registers the architecture)
    model = ARCHS.get(cfg.arch, "model.arch")(cfg, src_vocab_size, tgt_vocab_size)
    initialize(model, cfg.init, cfg.init_range)
    return model


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters (shared ones counted once)."""
    return sum(p.numel() for p in {id(p): p for p in model.parameters() if p.requires_grad}.values())
