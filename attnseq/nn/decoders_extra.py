"""More decoder designs without attention: the source summary c reaches every step.

``cho2014`` (Cho et al. 2014, "context at every step") and ``peeky`` (the book's chapter 7)
feed one fixed vector c, the encoder's summary of the source, into the recurrent input and
into the output layer at every step, instead of only into the first state. Neither depends on
its previous outputs, so both run the whole target in one call during training.
"""
from __future__ import annotations

import torch
from torch import nn

from .decoders import DECODERS, RNNDecoder
from .state import Memory, State


def summary_of(memory: Memory) -> torch.Tensor:
    """The source summary c (B, H): the top encoder layer's final state, or, for encoders
    without final states, the mean of the values over real tokens."""
    if memory.final is not None:
        return memory.final[-1]
    mask = memory.mask.unsqueeze(-1).to(memory.values.dtype)  # (B, S, 1)
    return (memory.values * mask).sum(1) / mask.sum(1).clamp(min=1)


class SummaryDecoder(RNNDecoder):
    """Base: ``state["summary"]`` (B, 1, Hm) holds c for the whole sentence."""

    uses_attention = False

    def rnn_input_size(self):
        return self.cfg.embed_size + self.memory_size

    def init_extra(self, state: State, memory: Memory) -> None:
        state["summary"] = summary_of(memory).unsqueeze(1)  # (B, 1, Hm)

    def summary(self, state: State, steps: int) -> torch.Tensor:
        """c repeated for ``steps`` positions: (B, T', Hm)."""
        c = state["summary"]
        return c.expand(c.shape[0], steps, c.shape[2])


@DECODERS.register("cho2014")
class ChoDecoder(SummaryDecoder):
    """Cho et al. 2014: s_t = f(s_{t-1}, y_{t-1}, c); the output layer sees
    tanh(W_o [s_t; c; y_{t-1}]) (the paper uses a maxout there). The first state comes from c
    through the bridge (``bridge: linear`` gives the paper's s_0 = tanh(V c))."""

    def build_output(self):
        self.W_o = nn.Linear(self.hidden_size + self.memory_size + self.cfg.embed_size, self.cfg.hidden_size)
        return self.cfg.hidden_size

    def step_features(self, embedded, state):
        c = self.summary(state, embedded.shape[1])  # (B, T', Hm)
        outputs, state = self.run_rnn(torch.cat([embedded, c], -1), state)  # (B, T', H)
        readout = torch.tanh(self.W_o(torch.cat([outputs, c, embedded], -1)))  # (B, T', H)
        return self.dropout(readout), state, None


@DECODERS.register("peeky")
class PeekyDecoder(SummaryDecoder):
    """The book's chapter 7 Peeky decoder: LSTM input concat(h_enc, embedding); the output
    affine reads concat(h_enc, LSTM output). With ``bridge: copy`` the LSTM also starts from
    h_enc, as in the book."""

    def build_output(self):
        return self.memory_size + self.hidden_size

    def step_features(self, embedded, state):
        c = self.summary(state, embedded.shape[1])  # (B, T', Hm)
        outputs, state = self.run_rnn(torch.cat([c, embedded], -1), state)  # (B, T', H)
        return self.dropout(torch.cat([c, outputs], -1)), state, None
