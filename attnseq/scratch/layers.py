"""NumPy layers for seq2seq with attention, after chapters 7-8 of "Deep Learning from Scratch 2".

Every layer keeps two lists, ``params`` and ``grads`` (arrays of the same shapes; ``backward``
overwrites the gradients in place with ``[...] =``), and has ``forward`` and ``backward``.
``backward`` returns the gradients of the floating-point inputs of ``forward``, in order.

Conventions:

* N batch size, T decoder (or generic) steps, S encoder steps, D input width, H hidden width,
  V vocabulary size.  Sequences are batch-major, ``(N, T, ...)``, as in the book.
* Weights multiply from the right: ``y = x @ W + b`` with ``W`` of shape ``(in, out)``.
* The fused LSTM weights hold the four gates side by side in the order f, g, i, o
  (forget, candidate, input, output): ``Wx (D, 4H)``, ``Wh (H, 4H)``, ``b (4H,)``.
* The fused GRU weights hold z, r, h~ (update, reset, candidate): ``Wx (D, 3H)``, ``Wh (H, 3H)``,
  ``b (3H,)``; the candidate is ``tanh(x Wx_h + (r * h) Wh_h + b_h)`` and the new state is
  ``(1 - z) * h + z * h~``.
* The dtype is that of the weights handed to the constructor (float32 for training, float64 for
  gradient checks); parameter-free layers follow their inputs.
"""
from __future__ import annotations

import numpy as np

__all__ = [
    "empty", "sigmoid", "softmax",
    "Embedding", "TimeEmbedding", "LSTM", "TimeLSTM", "GRU", "TimeGRU", "TimeAffine",
    "TimeSoftmaxWithLoss", "WeightSum", "AttentionWeight", "Attention", "TimeAttention",
    "TimeBiLSTM",
]


# --------------------------------------------------------------------------- helpers

