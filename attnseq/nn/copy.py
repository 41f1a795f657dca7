"""Copy attention: the pointer-generator (See et al. 2017; Gu et al. 2016's CopyNet in its simpler
form), a decoder option (``model.copy``) of the attending recurrent decoders and the Transformer.

At every step the decoder learns the generation probability

    p_gen = sigmoid(w_c . c_t + w_s . s_t + w_x . x_t + b)

from the context vector c_t (the attention over the encoder outputs), the decoder's state s_t
(the features its output layer reads: Luong's attentional state, Bahdanau's readout, the
Transformer's last layer) and its input x_t (the previous token's embedding), and writes from

    P(w) = p_gen P_vocab(w) + (1 - p_gen) sum_{i: x_i = w} a_t,i

over an extended vocabulary: the target vocabulary (V ids), then the source's tokens outside it,
numbered V, V + 1, ... per sentence in order of first appearance. A source token is copied by its
target id when the target vocabulary has it, by its extended id otherwise, so a name the model
never saw can be written: the sentence's extended ids (``Memory.extended``, (B, S)) come with
the source, and the text pipeline maps extended ids back to the source's tokens.

The step returns log P over the extended vocabulary (log 0 = -inf for the extended ids a
sentence does not have), so greedy and beam search take it as they take logits; a token fed back
that is outside the vocabulary enters as unk (``vocabulary_ids``). Training's loss is the log of
the mixture at the target (nn/loss.py, ``pointer_generator_nll``), computed without the (N, V)
probabilities.
"""

from __future__ import annotations

import torch
from torch import nn

from ..data.vocab import Vocab
from .loss import linear_log_prob, pointer_generator_nll
from .state import Memory, State


