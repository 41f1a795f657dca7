"""A source of several sentences as the memory networks read it: token ids split at a separator
into a (sentences x words) grid, weights over sentences, and those weights put back on tokens.

A story for a memory network is ``s_1 . s_2 . ... s_n . question`` (the separator ends each
sentence; what follows the last one is the question); a document for a hierarchical attention
network is ``s_1 . s_2 . ... s_n`` (a last sentence without a separator counts too). The
separator tokens themselves belong to no sentence.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch

from ...errors import ConfigError

log = logging.getLogger("attnseq")

NO_SEPARATOR = -1  # an id no token has: every source is one sentence


@dataclass
class Sentences:
    """A batch of sources as sentences.

    words (B, N, L) ids (0 past a sentence's end); word_mask (B, N, L); mask (B, N) real
    sentences; age (B, N) 0 for the most recent sentence, 1 for the one before, ...;
    question (B, Q) ids and question_mask (B, Q) (Q = 1 and all False when there is none);
    sentence_of (B, S) the sentence slot of each source token (-1: the question, a separator,
    padding or a sentence beyond the memory); position_of (B, S) its place in that sentence.
    """

    words: torch.Tensor
    word_mask: torch.Tensor
    mask: torch.Tensor
    age: torch.Tensor
    question: torch.Tensor
    question_mask: torch.Tensor
    sentence_of: torch.Tensor
    position_of: torch.Tensor


def separator_id(vocab, token: str) -> int:
    """The id of ``token`` in the source vocabulary ``vocab``; NO_SEPARATOR (with a warning)
    when the vocabulary does not have it, so that every source is read as one sentence."""
    if vocab is None or token not in vocab.stoi:
        log.warning("model.separator %r is not in the source vocabulary: every source is read as one sentence", token)
        return NO_SEPARATOR
    return vocab.stoi[token]


def split_sentences(
    src: torch.Tensor, src_mask: torch.Tensor, separator: int, has_question: bool, max_sentences: int = 0
) -> Sentences:
    """``src`` (B, S) with ``src_mask`` (B, S) as Sentences.

    ``has_question``: the tokens after the last separator are the question (a story); otherwise
    they are one more sentence (a document). ``max_sentences`` > 0 keeps only the most recent
    ones (the memory's size); slots stay in reading order.
    """
    batch, length = src.shape
    device = src.device
    is_sep = (src == separator) & src_mask  # (B, S)
    ends = is_sep.long().cumsum(1)  # (B, S) separators up to and including t
    index = ends - is_sep.long()  # (B, S) the sentence each token is in (0-based)
    t = torch.arange(length, device=device).expand(batch, length)
    last_sep = torch.where(is_sep, t, torch.full_like(t, -1)).cummax(1).values  # (B, S)
    previous = torch.cat([torch.full_like(t[:, :1], -1), last_sep[:, :-1]], 1)  # exclusive
    position = t - previous - 1  # (B, S) place within the sentence
    closed = is_sep.sum(1)  # (B,) sentences ended by a separator
    word = src_mask & ~is_sep  # (B, S) tokens that are words of a sentence or the question
    in_question = word & (index == closed.unsqueeze(1)) if has_question else torch.zeros_like(word)
    in_story = word & ~in_question
    if has_question:
        count = closed
    else:  # a trailing sentence without its separator
        trailing = (word & (index == closed.unsqueeze(1))).any(1)
        count = closed + trailing.long()
    first = torch.zeros_like(count)
    if max_sentences:
        first = (count - max_sentences).clamp(min=0)  # (B,) the oldest sentence kept
        count = count.clamp(max=max_sentences)
    slot = index - first.unsqueeze(1)  # (B, S)
    in_story = in_story & (slot >= 0)
    sentences = max(int(count.max()), 1) if batch else 1
    words_per = int(position[in_story].max()) + 1 if bool(in_story.any()) else 1
    rows, cols = in_story.nonzero(as_tuple=True)
    words = src.new_zeros(batch, sentences, words_per)
    word_mask = torch.zeros(batch, sentences, words_per, dtype=torch.bool, device=device)
    words[rows, slot[rows, cols], position[rows, cols]] = src[rows, cols]
    word_mask[rows, slot[rows, cols], position[rows, cols]] = True
    n = torch.arange(sentences, device=device).unsqueeze(0)  # (1, N)
    mask = n < count.unsqueeze(1)  # (B, N)
    age = (count.unsqueeze(1) - 1 - n).clamp(min=0)  # (B, N)
    q_rows, q_cols = in_question.nonzero(as_tuple=True)
    q_len = max(int(in_question.sum(1).max()), 1) if batch else 1
    question = src.new_zeros(batch, q_len)
    question_mask = torch.zeros(batch, q_len, dtype=torch.bool, device=device)
    question[q_rows, position[q_rows, q_cols]] = src[q_rows, q_cols]
    question_mask[q_rows, position[q_rows, q_cols]] = True
    sentence_of = torch.where(in_story, slot, torch.full_like(slot, -1))
    position_of = torch.where(in_story, position, torch.zeros_like(position))
    return Sentences(words, word_mask, mask, age, question, question_mask, sentence_of, position_of)


def token_weights(
    sentences: Sentences, sentence_weights: torch.Tensor, word_weights: torch.Tensor | None = None
) -> torch.Tensor:
    """Weights on the source tokens (B, S): each token gets its sentence's weight (B, N) times
    its own weight within the sentence (B, N, L); without word weights a sentence's weight is
    shared equally by its words. Tokens outside the story's sentences get 0."""
    if word_weights is None:
        lengths = sentences.word_mask.sum(-1, keepdim=True).clamp(min=1)  # (B, N, 1)
        word_weights = sentences.word_mask / lengths  # (B, N, L)
    inside = sentences.sentence_of >= 0  # (B, S)
    slot = sentences.sentence_of.clamp(min=0)
    per_sentence = sentence_weights.gather(1, slot)  # (B, S)
    within = word_weights.gather(1, slot.unsqueeze(-1).expand(-1, -1, word_weights.shape[-1]))  # (B, S, L)
    within = within.gather(2, sentences.position_of.unsqueeze(-1)).squeeze(-1)  # (B, S)
    return torch.where(inside, per_sentence * within, torch.zeros_like(per_sentence))


def check_separator(token: str) -> None:
    """A ConfigError unless ``model.separator`` is one token (no spaces)."""
    if not token.strip() or token.split()[0] != token:
        raise ConfigError(f"model.separator: expected one token without spaces, got {token!r}", key="model.separator")
