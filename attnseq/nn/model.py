"""The encoder-decoder model, the architectures (``model.arch``) and their weights files.

An architecture registers an object with ``check(cfg) -> cfg`` (the model settings with every
variant checked and its options written out) and ``build(cfg, src_vocab_size, tgt_vocab_size,
shares_vocab) -> Seq2Seq``: the recurrent one in nn/rnn/model.py, the Transformer in
nn/transformer/model.py.
"""
from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from ..errors import UserError
from ..registry import Registry
from ..utils import atomic_write
from .loss import linear_cross_entropy
from .state import Memory

ARCHS: Registry = Registry("architecture")


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


def check_model(cfg):
    """The model settings ``cfg`` with every variant checked and its options written out
    (ConfigError naming the key otherwise)."""
    return ARCHS.get(cfg.arch, "model.arch").check(cfg)


def build_model(cfg, src_vocab_size: int, tgt_vocab_size: int, shares_vocab: bool = False) -> Seq2Seq:
    """The model ``cfg`` (RNNConfig or TransformerConfig) describes, initialised.

    ``shares_vocab``: source and target have one vocabulary, so a model that ties embeddings
    may make the source embedding the same matrix."""
    arch = ARCHS.get(cfg.arch, "model.arch")
    return arch.build(arch.check(cfg), src_vocab_size, tgt_vocab_size, shares_vocab)


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters (shared ones counted once)."""
    return sum(p.numel() for p in {id(p): p for p in model.parameters() if p.requires_grad}.values())


def save_weights(model: nn.Module, path: str | Path) -> None:
    """The model's parameters and buffers as safetensors (shared tensors stored once), atomically."""
    from safetensors.torch import save_model

    atomic_write(path, lambda tmp: save_model(model, tmp))


def load_weights(model: nn.Module, path: str | Path) -> None:
    """Load weights written by ``save_weights`` into ``model``."""
    from safetensors.torch import load_model

    if not Path(path).exists():
        raise UserError(f"{path}: no such checkpoint")
    load_model(model, str(path), device=str(next(model.parameters()).device))
