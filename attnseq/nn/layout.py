"""Weights laid out for decoding on a CPU.

torch keeps a linear layer's weight W (N, K) row by row, so ``x @ W^T`` runs BLAS's
transposed-operand path. With W^T stored contiguously the same product runs the plain path,
faster for the few rows a decoding step multiplies (docs/benchmarks.md, *Design choices
measured*), with equal results (the tests decode every design both ways). A training step gains
nothing from it (W's gradient then takes the slow path), so only a model loaded to translate is
laid out this way.
"""

from __future__ import annotations

from torch import nn


def lay_out_for_decoding(model: nn.Module) -> nn.Module:
    """``model`` with every 2-D weight outside the embeddings stored column-major, in place:
    the same values and shapes, other strides. Embedding tables (and output layers tied to them)
    stay row-major: their rows are looked up. Saving still writes the usual layout."""
    embeddings = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    for weight in model.parameters():
        if weight.dim() == 2 and id(weight) not in embeddings and weight.is_contiguous():
            weight.data = weight.data.t().contiguous().t()  # (N, K) seen, (K, N) stored
    return model
