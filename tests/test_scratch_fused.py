"""attnseq.scratch.fused: each fused layer computes what its twin in scratch/layers.py computes.

In float64 on random inputs: the forward outputs, the state carried, the input gradients and
every parameter gradient, including the cases only the fused layers take a shortcut in (the
left padding shared by a batch, decoding without a cache, buffers reused across calls of
different shapes).  The gradient checks against finite differences of both sets are in
test_scratch_layers.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from attnseq.scratch import fused
from attnseq.scratch import layers as book
from attnseq.scratch.fused import empty

N, T, S, D, H, V = 3, 4, 5, 3, 4, 6
TOL = 1e-12


@pytest.fixture
def rng():
    return np.random.default_rng(4321)


def randn(rng, *shape):
    return rng.standard_normal(shape)


def lstm_weights(rng, D=D, H=H):
    return randn(rng, D, 4 * H) * 0.5, randn(rng, H, 4 * H) * 0.5, randn(rng, 4 * H) * 0.5


def twins(name, *weights, **options):
    """The book's layer ``name`` and its fused twin, on copies of the same weights."""
    return (
        getattr(book, name)(*[w.copy() for w in weights], **options),
        getattr(fused, name)(*[w.copy() for w in weights], **options),
    )


def as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def assert_same(a, b, atol=TOL):
    """Equal arrays (or tuples of arrays, or None) to atol."""
    if a is None or b is None:
        assert a is None and b is None
        return
    for x, y in zip(as_tuple(a), as_tuple(b), strict=True):
        np.testing.assert_allclose(y, x, rtol=0, atol=atol)


def assert_grads_same(plain, quick, atol=1e-10):
    assert len(plain.grads) == len(quick.grads)
    for name, g, g_fused in zip(plain.param_names, plain.grads, quick.grads):
        np.testing.assert_allclose(g_fused, g, rtol=0, atol=atol, err_msg=name)


# ---------------------------------------------------------------- the layer set


def test_fused_is_a_whole_layer_set():
    """Every layer the models build exists in fused; the ones without a fused form are the
    book's own classes."""
    for name in ("TimeEmbedding", "TimeLSTM", "TimeBiLSTM", "TimeAttention", "TimeAffine", "TimeSoftmaxWithLoss"):
        assert name in fused.__all__ and hasattr(book, name), name
    assert fused.TimeAffine is book.TimeAffine
    assert fused.TimeSoftmaxWithLoss is book.TimeSoftmaxWithLoss
    for name in ("TimeEmbedding", "TimeLSTM", "TimeBiLSTM", "TimeAttention"):
        assert getattr(fused, name) is not getattr(book, name), name


# ---------------------------------------------------------------- embedding


def test_time_embedding_equals_the_books(rng):
    W = randn(rng, V, D)
    plain, quick = twins("TimeEmbedding", W)
    ids = rng.integers(0, V, (N, T))
    ids[0, :3] = ids[1, 1] = 2  # repeated ids: their gradients add up
    assert_same(plain.forward(ids), quick.forward(ids), atol=0)
    dout = randn(rng, N, T, D)
    assert_same(plain.backward(dout), quick.backward(dout))
    assert_grads_same(plain, quick)


# ---------------------------------------------------------------- LSTM


@pytest.mark.parametrize("stateful", [False, True])
def test_time_lstm_equals_the_books(rng, stateful):
    """Outputs, final state, dxs, dh (from a given initial state) and every gradient, over two
    calls (a stateful layer carries its state into the second)."""
    plain, quick = twins("TimeLSTM", *lstm_weights(rng), stateful=stateful)
    if stateful:
        h0, c0 = randn(rng, N, H), randn(rng, N, H)
        plain.set_state(h0, c0)
        quick.set_state(h0, c0)
    for _ in range(2):
        xs = randn(rng, N, T, D)
        assert_same(plain.forward(xs), quick.forward(xs))
        assert_same((plain.h, plain.c), (quick.h, quick.c))
        dhs = randn(rng, N, T, H)
        assert_same(plain.backward(dhs), quick.backward(dhs))
        assert_grads_same(plain, quick)
        if stateful:
            assert_same(plain.dh, quick.dh)


def test_time_lstm_without_a_cache_equals_the_books(rng):
    """Decoding: one step per call, stateful, no cache; the prepared weight follows changes
    of the parameters."""
    plain, quick = twins("TimeLSTM", *lstm_weights(rng), stateful=True)
    h0 = randn(rng, N, H)
    plain.set_state(h0)
    quick.set_state(h0)
    for step in range(4):
        if step == 2:  # new values in the same arrays
            for p, q in zip(plain.params, quick.params):
                p[...] = q[...] = randn(rng, *p.shape)
        xs = randn(rng, N, 1, D)
        assert_same(plain.forward(xs), quick.forward(xs, cache=False))  # the book keeps its cache
        assert_same((plain.h, plain.c), (quick.h, quick.c))


