"""attnseq.scratch: the book's models and optimisers, on NumPy alone.

The model tests run on both layer sets (``layers``): the book's (scratch/layers.py) and the
fused twins the engine trains with (scratch/fused.py)."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from learning import at_least, learns, seed

from attnseq.scratch import MODELS, SGD, Adam, AttentionSeq2seq, Seq2seq, build_model, clip_grads, fused
from attnseq.scratch import layers as book
from attnseq.scratch.gradcheck import check_model

V, D, H, S, T = 6, 3, 4, 5, 4  # T decoder steps: ts has T + 1 columns


@pytest.fixture(params=[book, fused], ids=["book", "fused"])
def layers(request):
    """The layer set the models are built from."""
    return request.param


def randomised(model, seed=0, scale=0.5):
    """The model with every parameter redrawn (larger than the book's init), for checks."""
    rng = np.random.default_rng(seed)
    for p in model.params:
        p[...] = rng.standard_normal(p.shape) * scale
    return model


def batch(seed=0, N=3, vocab=V, S=S, T=T):
    rng = np.random.default_rng(seed)
    return rng.integers(0, vocab, (N, S)), rng.integers(0, vocab, (N, T + 1))


# ---------------------------------------------------------------- gradients


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_gradients_match_finite_differences(name, layers):
    model = randomised(build_model(name, V, D, H, dtype=np.float64, layers=layers))
    xs, ts = batch()
    errors = check_model(model, xs, ts)
    assert set(errors) == set(model.param_names)
    bad = {k: v for k, v in errors.items() if not v < 1e-6}
    assert not bad, bad


def test_model_gradients_with_ignored_targets(layers):
    model = randomised(AttentionSeq2seq(V, D, H, dtype=np.float64, ignore_label=0, layers=layers))
    xs, ts = batch(1)
    ts[:, 1:][ts[:, 1:] == 0] = 1
    ts[0, -2:] = 0  # padding at the end of one answer
    errors = check_model(model, xs, ts)
    assert max(errors.values()) < 1e-6, errors


def left_padded(seed=0, N=6, S=8, pad=0):
    """Sources whose rows start with 0..S-2 pad ids (the book's reversed questions)."""
    rng = np.random.default_rng(seed)
    xs = rng.integers(1, V, (N, S))
    for n in range(N):
        xs[n, : rng.integers(0, S - 1)] = pad
    xs[0, :3] = pad
    return xs, rng.integers(0, V, (N, T + 1))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_sharing_the_padding_changes_nothing(name, layers):
    """Encoders compute the shared left padding once; loss, gradients and outputs agree."""
    xs, ts = left_padded()
    plain = randomised(build_model(name, V, D, H, dtype=np.float64, layers=layers))
    shared = randomised(build_model(name, V, D, H, dtype=np.float64, layers=layers))
    plain.encoder.share_prefix = False
    assert shared.encoder.share_prefix
    np.testing.assert_allclose(shared.forward(xs, ts), plain.forward(xs, ts), rtol=1e-12)
    plain.backward()
    shared.backward()
    for key, g in plain.named_grads().items():
        np.testing.assert_allclose(shared.named_grads()[key], g, atol=1e-10, err_msg=key)
    np.testing.assert_array_equal(shared.generate(xs, 1, T), plain.generate(xs, 1, T))
    errors = check_model(shared, xs, ts)
    assert max(errors.values()) < 1e-6, errors


@pytest.mark.parametrize("name", sorted(MODELS))
def test_fused_models_equal_the_books(name):
    """The same weights built from either layer set: the same loss, gradients and answers (the
    sources start with shared padding, which only the fused encoder computes once)."""
    book_model = randomised(build_model(name, V, D, H, dtype=np.float64, layers=book))
    fused_model = randomised(build_model(name, V, D, H, dtype=np.float64, layers=fused))
    xs, ts = left_padded(2)
    assert fused_model.forward(xs, ts) == pytest.approx(book_model.forward(xs, ts), rel=1e-12)
    book_model.backward()
    fused_model.backward()
    for key, g in book_model.named_grads().items():
        np.testing.assert_allclose(fused_model.named_grads()[key], g, rtol=0, atol=1e-10, err_msg=key)
    np.testing.assert_array_equal(fused_model.generate(xs, 1, T), book_model.generate(xs, 1, T))


# ---------------------------------------------------------------- generation


@pytest.mark.parametrize("name", sorted(MODELS))
def test_batched_generate_equals_one_at_a_time(name, layers):
    np.random.seed(3)
    model = randomised(build_model(name, 8, 4, 8, layers=layers), seed=3, scale=1.0)
    xs, _ = batch(3, N=9, vocab=8, S=6)
    together = model.generate(xs, 7, 5)
    assert together.shape == (9, 5) and together.dtype == np.int64
    one_by_one = np.concatenate([model.generate(xs[i : i + 1], 7, 5) for i in range(9)])
    np.testing.assert_array_equal(together, one_by_one)
    assert len(np.unique(together)) > 1  # not a degenerate constant answer


@pytest.mark.parametrize("name", sorted(MODELS))
def test_generate_agrees_with_teacher_forced_forward(name, layers):
    """Feeding the greedy answer back as ts, forward's argmax at every step is that answer."""
    model = randomised(build_model(name, 8, 4, 8, dtype=np.float64, layers=layers), seed=5, scale=1.0)
    xs, _ = batch(5, N=6, vocab=8, S=6)
    answer = model.generate(xs, 7, 5)
    ts = np.concatenate([np.full((6, 1), 7), answer], axis=1)
    model.forward(xs, ts)
    scores = model.softmax.cache[1].reshape(6, 5, 8)  # softmax of the decoder scores
    np.testing.assert_array_equal(scores.argmax(axis=2), answer)


def test_generate_sees_parameter_changes(layers):
    """Decoding reuses prepared weights between calls only while the parameters are unchanged."""
    model = randomised(AttentionSeq2seq(8, 4, 8, layers=layers), seed=3, scale=1.0)
    fresh = AttentionSeq2seq(8, 4, 8, layers=layers)
    xs, _ = batch(4, N=20, vocab=8, S=6)
    before = model.generate(xs, 7, 5)
    randomised(model, seed=9, scale=1.0)  # new values in the same arrays
    fresh.load_params(model.named_params())
    after = model.generate(xs, 7, 5)
    np.testing.assert_array_equal(after, fresh.generate(xs, 7, 5))
    assert not np.array_equal(before, after)


def test_attention_generate_keeps_weights(layers):
    model = randomised(AttentionSeq2seq(8, 4, 8, layers=layers), seed=2)
    xs, _ = batch(2, N=4, vocab=8, S=6)
    model.generate(xs, 7, 3)
    w = model.decoder.attention_weights
    assert w.shape == (4, 3, 6)
    np.testing.assert_allclose(w.sum(axis=2), 1.0, rtol=1e-5)


# ---------------------------------------------------------------- parameters

EXPECTED_SHAPES = {
    "baseline": {"decoder.lstm.Wx": (D, 4 * H), "decoder.affine.W": (H, V)},
    "peeky": {"decoder.lstm.Wx": (H + D, 4 * H), "decoder.affine.W": (2 * H, V)},
    "attention": {"decoder.lstm.Wx": (D, 4 * H), "decoder.affine.W": (2 * H, V)},
    "bi-attention": {"decoder.lstm.Wx": (D, 4 * H), "decoder.affine.W": (2 * H, V)},
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_named_params_layout(name, layers):
    model = build_model(name, V, D, H, layers=layers)
    named = model.named_params()
    assert list(named) == model.param_names
    assert all(a is b for a, b in zip(named.values(), model.params))
    assert all(p.dtype == np.float32 for p in model.params)
    decoder = {
        "decoder.embed.W": (V, D),
        "decoder.lstm.Wh": (H, 4 * H),
        "decoder.lstm.b": (4 * H,),
        "decoder.affine.b": (V,),
        **EXPECTED_SHAPES[name],
    }
    if name == "bi-attention":
        Hd = H // 2
        encoder = {"encoder.embed.W": (V, D)}
        for side in ("fwd", "bwd"):
            encoder.update(
                {
                    f"encoder.lstm.{side}.Wx": (D, 4 * Hd),
                    f"encoder.lstm.{side}.Wh": (Hd, 4 * Hd),
                    f"encoder.lstm.{side}.b": (4 * Hd,),
                }
            )
    else:
        encoder = {
            "encoder.embed.W": (V, D),
            "encoder.lstm.Wx": (D, 4 * H),
            "encoder.lstm.Wh": (H, 4 * H),
            "encoder.lstm.b": (4 * H,),
        }
    expected = {
        **encoder,
        "decoder.embed.W": None,
        "decoder.lstm.Wx": None,
        "decoder.lstm.Wh": None,
        "decoder.lstm.b": None,
        "decoder.affine.W": None,
        "decoder.affine.b": None,
    }
    assert list(named) == list(expected)  # order = the book's draw order
    assert {k: v.shape for k, v in named.items()} == {**encoder, **decoder}
    assert set(model.named_grads()) == set(named)


def draw(shape, fan_in):
    return (np.random.randn(*shape) / fan_in).astype(np.float32)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_initialisation_follows_the_books_draw_order(name, layers):
    np.random.seed(42)
    model = build_model(name, V, D, H, layers=layers)
    np.random.seed(42)
    expected = {}
    if name == "bi-attention":
        Hd = H // 2
        expected["encoder.embed.W"] = draw((V, D), 100)
        for side in ("fwd", "bwd"):
            expected[f"encoder.lstm.{side}.Wx"] = draw((D, 4 * Hd), np.sqrt(D))
            expected[f"encoder.lstm.{side}.Wh"] = draw((Hd, 4 * Hd), np.sqrt(Hd))
    else:
        expected["encoder.embed.W"] = draw((V, D), 100)
        expected["encoder.lstm.Wx"] = draw((D, 4 * H), np.sqrt(D))
        expected["encoder.lstm.Wh"] = draw((H, 4 * H), np.sqrt(H))
    Din = H + D if name == "peeky" else D
    Hout = H if name == "baseline" else 2 * H
    expected["decoder.embed.W"] = draw((V, D), 100)
    expected["decoder.lstm.Wx"] = draw((Din, 4 * H), np.sqrt(Din))
    expected["decoder.lstm.Wh"] = draw((H, 4 * H), np.sqrt(H))
    expected["decoder.affine.W"] = draw((Hout, V), np.sqrt(Hout))
    named = model.named_params()
    for key, value in expected.items():
        np.testing.assert_array_equal(named[key], value, err_msg=key)
    for key in named:
        if key.endswith(".b"):
            assert not named[key].any()


def test_explicit_rng_and_load_params():
    a = Seq2seq(V, D, H, rng=np.random.RandomState(7))
    b = Seq2seq(V, D, H, rng=np.random.RandomState(7))
    c = Seq2seq(V, D, H, rng=np.random.RandomState(8))
    for p, q in zip(a.params, b.params):
        np.testing.assert_array_equal(p, q)
    xs, ts = batch(4)
    assert a.forward(xs, ts) != c.forward(xs, ts)
    c.load_params(a.named_params())
    assert a.forward(xs, ts) == c.forward(xs, ts)
    with pytest.raises(KeyError):
        c.load_params({"encoder.embed.W": a.params[0]})
    bad = dict(a.named_params())
    bad["decoder.affine.b"] = np.zeros(V + 1)
    with pytest.raises(ValueError):
        c.load_params(bad)
    with pytest.raises(ValueError):
        build_model("transformer", V)


# ---------------------------------------------------------------- optimisers


def test_adam_matches_hand_computation():
    p = np.array([1.0, -2.0, 0.5])
    g1, g2 = np.array([0.1, -0.2, 0.0]), np.array([0.3, 0.1, -0.4])
    opt = Adam(lr=0.01, beta1=0.9, beta2=0.999)
    opt.update([p], [g1.copy()])
    # step 1: m = 0.1 g1, v = 0.001 g1^2, lr_t = 0.01 sqrt(0.001) / 0.1
    m, v = 0.1 * g1, 0.001 * g1**2
    expected = np.array([1.0, -2.0, 0.5]) - 0.01 * math.sqrt(0.001) / 0.1 * m / (np.sqrt(v) + 1e-7)
    np.testing.assert_allclose(p, expected, rtol=1e-12)
    opt.update([p], [g2.copy()])
    m = m + 0.1 * (g2 - m)
    v = v + 0.001 * (g2**2 - v)
    lr_t = 0.01 * math.sqrt(1 - 0.999**2) / (1 - 0.9**2)
    expected = expected - lr_t * m / (np.sqrt(v) + 1e-7)
    np.testing.assert_allclose(p, expected, rtol=1e-12)


def test_adam_float32_stays_float32():
    p = np.ones(4, np.float32)
    Adam().update([p], [np.full(4, 0.5, np.float32)])
    assert p.dtype == np.float32
    np.testing.assert_allclose(p, 1 - 0.001, rtol=1e-5)


def test_sgd_and_clip():
    p = np.array([1.0, 2.0])
    SGD(lr=0.1).update([p], [np.array([1.0, -1.0])])
    np.testing.assert_allclose(p, [0.9, 2.1])
    grads = [np.array([3.0, 0.0]), np.array([[0.0, 4.0]])]  # norm 5
    assert clip_grads(grads, 10.0) == pytest.approx(5.0)
    np.testing.assert_allclose(grads[0], [3.0, 0.0])  # untouched below the cap
    clip_grads(grads, 1.0)
    rate = 1.0 / (5.0 + 1e-6)
    np.testing.assert_allclose(grads[0], [3.0 * rate, 0.0])
    np.testing.assert_allclose(grads[1], [[0.0, 4.0 * rate]])


# ---------------------------------------------------------------- trainer and evaluation


@pytest.mark.slow
@learns
def test_attention_seq2seq_learns_to_reverse(layers):
    """Reversing length-5 sequences over 4 symbols: every one of the 4^5 inputs right."""
    np.random.seed(seed(0))
    rng = np.random.default_rng(seed(0))
    start = 4

    def with_answer(x):
        return np.concatenate([np.full((len(x), 1), start), x[:, ::-1]], axis=1)

    x_train = rng.integers(0, 4, (2000, 5))
    x_all = np.array(np.meshgrid(*[range(4)] * 5, indexing="ij")).reshape(5, -1).T
    model, optimizer = AttentionSeq2seq(5, 8, 16, layers=layers), Adam(lr=0.02)
    t_train, t_all = with_answer(x_train), with_answer(x_all)
    accuracy = 0.0
    for _ in range(15):  # epochs of shuffled batches of 64, as the book trains
        order = np.random.permutation(len(x_train))
        for k in range(len(x_train) // 64):
            rows = order[k * 64 : (k + 1) * 64]
            model.forward(x_train[rows], t_train[rows])
            model.backward()
            clip_grads(model.grads, 5.0)
            optimizer.update(model.params, model.grads)
        guesses = model.generate(x_all, start, 5)
        accuracy = float(np.all(guesses == t_all[:, 1:], axis=1).mean())
        if accuracy == 1.0:
            break
    at_least("exact match over every input", accuracy, 1.0)


def test_scratch_imports_without_torch():
    code = (
        "import sys; sys.modules['torch'] = None; import attnseq.scratch as s; "
        "assert 'torch' not in [m.split('.')[0] for m in sys.modules if sys.modules[m]]"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
