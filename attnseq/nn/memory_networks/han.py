"""Hierarchical attention networks (Yang, Yang, Dyer, He, Smola & Hovy 2016): ``model.arch: han``.

A document is sentences of words (nn/memory_networks/sentences.py). Each sentence's words go through a
bidirectional recurrent layer (h_it, both directions), and attention with a learned word
context vector u_w pools them into the sentence vector

    u_it = tanh(W_w h_it + b_w)     alpha_it = softmax_t(u_it . u_w)     s_i = sum_t alpha_it h_it

The sentence vectors go through a second bidirectional layer (h_i), and attention with a
sentence context vector u_s pools them into the document vector v = sum_i alpha_i h_i; the
class is softmax(W_c v + b_c), a one-token answer (nn/memory_networks/answer.py). The paper's layers
are GRUs (``model.cell``) of 50 units per direction. ``model.pooling: mean`` replaces both
attentions by the masked average of the annotations (the averaging baseline).
"""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

from ...errors import ConfigError
from ..attention.softmax import masked_softmax
from ..model import ARCHS, Seq2Seq
from ..rnn.cells import CELLS, build_rnn
from .answer import AnswerDecoder, Reading
from .sentences import check_separator, separator_id, split_sentences, token_weights


class ContextAttention(nn.Module):
    """Attention with a learned context vector: u = tanh(W h + b), alpha = softmax(u . u_ctx)."""

    def __init__(self, size: int, attention_size: int):
        super().__init__()
        self.project = nn.Linear(size, attention_size)
        self.context = nn.Parameter(torch.randn(attention_size) / attention_size**0.5)

    def forward(self, h: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(pooled (..., size), weights (..., T)) of annotations h (..., T, size) under mask (..., T)."""
        scores = torch.tanh(self.project(h)) @ self.context.to(h.dtype)  # (..., T)
        weights = masked_softmax(scores, mask, zero_empty_rows=True)
        return (weights.unsqueeze(-1) * h).sum(-2), weights


class MeanPooling(nn.Module):
    """The masked average of the annotations (``model.pooling: mean``): every real position weighs
    1 / (its count); padding weighs 0, and a row with none pools to zeros."""

    def forward(self, h: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(pooled (..., size), weights (..., T)) of annotations h (..., T, size) under mask (..., T)."""
        real = mask.to(h.dtype)  # (..., T)
        weights = real / real.sum(-1, keepdim=True).clamp(min=1)  # (..., T)
        return (weights.unsqueeze(-1) * h).sum(-2), weights


def build_pooling(cfg, size: int) -> nn.Module:
    """The pooling of ``model.pooling`` over annotations of ``size``; model.attention_size is the
    attention's alone (set with mean pooling, a ConfigError)."""
    if cfg.pooling == "mean":
        if cfg.attention_size:
            raise ConfigError(
                "model.attention_size: mean pooling (model.pooling: mean) has no attention to size; "
                "leave it out or use model.pooling: attention",
                key="model.attention_size",
            )
        return MeanPooling()
    return ContextAttention(size, cfg.attention_size or size)


class DocumentReader(nn.Module):
    """The encoder: document ids (B, S) -> a Reading whose ``final`` is the document vector v,
    ``sentences`` (B, 1, N) the sentence attention and ``words`` (B, N, L) the word attention."""

    def __init__(self, cfg, vocab_size: int, separator: int):
        super().__init__()
        self.separator = separator
        self.embed = nn.Embedding(vocab_size, cfg.embed_size, padding_idx=0)
        self.dropout = nn.Dropout(cfg.dropout)
        self.word_rnn = build_rnn(cfg.cell, cfg.embed_size, cfg.hidden_size, bidirectional=True)
        size = self.word_rnn.output_size  # h_it: both directions
        self.word_attention = build_pooling(cfg, size)
        self.sentence_rnn = build_rnn(cfg.cell, size, cfg.hidden_size, bidirectional=True)
        self.sentence_attention = build_pooling(cfg, self.sentence_rnn.output_size)
        self.output_size = self.sentence_rnn.output_size

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor) -> Reading:
        doc = split_sentences(src, src_mask, self.separator, has_question=False)
        batch, sentences, words = doc.words.shape
        real = doc.mask  # (B, N)
        vectors = self.embed.weight.new_zeros(batch, sentences, self.word_rnn.output_size)  # s_i
        word_weights = self.embed.weight.new_zeros(batch, sentences, words)  # alpha_it
        if bool(real.any()):
            lengths = doc.word_mask[real].sum(-1).clamp(min=1)  # (n,) an empty sentence reads its padding
            h, _ = self.word_rnn(self.dropout(self.embed(doc.words[real])), lengths=lengths)  # (n, L, 2H)
            pooled, alpha = self.word_attention(h, doc.word_mask[real])
            vectors = vectors.index_put((real,), pooled.to(vectors.dtype))  # (bfloat16 under autocast)
            word_weights = word_weights.index_put((real,), alpha.to(word_weights.dtype))
        count = real.sum(1).clamp(min=1)  # (B,) an empty document reads one blank sentence
        h, _ = self.sentence_rnn(self.dropout(vectors), lengths=count)  # (B, N, 2H)
        document, alpha = self.sentence_attention(h, real)  # (B, 2H), (B, N)
        return Reading(
            keys=h,
            values=h,
            mask=real,
            final=self.dropout(document).unsqueeze(0),
            tokens=token_weights(doc, alpha, word_weights),
            sentences=alpha.unsqueeze(1),
            words=word_weights,
        )


@ARCHS.register("han")
class HANArch:
    """Word and sentence attention, and a one-token class."""

    reads_vocabulary = True  # the separator's id

    @staticmethod
    def check(cfg):
        """``cfg`` (a HANConfig) with its cell checked and the cell's options written out."""
        check_separator(cfg.separator)
        return dataclasses.replace(cfg, cell=CELLS.resolve(cfg.cell, "model.cell"))

    @staticmethod
    def build(cfg, src_vocab_size: int, tgt_vocab_size: int, shares_vocab: bool = False, src_vocab=None) -> Seq2Seq:
        reader = DocumentReader(cfg, src_vocab_size, separator_id(src_vocab, cfg.separator))
        return Seq2Seq(reader, AnswerDecoder(reader.output_size, tgt_vocab_size))
