"""Finite-difference checks of the analytic gradients (use float64 layers and inputs).

The scalar checked is L = sum_k <out_k, r_k> for fixed random arrays r_k of the outputs'
shapes, so backward(*r) must give dL/d(every input and parameter).  Errors are relative:
||analytic - numeric|| / (||analytic|| + ||numeric||), about 1e-9 when backward is right.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["numerical_gradient", "relative_error", "check_gradients", "check_layer", "check_model"]


def numerical_gradient(f: Callable[[], float], x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences (f(x + eps) - f(x - eps)) / 2 eps for every element of x, in place."""
    grad = np.zeros(x.shape, dtype=np.float64)
    for idx in np.ndindex(*x.shape):
        keep = x[idx].copy()
        x[idx] = keep + eps
        f_plus = f()
        x[idx] = keep - eps
        f_minus = f()
        x[idx] = keep
        grad[idx] = (f_plus - f_minus) / (2 * eps)
    return grad


def relative_error(analytic: np.ndarray, numeric: np.ndarray) -> float:
    """||a - n|| / (||a|| + ||n||); 0 when both are zero."""
    a = np.asarray(analytic, dtype=np.float64)
    n = np.asarray(numeric, dtype=np.float64)
    scale = np.linalg.norm(a) + np.linalg.norm(n)
    return 0.0 if scale == 0 else float(np.linalg.norm(a - n) / scale)


def _as_tuple(x) -> tuple:
    if x is None:
        return ()
    return x if isinstance(x, tuple) else (x,)


def check_gradients(
    forward: Callable,
    backward: Callable,
    inputs: Sequence,
    params: Sequence[np.ndarray] = (),
    grads: Sequence[np.ndarray] = (),
    names: Sequence[str] | None = None,
    eps: float = 1e-6,
    seed: int = 0,
) -> dict[str, float]:
    """Compare backward with finite differences.

    forward(*inputs) returns one output or a tuple of them; backward(*douts) returns the
    gradients of the floating-point inputs (in order; one array, a tuple, or None) and fills
    ``grads`` for ``params``.  Returns {"input0": err, ..., name or "param0": err, ...}.
    """
    rng = np.random.default_rng(seed)
    outs = _as_tuple(forward(*inputs))
    douts = tuple(rng.standard_normal(np.shape(o)) for o in outs)

    def scalar() -> float:
        return float(sum(np.sum(np.asarray(o, np.float64) * r) for o, r in zip(_as_tuple(forward(*inputs)), douts)))

    scalar()  # fresh caches for backward
    dins = tuple(
        np.array(d, dtype=np.float64) for d in _as_tuple(backward(*(d if np.ndim(d) else float(d) for d in douts)))
    )
    analytic_params = [np.array(g, dtype=np.float64) for g in grads]
    float_inputs = [x for x in inputs if isinstance(x, np.ndarray) and x.dtype.kind == "f"]
    if len(dins) != len(float_inputs):
        raise ValueError(f"backward returned {len(dins)} gradients for {len(float_inputs)} float inputs")

    errors = {}
    for k, (x, dx) in enumerate(zip(float_inputs, dins)):
        errors[f"input{k}"] = relative_error(dx, numerical_gradient(scalar, x, eps))
    names = list(names) if names is not None else [f"param{k}" for k in range(len(params))]
    for name, p, g in zip(names, params, analytic_params):
        errors[name] = relative_error(g, numerical_gradient(scalar, p, eps))
    return errors


def check_layer(layer, *inputs, eps: float = 1e-6, seed: int = 0) -> dict[str, float]:
    """check_gradients for a layer with ``params``, ``grads``, ``forward`` and ``backward``."""
    names = getattr(layer, "param_names", None)
    return check_gradients(
        layer.forward, layer.backward, inputs, layer.params, layer.grads, names=names, eps=eps, seed=seed
    )


def check_model(model, xs: np.ndarray, ts: np.ndarray, eps: float = 1e-6) -> dict[str, float]:
    """Relative error of every named parameter's gradient of model.forward(xs, ts) (a loss)."""
    model.forward(xs, ts)
    model.backward()
    analytic = {name: np.array(g, dtype=np.float64) for name, g in model.named_grads().items()}
    loss = lambda: float(model.forward(xs, ts))  # noqa: E731
    return {
        name: relative_error(analytic[name], numerical_gradient(loss, p, eps))
        for name, p in model.named_params().items()
    }
