"""An ensemble of trained models as one model of the decoder step protocol: greedy and beam search
decode it as they decode any model ("an ensemble of models is itself a decoder step"), with no
code of their own for it.

Each member encodes the source with its own encoder and steps with its own decoder, keeping its
own State; the ensemble's state holds them side by side and reorders them together. The members
read the same source ids and score the same target vocabulary (engines/torch_engine/ensemble.py checks that
their runs share their text pipeline).

How the members' predictions are combined: the ensemble's step returns, as its logits, the mean
of the members' log-probabilities, mean_m log p_m(y), as OpenNMT-py's ensemble does by default
(fairseq averages the probabilities instead, log mean_m p_m(y)). The search takes the log-softmax
of any step's logits, so the ensemble's next-token distribution is the members' normalised
geometric mean, p(y) = exp(mean_m log p_m(y)) / sum_y' exp(mean_m log p_m(y')): a token any member
finds very unlikely stays unlikely.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from ..data.batching import SourceBatch
from .state import Memory, State


class EnsembleState:
    """The members' States (one each, in the members' order), reordered together: ``select``
    and ``repeat`` do to every member's State what State's own do (see nn/state.py)."""

    __slots__ = ("members",)

    def __init__(self, members: Sequence[State]):
        self.members = tuple(members)

    def __repr__(self) -> str:
        return f"EnsembleState({', '.join(map(repr, self.members))})"

    def select(self, indices: torch.Tensor, group: int = 1) -> EnsembleState:
        """Every member's State with the rows ``indices``, each ``group`` of them one sentence's."""
        return EnsembleState([state.select(indices, group) for state in self.members])

    def repeat(self, k: int) -> EnsembleState:
        """Every member's State with each row repeated ``k`` times in a row."""
        return EnsembleState([state.repeat(k) for state in self.members])

    def batch_size(self) -> int:
        """The number of rows (hypotheses), the same in every member's State."""
        return self.members[0].batch_size()

    def device(self) -> torch.device:
        return self.members[0].device()


class EnsembleDecoder(nn.Module):
    """The members' decoders behind one ``init_state`` and ``step``."""

    def __init__(self, decoders: Sequence[nn.Module]):
        super().__init__()
        self.members = nn.ModuleList(decoders)

    def init_state(self, memories: Sequence[Memory]) -> EnsembleState:
        """Each member's state before the first target token, from its own encoder's memory."""
        return EnsembleState([decoder.init_state(memory) for decoder, memory in zip(self.members, memories)])

    def step(self, prev_tokens: torch.Tensor, state: EnsembleState):
        """(logits (B, V), state, alignment (B, S) or None) after feeding ``prev_tokens`` (B,) to
        every member.

        The logits are the mean of the members' log-probabilities (log_softmax of each one's
        logits, in float32); one member's own logits are returned as they are (their
        log-softmax is the same distribution, so an ensemble of one decodes exactly as its
        member). The alignment is the mean of the members' alignments, over the members whose
        decoder attends (a decoder without attention returns None and is left out); None when
        none does."""
        steps = [decoder.step(prev_tokens, member) for decoder, member in zip(self.members, state.members)]
        states = EnsembleState([new for _, new, _ in steps])
        alignments = [a.float() for _, _, a in steps if a is not None]  # each (B, S)
        alignment = torch.stack(alignments).mean(0) if alignments else None
        if len(steps) == 1:
            return steps[0][0], states, steps[0][2]
        logits = torch.log_softmax(steps[0][0].float(), dim=-1)  # (B, V)
        for member_logits, _, _ in steps[1:]:
            logits += torch.log_softmax(member_logits.float(), dim=-1)
        return logits.div_(len(steps)), states, alignment


class Ensemble(nn.Module):
    """Trained models (``members``, Seq2Seq models of one target vocabulary reading the same
    source ids) decoded as one: ``encode`` gives each member's memory, ``decoder`` is an
    EnsembleDecoder. Only decoding: an ensemble is not trained."""

    def __init__(self, models: Sequence[nn.Module]):
        super().__init__()
        if not models:
            raise ValueError("an ensemble needs at least one model")
        self.members = nn.ModuleList(models)
        self.decoder = EnsembleDecoder([model.decoder for model in models])

    def encode(self, source: SourceBatch) -> tuple[Memory, ...]:
        """Each member's memory of the ``source`` batch."""
        return tuple(model.encode(source) for model in self.members)
