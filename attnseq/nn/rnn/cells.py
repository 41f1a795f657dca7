"""Recurrent layers behind one interface, with a registry for ``model.cell``: torch's fused
kernels (lstm, gru, rnn, lstm_proj) here, cells written as a loop over time in loop_cells.py.

Every layer maps inputs (B, T, I) and an optional state to outputs (B, T, H * directions) and
a new state. A state is a tensor (L * directions, B, H), or a tuple of them for cells with a
memory cell (LSTM: (h, c)). ``lengths`` (B,) packs padded sequences so padding never enters.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ...errors import ConfigError
from ...registry import Registry
from ...schema import Variant, number

CELLS: Registry[type["RecurrentLayer"]] = Registry("recurrent cell")


def length_mask(lengths: torch.Tensor | None, steps: int) -> torch.Tensor | None:
    """(B, T) bool, True on the real steps of each sequence; None when ``lengths`` is None."""
    if lengths is None:
        return None
    lengths = lengths.to(torch.long)
    return torch.arange(steps, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)


def reverse_within(x: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
    """``x`` (B, T, D) with each sequence's first ``lengths[b]`` steps reversed; padding stays put.

    Applying it twice gives ``x`` back.
    """
    if lengths is None:
        return x.flip(1)
    batch, steps, size = x.shape
    t = torch.arange(steps, device=x.device).unsqueeze(0)  # (1, T)
    lengths = lengths.to(device=x.device, dtype=torch.long).unsqueeze(1)  # (B, 1)
    index = torch.where(t < lengths, lengths - 1 - t, t)  # (B, T)
    return x.gather(1, index.unsqueeze(-1).expand(batch, steps, size))


class RecurrentLayer(nn.Module):
    """Base: a stack of ``num_layers`` recurrent layers, optionally bidirectional."""

    has_cell_state = False  # True when the state is (h, c)

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 dropout: float = 0.0, bidirectional: bool = False, options=None):
        super().__init__()
        self.options = options
        self.input_size, self.hidden_size = input_size, hidden_size
        self.num_layers, self.bidirectional = num_layers, bidirectional
        self.directions = 2 if bidirectional else 1
        self.output_size = hidden_size * self.directions  # width of outputs (less with a projection)

    def forward(self, inputs: torch.Tensor, state=None, lengths: torch.Tensor | None = None):
        """(outputs (B, T, H * directions), state)."""
        raise NotImplementedError

    def encode(self, inputs: torch.Tensor, lengths: torch.Tensor | None = None):
        """What an encoder needs of padded inputs (B, T, I) from a zero state: (outputs
        (B, T, H * directions), zero at padding; each layer's and direction's hidden state
        after its sequence's last real step (L * directions, B, H))."""
        outputs, state = self(inputs, None, lengths)
        return outputs, self.hidden_of(state)

    @staticmethod
    def hidden_of(state) -> torch.Tensor:
        """The hidden states h (L * directions, B, H) of a state."""
        return state[0] if isinstance(state, tuple) else state


class FusedLayer(RecurrentLayer):
    """A torch fused RNN module (cuDNN / oneDNN kernels)."""

    module_class: type[nn.RNNBase] = nn.RNN
    module_kwargs: dict = {}

    def __init__(self, input_size, hidden_size, num_layers=1, dropout=0.0, bidirectional=False, options=None):
        super().__init__(input_size, hidden_size, num_layers, dropout, bidirectional, options)
        self.rnn = self.module_class(
            input_size, hidden_size, num_layers=num_layers, batch_first=True,
            dropout=dropout if num_layers > 1 else 0.0, bidirectional=bidirectional,
            **self.module_kwargs, **self.fused_kwargs(),
        )

    def fused_kwargs(self) -> dict:
        """Settings of the torch module that come from the cell's options."""
        return {}

    # torch's single-step kernel (torch.lstm_cell, gru_cell, rnn_tanh_cell), or None
    cell_function = None

    def forward(self, inputs, state=None, lengths=None):
        if lengths is None and inputs.shape[1] == 1 and state is not None and self._steppable():
            return self._step(inputs, state)
        if lengths is None:
            return self.rnn(inputs, state)
        packed = pack_padded_sequence(inputs, lengths.cpu(), batch_first=True, enforce_sorted=False)
        outputs, state = self.rnn(packed, state)
        outputs, _ = pad_packed_sequence(outputs, batch_first=True, total_length=inputs.shape[1])
        return outputs, state

    # the name of torch's sequence kernel (torch._VF.lstm, gru, rnn_tanh) for ``encode``, or None
    sequence_function: str | None = None

    def encode(self, inputs, lengths=None):
        """Like the base, without packing (torch's packed backward costs about as much again as
        the unpacked one): per layer, the forward direction reads the padded batch as it is
        (padding comes after each sequence's end, so it never reaches a real position) and the
        backward direction reads each sequence reversed within its length."""
        if lengths is None or self.sequence_function is None or getattr(self.rnn, "proj_size", 0):
            return super().encode(inputs, lengths)
        mask = length_mask(lengths, inputs.shape[1]).unsqueeze(-1)  # (B, T, 1)
        last = (lengths.to(torch.long) - 1).clamp(min=0).view(-1, 1, 1)  # (B, 1, 1)
        kernel = getattr(torch._VF, self.sequence_function)  # what nn.LSTM / nn.GRU / nn.RNN call
        x, finals = inputs, []
        for k in range(self.num_layers):
            outputs = []
            for suffix in ("", "_reverse")[: self.directions]:
                source = x if not suffix else reverse_within(x, lengths)
                hidden = source.new_zeros(1, source.shape[0], self.hidden_size)
                if self.has_cell_state:
                    hidden = (hidden, hidden)
                out = kernel(source, hidden, self._weights(k, suffix), True, 1, 0.0, self.training, False, True)[0]
                # (B, T, H); the state after the last real step is the output there
                finals.append(out.gather(1, last.expand(-1, 1, out.shape[2])).squeeze(1))
                outputs.append(out if not suffix else reverse_within(out, lengths))
            x = torch.cat(outputs, -1) if self.directions == 2 else outputs[0]  # (B, T, H * directions)
            if k + 1 < self.num_layers and self.training and self.rnn.dropout:
                x = nn.functional.dropout(x, self.rnn.dropout, training=True)
        return x * mask, torch.stack(finals)  # zero at padding; (L * directions, B, H)

    def _weights(self, layer: int, suffix: str = "") -> list[torch.Tensor]:
        """The torch module's weights and biases of one layer and direction (``_reverse``)."""
        names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
        return [getattr(self.rnn, f"{name}_l{layer}{suffix}") for name in names]

    def _steppable(self) -> bool:
        return (self.cell_function is not None and self.directions == 1
                and not getattr(self.rnn, "proj_size", 0))

    def _step(self, inputs: torch.Tensor, state):
        """One position (B, 1, I) through every layer with the single-step kernels, which cost far
        less than the sequence kernel for one position (decoders step one token at a time)."""
        x = inputs[:, 0]  # (B, I)
        cell = type(self).cell_function
        layers = []
        for k in range(self.num_layers):
            hidden = (state[0][k], state[1][k]) if self.has_cell_state else state[k]
            hidden = cell(x, hidden, *self._weights(k))
            layers.append(hidden)
            x = hidden[0] if self.has_cell_state else hidden  # (B, H)
            if k + 1 < self.num_layers and self.training and self.rnn.dropout:
                x = nn.functional.dropout(x, self.rnn.dropout, training=True)
        if self.has_cell_state:
            new_state = (torch.stack([h for h, _ in layers]), torch.stack([c for _, c in layers]))
        else:
            new_state = torch.stack(layers)
        return x.unsqueeze(1), new_state  # (B, 1, H), state


@CELLS.register("lstm")
class LSTMLayer(FusedLayer):
    """Long short-term memory (Hochreiter & Schmidhuber 1997), torch's fused kernel."""

    module_class = nn.LSTM
    has_cell_state = True
    cell_function = torch.lstm_cell
    sequence_function = "lstm"


@CELLS.register("gru")
class GRULayer(FusedLayer):
    """Gated recurrent unit (Cho et al. 2014), torch's fused kernel."""

    module_class = nn.GRU
    cell_function = torch.gru_cell
    sequence_function = "gru"


@CELLS.register("rnn")
class TanhRNNLayer(FusedLayer):
    """The vanilla (Elman) RNN with tanh, torch's fused kernel."""

    module_class = nn.RNN
    module_kwargs = {"nonlinearity": "tanh"}
    cell_function = torch.rnn_tanh_cell
    sequence_function = "rnn_tanh"


@dataclass
class ProjectionOptions:
    projection_size: int = number(0, 0)  # P: output width (all directions together); 0: half of H


@CELLS.register("lstm_proj", options=ProjectionOptions)
class ProjectedLSTMLayer(FusedLayer):
    """LSTM with a projection layer (Sak et al. 2014), torch's fused kernel with ``proj_size``:
    h_t = W_proj (o ⊙ tanh(c_t)) has fewer units than the cell c_t.

    ``projection_size`` P is the width of the outputs, directions together (each direction
    P / 2 when bidirectional), or half of each direction's H when 0. The state is
    (h (L * dirs, B, P / dirs), c (L * dirs, B, H)).
    """

    module_class = nn.LSTM
    has_cell_state = True

    def fused_kwargs(self) -> dict:
        per_direction = self.options.projection_size // self.directions or self.hidden_size // 2
        if not 0 < per_direction < self.hidden_size:
            raise ConfigError(
                f"model.cell.projection_size: each direction's projection must be between 1 and its "
                f"hidden size ({self.hidden_size}) less one, got {per_direction}",
                key="model.cell.projection_size",
            )
        self.output_size = per_direction * self.directions
        return {"proj_size": per_direction}

    def forward(self, inputs, state=None, lengths=None):
        with warnings.catch_warnings():  # torch notes on every call that oneDNN has no projection
            warnings.filterwarnings("ignore", message="LSTM with projections is not supported with oneDNN")
            return super().forward(inputs, state, lengths)


def build_rnn(cell: Variant | str, input_size: int, hidden_size: int, num_layers: int = 1,
              dropout: float = 0.0, bidirectional: bool = False) -> RecurrentLayer:
    """The recurrent layer ``cell`` names (``model.cell``: a name or a Variant with options);
    ``hidden_size`` units per direction."""
    return CELLS.build(cell, "model.cell", input_size, hidden_size, num_layers, dropout, bidirectional)
