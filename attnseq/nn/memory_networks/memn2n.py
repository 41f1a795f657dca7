"""End-to-end memory networks (Sukhbaatar, Szlam, Weston & Fergus 2015): ``model.arch: memn2n``.

The source is a story and a question (nn/memory_networks/sentences.py). Each story sentence x_i is
stored twice per hop, as an input memory m_i = sum_j l_j * A x_ij + T_A(i) and an output memory
c_i = sum_j l_j * C x_ij + T_C(i); the question becomes u = sum_j l_j * B q_j. A hop is one soft
read of the memory by u:

    p_i = softmax(u . m_i)        o = sum_i p_i c_i        u' = u + o   (or H u + o)

After K hops the answer is softmax(W u) (nn/memory_networks/answer.py). Variants:

- ``model.sentence``: ``position`` (the paper's PE: l_kj = (1 - j/J) - (k/d)(1 - 2j/J) for word
  j of J in dimension k of d) or ``bag`` (l = 1, a bag of words);
- ``model.tying``: ``adjacent`` (A^{k+1} = C^k, B = A^1, W^T = C^K: K + 1 embedding matrices,
  the answer layer tied to the last, so source and target need one vocabulary) or ``layerwise``
  (A and C shared by every hop, their own B and W, and u' = H u + o);
- ``model.temporal``: T_A and T_C, indexed by a sentence's age (0 for the most recent one), are
  tied as A and C are.

The paper's training tricks (linear start, random noise) and its SGD schedule are not here.
"""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

from ...errors import ConfigError
from ...registry import Registry
from ..attention.softmax import masked_softmax
from ..model import ARCHS, Seq2Seq
from .answer import AnswerDecoder, Reading
from .sentences import Sentences, check_separator, separator_id, split_sentences, token_weights

SENTENCE_ENCODINGS: Registry[type[SentenceEncoding]] = Registry("sentence encoding", key="model.sentence")
TYINGS: Registry[type[Tying]] = Registry("weight tying", key="model.tying")

INIT_STD = 0.1  # the paper draws every weight from N(0, 0.1)


# -- sentence representations (model.sentence) ------------------------------------------------------
class SentenceEncoding:
    """How a sentence's word embeddings are summed into one vector."""

    def __init__(self, options=None):
        self.options = options

    def weights(self, word_mask: torch.Tensor, size: int) -> torch.Tensor:
        """Weights l (..., L, d) of each word j in each dimension k; 0 on padding."""
        raise NotImplementedError

    def encode(self, embedded: torch.Tensor, word_mask: torch.Tensor) -> torch.Tensor:
        """Sentence vectors (..., d) of word embeddings (..., L, d) with mask (..., L)."""
        return (self.weights(word_mask, embedded.shape[-1]).to(embedded.dtype) * embedded).sum(-2)


@SENTENCE_ENCODINGS.register("bag")
class BagOfWords(SentenceEncoding):
    """m_i = sum_j A x_ij: word order is lost."""

    def weights(self, word_mask, size):
        return word_mask.unsqueeze(-1).float().expand(*word_mask.shape, size)


@SENTENCE_ENCODINGS.register("position")
class PositionEncoding(SentenceEncoding):
    """m_i = sum_j l_j * A x_ij with l_kj = (1 - j/J) - (k/d)(1 - 2j/J) (J words, d dimensions,
    j and k counted from 1): the order of the words changes the sentence's vector."""

    def weights(self, word_mask, size):
        j = word_mask.long().cumsum(-1).float().unsqueeze(-1)  # (..., L, 1) 1-based word position
        J = word_mask.sum(-1, keepdim=True).clamp(min=1).float().unsqueeze(-1)  # (..., 1, 1)
        k = torch.arange(1, size + 1, device=word_mask.device, dtype=torch.float) / size  # (d,)
        weights = (1 - j / J) - k * (1 - 2 * j / J)  # (..., L, d)
        return weights * word_mask.unsqueeze(-1)


# -- which matrices the hops share (model.tying) -------------------------------------------------------
class MemoryEmbedding(nn.Module):
    """One embedding matrix of words (V, d), and with temporal encoding its T (memory_size, d)."""

    def __init__(self, vocab_size: int, size: int, memory_size: int, temporal: bool):
        super().__init__()
        self.tokens = nn.Embedding(vocab_size, size, padding_idx=0)
        self.temporal = nn.Embedding(memory_size, size) if temporal else None

    def sentences(self, sentences: Sentences, encoding: SentenceEncoding) -> torch.Tensor:
        """The memory vectors (B, N, d) of a story's sentences."""
        vectors = encoding.encode(self.tokens(sentences.words), sentences.word_mask)  # (B, N, d)
        if self.temporal is not None:
            vectors = vectors + self.temporal(sentences.age.clamp(max=self.temporal.num_embeddings - 1))
        return vectors

    def question(self, sentences: Sentences, encoding: SentenceEncoding) -> torch.Tensor:
        """u (B, d) of the question's words (no temporal term)."""
        return encoding.encode(self.tokens(sentences.question), sentences.question_mask)


