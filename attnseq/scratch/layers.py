"""The book's layers, as chapters 6-8 of "Deep Learning from Scratch 2" derive them.

One class per layer, named as in the book, each with ``forward`` and ``backward`` written out
step by step.  Every layer keeps two lists, ``params`` and ``grads`` (arrays of the same shapes;
``backward`` overwrites the gradients in place, ``grads[0][...] = dW``), and ``backward``
returns the gradients of the floating-point inputs of ``forward``, in order.

These are the layers to read.  The engine trains and decodes with fused twins of the Time*
layers (scratch/fused.py: one BLAS product per LSTM step, reused buffers, the shared left
padding computed once), tested equal to these in float64; the models take either set
(``build_model(..., layers=...)``).

Conventions:

* N batch size, T decoder (or generic) steps, S encoder steps, D input width, H hidden width,
  V vocabulary size.  Sequences are batch-major, ``(N, T, ...)``, as in the book.
* Weights multiply from the right: ``y = x @ W + b`` with ``W`` of shape ``(in, out)``.
* The LSTM weights hold the four gates side by side in the order f, g, i, o
  (forget, candidate, input, output): ``Wx (D, 4H)``, ``Wh (H, 4H)``, ``b (4H,)``.
* The GRU weights hold z, r, h~ (update, reset, candidate): ``Wx (D, 3H)``, ``Wh (H, 3H)``,
  ``b (3H,)``; the candidate is ``tanh(x Wx_h + (r * h) Wh_h + b_h)`` and the new state is
  ``(1 - z) * h + z * h~``.
* The dtype is that of the weights handed to the constructor (float32 for training, float64 for
  gradient checks); parameter-free layers follow their inputs.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "sigmoid",
    "softmax",
    "softmax_backward",
    "Embedding",
    "TimeEmbedding",
    "LSTM",
    "TimeLSTM",
    "GRU",
    "TimeGRU",
    "TimeAffine",
    "TimeSoftmaxWithLoss",
    "WeightSum",
    "AttentionWeight",
    "Attention",
    "TimeAttention",
    "TimeBiLSTM",
]


# --------------------------------------------------------------------------- functions


def sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)), elementwise."""
    return 0.5 * np.tanh(0.5 * x) + 0.5  # the same function; exp cannot overflow


def softmax(x: np.ndarray) -> np.ndarray:
    """Softmax over the last axis."""
    y = x - x.max(axis=-1, keepdims=True)  # exp cannot overflow
    np.exp(y, out=y)
    y /= y.sum(axis=-1, keepdims=True)
    return y


