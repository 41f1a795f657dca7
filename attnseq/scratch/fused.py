"""The fused forms of the book's Time layers, which the NumPy engine trains and decodes with.

Each class here computes what its twin of the same name in scratch/layers.py computes (the
book's layers, the ones to read), with fewer, larger NumPy calls: TimeEmbedding embeds every
step at once; TimeLSTM runs each step as one BLAS product on reused, aligned buffers and
computes the left padding the samples share once per batch; TimeBiLSTM is two of those;
TimeAttention scores every decoder step in batched products.  TimeAffine and
TimeSoftmaxWithLoss are the book's own (already one product per call), so that this module is
a whole layer set for the models (``build_model(..., layers=fused)``).  They live apart from
the book's so that layers.py reads like the book, and tests/test_scratch_fused.py checks each
fused layer against its twin in float64: outputs and every gradient.

Conventions as in scratch/layers.py (gate order f, g, i, o; weights multiply from the right;
the dtype is the weights').
"""

from __future__ import annotations

import numpy as np

from .layers import Embedding, TimeAffine, TimeSoftmaxWithLoss, softmax_backward
from .layers import TimeBiLSTM as BookTimeBiLSTM
from .layers import TimeLSTM as BookTimeLSTM

__all__ = ["empty", "TimeEmbedding", "TimeLSTM", "TimeBiLSTM", "TimeAttention", "TimeAffine", "TimeSoftmaxWithLoss"]


# --------------------------------------------------------------------------- buffers


def empty(shape, dtype=np.float32) -> np.ndarray:
    """An uninitialised array whose data starts on a 64-byte boundary."""
    # NumPy's large allocations start 16 bytes past a page boundary; float32 ufuncs run about
    # twice as fast on data aligned to the 64-byte vector width.
    shape = (shape,) if np.isscalar(shape) else tuple(shape)
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    raw = np.empty(nbytes + 64, dtype=np.uint8)
    start = -raw.ctypes.data % 64
    return raw[start : start + nbytes].view(dtype).reshape(shape)


class _Workspace:
    """Arrays kept from call to call, so that repeated calls of one shape allocate nothing."""

    def __init__(self):
        self._arrays: dict[str, np.ndarray] = {}

    def get(self, name: str, shape: tuple | None, dtype) -> np.ndarray:
        """The array called name, (re)allocated unless it has this shape and dtype;
        shape None: the array as it is."""
        a = self._arrays.get(name)
        if shape is None:
            return a
        if a is None or a.shape != shape or a.dtype != dtype:
            a = self._arrays[name] = empty(shape, dtype)
        return a


