"""attnseq.nn.loss: the fused, chunked output layer + cross-entropy equals the plain one."""

from __future__ import annotations

from unittest import mock

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attnseq.nn import loss as loss_module
from attnseq.nn.loss import linear_cross_entropy


def inputs(bias: bool, N: int = 37, features: int = 5, V: int = 11, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(N, features, dtype=torch.float64, generator=g, requires_grad=True)
    weight = torch.randn(V, features, dtype=torch.float64, generator=g, requires_grad=True)
    b = torch.randn(V, dtype=torch.float64, generator=g, requires_grad=True) if bias else None
    target = torch.randint(0, V, (N,), generator=g)
    return x, weight, b, target


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
@pytest.mark.parametrize("bias", [True, False])
def test_fused_loss_and_gradients_equal_the_plain_computation(monkeypatch, bias, label_smoothing):
    monkeypatch.setattr(loss_module, "CHUNK_BYTES", 8 * 11 * 8)  # 8 rows a chunk: 5 chunks
    x, weight, b, target = inputs(bias)
    params = [p for p in (x, weight, b) if p is not None]
    fused = linear_cross_entropy(x, weight, b, target, label_smoothing)
    fused_grads = torch.autograd.grad(fused * 0.5, params)  # the scale reaches the grads
    plain = F.cross_entropy(F.linear(x, weight, b), target, reduction="sum", label_smoothing=label_smoothing)
    plain_grads = torch.autograd.grad(plain * 0.5, params)
    assert fused.item() == pytest.approx(plain.item(), rel=1e-12)
    for got, want in zip(fused_grads, plain_grads):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_fused_loss_passes_gradcheck():
    x, weight, b, target = inputs(True, N=6, V=4)
    assert torch.autograd.gradcheck(lambda x, w, b: linear_cross_entropy(x, w, b, target, 0.1), (x, weight, b))


def test_without_gradients_it_is_the_plain_computation():
    x, weight, b, target = inputs(True)
    with torch.no_grad():
        got = linear_cross_entropy(x, weight, b, target)
        want = F.cross_entropy(F.linear(x, weight, b), target, reduction="sum")
    assert got.item() == pytest.approx(want.item(), rel=1e-12)


@pytest.mark.parametrize("scales", [(0.5, 2.0, -1.0), (0.0, 3.0)])
def test_backward_through_the_same_loss_again_is_exact(scales):
    """The first backward scales the gradients in place; later ones (retain_graph) and a first
    one with a zero scale still give each call's exact gradients."""
    x, weight, b, target = inputs(True)
    fused = linear_cross_entropy(x, weight, b, target, 0.1)
    plain = F.cross_entropy(F.linear(x, weight, b), target, reduction="sum", label_smoothing=0.1)
    for scale in scales:
        got = torch.autograd.grad(fused * scale, (x, weight, b), retain_graph=True)
        want = torch.autograd.grad(plain * scale, (x, weight, b), retain_graph=True)
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, rtol=1e-10, atol=1e-12)


class ProductShapes(torch.utils._python_dispatch.TorchDispatchMode):
    """Records the (rows, inner, columns) of every matrix product run inside ``with``."""

    def __init__(self):
        super().__init__()
        self.shapes: list[tuple[int, int, int]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func._schema.name in ("aten::mm", "aten::addmm"):
            a, b = args[-2], args[-1]
            self.shapes.append((a.shape[0], a.shape[1], b.shape[1]))
        return func(*args, **(kwargs or {}))


@settings(max_examples=12, deadline=None)
@given(N=st.integers(1, 200), label_smoothing=st.sampled_from([0.0, 0.1]), bias=st.booleans())
def test_under_autocast_the_rows_are_padded_and_the_loss_and_gradients_are_the_unpadded(N, label_smoothing, bias):
    """bfloat16 products meet row counts that are multiples of ROW_QUANTUM only (a few shapes, not
    one per batch: every size of a product is the features, the vocabulary or such a multiple),
    and the padding adds nothing to the loss or the gradients."""
    x, weight, b, target = (t if t is None else t.detach().float() for t in inputs(bias, N=N, features=8, V=16))
    target = target.long()
    params = [p.requires_grad_() for p in (x, weight, b) if p is not None]
    with ProductShapes() as seen, torch.autocast("cpu", dtype=torch.bfloat16):
        got = linear_cross_entropy(x, weight, b, target, label_smoothing)
        got_grads = torch.autograd.grad(got, params)
    fixed = {8, 16}  # F and V
    assert seen.shapes and all(
        size in fixed or size % loss_module.ROW_QUANTUM == 0 for shape in seen.shapes for size in shape
    ), seen.shapes
    with torch.autocast("cpu", dtype=torch.bfloat16):  # the plain computation, unpadded
        logits = F.linear(x, weight, b).float()
    want = F.cross_entropy(logits, target, reduction="sum", label_smoothing=label_smoothing)
    want_grads = torch.autograd.grad(want, params)
    assert got.item() == pytest.approx(want.item(), rel=1e-5)
    for g, w in zip(got_grads, want_grads):
        torch.testing.assert_close(g, w, rtol=2e-2, atol=2e-2)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        log_p = loss_module.linear_log_prob(x, weight, b, target)
    assert log_p.shape == (N,)
    torch.testing.assert_close(log_p, torch.log_softmax(logits, 1).gather(1, target[:, None]).squeeze(1))


@settings(max_examples=10, deadline=None)
@given(
    N=st.integers(1, 300),
    V=st.integers(2, 300),
    label_smoothing=st.sampled_from([0.0, 0.1]),
    bias=st.booleans(),
    low_features=st.booleans(),
    seed=st.integers(0, 99),
)
def test_under_bfloat16_autocast_the_chunked_loss_is_autocasts_own(N, V, label_smoothing, bias, low_features, seed):
    """The chunked bfloat16 loss (several chunks: a small CHUNK_BYTES) gives autocast's plain
    computation's loss and gradients to bfloat16's precision, for features in float32 or (as a
    decoder under autocast makes them) in bfloat16, each gradient in its input's dtype."""
    x, weight, b, target = (
        t if t is None else t.detach().float() for t in inputs(bias, N=N, features=8, V=V, seed=seed)
    )
    target = target.long()
    if low_features:
        x = x.bfloat16()
    params = [p.requires_grad_() for p in (x, weight, b) if p is not None]
    with mock.patch.object(loss_module, "CHUNK_BYTES", V * 4 * 64), torch.autocast("cpu", dtype=torch.bfloat16):
        got = linear_cross_entropy(x, weight, b, target, label_smoothing)  # 64 rows a chunk
    got_grads = torch.autograd.grad(got * 0.5, params)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = F.linear(x, weight, b).float()
    want = F.cross_entropy(logits, target, reduction="sum", label_smoothing=label_smoothing)
    want_grads = torch.autograd.grad(want * 0.5, params)
    assert got.dtype == torch.float32
    assert got.item() == pytest.approx(want.item(), rel=1e-3)
    for p, g, w in zip(params, got_grads, want_grads):
        assert g.dtype == p.dtype
        scale = float(w.abs().max()) + 1e-6
        assert float((g.float() - w.float()).abs().max()) <= 8e-3 * scale  # bfloat16 roundings, with a margin
