"""int8 weights for decoding on a CPU (``decode.precision: int8``).

``quantize_int8(model)`` turns, in place, a trained model's linear layers (the output layer
included) and recurrent cells into int8 ones: each weight matrix W (N, K) is stored as int8
with one scale per output row (symmetric: w_q = round(w / s), s = max |w_row| / 127), and each
call quantises its activations with a scale and zero point taken from that call's own range
(dynamic quantisation); the products run in int8 with int32 sums, the result comes back in
float32 with the bias added. Everything between the products (attention's softmax and
weighted sums, layer norms, the gates' nonlinearities, log-softmax) stays float32.

The kernels are torch's own (``torch.ops.quantized``: the FBGEMM int8 GEMMs that
``torch.ao.quantization.quantize_dynamic`` runs on x86), called here directly rather than
through quantize_dynamic's module swap, which torch 2.13 deprecates and which would reach little
of attnseq's models: it skips the output layer (``OutputLayer``, a subclass of ``nn.Linear``),
and swapping the ``nn.LSTM`` inside attnseq's recurrent layers breaks the fused and single-step
paths that read its weights; attnseq's own cells (``loop_cells.py``) it does not know. Each
recurrent layer quantises itself (its ``to_int8()``): torch's cells step through the int8 cell
kernels (one call per step, as the float path calls ``torch.lstm_cell``; these quantise their
inputs to 7 bits, FBGEMM's ``reduce_range``) and encode through the int8 LSTM and GRU sequence
kernels; the loop cells and the projected LSTM multiply through ``linear`` below. A module that
reads a linear layer's weight itself names that layer in ``float_linears`` and keeps it float
(the multi-head scorer's value projection). bench/int8_kernels.py measures these layers against
quantize_dynamic and torchao.

Packing a weight creates a ``torch.qint8`` tensor, which torch 2.13 warns is deprecated (the
quantised dtypes are to go, torchao being torch's successor to them): the warning is silenced in
``pack`` alone, the one place that creates one, so none reaches the user, and a kernel on plain
int8 tensors would replace this one there.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass

import torch
from torch import nn

# which of torch's int8 kernels the weights are packed for: FBGEMM's decoded as fast as oneDNN's
# or faster, end to end (AVX-512 VNNI, 1 thread, interleaved: greedy 2.05x fp32's against 1.83x
# for the RNN gettext preset, 1.95x against 1.54x for the Transformer; beam 5 alike), though
# oneDNN's GEMM alone multiplies the 8,000-word output layer faster. FBGEMM is also what
# quantize_dynamic runs on x86, and what the int8 cell kernels were written for.
ENGINE = "fbgemm"
DEPRECATED = "torch.quantize_per_tensor, torch.quantize_per_channel and other quantized tensor creation"


def int8_kernels() -> bool:
    """True when this torch has the int8 kernels ``quantize_int8`` runs on (x86 builds)."""
    return ENGINE in torch.backends.quantized.supported_engines


@contextlib.contextmanager
def _engine(name: str):
    """torch's quantised engine set to ``name`` for the packing inside ``with`` (it decides which
    kernels the packed weights run on), then set back."""
    before = torch.backends.quantized.engine
    torch.backends.quantized.engine = name
    try:
        yield
    finally:
        torch.backends.quantized.engine = before


def pack(weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.ScriptObject:
    """``weight`` (N, K) in int8, one scale per row, with ``bias`` (N,) kept float32, packed for
    the int8 GEMM (``linear``)."""
    weight = weight.detach().float().contiguous()
    scales = (weight.abs().amax(1) / 127).clamp(min=1e-12).double()  # (N,): an all-zero row keeps a scale
    zero_points = torch.zeros(weight.shape[0], dtype=torch.long)
    with warnings.catch_warnings(), _engine(ENGINE):
        warnings.filterwarnings("ignore", message=DEPRECATED)  # the qint8 dtype: see the module's docstring
        quantised = torch.quantize_per_channel(weight, scales, zero_points, 0, torch.qint8)
        return torch.ops.quantized.linear_prepack(quantised, None if bias is None else bias.detach().float())


def linear(x: torch.Tensor, packed: torch.ScriptObject, out_features: int) -> torch.Tensor:
    """x W^T + b for ``x`` (..., K) with ``packed`` W (N, K), b: (..., N), float32. ``x`` is
    quantised to 8 bits over its own range (full range: VNNI's int32 sums do not saturate), one
    scale for all its rows: a row's result depends a little on the rows beside it."""
    rows = x.reshape(-1, x.shape[-1])
    if not rows.is_contiguous():
        rows = rows.contiguous()
    return torch.ops.quantized.linear_dynamic(rows, packed, False).view(*x.shape[:-1], out_features)


class Int8Linear(nn.Module):
    """``nn.Linear`` with int8 weights: (..., in_features) -> (..., out_features). It keeps no
    float weight (``weight`` is not there to read)."""

    def __init__(self, source: nn.Linear):
        super().__init__()
        self.in_features, self.out_features = source.in_features, source.out_features
        self.packed = pack(source.weight, source.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.packed, self.out_features)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, int8"


@dataclass
class Int8Recurrence:
    """One layer and direction of a recurrent cell in int8: W_ih and W_hh packed with their
    biases, and, for torch's sequence kernels, the two as one ``CellParams``."""

    ih: torch.ScriptObject
    hh: torch.ScriptObject
    bias_ih: torch.Tensor | None
    bias_hh: torch.Tensor | None
    hidden_size: int  # rows of W_hh: G * H for G gates

    @classmethod
    def of(
        cls,
        weight_ih: torch.Tensor,
        weight_hh: torch.Tensor,
        bias_ih: torch.Tensor | None,
        bias_hh: torch.Tensor | None,
    ) -> Int8Recurrence:
        """W_ih (G * H, I) and W_hh (G * H, H) packed, each with its bias (or none)."""
        biases = [None if b is None else b.detach().float() for b in (bias_ih, bias_hh)]
        return cls(pack(weight_ih, biases[0]), pack(weight_hh, biases[1]), *biases, weight_hh.shape[0])

    def cell_params(self) -> torch.ScriptObject:
        """The pair as torch's sequence kernels (``torch.quantized_lstm``, ``quantized_gru``) take
        it, activations quantised over their full range."""
        return torch.ops.quantized.make_quantized_cell_params_dynamic(
            self.ih, self.hh, self.bias_ih, self.bias_hh, False
        )

    def input_products(self, x: torch.Tensor) -> torch.Tensor:
        """x W_ih^T + b_ih: (..., I) -> (..., G * H)."""
        return linear(x, self.ih, self.hidden_size)

    def hidden_products(self, h: torch.Tensor) -> torch.Tensor:
        """h W_hh^T + b_hh: (B, H) -> (B, G * H)."""
        return linear(h, self.hh, self.hidden_size)


class Int8RNNCell(nn.Module):
    """``nn.LSTMCell``, ``nn.GRUCell`` or ``nn.RNNCell`` (tanh) with int8 weights, called as the
    float cell: (x (B, I), state) -> state."""

    KERNELS = {
        nn.LSTMCell: "quantized_lstm_cell_dynamic",
        nn.GRUCell: "quantized_gru_cell_dynamic",
        nn.RNNCell: "quantized_rnn_tanh_cell_dynamic",
    }  # torch.ops.quantized's

    def __init__(self, source: nn.RNNCellBase):
        super().__init__()
        if isinstance(source, nn.RNNCell) and source.nonlinearity != "tanh":
            raise NotImplementedError("int8 RNNCell: tanh only")
        self.kernel = getattr(torch.ops.quantized, self.KERNELS[type(source)])
        self.input_size, self.hidden_size = source.input_size, source.hidden_size
        self.weights = Int8Recurrence.of(source.weight_ih, source.weight_hh, source.bias_ih, source.bias_hh)

    def forward(self, x: torch.Tensor, state):
        w = self.weights
        if isinstance(state, tuple):
            state = list(state)  # the LSTM kernel takes [h, c]
        return self.kernel(x, state, w.ih, w.hh, w.bias_ih, w.bias_hh)


def quantize_int8(model: nn.Module) -> nn.Module:
    """``model`` with int8 weights in place, for decoding only (it can no longer be trained or
    saved): every ``nn.Linear`` becomes an ``Int8Linear`` (an output layer tied to an embedding
    gets its own int8 copy; the embedding stays float), every ``nn.LSTMCell``/``GRUCell``/``RNNCell``
    an ``Int8RNNCell``, and every module with a ``to_int8()`` (attnseq's recurrent layers)
    quantises itself. Linear layers a module names in its ``float_linears`` stay float."""
    for module in list(model.modules()):
        to_int8 = getattr(module, "to_int8", None)
        if callable(to_int8):
            to_int8()
        keep = set(getattr(module, "float_linears", ()))
        for name, child in list(module.named_children()):
            if type(child) in Int8RNNCell.KERNELS:
                setattr(module, name, Int8RNNCell(child))
            elif isinstance(child, nn.Linear) and name not in keep:
                setattr(module, name, Int8Linear(child))
    return model


def float_products(model: nn.Module) -> list[str]:
    """The names of the modules of ``model`` that still multiply in float32 after
    ``quantize_int8``: linear layers and torch's recurrent modules outside the recurrent layers
    that hold int8 weights (``int8`` set). What a test expects to be the ``float_linears`` alone."""
    inside = {id(m) for layer in model.modules() if getattr(layer, "int8", None) is not None for m in layer.modules()}
    return [
        name
        for name, m in model.named_modules()
        if isinstance(m, (nn.Linear, nn.RNNBase, nn.RNNCellBase)) and id(m) not in inside
    ]
