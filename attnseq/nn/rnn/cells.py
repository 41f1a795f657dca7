"""Recurrent layers behind one interface, with a registry for ``model.cell``: torch's fused
kernels (lstm, gru, rnn, lstm_proj) here, cells written as a loop over time in loop_cells.py.

Every layer maps inputs (B, T, I) and an optional state to outputs (B, T, H * directions) and
a new state. A state is a tensor (L * directions, B, H), or a tuple of them for cells with a
memory cell (LSTM: (h, c)). ``lengths`` (B,) packs padded sequences so padding never enters.

A layer of a model loaded to decode in int8 (``decode.precision: int8``, nn/int8.py) holds its
weights in int8 too (``to_int8``) and steps through torch's int8 cell kernels; torch's int8
sequence kernels run the LSTM and GRU encoders.
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
from ..int8 import Int8Recurrence, linear, pack

CELLS: Registry[type[RecurrentLayer]] = Registry("recurrent cell", key="model.cell")


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
    int8: dict | None = None  # the int8 weights of each layer and direction, once ``to_int8`` has run

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        dropout: float = 0.0,
        bidirectional: bool = False,
        options=None,
    ):
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

    def to_int8(self) -> None:
        """Hold the weights in int8 too and decode with them from now on (nn/int8.py)."""
        raise NotImplementedError(f"{type(self).__name__} has no int8 form")

    def suffixes(self, layer: int) -> list[str]:
        """Parameter-name suffixes of ``layer``'s directions: ``_l0`` and ``_l0_reverse``."""
        return [f"_l{layer}", f"_l{layer}_reverse"][: self.directions]

    def run_stack(self, inputs: torch.Tensor, state, lengths: torch.Tensor | None, direction, dropout: float = 0.0):
        """Every layer and direction of the stack over ``inputs`` (B, T, I) from ``state`` (zeros
        when None): ``direction(suffix, source (B, T, I), initial (h,) or (h, c) each (B, H),
        mask (B, T) or None)`` runs one layer and direction (``_l0``, ``_l0_reverse``) and returns
        (outputs (B, T, H), its final state in the same form). The reverse direction reads each
        sequence reversed within its length; ``dropout`` between layers while training.
        (outputs (B, T, H * directions), state (L * directions, B, H) or (h, c))."""
        batch, steps, _ = inputs.shape
        mask = length_mask(lengths, steps)  # (B, T) or None
        initial = self.state_parts(state, batch, inputs)
        finals: list[list[torch.Tensor]] = [[] for _ in initial]
        x = inputs
        for layer in range(self.num_layers):
            outputs = []
            for d, suffix in enumerate(self.suffixes(layer)):
                k = layer * self.directions + d
                source = x if d == 0 else reverse_within(x, lengths)
                out, final = direction(suffix, source, tuple(s[k] for s in initial), mask)
                outputs.append(out if d == 0 else reverse_within(out, lengths))
                for store, value in zip(finals, final):
                    store.append(value)
            x = torch.cat(outputs, -1) if self.directions > 1 else outputs[0]  # (B, T, H * directions)
            if layer < self.num_layers - 1 and dropout > 0:
                x = nn.functional.dropout(x, dropout, self.training)
        stacked = [torch.stack(store) for store in finals]  # each (L * directions, B, H)
        return x, (tuple(stacked) if self.has_cell_state else stacked[0])

    def state_parts(self, state, batch: int, like: torch.Tensor) -> list[torch.Tensor]:
        """``state`` as a list of (L * directions, B, H) tensors (h, and c for cells that have
        one; h is narrower with a projection), zeros when None."""
        if state is None:
            rows = self.num_layers * self.directions
            h = like.new_zeros(rows, batch, self.output_size // self.directions)
            return [h, like.new_zeros(rows, batch, self.hidden_size)] if self.has_cell_state else [h]
        return list(state) if isinstance(state, tuple) else [state]


class FusedLayer(RecurrentLayer):
    """A torch fused RNN module (cuDNN / oneDNN kernels)."""

    module_class: type[nn.RNNBase] = nn.RNN
    module_kwargs: dict = {}

    def __init__(self, input_size, hidden_size, num_layers=1, dropout=0.0, bidirectional=False, options=None):
        super().__init__(input_size, hidden_size, num_layers, dropout, bidirectional, options)
        self.rnn = self.module_class(
            input_size,
            hidden_size,
            num_layers=num_layers,
            batch_first=True,
            dropout=dropout if num_layers > 1 else 0.0,
            bidirectional=bidirectional,
            **self.module_kwargs,
            **self.fused_kwargs(),
        )

    def fused_kwargs(self) -> dict:
        """Settings of the torch module that come from the cell's options."""
        return {}

    # torch's single-step kernel (torch.lstm_cell, gru_cell, rnn_tanh_cell), or None
    cell_function = None
    # the name of the same in int8 (torch.ops.quantized.quantized_lstm_cell_dynamic, ...), and a function
    # (inputs (B, T, I), zero state, CellParams) -> outputs (B, T, H) of torch's int8 sequence
    # kernel where it has one (LSTM, GRU)
    int8_cell = None
    int8_sequence = None

    def to_int8(self) -> None:
        self.int8 = {
            suffix: Int8Recurrence.of(*self._weights(suffix))
            for k in range(self.num_layers)
            for suffix in self.suffixes(k)
        }
        if self.int8_sequence is not None:
            self.int8_params = {suffix: w.cell_params() for suffix, w in self.int8.items()}

    def forward(self, inputs, state=None, lengths=None):
        if lengths is None and inputs.shape[1] == 1 and state is not None and self._steppable():
            return self._step(inputs, state)
        if self.int8 is not None:
            return self._int8_forward(inputs, state, lengths)
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
        backward direction reads each sequence reversed within its length. In int8, torch's
        int8 sequence kernel reads each direction so, padded or not."""
        sequence = self.sequence_function if self.int8 is None else self.int8_sequence
        if self.int8 is not None and lengths is None and sequence is not None:
            lengths = torch.full(inputs.shape[:1], inputs.shape[1], dtype=torch.long, device=inputs.device)
        if lengths is None or sequence is None or getattr(self.rnn, "proj_size", 0):
            return super().encode(inputs, lengths)
        mask = length_mask(lengths, inputs.shape[1]).unsqueeze(-1)  # (B, T, 1)
        last = (lengths.to(torch.long) - 1).clamp(min=0).view(-1, 1, 1)  # (B, 1, 1)
        x, finals = inputs, []
        for k in range(self.num_layers):
            outputs = []
            for direction, suffix in enumerate(self.suffixes(k)):
                source = x if not direction else reverse_within(x, lengths)
                hidden = source.new_zeros(1, source.shape[0], self.hidden_size)
                if self.has_cell_state:
                    hidden = (hidden, hidden)
                out = self._sequence(suffix, source, hidden)  # (B, T, H)
                # the state after the last real step is the output there
                finals.append(out.gather(1, last.expand(-1, 1, out.shape[2])).squeeze(1))
                outputs.append(out if not direction else reverse_within(out, lengths))
            x = torch.cat(outputs, -1) if self.directions == 2 else outputs[0]  # (B, T, H * directions)
            if k + 1 < self.num_layers and self.training and self.rnn.dropout:
                x = nn.functional.dropout(x, self.rnn.dropout, training=True)
        return x * mask, torch.stack(finals)  # zero at padding; (L * directions, B, H)

    def _sequence(self, suffix: str, source: torch.Tensor, hidden) -> torch.Tensor:
        """Outputs (B, T, H) of one layer and direction (``_l0``, ``_l0_reverse``) over ``source``
        (B, T, I) from the zero state ``hidden``, by torch's sequence kernel (what nn.LSTM /
        nn.GRU / nn.RNN call), or its int8 one."""
        if self.int8 is not None:
            return type(self).int8_sequence(source, hidden, self.int8_params[suffix])
        kernel = getattr(torch._VF, self.sequence_function)
        return kernel(source, hidden, self._weights(suffix), True, 1, 0.0, self.training, False, True)[0]

    def _weights(self, suffix: str) -> list[torch.Tensor]:
        """The torch module's weights and biases of one layer and direction (``_l0``, ``_l0_reverse``)."""
        names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
        return [getattr(self.rnn, f"{name}{suffix}") for name in names]

    def _cell(self, suffix: str, x: torch.Tensor, hidden):
        """One position through one layer and direction (``_l0``, ``_l0_reverse``): x (B, I),
        hidden (B, H) or (h, c) -> the new hidden state, by the single-step kernel of this cell
        or its int8 one."""
        if self.int8 is None:
            return type(self).cell_function(x, hidden, *self._weights(suffix))
        w = self.int8[suffix]
        kernel = getattr(torch.ops.quantized, self.int8_cell)
        return kernel(x, list(hidden) if isinstance(hidden, tuple) else hidden, w.ih, w.hh, w.bias_ih, w.bias_hh)

    def _int8_forward(self, inputs: torch.Tensor, state, lengths: torch.Tensor | None):
        """``forward`` in int8, one position at a time through ``_cell`` (outputs zero at padding,
        the state held after each sequence's last real step): what the decoders' teacher forcing
        and the HAN's packed sequences run on once the model is in int8."""

        def direction(suffix, source, initial, mask):
            hidden = initial if self.has_cell_state else initial[0]
            outputs = []
            for t in range(source.shape[1]):
                new = self._cell(suffix, source[:, t], hidden)
                if mask is not None:
                    real = mask[:, t, None]  # (B, 1): the state stays where the sequence has ended
                    new = (
                        tuple(torch.where(real, n, o) for n, o in zip(new, hidden))
                        if self.has_cell_state
                        else torch.where(real, new, hidden)
                    )
                hidden = new
                h = hidden[0] if self.has_cell_state else hidden  # (B, H)
                outputs.append(h if mask is None else h * mask[:, t, None])
            return torch.stack(outputs, 1), (hidden if self.has_cell_state else (hidden,))  # (B, T, H)

        return self.run_stack(inputs, state, lengths, direction)

    def _steppable(self) -> bool:
        return self.cell_function is not None and self.directions == 1 and not getattr(self.rnn, "proj_size", 0)

    def _step(self, inputs: torch.Tensor, state):
        """One position (B, 1, I) through every layer with the single-step kernels, which cost far
        less than the sequence kernel for one position (decoders step one token at a time)."""
        x = inputs[:, 0]  # (B, I)
        layers = []
        for k in range(self.num_layers):
            hidden = (state[0][k], state[1][k]) if self.has_cell_state else state[k]
            hidden = self._cell(f"_l{k}", x, hidden)
            layers.append(hidden)
            x = hidden[0] if self.has_cell_state else hidden  # (B, H)
            if k + 1 < self.num_layers and self.training and self.rnn.dropout:
                x = nn.functional.dropout(x, self.rnn.dropout, training=True)
        if self.has_cell_state:
            new_state = (torch.stack([h for h, _ in layers]), torch.stack([c for _, c in layers]))
        else:
            new_state = torch.stack(layers)
        return x.unsqueeze(1), new_state  # (B, 1, H), state


