"""Attention as pooling: Nadaraya-Watson kernel regression (Nadaraya 1964, Watson 1964).

A query x is answered by a weighted average of the training targets y_i (the values), with
weights from a Gaussian kernel of the distance between x and the training inputs x_i (the
keys):

    f(x) = Σ_i α(x, x_i) y_i,   α(x, x_i) = softmax_i(-(x - x_i)^2 / (2 w^2))

The bandwidth w is fixed (given, or Silverman's rule of thumb) or learned by minimising the
leave-one-out error on the training points (each point predicted from all the others: without
that, w -> 0 would just memorise the targets). Average pooling, f(x) = mean(y), is the
special case w -> infinity.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def silverman_bandwidth(keys: torch.Tensor) -> float:
    """Silverman's rule of thumb for a Gaussian kernel: 1.06 σ n^(-1/5), for keys (N,)."""
    spread = float(keys.std()) if keys.numel() > 1 else 1.0
    return 1.06 * (spread or 1.0) * keys.numel() ** (-0.2)


class NadarayaWatson(nn.Module):
    """Gaussian-kernel regression of scalar inputs: keys x_i (N,), values y_i (N,) or (N, D).

    ``bandwidth`` w: fixed width, or None for Silverman's rule at ``fit``; ``learned``: train
    w (through log w) by leave-one-out error in ``fit``.
    """

    def __init__(self, bandwidth: float | None = None, learned: bool = False):
        super().__init__()
        if bandwidth is not None and bandwidth <= 0:
            raise ValueError(f"bandwidth must be positive, got {bandwidth}")
        self.initial_bandwidth, self.learned = bandwidth, learned
        self.log_bandwidth = nn.Parameter(torch.tensor(math.log(bandwidth or 1.0)), requires_grad=learned)
        self.register_buffer("keys", torch.empty(0))
        self.register_buffer("values", torch.empty(0))

    @property
    def bandwidth(self) -> float:
        return float(self.log_bandwidth.detach().exp())

    def weights(self, queries: torch.Tensor, leave_one_out: bool = False) -> torch.Tensor:
        """Attention weights (Q, N) of queries (Q,) over the keys; each row sums to one.

        ``leave_one_out`` (queries = the keys themselves): each point gets zero weight on itself.
        """
        width = self.log_bandwidth.exp()
        scores = -((queries.unsqueeze(1) - self.keys.unsqueeze(0)) ** 2) / (2 * width**2)  # (Q, N)
        if leave_one_out:
            scores = scores.masked_fill(
                torch.eye(len(self.keys), dtype=torch.bool, device=scores.device), float("-inf")
            )
        return torch.softmax(scores, dim=-1)

    def forward(self, queries: torch.Tensor, leave_one_out: bool = False) -> torch.Tensor:
        """Predictions (Q,) or (Q, D) for queries (Q,)."""
        return self.weights(queries, leave_one_out) @ self.values

    def fit(self, keys: torch.Tensor, values: torch.Tensor, steps: int = 200, lr: float = 0.05) -> NadarayaWatson:
        """Store the training pairs (the keys and values to attend to) and, when ``learned``,
        train the bandwidth by ``steps`` Adam updates on the leave-one-out squared error."""
        self.keys, self.values = keys.detach().clone(), values.detach().clone()
        if self.initial_bandwidth is None:
            with torch.no_grad():
                self.log_bandwidth.fill_(math.log(silverman_bandwidth(self.keys)))
        if self.learned:
            if len(keys) < 2:
                raise ValueError("learning the bandwidth leave-one-out needs at least 2 training points")
            optimizer = torch.optim.Adam([self.log_bandwidth], lr=lr)
            for _ in range(steps):
                optimizer.zero_grad()
                loss = ((self(self.keys, leave_one_out=True) - self.values) ** 2).mean()
                loss.backward()
                optimizer.step()
        return self


def chapter_function(x: torch.Tensor) -> torch.Tensor:
    """The kernel-regression chapter's function: y = 2 sin x + x^0.8."""
    return 2 * torch.sin(x) + x**0.8


def chapter_data(n_train: int = 50, noise: float = 0.5, seed: int = 0):
    """The chapter's data: ``n_train`` sorted inputs uniform on [0, 5) with targets
    ``chapter_function(x)`` plus Gaussian noise of sd ``noise``, and 50 evenly spaced test
    inputs with their noiseless targets: (x_train (N,), y_train (N,), x_test (Q,), y_test (Q,))."""
    g = torch.Generator().manual_seed(seed)
    x_train, _ = torch.sort(torch.rand(n_train, generator=g) * 5)
    y_train = chapter_function(x_train) + noise * torch.randn(n_train, generator=g)
    x_test = torch.arange(0, 5, 0.1)
    return x_train, y_train, x_test, chapter_function(x_test)


def average_pooling(values: torch.Tensor, queries: int) -> torch.Tensor:
    """The baseline f(x) = mean(y) for ``queries`` queries: (Q,) or (Q, D)."""
    return values.mean(0, keepdim=True).expand(queries, *values.shape[1:])