def test_time_lstm_buffers_follow_the_shapes(rng):
    """Calls of different batch sizes and lengths, with and without a cache, in turn."""
    plain, quick = twins("TimeLSTM", *lstm_weights(rng))
    for n, t, cache in [(3, 4, True), (5, 2, False), (2, 6, True), (3, 4, False), (5, 2, True)]:
        xs = randn(rng, n, t, D)
        assert_same(plain.forward(xs), quick.forward(xs, cache))
        if cache:
            dhs = randn(rng, n, t, H)
            assert_same(plain.backward(dhs), quick.backward(dhs))
            assert_grads_same(plain, quick)


def padded_batch(rng, prefix, T=T + 3):
    """xs (N, T, D) whose sample n starts with prefix[n] copies of one pad vector."""
    xs = randn(rng, len(prefix), T, D)
    pad = randn(rng, D)
    for n, p in enumerate(prefix):
        xs[n, :p] = pad
    return xs


PREFIXES = [[0, 2, 5, 1, 2], [3, 3, 3], [7, 0, 4], [0, 0, 0]]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_time_lstm_shared_prefix_equals_the_plain_computation(rng, prefix):
    weights = lstm_weights(rng)
    xs = padded_batch(rng, prefix)
    for plain in (book.TimeLSTM(*weights), fused.TimeLSTM(*weights)):  # the book's, fused unshared
        shared = fused.TimeLSTM(*weights)
        hs = plain.forward(xs)
        np.testing.assert_allclose(shared.forward(xs, shared=np.array(prefix)), hs, atol=1e-12)
        np.testing.assert_allclose(shared.c, plain.c, atol=1e-12)
        np.testing.assert_allclose(
            fused.TimeLSTM(*weights).forward(xs, cache=False, shared=np.array(prefix)), hs, atol=1e-12
        )
        dhs = randn(rng, *hs.shape)
        dxs, dxs_shared = plain.backward(dhs), shared.backward(dhs)
        for g, g_shared in zip(plain.grads, shared.grads):
            np.testing.assert_allclose(g_shared, g, atol=1e-10)
        # A sample's own steps get its own input gradient; each shared step's total is the same.
        p = np.array(prefix)
        for t in range(xs.shape[1]):
            own = p <= t
            np.testing.assert_allclose(dxs_shared[own, t], dxs[own, t], atol=1e-10)
            np.testing.assert_allclose(dxs_shared[~own, t].sum(0), dxs[~own, t].sum(0), atol=1e-10)
        if p.max() > 0:  # the work really was shared
            assert shared._cache[0].width[0] < len(p) + 1 or p.min() == p.max()


def test_time_lstm_shared_prefix_needs_a_zero_start(rng):
    layer = fused.TimeLSTM(*lstm_weights(rng), stateful=True)
    layer.set_state(randn(rng, 2, H), randn(rng, 2, H))
    with pytest.raises(ValueError, match="zero initial state"):
        layer.forward(padded_batch(rng, [1, 2]), shared=np.array([1, 2]))


@pytest.mark.parametrize("prefix", [None, *PREFIXES])
def test_time_bilstm_equals_the_books(rng, prefix):
    """With a shared prefix (the forward direction reads it first), the embedding's gradient,
    what the input gradients are for, is the same: per shared step, the sum over samples."""
    plain, quick = twins("TimeBiLSTM", *lstm_weights(rng), *lstm_weights(rng))
    xs = padded_batch(rng, prefix or [0] * N)
    shared = None if prefix is None else np.array(prefix)
    assert_same(plain.forward(xs), quick.forward(xs, shared=shared))
    dhs = randn(rng, xs.shape[0], xs.shape[1], 2 * H)
    dxs, dxs_fused = plain.backward(dhs), quick.backward(dhs)
    assert_grads_same(plain, quick)
    if prefix is None:
        assert_same(dxs, dxs_fused, atol=1e-10)
    else:
        np.testing.assert_allclose(dxs_fused.sum(0), dxs.sum(0), atol=1e-10)
        own = np.arange(xs.shape[1])[None, :] >= shared[:, None]  # (N, T)
        np.testing.assert_allclose(dxs_fused[own], dxs[own], atol=1e-10)


# ---------------------------------------------------------------- attention


def test_time_attention_equals_the_books(rng):
    plain, quick = book.TimeAttention(), fused.TimeAttention()
    for s, t in [(S, T), (S, 1), (2, T)]:
        hs_enc, hs_dec = randn(rng, N, s, H), randn(rng, N, t, H)
        assert_same(plain.forward(hs_enc, hs_dec), quick.forward(hs_enc, hs_dec))
        assert_same(plain.attention_weights, quick.attention_weights)
        dout = randn(rng, N, t, H)
        assert_same(plain.backward(dout), quick.backward(dout))


# ---------------------------------------------------------------- buffers


def test_empty_is_aligned():
    a = empty((3, 5), np.float32)
    assert a.ctypes.data % 64 == 0 and a.shape == (3, 5) and a.dtype == np.float32