class Tying(nn.Module):
    """Base: the embedding matrices of the memories (``matrices``), the one of the question, which
    matrices each hop reads as keys (m) and values (c), how u is updated, and the matrix the
    answer layer W is tied to (or None)."""

    def __init__(self, cfg, vocab_size: int, options=None):
        super().__init__()
        self.cfg, self.options = cfg, options

    def embedding(self, vocab_size: int) -> MemoryEmbedding:
        return MemoryEmbedding(vocab_size, self.cfg.embed_size, self.cfg.memory_size, self.cfg.temporal)

    def question_embedding(self) -> MemoryEmbedding:
        raise NotImplementedError

    def hop(self, k: int) -> tuple[int, int]:
        """(index of the input matrix A^k, index of the output matrix C^k) in ``matrices``."""
        raise NotImplementedError

    def update(self, u: torch.Tensor, o: torch.Tensor) -> torch.Tensor:
        """The next hop's u (B, d) from this one's u and read o."""
        return u + o

    def answer_embedding(self) -> nn.Embedding | None:
        """The embedding whose matrix is W (tied), or None for a W of its own."""
        return None


@TYINGS.register("adjacent")
class AdjacentTying(Tying):
    """A^{k+1} = C^k, B = A^1, W^T = C^K, T_A^{k+1} = T_C^k: K + 1 matrices in all."""

    def __init__(self, cfg, vocab_size, options=None):
        super().__init__(cfg, vocab_size, options)
        self.matrices = nn.ModuleList(self.embedding(vocab_size) for _ in range(cfg.hops + 1))

    def question_embedding(self):
        return self.matrices[0]

    def hop(self, k):
        return k, k + 1

    def answer_embedding(self):
        return self.matrices[-1].tokens


@TYINGS.register("layerwise")
class LayerwiseTying(Tying):
    """A^1 = ... = A^K, C^1 = ... = C^K (an RNN over hops), u' = H u + o, B and W of their own."""

    def __init__(self, cfg, vocab_size, options=None):
        super().__init__(cfg, vocab_size, options)
        self.matrices = nn.ModuleList(self.embedding(vocab_size) for _ in range(2))  # A, C
        self.B = MemoryEmbedding(vocab_size, cfg.embed_size, cfg.memory_size, temporal=False)
        self.H = nn.Linear(cfg.embed_size, cfg.embed_size, bias=False)

    def question_embedding(self):
        return self.B

    def hop(self, k):
        return 0, 1

    def update(self, u, o):
        return self.H(u) + o


# -- the model -------------------------------------------------------------------------------------------
class StoryReader(nn.Module):
    """The encoder: story and question ids (B, S) -> a Reading whose ``final`` is u^{K+1} and
    whose ``sentences`` (B, K, N) are the K hops' weights over the story's sentences."""

    def __init__(self, cfg, vocab_size: int, separator: int):
        super().__init__()
        self.cfg, self.separator = cfg, separator
        self.tying = TYINGS.build(cfg.tying, "model.tying", cfg, vocab_size)
        self.encoding = SENTENCE_ENCODINGS.build(cfg.sentence, "model.sentence")
        self.output_size = cfg.embed_size

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor) -> Reading:
        story = split_sentences(src, src_mask, self.separator, has_question=True, max_sentences=self.cfg.memory_size)
        memories = [m.sentences(story, self.encoding) for m in self.tying.matrices]  # each (B, N, d)
        u = self.tying.question_embedding().question(story, self.encoding)  # (B, d)
        hops = []
        for k in range(self.cfg.hops):
            key, value = self.tying.hop(k)
            scores = torch.einsum("bnd,bd->bn", memories[key], u)  # (B, N)
            p = masked_softmax(scores, story.mask, zero_empty_rows=True)
            o = torch.einsum("bn,bnd->bd", p, memories[value])  # (B, d)
            u = self.tying.update(u, o)
            hops.append(p)
        values = memories[self.tying.hop(self.cfg.hops - 1)[1]]
        return Reading(
            keys=values,
            values=values,
            mask=story.mask,
            final=u.unsqueeze(0),
            tokens=token_weights(story, hops[-1]),
            sentences=torch.stack(hops, 1),
        )


def initialize(model: nn.Module) -> None:
    """Every weight from N(0, 0.1) (the paper's), padding rows of the embeddings zero."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.Embedding, nn.Linear)):
                module.weight.normal_(0.0, INIT_STD)
            if isinstance(module, nn.Embedding) and module.padding_idx is not None:
                module.weight[module.padding_idx].zero_()


@ARCHS.register("memn2n")
class MemN2NArch:
    """A story reader with K hops and a one-word answer."""

    reads_vocabulary = True  # the separator's id

    @staticmethod
    def check(cfg):
        """``cfg`` (a MemN2NConfig) with its variants checked and their options written out."""
        check_separator(cfg.separator)
        return dataclasses.replace(
            cfg,
            tying=TYINGS.resolve(cfg.tying, "model.tying"),
            sentence=SENTENCE_ENCODINGS.resolve(cfg.sentence, "model.sentence"),
        )

    @staticmethod
    def build(cfg, src_vocab_size: int, tgt_vocab_size: int, shares_vocab: bool = False, src_vocab=None) -> Seq2Seq:
        """The model; with adjacent tying W is C^K, so the data needs one vocabulary."""
        reader = StoryReader(cfg, src_vocab_size, separator_id(src_vocab, cfg.separator))
        decoder = AnswerDecoder(cfg.embed_size, tgt_vocab_size)
        model = Seq2Seq(reader, decoder)
        initialize(model)
        tied = reader.tying.answer_embedding()
        if tied is not None:
            if not shares_vocab or src_vocab_size != tgt_vocab_size:
                raise ConfigError(
                    f"model.tying: {cfg.tying.name} ties the answer layer W to the last "
                    "memory embedding C^K, so stories and answers need one vocabulary: set "
                    "data.shared_vocab: true (or use model.tying: layerwise)",
                    key="model.tying",
                )
            decoder.generator.weight = tied.weight
        return model