def empty(shape, dtype=np.float32) -> np.ndarray:
    """An uninitialised array whose data starts on a 64-byte boundary."""
    # NumPy's large allocations start 16 bytes past a page boundary; float32 ufuncs run about
    # twice as fast on data aligned to the 64-byte vector width.
    shape = (shape,) if np.isscalar(shape) else tuple(shape)
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    raw = np.empty(nbytes + 64, dtype=np.uint8)
    start = -raw.ctypes.data % 64
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def sigmoid(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Logistic function 1 / (1 + exp(-x)), elementwise."""
    # As 0.5 * tanh(x / 2) + 0.5: no overflow for large |x|, and tanh is fast in NumPy.
    out = np.multiply(x, 0.5, out=out)
    np.tanh(out, out=out)
    out *= 0.5
    out += 0.5
    return out


def softmax(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Softmax over the last axis."""
    out = np.subtract(x, x.max(axis=-1, keepdims=True), out=out)
    np.exp(out, out=out)
    out /= out.sum(axis=-1, keepdims=True)
    return out


def _softmax_backward(y: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """Gradient at the scores of y = softmax(s) over the last axis, given dL/dy."""
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
        self.idx = idx
        return self.params[0][idx]                      # idx.shape + (D,)

    def backward(self, dout: np.ndarray) -> None:
        dW, = self.grads
        dW[...] = 0
        D = dW.shape[1]
        np.add.at(dW, self.idx.ravel(), dout.reshape(-1, D))   # repeated ids add up
        return None


class TimeEmbedding(Embedding):
    """Embedding of a whole batch of sequences at once: ids (N, T) -> vectors (N, T, D)."""


# --------------------------------------------------------------------------- LSTM

def _split4(A: np.ndarray, H: int, axis: int):
    """The f, g, i, o blocks of a fused gate array, along ``axis``."""
    if axis == 0:
        return A[:H], A[H:2 * H], A[2 * H:3 * H], A[3 * H:]
    return A[:, :H], A[:, H:2 * H], A[:, 2 * H:3 * H], A[:, 3 * H:]


def _lstm_step(A, c_prev, c, tanh_c, h, tmp, axis):
    """One LSTM step, in place.

    A holds the fused gate pre-activations (f, g, i, o along ``axis``) with the f, i and o
    blocks halved, and is overwritten by the gate values; c, tanh_c and h receive the new cell,
    tanh(cell) and hidden state.
    """
    # sigmoid(x) = (1 + tanh(x / 2)) / 2, so with f, i, o halved one tanh activates all gates.
    H = c.shape[axis]
    f, g, i, o = _split4(A, H, axis)
    io = A[2 * H:] if axis == 0 else A[:, 2 * H:]     # i and o side by side
    np.tanh(A, out=A)
    for gate in (f, io):                               # (1 + tanh(x / 2)) / 2
        gate *= 0.5
        gate += 0.5
    np.multiply(f, c_prev, out=c)      # c_prev may be c itself (inference updates in place)
    np.multiply(g, i, out=tmp)
    c += tmp                           # c = f * c_prev + g * i
    np.tanh(c, out=tanh_c)
    np.multiply(o, tanh_c, out=h)      # h = o * tanh(c)


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
        A = x @ Wx + h_prev @ Wh + b                   # (N, 4H), becomes the gate values
        A[:, :H] *= 0.5                                # f, i, o halved for _lstm_step
        A[:, 2 * H:] *= 0.5
        c, tanh_c, h = (np.empty((N, H), A.dtype) for _ in range(3))
        _lstm_step(A, c_prev, c, tanh_c, h, np.empty_like(c), axis=1)
        self.cache = (x, h_prev, c_prev, A, tanh_c)
        return h, c

    def backward(self, dh_next, dc_next):
        Wx, Wh, b = self.params
        x, h_prev, c_prev, gates, tanh_c = self.cache
        H = h_prev.shape[1]
        dA = np.empty_like(gates)                      # (N, 4H)
        dc = np.zeros_like(c_prev)
        dc += dc_next                                  # dc_next may be the scalar 0
        dc_prev = np.empty_like(c_prev)
        _lstm_step_backward(dh_next, dc, _split4(gates, H, 1), _split4(dA, H, 1), c_prev,
                            tanh_c, dc_prev, np.empty_like(dc))
        self.grads[0][...] = x.T @ dA
        self.grads[1][...] = h_prev.T @ dA
        self.grads[2][...] = dA.sum(axis=0)
        return dA @ Wx.T, dA @ Wh.T, dc_prev


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
    return buf[:rows * columns].reshape(rows, columns)


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
        self.order = np.argsort(shared, kind="stable")            # by prefix length
        self.inverse = np.empty(N, dtype=np.int64)
        self.inverse[self.order] = np.arange(N)
        self.s0, self.columns = 1, N + 1
        active = np.searchsorted(shared[self.order], np.arange(T), side="right")  # p <= t
        self.width = np.empty(T + 1, dtype=np.int64)
        self.width[:T] = 1 + active
        self.width[T] = self.width[T - 1]
        self.representative = int(self.order[-1])                 # a sample with the longest

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


class TimeLSTM:
    """An LSTM run over T steps: xs (N, T, D) -> hs (N, T, H).

    With ``stateful=True`` the final (h, c) of one call is the initial state of the next, and
    ``set_state`` sets it; otherwise every call starts from zeros.  After ``backward``, ``dh``
    (N, H) holds the gradient for the initial h (None when the call started from zeros).
    ``forward(xs, cache=False)`` keeps only what the next step needs (no backward then).

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
    # element-wise arithmetic on whole blocks runs about three times faster than on row slices.
    # Step t's arrays are (features, width[t]) views carved from flat buffers that are
    # allocated once and reused from call to call (see _PrefixPlan for the widths).

    param_names = ("Wx", "Wh", "b")

    def __init__(self, Wx: np.ndarray, Wh: np.ndarray, b: np.ndarray, stateful: bool = False):
        self.params = [Wx, Wh, b]
        self.grads = [np.zeros_like(Wx), np.zeros_like(Wh), np.zeros_like(b)]
        self.stateful = stateful
        self.h = self.c = None                         # (N, H) state carried between calls
        self.dh = None
        self._cache = None
        self._ws = _Workspace()
        self._forward_weight_of = None                 # params the inference weight is from

    def set_state(self, h: np.ndarray, c: np.ndarray | None = None) -> None:
        self.h, self.c = h, c

    def reset_state(self) -> None:
        self.h = self.c = None

    def _padded_k(self) -> int:
        # K = H + D + 1 padded with zero rows to a multiple of 32: OpenBLAS runs an inner size
        # of 273 about 20% slower than one of 288.
        Wx, Wh, _ = self.params
        return -(-(Wh.shape[0] + Wx.shape[0] + 1) // 32) * 32

    def _backward_weight(self) -> np.ndarray:
        """W = [Wh; Wx; b; 0], (K, 4H)."""
        Wx, Wh, b = self.params
        D, H = Wx.shape[0], Wh.shape[0]
        W = self._ws.get("W", (self._padded_k(), 4 * H), Wh.dtype)
        W[:H] = Wh
        W[H:H + D] = Wx
        W[H + D] = b
        W[H + D + 1:] = 0
        return W

    def _forward_weight(self, reuse: bool = False) -> np.ndarray:
        """W^T (4H, K) with the f, i, o rows halved (see _lstm_step).  With ``reuse``, the
        array of the previous call is returned if the parameters have not changed since."""
        if reuse and self._forward_weight_of is not None and all(
                np.array_equal(p, q) for p, q in zip(self.params, self._forward_weight_of)):
            return self._ws.get("WT", None, None)
        Wx, Wh, b = self.params
        D, H = Wx.shape[0], Wh.shape[0]
        WT = self._ws.get("WT", (4 * H, self._padded_k()), Wh.dtype)
        W = WT.T                                       # (K, 4H) view
        W[:H] = Wh
        W[H:H + D] = Wx
        W[H + D] = b
        W[H + D + 1:] = 0
        WT[:H] *= 0.5                                  # f
        WT[2 * H:] *= 0.5                              # i, o
        self._forward_weight_of = [p.copy() for p in self.params] if reuse else None
        return WT

    def _carve(self, name: str, rows: int, widths, dtype) -> list[np.ndarray]:
        """Arrays (rows, w) for each w in widths, consecutive in one reused flat buffer."""
        sizes = [rows * int(w) for w in widths]
        buf = self._ws.get(name, (sum(sizes),), dtype)
        out, start = [], 0
        for size, w in zip(sizes, widths):
            out.append(buf[start:start + size].reshape(rows, int(w)))
            start += size
        return out

    def forward(self, xs: np.ndarray, cache: bool = True,
                shared: np.ndarray | None = None) -> np.ndarray:
        Wx, Wh, b = self.params
        N, T, D = xs.shape
        H = Wh.shape[0]
        dtype = Wh.dtype
        plan = _PrefixPlan(shared, N, T)
        h0 = self.h if self.stateful else None
        c0 = self.c if self.stateful else None
        if plan.shared and (h0 is not None or c0 is not None):
            raise ValueError("a shared prefix needs the zero initial state")
        WT = self._forward_weight(reuse=not cache)     # (4H, K)
        K = WT.shape[1]
        width = plan.width
        mode = "train" if cache else "infer"

        def carve(name, rows, widths):
            return self._carve(f"{mode}.{name}", rows, widths, dtype)

        # Z[t] = z_t = [h_{t-1}; x_t; 1; 0] (K, width[t]); step t writes h_t into Z[t + 1][:H].
        Z = carve("Z", K, width)
        x_cols = plan.to_columns(xs)                   # (T, D, columns)
        for t in range(T):
            Z[t][H:H + D] = x_cols[t][:, :width[t]]
            Z[t][H + D] = 1
            Z[t][H + D + 1:] = 0
        if h0 is None:
            Z[0][:H] = 0
        else:
            Z[0][:H] = h0.T
        # cs[t] is c_{t-1} (H, width[t]); cs[0] the initial c.  Inference keeps two.
        if cache:
            A = carve("A", 4 * H, width[:T])           # gate pre-activations, then values
            tanh_cs = carve("tanh_c", H, width[:T])
            cs = carve("c", H, width)
        else:
            A = [_flat_view(self._ws.get("infer.A", (4 * H * plan.columns,), dtype), (4 * H, w))
                 for w in width[:T]]
            tanh_cs = [_flat_view(self._ws.get("infer.tanh_c", (H * plan.columns,), dtype),
                                  (H, w)) for w in width[:T]]
            cbufs = [self._ws.get(f"infer.c{k}", (H * plan.columns,), dtype) for k in (0, 1)]
            cs = [_flat_view(cbufs[t % 2], (H, w)) for t, w in enumerate(width)]
        tmp_buf = self._ws.get(f"{mode}.tmp", (H * plan.columns,), dtype)
        if c0 is None:
            cs[0][...] = 0
        else:
            cs[0][...] = c0.T

        for t in range(T):
            w, w_next = width[t], width[t + 1]
            if t == 0 and h0 is None:                  # h = 0 adds nothing: skip its rows
                np.matmul(WT[:, H:], Z[0][H:], out=A[t])
            else:
                np.matmul(WT, Z[t], out=A[t])          # (4H, w) ~ W^T [h; x; 1]
            _lstm_step(A[t], cs[t], cs[t + 1][:, :w], tanh_cs[t], Z[t + 1][:H, :w],
                       _flat_view(tmp_buf, (H, w)), axis=0)
            if w_next > w:                             # samples whose own steps begin
                Z[t + 1][:H, w:w_next] = Z[t + 1][:H, :1]
                cs[t + 1][:, w:w_next] = cs[t + 1][:, :1]

        # Every column's h_t: its own once begun, the prefix column's before.
        hs = np.empty((plan.columns, T, H), dtype)                   # column order
        for t in range(T):
            w = width[t]
            hs[:w, t, :] = Z[t + 1][:H, :w].T
            hs[w:, t, :] = Z[t + 1][:H, 0]
        if plan.shared:
            hs = hs[plan.s0 + plan.inverse]                           # (N, T, H)
        c_last = np.empty((1, H, plan.columns), dtype)
        c_last[0][:, :width[T]] = cs[T]
        c_last[0][:, width[T]:] = cs[T][:, :1]
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
        W = self._backward_weight()                    # (K, 4H)
        K = W.shape[0]
        width, columns = plan.width, plan.columns

        def buf(name, rows):                           # flat, room for (rows, columns)
            return self._ws.get(f"grad.{name}", (rows * columns,), dtype)

        dh_cols = plan.to_columns(dhs)                 # (T, H, columns); a copy when shared
        if plan.shared:
            dh_cols[:, :, 0] = 0                       # the prefix column has no output of its own
        dx_cols = np.zeros((T, D, columns), dtype)
        dWT = self._ws.get("grad.dWT", (4 * H, K), dtype)            # sum over steps of dA z^T
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
            _lstm_step_backward(dh, dc, _split4(gates[t], H, 0), _split4(dA, H, 0), cs[t],
                                tanh_cs[t], dc_prev, _flat_view(buf("tmp", H), (H, w)))
            dZ = _flat_view(dZ_bufs[1 - k], (K, w))
            r = H if t == 0 and zero_start else 0      # rows of z_0 that were not zero
            np.matmul(W[r:], dA, out=dZ[r:])
            dx_cols[t][:, :w] = dZ[H:H + D]
            np.matmul(dA, Z[t][r:].T, out=step_dWT[:, r:])
            dWT[:, r:] += step_dWT[:, r:]
            dZ_next, dc_next, k = dZ, dc_prev, 1 - k

        dWx, dWh, db = self.grads
        dWh[...] = dWT[:, :H].T
        dWx[...] = dWT[:, H:H + D].T
        db[...] = dWT[:, H + D]
        dxs = plan.to_samples(dx_cols)                 # (N, T, D); a copy when shared
        if plan.shared:
            dxs[plan.representative] += dx_cols[:, :, 0]
        if zero_start:                                 # (N, H) for the initial state
            self.dh = None
        else:
            self.dh = np.ascontiguousarray(dZ_next[:H].T)
        return dxs


class TimeBiLSTM:
    """Two LSTMs over the same input, one reading it backwards: xs (N, T, D) -> (N, T, 2H).

    Step t of the output is [forward h_t, backward h_t]: the backward half at step t has read
    x_{T-1} ... x_t.
    """

    param_names = ("fwd.Wx", "fwd.Wh", "fwd.b", "bwd.Wx", "bwd.Wh", "bwd.b")

    def __init__(self, Wx1, Wh1, b1, Wx2, Wh2, b2, stateful: bool = False):
        self.forward_lstm = TimeLSTM(Wx1, Wh1, b1, stateful)
        self.backward_lstm = TimeLSTM(Wx2, Wh2, b2, stateful)
        self.params = self.forward_lstm.params + self.backward_lstm.params
        self.grads = self.forward_lstm.grads + self.backward_lstm.grads

    def forward(self, xs: np.ndarray, cache: bool = True,
                shared: np.ndarray | None = None) -> np.ndarray:
        """``shared`` as in TimeLSTM; only the forward direction reads the prefix first."""
        o1 = self.forward_lstm.forward(xs, cache, shared)         # (N, T, H)
        o2 = self.backward_lstm.forward(xs[:, ::-1], cache)       # (N, T, H), reversed time
        return np.concatenate((o1, o2[:, ::-1]), axis=2)          # (N, T, 2H)

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
        xw = x @ Wx + b                                            # (N, 3H)
        zr = sigmoid(xw[:, :2 * H] + h_prev @ Wh[:, :2 * H])       # (N, 2H): z, r
        z, r = zr[:, :H], zr[:, H:]
        rh = r * h_prev
        h_hat = np.tanh(xw[:, 2 * H:] + rh @ Wh[:, 2 * H:])        # (N, H)
        h_next = h_prev + z * (h_hat - h_prev)                     # (1 - z) h + z h~
        self.cache = (x, h_prev, zr, rh, h_hat)
        return h_next

    def backward(self, dh_next):
        Wx, Wh, b = self.params
        x, h_prev, zr, rh, h_hat = self.cache
        dA, dh_prev = _gru_step_backward(dh_next, h_prev, zr, rh, h_hat, Wh)
        H = h_prev.shape[1]
        self.grads[0][...] = x.T @ dA
        self.grads[1][:, :2 * H] = h_prev.T @ dA[:, :2 * H]
        self.grads[1][:, 2 * H:] = rh.T @ dA[:, 2 * H:]
        self.grads[2][...] = dA.sum(axis=0)
        return dA @ Wx.T, dh_prev


def _gru_step_backward(dh, h_prev, zr, rh, h_hat, Wh):
    """Backward of one GRU step: returns dL/d(pre-activations) (N, 3H) and dL/dh_prev (N, H)."""
    H = h_prev.shape[1]
    z, r = zr[:, :H], zr[:, H:]
    dA = np.empty((dh.shape[0], 3 * H), dh.dtype)
    dA[:, 2 * H:] = dh * z * (1 - h_hat ** 2)                      # at the candidate
    drh = dA[:, 2 * H:] @ Wh[:, 2 * H:].T                          # at r * h_prev
    dA[:, :H] = dh * (h_hat - h_prev) * z * (1 - z)                # at z
    dA[:, H:2 * H] = drh * h_prev * r * (1 - r)                    # at r
    dh_prev = dh * (1 - z) + drh * r + dA[:, :2 * H] @ Wh[:, :2 * H].T
    return dA, dh_prev


class TimeGRU:
    """A GRU run over T steps: xs (N, T, D) -> hs (N, T, H); ``stateful`` as in TimeLSTM."""

    param_names = ("Wx", "Wh", "b")

    def __init__(self, Wx: np.ndarray, Wh: np.ndarray, b: np.ndarray, stateful: bool = False):
        self.params = [Wx, Wh, b]
        self.grads = [np.zeros_like(Wx), np.zeros_like(Wh), np.zeros_like(b)]
        self.stateful = stateful
        self.h = None
        self.dh = None
        self._cache = None

    def set_state(self, h: np.ndarray) -> None:
        self.h = h

    def reset_state(self) -> None:
        self.h = None

    def forward(self, xs: np.ndarray) -> np.ndarray:
        Wx, Wh, b = self.params
        N, T, D = xs.shape
        H = Wh.shape[0]
        dtype = Wh.dtype
        h = self.h if self.stateful and self.h is not None else np.zeros((N, H), dtype)
        x = np.ascontiguousarray(xs.transpose(1, 0, 2), dtype=dtype)   # (T, N, D)
        xw = x @ Wx + b                                                # (T, N, 3H), all steps
        hs = np.empty((T + 1, N, H), dtype)                            # hs[0] is the initial h
        zrs = np.empty((T, N, 2 * H), dtype)
        rhs = np.empty((T, N, H), dtype)
        h_hats = np.empty((T, N, H), dtype)
        hs[0] = h
        for t in range(T):
            zr = sigmoid(xw[t, :, :2 * H] + hs[t] @ Wh[:, :2 * H], out=zrs[t])
            np.multiply(zr[:, H:], hs[t], out=rhs[t])
            np.tanh(xw[t, :, 2 * H:] + rhs[t] @ Wh[:, 2 * H:], out=h_hats[t])
            hs[t + 1] = hs[t] + zr[:, :H] * (h_hats[t] - hs[t])
        self.h = hs[T]
        self._cache = (x, hs, zrs, rhs, h_hats)
        return hs[1:].transpose(1, 0, 2)

    def backward(self, dhs: np.ndarray) -> np.ndarray:
        Wx, Wh, b = self.params
        x, hs, zrs, rhs, h_hats = self._cache
        N, T, H = dhs.shape
        D = Wx.shape[0]
        dA = np.empty((T, N, 3 * H), dhs.dtype)
        dh = np.zeros((N, H), dhs.dtype)
        for t in reversed(range(T)):
            dA[t], dh = _gru_step_backward(dhs[:, t] + dh, hs[t], zrs[t], rhs[t], h_hats[t], Wh)
        dWx, dWh, db = self.grads
        dWx[...] = x.reshape(T * N, D).T @ dA.reshape(T * N, 3 * H)
        dWh[:, :2 * H] = hs[:-1].reshape(T * N, H).T @ dA[:, :, :2 * H].reshape(T * N, 2 * H)
        dWh[:, 2 * H:] = rhs.reshape(T * N, H).T @ dA[:, :, 2 * H:].reshape(T * N, H)
        db[...] = dA.sum(axis=(0, 1))
        self.dh = dh
        return (dA @ Wx.T).transpose(1, 0, 2)                          # (N, T, D)


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
        out = x.reshape(N * T, D) @ W
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
        ts = np.where(mask, ts, 0).reshape(N * T)      # any valid id at uncounted positions
        mask = mask.reshape(N * T)
        count = max(int(mask.sum()), 1)
        rows = np.arange(N * T)

        ys = softmax(xs.reshape(N * T, V))             # (NT, V)
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
    """The context vector: sum over steps of hs weighted by a. (hs (N, T, H), a (N, T)) -> (N, H)."""

    def __init__(self):
        self.params, self.grads = [], []
        self.cache = None

    def forward(self, hs: np.ndarray, a: np.ndarray) -> np.ndarray:
        self.cache = (hs, a)
        return (a[:, None, :] @ hs)[:, 0]              # (N, 1, T) @ (N, T, H) -> (N, H)

    def backward(self, dc: np.ndarray):
        hs, a = self.cache
        dhs = a[:, :, None] * dc[:, None, :]           # (N, T, H)
        da = (hs @ dc[:, :, None])[:, :, 0]            # (N, T)
        return dhs, da


class AttentionWeight:
    """Softmax of dot-product scores between h and every row of hs: (hs (N,T,H), h (N,H)) -> (N,T)."""

    def __init__(self):
        self.params, self.grads = [], []
        self.cache = None

    def forward(self, hs: np.ndarray, h: np.ndarray) -> np.ndarray:
        s = (hs @ h[:, :, None])[:, :, 0]              # (N, T) scores
        a = softmax(s)
        self.cache = (hs, h, a)
        return a

    def backward(self, da: np.ndarray):
        hs, h, a = self.cache
        ds = _softmax_backward(a, da)                  # (N, T)
        dhs = ds[:, :, None] * h[:, None, :]           # (N, T, H)
        dh = (ds[:, None, :] @ hs)[:, 0]               # (N, H)
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
    """Attention for every decoder step at once, with batched matrix products.

    (hs_enc (N, S, H), hs_dec (N, T, H)) -> contexts (N, T, H); ``attention_weights`` (N, T, S)
    keeps the weights of the last forward (row t: how step t spreads over the S source steps).
    """

    def __init__(self):
        self.params, self.grads = [], []
        self.attention_weights = None
        self.cache = None

    def forward(self, hs_enc: np.ndarray, hs_dec: np.ndarray) -> np.ndarray:
        s = hs_dec @ hs_enc.transpose(0, 2, 1)         # (N, T, S) dot-product scores
        a = softmax(s, out=s)                          # (N, T, S)
        self.attention_weights = a
        self.cache = (hs_enc, hs_dec, a)
        return a @ hs_enc                              # (N, T, H)

    def backward(self, dout: np.ndarray):
        hs_enc, hs_dec, a = self.cache
        da = dout @ hs_enc.transpose(0, 2, 1)          # (N, T, S)
        ds = _softmax_backward(a, da)                  # (N, T, S)
        dhs_enc = a.transpose(0, 2, 1) @ dout          # (N, S, H) through the weighted sum
        dhs_enc += ds.transpose(0, 2, 1) @ hs_dec      # (N, S, H) through the scores
        dhs_dec = ds @ hs_enc                          # (N, T, H)
        return dhs_enc, dhs_dec