def _int8_lstm(source: torch.Tensor, hidden, params) -> torch.Tensor:
    """torch's int8 LSTM over ``source`` (B, T, I) from ``hidden`` (h, c), one layer and
    direction: outputs (B, T, H)."""
    return torch.quantized_lstm(
        source, list(hidden), [params], True, 1, 0.0, False, False, True, dtype=torch.qint8, use_dynamic=True
    )[0]


def _int8_gru(source: torch.Tensor, hidden, params) -> torch.Tensor:
    """torch's int8 GRU over ``source`` (B, T, I) from ``hidden``, one layer and direction:
    outputs (B, T, H)."""
    return torch.quantized_gru(source, hidden, [params], True, 1, 0.0, False, False, True)[0]


@CELLS.register("lstm")
class LSTMLayer(FusedLayer):
    """Long short-term memory (Hochreiter & Schmidhuber 1997), torch's fused kernel."""

    module_class = nn.LSTM
    has_cell_state = True
    cell_function = torch.lstm_cell
    sequence_function = "lstm"
    int8_cell = "quantized_lstm_cell_dynamic"
    int8_sequence = staticmethod(_int8_lstm)


@CELLS.register("gru")
class GRULayer(FusedLayer):
    """Gated recurrent unit (Cho et al. 2014), torch's fused kernel."""

    module_class = nn.GRU
    cell_function = torch.gru_cell
    sequence_function = "gru"
    int8_cell = "quantized_gru_cell_dynamic"
    int8_sequence = staticmethod(_int8_gru)