def _flat_view(buf: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """A C-contiguous (rows, columns) array over the start of the flat buffer ``buf``."""
    rows, columns = int(shape[0]), int(shape[1])
    return buf[: rows * columns].reshape(rows, columns)


class _PrefixPlan:
    """Which columns run at each step when samples start with a shared prefix.

    ``shared[n]`` says how many leading steps of sample n are the shared prefix (the same
    inputs for every sample over their common length, from the same zero state).  Those steps
    are computed once, in an extra column 0; column 1 + j holds sample ``order[j]`` (samples
    sorted by prefix length), and step t runs the first ``width[t]`` columns: the prefix column
    and every sample whose own steps have begun.  A sample enters by copying the prefix
    column's state.  Without sharing, the columns are the samples and every width is N.
    """

    def __init__(self, shared: np.ndarray | None, N: int, T: int):
        self.shared = shared is not None and bool(np.any(np.asarray(shared) > 0))
        if not self.shared:
            self.order = self.inverse = None
            self.s0, self.columns = 0, N
            self.width = np.full(T + 1, N, dtype=np.int64)
            return
        shared = np.minimum(np.asarray(shared, dtype=np.int64), T)
        self.order = np.argsort(shared, kind="stable")  # by prefix length
        self.inverse = np.empty(N, dtype=np.int64)
        self.inverse[self.order] = np.arange(N)
        self.s0, self.columns = 1, N + 1
        active = np.searchsorted(shared[self.order], np.arange(T), side="right")  # p <= t
        self.width = np.empty(T + 1, dtype=np.int64)
        self.width[:T] = 1 + active
        self.width[T] = self.width[T - 1]
        self.representative = int(self.order[-1])  # a sample with the longest

    def to_columns(self, a: np.ndarray) -> np.ndarray:
        """(N, T, F) in sample order -> (T, F, columns), column 0 (the prefix) left as
        the representative sample's values."""
        if not self.shared:
            return a.transpose(1, 2, 0)
        idx = np.concatenate(([self.representative], self.order))
        return a[idx].transpose(1, 2, 0)

    def to_samples(self, a: np.ndarray) -> np.ndarray:
        """(T, F, columns) -> (N, T, F) in sample order (the prefix column dropped)."""
        a = a.transpose(2, 0, 1)
        return a if not self.shared else a[self.s0 + self.inverse]


# --------------------------------------------------------------------------- embedding


class TimeEmbedding(Embedding):
    """The book's TimeEmbedding as one Embedding over every step: ids (N, T) -> (N, T, D)."""

    def backward(self, dout: np.ndarray) -> None:
        (dW,) = self.grads
        dW[...] = 0
        D = dW.shape[1]
        np.add.at(dW, self.idx.ravel(), dout.reshape(-1, D))  # repeated ids add up
        return None


# --------------------------------------------------------------------------- LSTM


def _split4(A: np.ndarray, H: int):
    """The f, g, i, o row blocks of a fused gate array (4H, columns)."""
    return A[:H], A[H : 2 * H], A[2 * H : 3 * H], A[3 * H :]


def _lstm_step(A, c_prev, c, tanh_c, h, tmp):
    """One LSTM step, in place, on feature-major arrays (features, columns).

    A (4H, columns) holds the fused gate pre-activations (row blocks f, g, i, o) with the f, i
    and o blocks halved, and is overwritten by the gate values; c, tanh_c and h receive the new
    cell, tanh(cell) and hidden state.
    """
    # sigmoid(x) = (1 + tanh(x / 2)) / 2, so with f, i, o halved one tanh activates all gates.
    H = c.shape[0]
    f, g, i, o = _split4(A, H)
    io = A[2 * H :]  # i and o side by side
    np.tanh(A, out=A)
    for gate in (f, io):  # (1 + tanh(x / 2)) / 2
        gate *= 0.5
        gate += 0.5
    np.multiply(f, c_prev, out=c)  # c_prev may be c itself (inference updates in place)
    np.multiply(g, i, out=tmp)
    c += tmp  # c = f * c_prev + g * i
    np.tanh(c, out=tanh_c)
    np.multiply(o, tanh_c, out=h)  # h = o * tanh(c)


def _lstm_step_backward(dh, dc, gates, dgates, c_prev, tanh_c, dc_prev, tmp):
    """Backward of one LSTM step, in place.

    dh and dc are the gradients reaching the step's h and c; gates = (f, g, i, o) the gate
    values of the forward pass.  Writes the gradients at the gate pre-activations into
    dgates = (df, dg, di, do) and the gradient for c_prev into dc_prev; dc is overwritten.
    """
    f, g, i, o = gates
    df, dg, di, do = dgates
    # do = dh * tanh(c) * o (1 - o)
    np.multiply(dh, tanh_c, out=do)
    np.subtract(1, o, out=tmp)
    tmp *= o
    do *= tmp
    # ds = dc + dh * o * (1 - tanh(c)^2): everything reaching the new cell state
    np.multiply(tanh_c, tanh_c, out=tmp)
    np.subtract(1, tmp, out=tmp)
    tmp *= o
    tmp *= dh
    ds = dc
    ds += tmp
    np.multiply(ds, f, out=dc_prev)
    # df = ds * c_prev * f (1 - f)
    np.subtract(1, f, out=tmp)
    tmp *= f
    np.multiply(ds, c_prev, out=df)
    df *= tmp
    # di = ds * g * i (1 - i)
    np.subtract(1, i, out=tmp)
    tmp *= i
    np.multiply(ds, g, out=di)
    di *= tmp
    # dg = ds * i * (1 - g^2)
    np.multiply(g, g, out=tmp)
    np.subtract(1, tmp, out=tmp)
    np.multiply(ds, i, out=dg)
    dg *= tmp


class TimeLSTM(BookTimeLSTM):
    """The book's TimeLSTM in one BLAS product per step: xs (N, T, D) -> hs (N, T, H).

    ``stateful``, ``set_state`` and ``reset_state`` as in the book's; after ``backward``, ``dh``
    (N, H) holds the gradient for the initial h (None when the call started from zeros).
    ``forward(xs, cache=False)`` keeps only what the next step needs (no backward then), and
    reuses the prepared weight while the parameters are unchanged.

    ``forward(xs, shared=p)`` declares that the first p[n] inputs of sample n are a prefix
    shared by all samples (the same vectors, step by step, wherever two prefixes overlap: the
    left padding of the book's reversed questions) and that the state starts at zero.  The
    prefix is then computed once for the batch, not once per sample: the outputs and parameter
    gradients are the same, and ``backward`` returns the input gradient of every shared step
    summed onto one sample (the one with the longest prefix), zero on the others, which is what
    an embedding of the shared ids needs.
    """

    # How it runs (the maths is the book's): each step is one matrix product A_t = W^T z_t,
    # where z_t = [h_{t-1}; x_t; 1] holds one column per sample and W = [Wh; Wx; b] stacks the
    # three parameters, so the input projection, the recurrence and the bias are a single BLAS
    # call; in the backward pass W dA_t gives dh_{t-1} and dx_t together.  Work arrays are
    # "feature-major", (features, columns), so that each gate is a contiguous block of A_t:
    # element-wise arithmetic runs on whole contiguous blocks instead of strided row slices.
    # Step t's arrays are (features, width[t]) views carved from flat buffers that are
    # allocated once and reused from call to call (see _PrefixPlan for the widths).

    def __init__(self, Wx: np.ndarray, Wh: np.ndarray, b: np.ndarray, stateful: bool = False):
        super().__init__(Wx, Wh, b, stateful)  # params, grads, h, c (N, H), dh
        self._cache = None
        self._ws = _Workspace()
        self._forward_weight_of = None  # params the inference weight is from

    def _padded_k(self) -> int:
        # K = H + D + 1 padded with zero rows to a multiple of 32: OpenBLAS's kernels run an
        # inner size that is a multiple of their block faster than one just past it
        # (bench/scratch_speed.py measures the layer).
        Wx, Wh, _ = self.params
        return -(-(Wh.shape[0] + Wx.shape[0] + 1) // 32) * 32

    def _backward_weight(self) -> np.ndarray:
        """W = [Wh; Wx; b; 0], (K, 4H)."""
        Wx, Wh, b = self.params
        D, H = Wx.shape[0], Wh.shape[0]
        W = self._ws.get("W", (self._padded_k(), 4 * H), Wh.dtype)
        W[:H] = Wh
        W[H : H + D] = Wx
        W[H + D] = b
        W[H + D + 1 :] = 0
        return W

    def _forward_weight(self, reuse: bool = False) -> np.ndarray:
        """W^T (4H, K) with the f, i, o rows halved (see _lstm_step).  With ``reuse``, the
        array of the previous call is returned if the parameters have not changed since."""
        if (
            reuse
            and self._forward_weight_of is not None
            and all(np.array_equal(p, q) for p, q in zip(self.params, self._forward_weight_of))
        ):
            return self._ws.get("WT", None, None)
        Wx, Wh, b = self.params
        D, H = Wx.shape[0], Wh.shape[0]
        WT = self._ws.get("WT", (4 * H, self._padded_k()), Wh.dtype)
        W = WT.T  # (K, 4H) view
        W[:H] = Wh
        W[H : H + D] = Wx
        W[H + D] = b
        W[H + D + 1 :] = 0
        WT[:H] *= 0.5  # f
        WT[2 * H :] *= 0.5  # i, o
        self._forward_weight_of = [p.copy() for p in self.params] if reuse else None
        return WT

    def _carve(self, name: str, rows: int, widths, dtype) -> list[np.ndarray]:
        """Arrays (rows, w) for each w in widths, consecutive in one reused flat buffer."""
        sizes = [rows * int(w) for w in widths]
        buf = self._ws.get(name, (sum(sizes),), dtype)
        out, start = [], 0
        for size, w in zip(sizes, widths):
            out.append(buf[start : start + size].reshape(rows, int(w)))
            start += size
        return out

    def forward(self, xs: np.ndarray, cache: bool = True, shared: np.ndarray | None = None) -> np.ndarray:
        Wx, Wh, b = self.params
        N, T, D = xs.shape
        H = Wh.shape[0]
        dtype = Wh.dtype
        plan = _PrefixPlan(shared, N, T)
        h0 = self.h if self.stateful else None
        c0 = self.c if self.stateful else None
        if plan.shared and (h0 is not None or c0 is not None):
            raise ValueError("a shared prefix needs the zero initial state")
        WT = self._forward_weight(reuse=not cache)  # (4H, K)
        K = WT.shape[1]
        width = plan.width
        mode = "train" if cache else "infer"

        def carve(name, rows, widths):
            return self._carve(f"{mode}.{name}", rows, widths, dtype)

        # Z[t] = z_t = [h_{t-1}; x_t; 1; 0] (K, width[t]); step t writes h_t into Z[t + 1][:H].
        Z = carve("Z", K, width)
        x_cols = plan.to_columns(xs)  # (T, D, columns)
        for t in range(T):
            Z[t][H : H + D] = x_cols[t][:, : width[t]]
            Z[t][H + D] = 1
            Z[t][H + D + 1 :] = 0
        if h0 is None:
            Z[0][:H] = 0
        else:
            Z[0][:H] = h0.T
        # cs[t] is c_{t-1} (H, width[t]); cs[0] the initial c.  Inference keeps two.
        if cache:
            A = carve("A", 4 * H, width[:T])  # gate pre-activations, then values
            tanh_cs = carve("tanh_c", H, width[:T])
            cs = carve("c", H, width)
        else:
            A = [_flat_view(self._ws.get("infer.A", (4 * H * plan.columns,), dtype), (4 * H, w)) for w in width[:T]]
            tanh_cs = [_flat_view(self._ws.get("infer.tanh_c", (H * plan.columns,), dtype), (H, w)) for w in width[:T]]
            cbufs = [self._ws.get(f"infer.c{k}", (H * plan.columns,), dtype) for k in (0, 1)]
            cs = [_flat_view(cbufs[t % 2], (H, w)) for t, w in enumerate(width)]
        tmp_buf = self._ws.get(f"{mode}.tmp", (H * plan.columns,), dtype)
        if c0 is None:
            cs[0][...] = 0
        else:
            cs[0][...] = c0.T

        for t in range(T):
            w, w_next = width[t], width[t + 1]
            if t == 0 and h0 is None:  # h = 0 adds nothing: skip its rows
                np.matmul(WT[:, H:], Z[0][H:], out=A[t])
            else:
                np.matmul(WT, Z[t], out=A[t])  # (4H, w) ~ W^T [h; x; 1]
            _lstm_step(A[t], cs[t], cs[t + 1][:, :w], tanh_cs[t], Z[t + 1][:H, :w], _flat_view(tmp_buf, (H, w)))
            if w_next > w:  # samples whose own steps begin
                Z[t + 1][:H, w:w_next] = Z[t + 1][:H, :1]
                cs[t + 1][:, w:w_next] = cs[t + 1][:, :1]

        # Every column's h_t: its own once begun, the prefix column's before.
        hs = np.empty((plan.columns, T, H), dtype)  # column order
        for t in range(T):
            w = width[t]
            hs[:w, t, :] = Z[t + 1][:H, :w].T
            hs[w:, t, :] = Z[t + 1][:H, 0]
        if plan.shared:
            hs = hs[plan.s0 + plan.inverse]  # (N, T, H)
        c_last = np.empty((1, H, plan.columns), dtype)
        c_last[0][:, : width[T]] = cs[T]
        c_last[0][:, width[T] :] = cs[T][:, :1]
        self.h = hs[:, -1].copy()
        self.c = np.ascontiguousarray(plan.to_samples(c_last)[:, 0])
        self._cache = (plan, Z, A, cs, tanh_cs, h0 is None) if cache else None
        return hs

    def backward(self, dhs: np.ndarray) -> np.ndarray:
        Wx, Wh, b = self.params
        plan, Z, gates, cs, tanh_cs, zero_start = self._cache
        N, T, H = dhs.shape
        D = Wx.shape[0]
        dtype = gates[0].dtype
        W = self._backward_weight()  # (K, 4H)
        K = W.shape[0]
        width, columns = plan.width, plan.columns

        def buf(name, rows):  # flat, room for (rows, columns)
            return self._ws.get(f"grad.{name}", (rows * columns,), dtype)

        dh_cols = plan.to_columns(dhs)  # (T, H, columns); a copy when shared
        if plan.shared:
            dh_cols[:, :, 0] = 0  # the prefix column has no output of its own
        dx_cols = np.zeros((T, D, columns), dtype)
        dWT = self._ws.get("grad.dWT", (4 * H, K), dtype)  # sum over steps of dA z^T
        step_dWT = self._ws.get("grad.step_dWT", (4 * H, K), dtype)
        dWT[...] = 0
        # From step t + 1: the gradients at h_t (rows :H of dZ) and at c_t, (., width[t + 1]).
        # Two buffers each, swapped every step: one holds step t + 1's, the other receives t's.
        dZ_bufs, dc_bufs, k = (buf("dZ0", K), buf("dZ1", K)), (buf("dc0", H), buf("dc1", H)), 0
        dZ_next = _flat_view(dZ_bufs[k], (K, width[T]))
        dc_next = _flat_view(dc_bufs[k], (H, width[T]))
        dZ_next[:H] = 0
        dc_next[...] = 0
        for t in reversed(range(T)):
            w, w_next = width[t], width[t + 1]
            dh = _flat_view(buf("dh", H), (H, w))
            dc = _flat_view(buf("dc", H), (H, w))
            np.add(dh_cols[t][:, :w], dZ_next[:H, :w], out=dh)
            dc[...] = dc_next[:, :w]
            if plan.shared:
                # h_t and c_t of the prefix column are also those of the samples still in the
                # prefix (their output gradients) and of the samples entering at t + 1 (what
                # flows back from their first own step)
                dh[:, 0] += dh_cols[t][:, w:].sum(axis=1)
                dh[:, 0] += dZ_next[:H, w:w_next].sum(axis=1)
                dc[:, 0] += dc_next[:, w:w_next].sum(axis=1)
            dA = _flat_view(buf("dA", 4 * H), (4 * H, w))
            dc_prev = _flat_view(dc_bufs[1 - k], (H, w))
            _lstm_step_backward(
                dh,
                dc,
                _split4(gates[t], H),
                _split4(dA, H),
                cs[t],
                tanh_cs[t],
                dc_prev,
                _flat_view(buf("tmp", H), (H, w)),
            )
            dZ = _flat_view(dZ_bufs[1 - k], (K, w))
            r = H if t == 0 and zero_start else 0  # rows of z_0 that were not zero
            np.matmul(W[r:], dA, out=dZ[r:])
            dx_cols[t][:, :w] = dZ[H : H + D]
            np.matmul(dA, Z[t][r:].T, out=step_dWT[:, r:])
            dWT[:, r:] += step_dWT[:, r:]
            dZ_next, dc_next, k = dZ, dc_prev, 1 - k

        dWx, dWh, db = self.grads
        dWh[...] = dWT[:, :H].T
        dWx[...] = dWT[:, H : H + D].T
        db[...] = dWT[:, H + D]
        dxs = plan.to_samples(dx_cols)  # (N, T, D); a copy when shared
        if plan.shared:
            dxs[plan.representative] += dx_cols[:, :, 0]
        if zero_start:  # (N, H) for the initial state
            self.dh = None
        else:
            self.dh = np.ascontiguousarray(dZ_next[:H].T)
        return dxs


class TimeBiLSTM(BookTimeBiLSTM):
    """The book's TimeBiLSTM of two fused TimeLSTMs: xs (N, T, D) -> (N, T, 2H)."""

    lstm_class = TimeLSTM

    def forward(self, xs: np.ndarray, cache: bool = True, shared: np.ndarray | None = None) -> np.ndarray:
        """``cache`` and ``shared`` as in TimeLSTM; only the forward direction reads the shared
        prefix first."""
        o1 = self.forward_lstm.forward(xs, cache, shared)  # (N, T, H)
        o2 = self.backward_lstm.forward(xs[:, ::-1], cache)  # (N, T, H), reversed time
        return np.concatenate((o1, o2[:, ::-1]), axis=2)  # (N, T, 2H)


FUSED_LSTMS = (TimeLSTM, TimeBiLSTM)  # the layers whose forward also takes cache and shared


# --------------------------------------------------------------------------- attention


class TimeAttention:
    """The book's TimeAttention with every decoder step at once, in batched matrix products.

    (hs_enc (N, S, H), hs_dec (N, T, H)) -> contexts (N, T, H); ``attention_weights`` (N, T, S)
    keeps the weights of the last forward (row t: how step t spreads over the S source steps).
    """

    def __init__(self):
        self.params, self.grads = [], []
        self.attention_weights = None
        self.cache = None

    def forward(self, hs_enc: np.ndarray, hs_dec: np.ndarray) -> np.ndarray:
        s = hs_dec @ hs_enc.transpose(0, 2, 1)  # (N, T, S) dot-product scores
        s -= s.max(axis=-1, keepdims=True)  # softmax over the source, in place
        a = np.exp(s, out=s)  # (N, T, S)
        a /= a.sum(axis=-1, keepdims=True)
        self.attention_weights = a
        self.cache = (hs_enc, hs_dec, a)
        return a @ hs_enc  # (N, T, H)

    def backward(self, dout: np.ndarray):
        hs_enc, hs_dec, a = self.cache
        da = dout @ hs_enc.transpose(0, 2, 1)  # (N, T, S)
        ds = softmax_backward(a, da)  # (N, T, S)
        dhs_enc = a.transpose(0, 2, 1) @ dout  # (N, S, H) through the weighted sum
        dhs_enc += ds.transpose(0, 2, 1) @ hs_dec  # (N, S, H) through the scores
        dhs_dec = ds @ hs_enc  # (N, T, H)
        return dhs_enc, dhs_dec
