"""attnseq.scratch layers: finite-difference gradient checks (float64) and equivalences.

The book's layers (scratch/layers.py) are checked here; the Time layers that have a fused twin
(scratch/fused.py) are checked as both (the ``layers`` parameter).  What the fused layers alone
do (the shared prefix, aligned buffers) and their equality to the book's: test_scratch_fused.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from attnseq.scratch import fused
from attnseq.scratch import layers as book
from attnseq.scratch.gradcheck import check_gradients, check_layer, numerical_gradient, relative_error
from attnseq.scratch.layers import (
    GRU,
    LSTM,
    Attention,
    AttentionWeight,
    Embedding,
    TimeAffine,
    TimeGRU,
    TimeSoftmaxWithLoss,
    WeightSum,
    sigmoid,
    softmax,
)
from attnseq.scratch.models import run_lstm

TOL = 1e-6
N, T, S, D, H, V = 3, 4, 5, 3, 4, 6


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture(params=[book, fused], ids=["book", "fused"])
def layers(request):
    """The layer set whose Time layers a test checks: the book's or the fused twins."""
    return request.param


def randn(rng, *shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


def lstm_weights(rng, D=D, H=H):
    return randn(rng, D, 4 * H) * 0.5, randn(rng, H, 4 * H) * 0.5, randn(rng, 4 * H) * 0.5


def gru_weights(rng, D=D, H=H):
    return randn(rng, D, 3 * H) * 0.5, randn(rng, H, 3 * H) * 0.5, randn(rng, 3 * H) * 0.5


def assert_grads_ok(errors: dict[str, float]) -> None:
    assert errors, "nothing was checked"
    bad = {k: v for k, v in errors.items() if not v < TOL}
    assert not bad, f"relative errors above {TOL}: {bad}"


# ---------------------------------------------------------------- the checker itself


def test_numerical_gradient_of_known_function():
    x = np.array([[1.0, -2.0], [0.5, 3.0]])
    g = numerical_gradient(lambda: float(np.sum(x**3)), x)
    np.testing.assert_allclose(g, 3 * x**2, rtol=1e-8)
    assert relative_error(g, 3 * x**2) < 1e-9
    assert relative_error(np.zeros(3), np.zeros(3)) == 0.0


def test_checker_catches_a_wrong_backward(rng):
    x = randn(rng, 4)
    errors = check_gradients(lambda x: x**2, lambda d: d * x, [x])  # should be 2 x d
    assert errors["input0"] > 0.1


# ---------------------------------------------------------------- gradient checks


def test_embedding_grad(rng):
    idx = np.array([0, 2, 2, 5])  # repeated id: gradients must add
    assert_grads_ok(check_layer(Embedding(randn(rng, V, D)), idx))


def test_time_embedding_grad(rng, layers):
    assert_grads_ok(check_layer(layers.TimeEmbedding(randn(rng, V, D)), rng.integers(0, V, (N, T))))


def test_lstm_grad(rng):
    layer = LSTM(*lstm_weights(rng))
    assert_grads_ok(check_layer(layer, randn(rng, N, D), randn(rng, N, H), randn(rng, N, H)))


def test_time_lstm_grad(rng, layers):
    assert_grads_ok(check_layer(layers.TimeLSTM(*lstm_weights(rng)), randn(rng, N, T, D)))


def test_time_lstm_stateful_grad_including_initial_state(rng, layers):
    layer = layers.TimeLSTM(*lstm_weights(rng), stateful=True)
    h0, c0 = randn(rng, N, H), randn(rng, N, H)

    def forward(xs, h0, c0):
        layer.set_state(h0, c0)
        return layer.forward(xs)

    def backward(dhs):
        dxs = layer.backward(dhs)
        return dxs, layer.dh, np.zeros_like(c0)  # the layer exposes dh only

    errors = check_gradients(
        forward, backward, [randn(rng, N, T, D), h0, c0], layer.params, layer.grads, names=layer.param_names
    )
    errors.pop("input2")  # dc0 is not exposed
    assert_grads_ok(errors)


def test_time_lstm_stateful_carries_state(rng, layers):
    Wx, Wh, b = lstm_weights(rng)
    xs = randn(rng, N, 2 * T, D)
    whole = layers.TimeLSTM(Wx, Wh, b).forward(xs)
    halves = layers.TimeLSTM(Wx, Wh, b, stateful=True)
    first = halves.forward(xs[:, :T])
    second = halves.forward(xs[:, T:])
    np.testing.assert_allclose(np.concatenate([first, second], axis=1), whole, atol=1e-12)
    halves.reset_state()
    np.testing.assert_allclose(halves.forward(xs[:, :T]), first, atol=1e-12)


def test_time_lstm_equals_stepwise_lstm_and_inference_mode(rng, layers):
    weights = lstm_weights(rng)
    xs = randn(rng, N, T, D)
    layer = layers.TimeLSTM(*weights, stateful=True)
    h0, c0 = randn(rng, N, H), randn(rng, N, H)
    layer.set_state(h0, c0)
    hs = layer.forward(xs)
    cell, h, c = LSTM(*weights), h0, c0
    for t in range(T):
        h, c = cell.forward(xs[:, t], h, c)
        np.testing.assert_allclose(hs[:, t], h, atol=1e-12)
    np.testing.assert_allclose(layer.c, c, atol=1e-12)
    layer.set_state(h0, c0)
    inference = run_lstm(layer, xs, cache=False)  # the fused layer keeps nothing for backward
    np.testing.assert_allclose(inference, hs, atol=1e-12)
    np.testing.assert_allclose(layer.c, c, atol=1e-12)


def test_time_bilstm_grad_and_directions(rng, layers):
    w1, w2 = lstm_weights(rng), lstm_weights(rng)
    layer = layers.TimeBiLSTM(*w1, *w2)
    xs = randn(rng, N, T, D)
    out = layer.forward(xs)
    assert out.shape == (N, T, 2 * H)
    np.testing.assert_allclose(out[:, :, :H], layers.TimeLSTM(*w1).forward(xs), atol=1e-12)
    np.testing.assert_allclose(out[:, :, H:], layers.TimeLSTM(*w2).forward(xs[:, ::-1])[:, ::-1], atol=1e-12)
    assert_grads_ok(check_layer(layer, xs))


def test_gru_grad(rng):
    assert_grads_ok(check_layer(GRU(*gru_weights(rng)), randn(rng, N, D), randn(rng, N, H)))


def test_time_gru_grad_and_matches_steps(rng):
    weights = gru_weights(rng)
    xs = randn(rng, N, T, D)
    hs = TimeGRU(*weights).forward(xs)
    cell, h = GRU(*weights), np.zeros((N, H))
    for t in range(T):
        h = cell.forward(xs[:, t], h)
        np.testing.assert_allclose(hs[:, t], h, atol=1e-12)
    assert_grads_ok(check_layer(TimeGRU(*weights), xs))


def test_time_affine_grad(rng):
    assert_grads_ok(check_layer(TimeAffine(randn(rng, D, V), randn(rng, V)), randn(rng, N, T, D)))


def test_time_softmax_with_loss_grad_with_ignore_label(rng):
    ts = rng.integers(0, V, (N, T))
    ts[0, 1] = ts[2, 3] = -1
    assert_grads_ok(check_layer(TimeSoftmaxWithLoss(), randn(rng, N, T, V), ts))


def test_time_softmax_with_loss_grad_with_bool_mask(rng):
    ts = rng.integers(0, V, (N, T))
    mask = rng.random((N, T)) < 0.6
    mask[0, 0] = True
    layer = TimeSoftmaxWithLoss()
    errors = check_gradients(lambda xs: layer.forward(xs, ts, mask), layer.backward, [randn(rng, N, T, V)])
    assert_grads_ok(errors)


def test_time_softmax_with_loss_mask_semantics(rng):
    xs = randn(rng, N, T, V)
    ts = rng.integers(0, V, (N, T))
    mask = np.ones((N, T), dtype=bool)
    mask[:, -1] = False  # drop the last step
    layer = TimeSoftmaxWithLoss()
    loss = layer.forward(xs, ts, mask)
    dxs = layer.backward()
    # The mean over the counted positions only...
    logp = np.log(softmax(xs))
    picked = np.take_along_axis(logp, ts[:, :, None], axis=2)[:, :, 0]
    assert loss == pytest.approx(-picked[:, :-1].mean(), rel=1e-12)
    # ...equal to marking the same positions with the ignore label, or to dropping them.
    ts_ignored = ts.copy()
    ts_ignored[:, -1] = -1
    assert layer.forward(xs, ts_ignored) == pytest.approx(loss, rel=1e-12)
    assert layer.forward(xs[:, :-1], ts[:, :-1]) == pytest.approx(loss, rel=1e-12)
    assert np.all(dxs[:, -1] == 0)
    # Extreme scores do not produce inf or nan.
    xs[0, 0, ts[0, 0]] = -1e4
    assert np.isfinite(layer.forward(xs, ts))


def test_weight_sum_grad(rng):
    assert_grads_ok(check_layer(WeightSum(), randn(rng, N, S, H), randn(rng, N, S)))


def test_attention_weight_grad(rng):
    assert_grads_ok(check_layer(AttentionWeight(), randn(rng, N, S, H), randn(rng, N, H)))


def test_attention_grad(rng):
    assert_grads_ok(check_layer(Attention(), randn(rng, N, S, H), randn(rng, N, H)))


def test_time_attention_grad(rng, layers):
    assert_grads_ok(check_layer(layers.TimeAttention(), randn(rng, N, S, H), randn(rng, N, T, H)))


def test_time_attention_equals_stepwise_attention(rng, layers):
    hs_enc, hs_dec, dout = randn(rng, N, S, H), randn(rng, N, T, H), randn(rng, N, T, H)
    layer = layers.TimeAttention()
    out = layer.forward(hs_enc, hs_dec)
    denc, ddec = layer.backward(dout)
    denc_steps = np.zeros_like(hs_enc)
    for t in range(T):
        step = Attention()
        np.testing.assert_allclose(out[:, t], step.forward(hs_enc, hs_dec[:, t]), atol=1e-12)
        np.testing.assert_allclose(layer.attention_weights[:, t], step.attention_weight, atol=1e-12)
        dhs, dh = step.backward(dout[:, t])
        denc_steps += dhs
        np.testing.assert_allclose(ddec[:, t], dh, atol=1e-12)
    np.testing.assert_allclose(denc, denc_steps, atol=1e-12)
    np.testing.assert_allclose(layer.attention_weights.sum(axis=2), 1.0, atol=1e-12)


# ---------------------------------------------------------------- dtype and helpers


def test_float32_stays_float32(rng, layers):
    f32 = np.float32
    Wx, Wh, b = (w.astype(f32) for w in lstm_weights(rng))
    layer = layers.TimeLSTM(Wx, Wh, b)
    hs = layer.forward(randn(rng, N, T, D, dtype=f32))
    dxs = layer.backward(np.ones_like(hs))
    assert hs.dtype == dxs.dtype == layer.grads[1].dtype == f32
    attention = layers.TimeAttention()
    assert attention.forward(randn(rng, N, S, H, dtype=f32), randn(rng, N, T, H, dtype=f32)).dtype == f32


def test_helpers():
    x = np.array([-1000.0, -3.0, 0.0, 2.0, 1000.0])
    np.testing.assert_allclose(sigmoid(x), 1 / (1 + np.exp(-np.clip(x, -700, 700))), atol=1e-15)
    y = softmax(np.array([[1.0, 2.0, 3.0], [1000.0, 1000.0, -1000.0]]))
    np.testing.assert_allclose(y.sum(axis=1), 1.0)
    np.testing.assert_allclose(y[1], [0.5, 0.5, 0.0])