@CELLS.register("rnn")
class TanhRNNLayer(FusedLayer):
    """The vanilla (Elman) RNN with tanh, torch's fused kernel."""

    module_class = nn.RNN
    module_kwargs = {"nonlinearity": "tanh"}
    cell_function = torch.rnn_tanh_cell
    sequence_function = "rnn_tanh"
    int8_cell = "quantized_rnn_tanh_cell_dynamic"  # no int8 sequence kernel: a step at a time


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

    # torch has no int8 kernel of an LSTM with a projection: its products in int8, the gates as
    # torch's LSTM computes them
    def to_int8(self) -> None:
        super().to_int8()
        self.int8_projections = {
            suffix: (pack(getattr(self.rnn, f"weight_hr{suffix}")), self.rnn.proj_size) for suffix in self.int8
        }

    def _cell(self, suffix, x, hidden):
        if self.int8 is None:
            raise NotImplementedError("the projected LSTM steps through torch's module")
        h, c = hidden  # (B, P), (B, H)
        w = self.int8[suffix]
        i, f, g, o = w.input_products(x).add_(w.hidden_products(h)).chunk(4, 1)  # (B, H) each
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        projection, size = self.int8_projections[suffix]
        return linear(torch.sigmoid(o) * torch.tanh(c), projection, size), c  # h = W_hr (o ⊙ tanh(c))


def build_rnn(
    cell: Variant | str,
    input_size: int,
    hidden_size: int,
    num_layers: int = 1,
    dropout: float = 0.0,
    bidirectional: bool = False,
) -> RecurrentLayer:
    """The recurrent layer ``cell`` names (``model.cell``: a name or a Variant with options);
    ``hidden_size`` units per direction."""
    return CELLS.build(cell, "model.cell", input_size, hidden_size, num_layers, dropout, bidirectional)
