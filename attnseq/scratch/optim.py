"""Optimisers and gradient clipping as chapter 7-8 of the book use them.

``update(params, grads)`` changes the parameter arrays in place; the lists must keep the same
order from call to call (Adam keeps one moment pair per position).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["SGD", "Adam", "clip_grads", "global_norm"]


class SGD:
    """Plain gradient descent: p <- p - lr * g."""

    def __init__(self, lr: float = 0.01):
        self.lr = lr

    def update(self, params: Sequence[np.ndarray], grads: Sequence[np.ndarray]) -> None:
        for p, g in zip(params, grads):
            p -= self.lr * g


class Adam:
    """Adam as the book writes it.

    m <- m + (1 - beta1)(g - m);  v <- v + (1 - beta2)(g^2 - v);
    p <- p - lr_t * m / (sqrt(v) + 1e-7),  lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)
    (bias correction folded into the step size, epsilon outside the square root).
    """

    eps = 1e-7

    def __init__(self, lr: float = 0.001, beta1: float = 0.9, beta2: float = 0.999):
        self.lr, self.beta1, self.beta2 = lr, beta1, beta2
        self.iter = 0
        self.m = self.v = None
        self._tmp = None

    def update(self, params: Sequence[np.ndarray], grads: Sequence[np.ndarray]) -> None:
        if self.m is None:
            self.m = [np.zeros_like(p) for p in params]
            self.v = [np.zeros_like(p) for p in params]
            self._tmp = [np.empty_like(p) for p in params]
        self.iter += 1
        t = self.iter
        lr_t = self.lr * math.sqrt(1.0 - self.beta2**t) / (1.0 - self.beta1**t)
        for p, g, m, v, tmp in zip(params, grads, self.m, self.v, self._tmp):
            np.subtract(g, m, out=tmp)
            tmp *= 1 - self.beta1
            m += tmp  # m += (1 - beta1)(g - m)
            np.multiply(g, g, out=tmp)
            tmp -= v
            tmp *= 1 - self.beta2
            v += tmp  # v += (1 - beta2)(g^2 - v)
            np.sqrt(v, out=tmp)
            tmp += self.eps
            np.divide(m, tmp, out=tmp)
            tmp *= lr_t
            p -= tmp  # p -= lr_t m / (sqrt(v) + eps)


def global_norm(grads: Sequence[np.ndarray]) -> float:
    """sqrt of the sum of squares of every gradient element."""
    return math.sqrt(sum(float(np.vdot(g, g)) for g in grads))


def clip_grads(grads: Sequence[np.ndarray], max_norm: float) -> float:
    """Scale all gradients by max_norm / (norm + 1e-6) when that is below 1; returns the norm."""
    norm = global_norm(grads)
    rate = max_norm / (norm + 1e-6)
    if rate < 1:
        for g in grads:
            g *= rate
    return norm
