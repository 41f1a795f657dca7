"""The encoder-decoder model, the architectures (``model.arch``) and their weights as arrays
(what attnseq.runs writes to a checkpoint and reads back).

An architecture registers an object with ``check(cfg) -> cfg`` (the model settings with every
variant checked and its options written out) and ``build(cfg, src_vocab_size, tgt_vocab_size,
shares_vocab) -> Seq2Seq``: the recurrent one in nn/rnn/model.py, the Transformer in
nn/transformer/model.py, the memory networks in nn/memory_networks/. An architecture that sets
``reads_vocabulary`` also gets ``src_vocab=`` (the source Vocab) in ``build``; one that sets
``reads_features`` gets ``features=`` (the values a position of a source file's features holds,
data.input; 0 for text) and encodes them with its ``model.frontend`` (nn/frontends).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from ..data.batching import SourceBatch
from ..errors import ConfigError, UserError
from ..registry import Registry
from .copy import teacher_copy_loss
from .loss import coverage_loss, linear_cross_entropy
from .state import Memory

ARCHS: Registry = Registry("architecture")


class Seq2Seq(nn.Module):
    """An encoder and a decoder that follows the decoder step protocol."""

    def __init__(self, encoder: nn.Module, decoder: nn.Module):
        super().__init__()
        self.encoder, self.decoder = encoder, decoder

    def encode(self, source: SourceBatch) -> Memory:
        """Memory of the ``source`` batch; a copying decoder also finds there the source's
        extended ids, what it copies (nn/copy.py)."""
        memory = self.encoder(source.ids, source.mask)
        if source.extended is not None:
            memory.extended = source.extended
        return memory

    def forward(self, source: SourceBatch, tgt_in: torch.Tensor):
        """Teacher forcing: (features (B, T, F), alignment (B, T, S) or None)."""
        return self.decoder(self.encode(source), tgt_in)

    def logits(self, source: SourceBatch, tgt_in: torch.Tensor) -> torch.Tensor:
        """Next-token logits (B, T, V) under teacher forcing."""
        features, _ = self(source, tgt_in)
        return self.decoder.generator(features)

    def loss(
        self,
        source: SourceBatch,
        tgt_in: torch.Tensor,
        tgt_out: torch.Tensor,
        tgt_mask: torch.Tensor,
        label_smoothing: float = 0.0,
    ):
        """(summed cross-entropy over real target tokens, number of those tokens).

        The output layer runs only on real (unpadded) positions. A copying decoder's loss is
        -log of its mixture at the target (``tgt_out`` extended ids, as the source's in
        ``source.extended``; no label smoothing), and with coverage the weighted coverage loss
        is added.
        """
        decoder = self.decoder
        pointer, weight = getattr(decoder, "pointer", None), getattr(decoder, "coverage_loss_weight", 0.0)
        memory = self.encode(source)
        if pointer is None:
            features, alignment = decoder(memory, tgt_in)  # (B, T, F), (B, T, S) or None
            real = features[tgt_mask]  # (N, F)
            loss = linear_cross_entropy(
                real, decoder.generator.weight, decoder.generator.bias, tgt_out[tgt_mask], label_smoothing
            )
            tokens = real.shape[0]
        else:
            if label_smoothing:
                raise ValueError("label smoothing is not defined over a copying model's extended vocabulary")
            features, alignment, inputs = decoder.teacher(memory, tgt_in)
            loss = teacher_copy_loss(pointer, decoder.generator, memory, features, alignment, inputs, tgt_out, tgt_mask)
            tokens = int(tgt_mask.sum())
        if weight:
            loss = loss + weight * coverage_loss(alignment, tgt_mask)
        return loss, tokens


def embedding_ties(cfg, shares_vocab: bool, true_ties_all: bool = False) -> str:
    """Which embeddings ``model.tie_embeddings`` makes the output layer's matrix (Press & Wolf
    2017): "none", "decoder" (the decoder's embedding) or "all" (the source embedding too).

    ``false``/``true``, its spellings before it named them, mean none/decoder; with
    ``true_ties_all`` (the Transformer's, which tied the source embedding too where the data has
    one vocabulary) true means all where ``shares_vocab``. "all" without one vocabulary is a
    ConfigError naming the key: the ids of the two sides would name other tokens."""
    tie = cfg.tie_embeddings
    if isinstance(tie, bool):
        return ("all" if true_ties_all and shares_vocab else "decoder") if tie else "none"
    if tie == "all" and not shares_vocab:
        raise ConfigError(
            "model.tie_embeddings: all makes the source embedding the output layer's matrix too, "
            "which needs one vocabulary for both sides: set data.shared_vocab: true (a joint "
            "tokenizer), or tie the decoder's alone (tie_embeddings: decoder)",
            key="model.tie_embeddings",
        )
    return tie


def check_model(cfg):
    """The model settings ``cfg`` with every variant checked and its options written out
    (ConfigError naming the key otherwise)."""
    return ARCHS.get(cfg.arch, "model.arch").check(cfg)


def build_model(
    cfg, src_vocab_size: int, tgt_vocab_size: int, shares_vocab: bool = False, src_vocab=None, features: int = 0
) -> Seq2Seq:
    """The model ``cfg`` (the model section of a config) describes, initialised.

    ``shares_vocab``: source and target have one vocabulary, so a model that ties embeddings
    may make the source embedding the same matrix. ``src_vocab``: the source Vocab, handed to
    the architectures that read it (``reads_vocabulary``: the memory networks find the id of
    their sentence separator in it). ``features``: the values at each position of a source that
    is a file (data.input: image), which the model's frontend reads; 0 for text."""
    arch = ARCHS.get(cfg.arch, "model.arch")
    extra = {"src_vocab": src_vocab} if getattr(arch, "reads_vocabulary", False) else {}
    if getattr(arch, "reads_features", False):
        extra["features"] = features
    elif features:
        raise ConfigError(
            f"data.input: the {cfg.arch} architecture reads text alone; choose model.arch rnn or "
            "transformer for a source that is a file",
            key="data.input",
        )
    return arch.build(arch.check(cfg), src_vocab_size, tgt_vocab_size, shares_vocab, **extra)


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters (shared ones counted once)."""
    return sum(p.numel() for p in {id(p): p for p in model.parameters() if p.requires_grad}.values())


def _shared_names(model: nn.Module) -> dict[str, str]:
    """Names of tensors that share storage with another one (tied embeddings) -> the name kept."""
    groups: dict[int, list[str]] = {}
    for name, value in model.state_dict().items():
        groups.setdefault(value.untyped_storage().data_ptr(), []).append(name)
    return {name: sorted(names)[0] for names in groups.values() for name in names if name != sorted(names)[0]}


def model_weights(model: nn.Module) -> dict[str, np.ndarray]:
    """The model's parameters and buffers as arrays, a tied tensor stored once (by its first name)."""
    shared = _shared_names(model)
    return {name: value.detach().cpu().numpy() for name, value in model.state_dict().items() if name not in shared}


def load_model_weights(model: nn.Module, weights: dict[str, np.ndarray], source: str | Path) -> None:
    """Copy ``weights`` (from ``model_weights``) into ``model``; a UserError naming the keys or
    shapes that differ when they are another model's."""
    expected = {name: tuple(v.shape) for name, v in model.state_dict().items() if name not in _shared_names(model)}
    found = {name: tuple(v.shape) for name, v in weights.items()}
    if expected != found:
        missing, extra = sorted(set(expected) - set(found)), sorted(set(found) - set(expected))
        shapes = [
            f"{k} {found[k]} (model {expected[k]})"
            for k in sorted(set(expected) & set(found))
            if found[k] != expected[k]
        ]
        parts = (
            ([f"missing {', '.join(missing[:4])}"] if missing else [])
            + ([f"not in this model {', '.join(extra[:4])}"] if extra else [])
            + ([f"other shapes {', '.join(shapes[:4])}"] if shapes else [])
        )
        raise UserError(f"{source}: not weights of this model ({'; '.join(parts)})")
    device = next(model.parameters()).device
    model.load_state_dict({k: torch.from_numpy(v).to(device) for k, v in weights.items()}, strict=False)