def vocabulary_ids(tokens: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """``tokens`` with the extended ids (>= ``vocab_size``: copied tokens outside the vocabulary)
    read as unk: what the decoder's embedding looks up."""
    return tokens.masked_fill(tokens >= vocab_size, Vocab.unk_id)


def extended_size(vocab_size: int, extended: torch.Tensor) -> int:
    """The extended vocabulary's size for a batch of sources as extended ids (B, S): the target
    vocabulary and the most source tokens outside it that one sentence has."""
    return max(vocab_size, int(extended.max()) + 1) if extended.numel() else vocab_size


class PointerGenerator(nn.Module):
    """p_gen from [c_t; s_t; x_t] (one linear layer and a sigmoid), and the mixture of the
    vocabulary distribution with the attention scattered onto the source's extended ids."""

    def __init__(self, context_size: int, feature_size: int, input_size: int, vocab_size: int):
        super().__init__()
        self.vocab_size = vocab_size
        self.gate = nn.Linear(context_size + feature_size + input_size, 1)  # [w_c; w_s; w_x], b

    def gate_logits(self, context: torch.Tensor, features: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """logit(p_gen) (...,) of context c_t (..., Hm), state s_t (..., F) and input x_t (..., E)."""
        return self.gate(torch.cat([context, features, inputs], -1)).squeeze(-1)

    def mixture(
        self, logits: torch.Tensor, gate: torch.Tensor, alignment: torch.Tensor, extended: torch.Tensor, size: int
    ) -> torch.Tensor:
        """P over the extended vocabulary (N, size): p_gen softmax(logits) (N, V) and (1 - p_gen)
        times the alignment (N, S) added at the source's extended ids (N, S); ``gate`` (N,)
        the logits of p_gen."""
        p_gen = torch.sigmoid(gate).unsqueeze(1)  # (N, 1)
        probs = logits.new_zeros(logits.shape[0], size)
        probs[:, : logits.shape[1]] = p_gen * torch.softmax(logits, dim=-1)
        return probs.scatter_add_(1, extended, (1 - p_gen) * alignment)

    def log_probs(self, logits, gate, alignment, extended, size) -> torch.Tensor:
        """log ``mixture`` (N, size): what a decoder step returns (-inf where P is 0)."""
        return self.mixture(logits, gate, alignment, extended, size).log()

    def loss(
        self,
        features: torch.Tensor,
        generator: nn.Linear,
        gate: torch.Tensor,
        alignment: torch.Tensor,
        extended: torch.Tensor,
        target: torch.Tensor,
    ) -> torch.Tensor:
        """Summed -log P(target) of the real positions: features (N, F) the output layer
        ``generator`` reads, gate (N,) logit(p_gen), alignment (N, S), the sources' extended ids
        (N, S) and the extended target ids (N,)."""
        in_vocab = target < self.vocab_size
        log_vocab = linear_log_prob(features, generator.weight, generator.bias, target.masked_fill(~in_vocab, 0))
        log_vocab = log_vocab.masked_fill(~in_vocab, float("-inf"))  # a copied-only token: P_vocab = 0
        copied = (alignment * (extended == target.unsqueeze(1))).sum(1)  # (N,) attention on the target's tokens
        return pointer_generator_nll(log_vocab, gate, copied)


def context_of(alignment: torch.Tensor, values: torch.Tensor, state: State | None = None) -> torch.Tensor:
    """The context vectors sum_i a_i h_i (B, T, Hm) of ``alignment`` (B, T, S) over the memory
    ``values``: (B, S, Hm), or with ``state`` its shared entry (one row per sentence), read by
    the hypotheses of each sentence together."""
    if state is None:
        return torch.bmm(alignment, values)
    return state.attend(lambda a, v, _: (torch.bmm(a, v),), alignment, values)[0]


MISSING_IDS = "a copying model (model.copy) needs the source as extended ids: encode(src, src_mask, src_ext)"


def share_source(state: State, memory: Memory, vocab_size: int) -> State:
    """``state`` with what copying reads: the source's extended ids ``copy_ids`` (one row per
    sentence) and the extended vocabulary's size ``copy_size``, when the memory has them
    (Seq2Seq.encode's ``src_ext``; teacher forcing without a loss needs none)."""
    if memory.extended is None:
        return state
    return state.share(copy_ids=memory.extended).replace(copy_size=extended_size(vocab_size, memory.extended))


def copy_step(
    pointer: PointerGenerator,
    logits: torch.Tensor,
    features: torch.Tensor,
    inputs: torch.Tensor,
    alignment: torch.Tensor,
    values_name: str,
    state: State,
) -> torch.Tensor:
    """The log-probabilities (B, V_ext) of one decoder step of a copying decoder: logits (B, V),
    features (B, F), inputs x_t (B, E), alignment (B, S) and the shared memory values
    ``state[values_name]``."""
    if "copy_ids" not in state:
        raise ValueError(MISSING_IDS)
    context = context_of(alignment.unsqueeze(1), state[values_name], state).squeeze(1)  # (B, Hm)
    gate = pointer.gate_logits(context, features, inputs)  # (B,)
    return pointer.log_probs(logits, gate, alignment, state.per_hypothesis("copy_ids"), state["copy_size"])


def teacher_copy_loss(
    pointer: PointerGenerator,
    generator: nn.Linear,
    memory: Memory,
    features: torch.Tensor,
    alignment: torch.Tensor,
    inputs: torch.Tensor,
    tgt_out: torch.Tensor,
    tgt_mask: torch.Tensor,
) -> torch.Tensor:
    """Summed -log P(target) under teacher forcing: features (B, T, F), alignment (B, T, S) and
    inputs (B, T, E) of the decoder's pass; tgt_out (B, T) extended target ids."""
    if memory.extended is None:
        raise ValueError(MISSING_IDS)
    context = context_of(alignment, memory.values)  # (B, T, Hm)
    gate = pointer.gate_logits(context[tgt_mask], features[tgt_mask], inputs[tgt_mask])  # (N,)
    extended = memory.extended.unsqueeze(1).expand(-1, tgt_out.shape[1], -1)[tgt_mask]  # (N, S)
    return pointer.loss(features[tgt_mask], generator, gate, alignment[tgt_mask], extended, tgt_out[tgt_mask])


def generation_probability(decoder, memory: Memory, tgt_in: torch.Tensor) -> torch.Tensor:
    """p_gen (B, T) of every teacher-forced step of a copying ``decoder`` (what a page shows
    beside the attention)."""
    features, alignment, inputs = decoder.teacher(memory, tgt_in)
    return torch.sigmoid(decoder.pointer.gate_logits(context_of(alignment, memory.values), features, inputs))
