"""Nadaraya-Watson kernel regression: attention as pooling."""

from __future__ import annotations

import sys

import pytest
import torch
from helpers import ROOT

from attnseq.nn.attention.kernel import NadarayaWatson, average_pooling, silverman_bandwidth


def data(n: int = 60, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x, _ = torch.sort(torch.rand(n, generator=g, dtype=torch.double) * 5)
    y = 2 * torch.sin(x) + x**0.8 + 0.5 * torch.randn(n, generator=g, dtype=torch.double)
    return x, y


def test_weights_rows_sum_to_one_and_prediction_is_the_weighted_mean():
    x, y = data()
    model = NadarayaWatson(bandwidth=0.7).fit(x, y)
    queries = torch.linspace(-1, 6, 30, dtype=torch.double)
    weights = model.weights(queries)
    assert weights.shape == (30, 60)
    torch.testing.assert_close(weights.sum(1), torch.ones(30, dtype=torch.double))
    assert torch.all(weights >= 0)
    torch.testing.assert_close(model(queries), weights @ y)
    # the kernel by hand: softmax_i(-(x - x_i)^2 / (2 w^2))
    expected = torch.softmax(-((queries[:, None] - x[None]) ** 2) / (2 * 0.7**2), dim=1)
    torch.testing.assert_close(weights, expected)


def test_leave_one_out_gives_a_point_no_weight_on_itself():
    x, y = data(10)
    model = NadarayaWatson(bandwidth=0.5).fit(x, y)
    weights = model.weights(x, leave_one_out=True)
    assert torch.all(weights.diagonal() == 0)
    torch.testing.assert_close(weights.sum(1), torch.ones(10, dtype=torch.double))


def test_bandwidth_limits_are_nearest_neighbour_and_average_pooling():
    x, y = data(20)
    narrow = NadarayaWatson(bandwidth=1e-3).fit(x, y)
    torch.testing.assert_close(narrow(x), y)  # each training point recalls its own target
    wide = NadarayaWatson(bandwidth=1e4).fit(x, y)
    torch.testing.assert_close(wide(x), average_pooling(y, 20))


def test_learned_bandwidth_beats_average_pooling_and_the_starting_width_on_held_out_points():
    x, y = data(60, seed=0)
    x_test = torch.linspace(0.1, 4.9, 50, dtype=torch.double)
    y_test = 2 * torch.sin(x_test) + x_test**0.8  # noiseless truth
    fixed = NadarayaWatson(bandwidth=2.0).fit(x, y)
    learned = NadarayaWatson(bandwidth=2.0, learned=True).fit(x, y)
    assert learned.bandwidth < 2.0  # the leave-one-out error shrank the over-wide kernel

    def mse(prediction):
        return float(((prediction - y_test) ** 2).mean())

    with torch.no_grad():
        pooled, fixed_error, learned_error = mse(average_pooling(y, 50)), mse(fixed(x_test)), mse(learned(x_test))
    assert learned_error < 0.5 * pooled
    assert learned_error < fixed_error


def test_default_bandwidth_is_silverman_and_must_be_positive():
    x, y = data(40)
    model = NadarayaWatson().fit(x, y)
    assert model.bandwidth == pytest.approx(silverman_bandwidth(x))
    with pytest.raises(ValueError):
        NadarayaWatson(bandwidth=0.0)


def test_example_writes_both_plots_and_reports_the_errors(tmp_path):
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import nadaraya_watson
    finally:
        sys.path.remove(str(ROOT / "examples"))
    errors = nadaraya_watson.main(["--out", str(tmp_path)])
    assert (tmp_path / "fit.png").stat().st_size > 1000
    assert (tmp_path / "weights.png").stat().st_size > 1000
    pooled, fixed, learned = errors.values()
    assert learned < fixed < pooled
