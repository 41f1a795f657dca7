"""Recurrent cells without a fused torch kernel, written as a loop over time (:class:`LoopLayer`):
the minimal GRU (``mingru``) and the peephole LSTM (``lstm_peephole``). Both follow the
:class:`~attnseq.nn.rnn.cells.RecurrentLayer` interface: inputs (B, T, I), state
(L * directions, B, H) or (h, c), outputs (B, T, H * directions).

How the loop is written (``python bench/loop_cells.py`` measures it; the figures are in
docs/benchmarks.md, *Design choices measured*): the input projections of all steps are one
matmul before the loop, so each step does only the recurrent matmul and elementwise gate
arithmetic, and the projections are split with ``unbind`` (indexing ``projected[t]`` instead
makes backward allocate a full-size gradient per step). This beats a naive loop that applies a
Linear layer to concat(h_{t-1}, x_t) at every step; ``torch.jit.script`` gained nothing and is
deprecated in this torch, so the loop stays plain eager code that autograd, gradcheck and
``torch.compile`` all handle.

Padding: with ``lengths`` the state is held where a sequence has ended, so final states are
those of each sequence's last real step, and outputs at padded steps are zero. The reverse
direction of a bidirectional layer reads each sequence reversed within its own length, so
padding never enters either direction.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..int8 import Int8Recurrence
from .cells import CELLS, RecurrentLayer


class LoopLayer(RecurrentLayer):
    """Base of cells written as a loop over time: per layer and direction, ``gates * H`` input
    projections computed for all steps at once, then ``recur`` steps through time.

    Parameters follow torch's names: ``weight_ih_l{k}`` (G*H, I), ``weight_hh_l{k}`` (G*H, H),
    ``bias_l{k}`` (G*H,), with ``_reverse`` for the backward direction.
    """

    gates = 1  # G: blocks of H rows in the weight matrices

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        dropout: float = 0.0,
        bidirectional: bool = False,
        options=None,
    ):
        super().__init__(input_size, hidden_size, num_layers, dropout, bidirectional, options)
        self.dropout = dropout
        self.output_size = hidden_size * self.directions
        for layer in range(num_layers):
            size = input_size if layer == 0 else self.output_size
            for suffix in self.suffixes(layer):
                setattr(self, f"weight_ih{suffix}", nn.Parameter(torch.empty(self.gates * hidden_size, size)))
                setattr(self, f"weight_hh{suffix}", nn.Parameter(torch.empty(self.gates * hidden_size, hidden_size)))
                setattr(self, f"bias{suffix}", nn.Parameter(torch.empty(self.gates * hidden_size)))
                self.add_extra(suffix)
        self.reset_parameters()

    def add_extra(self, suffix: str) -> None:
        """Register cell-specific parameters of one layer and direction."""

    def reset_parameters(self) -> None:
        """U(-1/sqrt(H), 1/sqrt(H)) for every parameter, as torch's own RNNs."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)

    def recur(
        self, projected: torch.Tensor, state: tuple[torch.Tensor, ...], suffix: str, mask: torch.Tensor | None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
        """Run one direction: input projections (T, B, G*H), state tuple of (B, H), mask (T, B, 1)
        -> (outputs (T, B, H), final state tuple)."""
        raise NotImplementedError

    # -- the products, in float32 or int8 -------------------------------------------------------
    def to_int8(self) -> None:
        self.int8 = {
            suffix: Int8Recurrence.of(
                getattr(self, f"weight_ih{suffix}"),
                getattr(self, f"weight_hh{suffix}"),
                getattr(self, f"bias{suffix}"),
                None,
            )
            for layer in range(self.num_layers)
            for suffix in self.suffixes(layer)
        }

    def project(self, x: torch.Tensor, suffix: str) -> torch.Tensor:
        """The input projections x W_ih^T + b of one layer and direction: (T, B, I) -> (T, B, G*H)."""
        if self.int8 is not None:
            return self.int8[suffix].input_products(x)
        return F.linear(x, getattr(self, f"weight_ih{suffix}"), getattr(self, f"bias{suffix}"))

    def recurrent(self, suffix: str):
        """The function (a (B, G*H), h (B, H)) -> a + h W_hh^T of one layer and direction."""
        if self.int8 is not None:
            products = self.int8[suffix].hidden_products
            return lambda a, h: products(h).add_(a)
        w_hh = getattr(self, f"weight_hh{suffix}").t()  # (H, G*H)
        return lambda a, h: torch.addmm(a, h, w_hh)

    # -- the stack ------------------------------------------------------------------------------
    def forward(self, inputs, state=None, lengths=None):
        """(outputs (B, T, H * directions), state (L * directions, B, H) or (h, c))."""

        def direction(suffix, source, initial, mask):  # all steps' input projections at once, then the loop
            projected = self.project(source.transpose(0, 1), suffix)  # (T, B, G*H)
            out, final = self.recur(projected, initial, suffix, None if mask is None else mask.t().unsqueeze(-1))
            return out.transpose(0, 1), final  # (B, T, H)

        return self.run_stack(inputs, state, lengths, direction, self.dropout)


def _hold(mask: torch.Tensor | None, t: int, new: torch.Tensor, old: torch.Tensor) -> torch.Tensor:
    """``new`` where step ``t`` is real, ``old`` (held) where the sequence has ended."""
    return new if mask is None else torch.where(mask[t], new, old)


def _finish(outputs: list[torch.Tensor], mask: torch.Tensor | None) -> torch.Tensor:
    """Per-step outputs stacked to (T, B, H), zero at padded steps."""
    stacked = torch.stack(outputs)
    return stacked if mask is None else stacked * mask


@CELLS.register("mingru")
class MinimalGRULayer(LoopLayer):
    """The minimal GRU: a GRU with only an update gate (no reset gate).

    C~_t = tanh(W_c [C_{t-1}, x_t] + b_c),  Γu = σ(W_u [C_{t-1}, x_t] + b_u),
    C_t = Γu · C~_t + (1 - Γu) · C_{t-1}.  Rows of the weights: [update; candidate].
    """

    gates = 2

    def recur(self, projected, state, suffix, mask):
        (h,) = state
        hidden = self.hidden_size
        recurrent = self.recurrent(suffix)
        outputs = []
        for t, step in enumerate(projected.unbind(0)):  # unbind: one backward for all steps
            a = recurrent(step, h)  # (B, 2H)
            update = torch.sigmoid(a[:, :hidden])
            candidate = torch.tanh(a[:, hidden:])
            h = _hold(mask, t, torch.lerp(h, candidate, update), h)  # Γu·C~ + (1-Γu)·C
            outputs.append(h)
        return _finish(outputs, mask), (h,)


@CELLS.register("lstm_peephole")
class PeepholeLSTMLayer(LoopLayer):
    """LSTM with peephole connections (Gers & Schmidhuber 2000): the input and forget gates
    see c_{t-1}, the output gate sees c_t, through diagonal weights p_i, p_f, p_o.

    i = σ(a_i + p_i ⊙ c_{t-1}),  f = σ(a_f + p_f ⊙ c_{t-1}),  g = tanh(a_g),
    c_t = f ⊙ c_{t-1} + i ⊙ g,  o = σ(a_o + p_o ⊙ c_t),  h_t = o ⊙ tanh(c_t),
    with a = W_ih x_t + W_hh h_{t-1} + b. Rows of the weights: [i; f; g; o] (torch's order);
    ``peephole_l{k}`` (3H,) holds [p_i; p_f; p_o].
    """

    gates = 4
    has_cell_state = True

    def add_extra(self, suffix):
        setattr(self, f"peephole{suffix}", nn.Parameter(torch.empty(3 * self.hidden_size)))

    def recur(self, projected, state, suffix, mask):
        h, c = state
        recurrent = self.recurrent(suffix)
        p_i, p_f, p_o = getattr(self, f"peephole{suffix}").chunk(3)  # (H,) each
        outputs = []
        for t, step in enumerate(projected.unbind(0)):
            a_i, a_f, a_g, a_o = recurrent(step, h).chunk(4, 1)  # (B, H) each
            i = torch.sigmoid(a_i + p_i * c)
            f = torch.sigmoid(a_f + p_f * c)
            c_new = f * c + i * torch.tanh(a_g)
            o = torch.sigmoid(a_o + p_o * c_new)
            h_new = o * torch.tanh(c_new)
            h, c = _hold(mask, t, h_new, h), _hold(mask, t, c_new, c)
            outputs.append(h)
        return _finish(outputs, mask), (h, c)