def softmax_backward(y: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """dL/ds for y = softmax(s) over the last axis, given dL/dy: y * (dy - sum(y * dy))."""
    ds = y * dy
    ds -= y * ds.sum(axis=-1, keepdims=True)
    return ds


# --------------------------------------------------------------------------- embeddings


class Embedding:
    """Rows of W picked by integer ids: ids (N,) -> vectors (N, D)."""

    param_names = ("W",)

    def __init__(self, W: np.ndarray):
        self.params = [W]
        self.grads = [np.zeros_like(W)]
        self.idx = None

    def forward(self, idx: np.ndarray) -> np.ndarray:
        (W,) = self.params
        self.idx = idx
        return W[idx]  # (N, D)

    def backward(self, dout: np.ndarray) -> None:
        (dW,) = self.grads
        dW[...] = 0
        np.add.at(dW, self.idx, dout)  # a repeated id adds up its rows
        return None


class TimeEmbedding:
    """One Embedding per step: ids (N, T) -> vectors (N, T, D)."""

    param_names = ("W",)

    def __init__(self, W: np.ndarray):
        self.params = [W]
        self.grads = [np.zeros_like(W)]
        self.layers = None

    def forward(self, xs: np.ndarray) -> np.ndarray:
        (W,) = self.params
        N, T = xs.shape
        out = np.empty((N, T, W.shape[1]), dtype=W.dtype)
        self.layers = []
        for t in range(T):
            layer = Embedding(W)
            out[:, t, :] = layer.forward(xs[:, t])
            self.layers.append(layer)
        return out

    def backward(self, dout: np.ndarray) -> None:
        grad = 0
        for t, layer in enumerate(self.layers):
            layer.backward(dout[:, t, :])
            grad += layer.grads[0]
        self.grads[0][...] = grad
        return None


# --------------------------------------------------------------------------- LSTM


class LSTM:
    """One LSTM step: (x (N, D), h_prev (N, H), c_prev (N, H)) -> (h_next, c_next)."""

    param_names = ("Wx", "Wh", "b")

    def __init__(self, Wx: np.ndarray, Wh: np.ndarray, b: np.ndarray):
        self.params = [Wx, Wh, b]
        self.grads = [np.zeros_like(Wx), np.zeros_like(Wh), np.zeros_like(b)]
        self.cache = None

    def forward(self, x, h_prev, c_prev):
        Wx, Wh, b = self.params
        N, H = h_prev.shape
        A = x @ Wx + h_prev @ Wh + b  # (N, 4H): the four gates at once
        f = sigmoid(A[:, :H])  # forget
        g = np.tanh(A[:, H : 2 * H])  # candidate
        i = sigmoid(A[:, 2 * H : 3 * H])  # input
        o = sigmoid(A[:, 3 * H :])  # output
        c_next = f * c_prev + g * i
        h_next = o * np.tanh(c_next)
        self.cache = (x, h_prev, c_prev, i, f, g, o, c_next)
        return h_next, c_next

    def backward(self, dh_next, dc_next):
        Wx, Wh, b = self.params
        x, h_prev, c_prev, i, f, g, o, c_next = self.cache
        tanh_c_next = np.tanh(c_next)
        ds = dc_next + (dh_next * o) * (1 - tanh_c_next**2)  # all that reaches c_next
        dc_prev = ds * f
        df = ds * c_prev * f * (1 - f)
        dg = ds * i * (1 - g**2)
        di = ds * g * i * (1 - i)
        do = dh_next * tanh_c_next * o * (1 - o)
        dA = np.hstack((df, dg, di, do))  # (N, 4H)
        self.grads[0][...] = x.T @ dA
        self.grads[1][...] = h_prev.T @ dA
        self.grads[2][...] = dA.sum(axis=0)
        return dA @ Wx.T, dA @ Wh.T, dc_prev


class TimeLSTM:
    """One LSTM step per input: xs (N, T, D) -> hs (N, T, H).

    With ``stateful=True`` the final (h, c) of one call is the initial state of the next, and
    ``set_state`` sets it; otherwise every call starts from zeros.  After ``backward``, ``dh``
    (N, H) holds the gradient for the initial h.
    """

    param_names = ("Wx", "Wh", "b")

    def __init__(self, Wx: np.ndarray, Wh: np.ndarray, b: np.ndarray, stateful: bool = False):
        self.params = [Wx, Wh, b]
        self.grads = [np.zeros_like(Wx), np.zeros_like(Wh), np.zeros_like(b)]
        self.layers = None
        self.h = self.c = None
        self.dh = None
        self.stateful = stateful

    def set_state(self, h: np.ndarray, c: np.ndarray | None = None) -> None:
        self.h, self.c = h, c

    def reset_state(self) -> None:
        self.h = self.c = None

    def forward(self, xs: np.ndarray) -> np.ndarray:
        Wx, Wh, b = self.params
        N, T, D = xs.shape
        H = Wh.shape[0]
        if not self.stateful or self.h is None:
            self.h = np.zeros((N, H), dtype=Wh.dtype)
        if not self.stateful or self.c is None:
            self.c = np.zeros((N, H), dtype=Wh.dtype)
        hs = np.empty((N, T, H), dtype=Wh.dtype)
        layers = []
        for t in range(T):
            layer = LSTM(Wx, Wh, b)
            self.h, self.c = layer.forward(xs[:, t, :], self.h, self.c)
            hs[:, t, :] = self.h
            layers.append(layer)
        self.layers = layers
        return hs

    def backward(self, dhs: np.ndarray) -> np.ndarray:
        Wx = self.params[0]
        N, T, H = dhs.shape
        dxs = np.empty((N, T, Wx.shape[0]), dtype=Wx.dtype)
        dh, dc = 0, 0
        grads = [0, 0, 0]
        for t in reversed(range(T)):
            layer = self.layers[t]
            dxs[:, t, :], dh, dc = layer.backward(dhs[:, t, :] + dh, dc)
            for k, grad in enumerate(layer.grads):
                grads[k] += grad
        for k, grad in enumerate(grads):
            self.grads[k][...] = grad
        self.dh = dh
        return dxs


class TimeBiLSTM:
    """Two TimeLSTMs over the same input, one reading it backwards: xs (N, T, D) -> (N, T, 2H).

    Step t of the output is [forward h_t, backward h_t]: the backward half at step t has read
    x_{T-1} ... x_t.
    """

    param_names = ("fwd.Wx", "fwd.Wh", "fwd.b", "bwd.Wx", "bwd.Wh", "bwd.b")
    lstm_class = TimeLSTM  # the fused TimeBiLSTM puts in its own

    def __init__(self, Wx1, Wh1, b1, Wx2, Wh2, b2, stateful: bool = False):
        self.forward_lstm = self.lstm_class(Wx1, Wh1, b1, stateful)
        self.backward_lstm = self.lstm_class(Wx2, Wh2, b2, stateful)
        self.params = self.forward_lstm.params + self.backward_lstm.params
        self.grads = self.forward_lstm.grads + self.backward_lstm.grads

    def forward(self, xs: np.ndarray) -> np.ndarray:
        o1 = self.forward_lstm.forward(xs)  # (N, T, H)
        o2 = self.backward_lstm.forward(xs[:, ::-1])  # (N, T, H), reversed time
        return np.concatenate((o1, o2[:, ::-1]), axis=2)  # (N, T, 2H)

    def backward(self, dhs: np.ndarray) -> np.ndarray:
        H = dhs.shape[2] // 2
        dxs1 = self.forward_lstm.backward(dhs[:, :, :H])
        dxs2 = self.backward_lstm.backward(dhs[:, ::-1, H:])
        return dxs1 + dxs2[:, ::-1]


# --------------------------------------------------------------------------- GRU


class GRU:
    """One GRU step: (x (N, D), h_prev (N, H)) -> h_next (N, H)."""

    param_names = ("Wx", "Wh", "b")

    def __init__(self, Wx: np.ndarray, Wh: np.ndarray, b: np.ndarray):
        self.params = [Wx, Wh, b]
        self.grads = [np.zeros_like(Wx), np.zeros_like(Wh), np.zeros_like(b)]
        self.cache = None

    def forward(self, x, h_prev):
        Wx, Wh, b = self.params
        H = Wh.shape[0]
        Wxz, Wxr, Wxh = Wx[:, :H], Wx[:, H : 2 * H], Wx[:, 2 * H :]
        Whz, Whr, Whh = Wh[:, :H], Wh[:, H : 2 * H], Wh[:, 2 * H :]
        bz, br, bh = b[:H], b[H : 2 * H], b[2 * H :]
        z = sigmoid(x @ Wxz + h_prev @ Whz + bz)  # update
        r = sigmoid(x @ Wxr + h_prev @ Whr + br)  # reset
        h_hat = np.tanh(x @ Wxh + (r * h_prev) @ Whh + bh)  # candidate
        h_next = (1 - z) * h_prev + z * h_hat
        self.cache = (x, h_prev, z, r, h_hat)
        return h_next

    def backward(self, dh_next):
        Wx, Wh, b = self.params
        H = Wh.shape[0]
        Wxz, Wxr, Wxh = Wx[:, :H], Wx[:, H : 2 * H], Wx[:, 2 * H :]
        Whz, Whr, Whh = Wh[:, :H], Wh[:, H : 2 * H], Wh[:, 2 * H :]
        x, h_prev, z, r, h_hat = self.cache
        dt = dh_next * z * (1 - h_hat**2)  # at the candidate's pre-activation
        dhr = dt @ Whh.T  # at r * h_prev
        dz = dh_next * (h_hat - h_prev) * z * (1 - z)  # at the update gate's
        dr = dhr * h_prev * r * (1 - r)  # at the reset gate's
        dh_prev = dh_next * (1 - z) + dhr * r + dz @ Whz.T + dr @ Whr.T
        dx = dz @ Wxz.T + dr @ Wxr.T + dt @ Wxh.T
        self.grads[0][...] = np.hstack((x.T @ dz, x.T @ dr, x.T @ dt))
        self.grads[1][...] = np.hstack((h_prev.T @ dz, h_prev.T @ dr, (r * h_prev).T @ dt))
        self.grads[2][...] = np.hstack((dz.sum(axis=0), dr.sum(axis=0), dt.sum(axis=0)))
        return dx, dh_prev


class TimeGRU:
    """One GRU step per input: xs (N, T, D) -> hs (N, T, H); ``stateful`` and ``dh`` as in
    TimeLSTM."""

    param_names = ("Wx", "Wh", "b")

    def __init__(self, Wx: np.ndarray, Wh: np.ndarray, b: np.ndarray, stateful: bool = False):
        self.params = [Wx, Wh, b]
        self.grads = [np.zeros_like(Wx), np.zeros_like(Wh), np.zeros_like(b)]
        self.layers = None
        self.h = None
        self.dh = None
        self.stateful = stateful

    def set_state(self, h: np.ndarray) -> None:
        self.h = h

    def reset_state(self) -> None:
        self.h = None

    def forward(self, xs: np.ndarray) -> np.ndarray:
        Wx, Wh, b = self.params
        N, T, D = xs.shape
        H = Wh.shape[0]
        if not self.stateful or self.h is None:
            self.h = np.zeros((N, H), dtype=Wh.dtype)
        hs = np.empty((N, T, H), dtype=Wh.dtype)
        self.layers = []
        for t in range(T):
            layer = GRU(Wx, Wh, b)
            self.h = layer.forward(xs[:, t, :], self.h)
            hs[:, t, :] = self.h
            self.layers.append(layer)
        return hs

    def backward(self, dhs: np.ndarray) -> np.ndarray:
        Wx = self.params[0]
        N, T, H = dhs.shape
        dxs = np.empty((N, T, Wx.shape[0]), dtype=Wx.dtype)
        dh = 0
        grads = [0, 0, 0]
        for t in reversed(range(T)):
            layer = self.layers[t]
            dxs[:, t, :], dh = layer.backward(dhs[:, t, :] + dh)
            for k, grad in enumerate(layer.grads):
                grads[k] += grad
        for k, grad in enumerate(grads):
            self.grads[k][...] = grad
        self.dh = dh
        return dxs


# --------------------------------------------------------------------------- output layers


class TimeAffine:
    """The same affine map at every step: x (N, T, D) -> x @ W + b (N, T, M)."""

    param_names = ("W", "b")

    def __init__(self, W: np.ndarray, b: np.ndarray):
        self.params = [W, b]
        self.grads = [np.zeros_like(W), np.zeros_like(b)]
        self.x = None

    def forward(self, x: np.ndarray) -> np.ndarray:
        W, b = self.params
        N, T, D = x.shape
        self.x = x
        out = x.reshape(N * T, D) @ W  # all steps in one product
        out += b
        return out.reshape(N, T, -1)

    def backward(self, dout: np.ndarray) -> np.ndarray:
        W, b = self.params
        N, T, D = self.x.shape
        dout = dout.reshape(N * T, -1)
        self.grads[0][...] = self.x.reshape(N * T, D).T @ dout
        self.grads[1][...] = dout.sum(axis=0)
        return (dout @ W.T).reshape(N, T, D)


class TimeSoftmaxWithLoss:
    """Softmax cross-entropy at every step, averaged over the counted positions.

    forward(xs (N, T, V) scores, ts (N, T) ids or (N, T, V) one-hot, mask=None) -> loss.
    A position counts when ``mask`` (bool (N, T)) is True there; without a mask, when its
    label differs from ``ignore_label``.  The loss is the mean over counted positions.
    """

    def __init__(self, ignore_label: int = -1):
        self.params, self.grads = [], []
        self.ignore_label = ignore_label
        self.cache = None

    def forward(self, xs: np.ndarray, ts: np.ndarray, mask: np.ndarray | None = None) -> float:
        N, T, V = xs.shape
        if ts.ndim == 3:
            ts = ts.argmax(axis=2)
        if mask is None:
            mask = ts != self.ignore_label
        ts = np.where(mask, ts, 0).reshape(N * T)  # any valid id at uncounted positions
        mask = mask.reshape(N * T)
        count = max(int(mask.sum()), 1)
        rows = np.arange(N * T)

        ys = softmax(xs.reshape(N * T, V))  # (NT, V)
        log_p = np.log(np.maximum(ys[rows, ts], np.finfo(ys.dtype).tiny))
        loss = -float(log_p[mask].sum()) / count
        self.cache = (ts, ys, mask, count, (N, T, V))
        return loss

    def backward(self, dout: float = 1.0) -> np.ndarray:
        ts, ys, mask, count, (N, T, V) = self.cache
        dx = ys.copy()
        dx[np.arange(N * T), ts] -= 1
        dx *= (dout / count) * mask[:, None]
        return dx.reshape(N, T, V)


# --------------------------------------------------------------------------- attention


class WeightSum:
    """The context vector: the rows of hs weighted by a. (hs (N, T, H), a (N, T)) -> (N, H)."""

    def __init__(self):
        self.params, self.grads = [], []
        self.cache = None

    def forward(self, hs: np.ndarray, a: np.ndarray) -> np.ndarray:
        ar = a[:, :, None]  # (N, T, 1)
        self.cache = (hs, ar)
        return (hs * ar).sum(axis=1)  # (N, H)

    def backward(self, dc: np.ndarray):
        hs, ar = self.cache
        dt = dc[:, None, :]  # (N, 1, H), the same at every step
        dhs = dt * ar  # (N, T, H)
        da = (dt * hs).sum(axis=2)  # (N, T)
        return dhs, da


class AttentionWeight:
    """Softmax of dot-product scores between h and every row of hs: (hs (N,T,H), h (N,H)) -> (N,T)."""

    def __init__(self):
        self.params, self.grads = [], []
        self.cache = None

    def forward(self, hs: np.ndarray, h: np.ndarray) -> np.ndarray:
        hr = h[:, None, :]  # (N, 1, H)
        s = (hs * hr).sum(axis=2)  # (N, T) scores
        a = softmax(s)
        self.cache = (hs, hr, a)
        return a

    def backward(self, da: np.ndarray):
        hs, hr, a = self.cache
        dt = softmax_backward(a, da)[:, :, None]  # (N, T, 1) at the scores
        dhs = dt * hr  # (N, T, H)
        dh = (dt * hs).sum(axis=1)  # (N, H)
        return dhs, dh


class Attention:
    """Context vector for one decoder state: (hs (N, T, H), h (N, H)) -> (N, H).

    ``attention_weight`` (N, T) keeps the weights of the last forward.
    """

    def __init__(self):
        self.params, self.grads = [], []
        self.attention_weight_layer = AttentionWeight()
        self.weight_sum_layer = WeightSum()
        self.attention_weight = None

    def forward(self, hs: np.ndarray, h: np.ndarray) -> np.ndarray:
        a = self.attention_weight_layer.forward(hs, h)
        self.attention_weight = a
        return self.weight_sum_layer.forward(hs, a)

    def backward(self, dc: np.ndarray):
        dhs0, da = self.weight_sum_layer.backward(dc)
        dhs1, dh = self.attention_weight_layer.backward(da)
        return dhs0 + dhs1, dh


class TimeAttention:
    """One Attention per decoder step: (hs_enc (N, S, H), hs_dec (N, T, H)) -> contexts (N, T, H).

    ``attention_weights`` (N, T, S) keeps the weights of the last forward (row t: how step t
    spreads over the S source steps).
    """

    def __init__(self):
        self.params, self.grads = [], []
        self.layers = None
        self.attention_weights = None

    def forward(self, hs_enc: np.ndarray, hs_dec: np.ndarray) -> np.ndarray:
        N, T, H = hs_dec.shape
        out = np.empty_like(hs_dec)
        self.layers = []
        for t in range(T):
            layer = Attention()
            out[:, t, :] = layer.forward(hs_enc, hs_dec[:, t, :])
            self.layers.append(layer)
        self.attention_weights = np.stack([layer.attention_weight for layer in self.layers], 1)
        return out

    def backward(self, dout: np.ndarray):
        dhs_enc = 0
        dhs_dec = np.empty_like(dout)
        for t, layer in enumerate(self.layers):
            dhs, dh = layer.backward(dout[:, t, :])
            dhs_enc += dhs
            dhs_dec[:, t, :] = dh
        return dhs_enc, dhs_dec
