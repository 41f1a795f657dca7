"""One-word answers behind the decoder step protocol: what a memory network or a hierarchical
attention network hands to its decoder (a Reading), and the decoder that answers with one
token and then ends (AnswerDecoder).

The reader (the model's encoder) does all the reading: it attends over the source's sentences
and leaves the answer vector in ``final``. The decoder's first step turns that vector into the
answer's logits (the paper's a = softmax(W u)); every later step turns a learned end vector
into logits, so the model learns to say eos after its one word. Greedy and beam search,
training and evaluation then need nothing new.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from ..state import Memory, State


@dataclass
class Reading(Memory):
    """A reader's result: the Memory fields (keys = values = the sentence memory (B, N, H),
    mask (B, N) real sentences, final (1, B, F) the answer vector) and its attention:
    tokens (B, S) the weight of each source token in the answer (the sentence weights of the last
    read, times the word weights inside the sentence where the model has them), sentences
    (B, K, N) every read's weights over the sentences (K hops; 1 for a HAN), words (B, N, L) the
    weights of the words inside each sentence, or None."""

    tokens: torch.Tensor = field(default=None)
    sentences: torch.Tensor = field(default=None)
    words: torch.Tensor | None = None


class AnswerDecoder(nn.Module):
    """Answers with one token, then eos: the decoder step protocol for readers.

    - ``init_state(reading) -> State`` (answer (B, F), the token weights, step 0)
    - ``step(prev_tokens (B,), state) -> (logits (B, V), state, alignment (B, S))``: the first
      step's features are the answer vector and its alignment the token weights; later steps'
      features are the learned end vector and their alignment zeros;
    - ``forward(reading, tgt_in (B, T)) -> (features (B, T, F), alignment (B, T, S))``;
    - ``generator``: features -> logits; ``feature_size`` = F.
    """

    def __init__(self, feature_size: int, vocab_size: int):
        super().__init__()
        self.feature_size = feature_size
        self.generator = nn.Linear(feature_size, vocab_size)
        self.end = nn.Parameter(torch.randn(feature_size) / feature_size**0.5)  # the features after the answer

    def init_state(self, memory: Reading) -> State:
        """The state before the answer: its vector, the token weights, the step counter."""
        return State(answer=memory.final[-1], tokens=memory.tokens, step=0)

    def _features(self, state: State, first: int, steps: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(features (B, steps, F), alignment (B, steps, S)) of the positions first .. first + steps - 1."""
        answer, tokens = state["answer"], state["tokens"]
        batch = answer.shape[0]
        end = self.end.to(answer.dtype).expand(batch, steps, self.feature_size)
        is_answer = (torch.arange(first, first + steps, device=answer.device) == 0).view(1, steps, 1)
        features = torch.where(is_answer, answer.unsqueeze(1), end)  # (B, steps, F)
        alignment = tokens.unsqueeze(1) * is_answer.to(tokens.dtype)  # (B, steps, S)
        return features, alignment

    def step(self, prev_tokens: torch.Tensor, state: State):
        """(logits (B, V), state, alignment (B, S)); ``prev_tokens`` are not needed."""
        features, alignment = self._features(state, state["step"], 1)
        return self.generator(features[:, 0]), state.replace(step=state["step"] + 1), alignment[:, 0]

    def forward(self, memory: Reading, tgt_in: torch.Tensor):
        """Teacher forcing: (features (B, T, F), alignment (B, T, S))."""
        return self._features(self.init_state(memory), 0, tgt_in.shape[1])
