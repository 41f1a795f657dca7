"""Positional encodings: the sinusoidal formula, learned positions, the scaled input embedding."""

from __future__ import annotations

import math

import pytest
import torch

from attnseq.errors import ConfigError
from attnseq.nn.transformer.positional import (
    POSITIONAL,
    LearnedPositions,
    SinusoidalPositions,
    TransformerEmbedding,
    sinusoidal_table,
)
from attnseq.schema import Variant


def formula(pos: int, j: int, dim: int) -> float:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d))."""
    two_i = j - (j % 2)
    angle = pos / 10000 ** (two_i / dim)
    return math.sin(angle) if j % 2 == 0 else math.cos(angle)


@pytest.mark.parametrize("dim", [16, 7])
def test_sinusoidal_table_matches_the_formula(dim):
    table = sinusoidal_table(60, dim)
    assert table.shape == (60, dim)
    for pos in (0, 1, 2, 17, 59):
        for j in range(dim):
            assert table[pos, j].item() == pytest.approx(formula(pos, j, dim), abs=1e-6)


def test_sinusoidal_positions_slice_and_extend_past_the_table():
    positions = SinusoidalPositions(8)
    assert "table" not in positions.state_dict()  # fixed: not saved in checkpoints
    torch.testing.assert_close(positions(3, 4), sinusoidal_table(7, 8)[3:7])
    start = positions.table.shape[0]
    far = positions(start + 2, 3)  # beyond the table: it grows
    assert far.shape == (3, 8) and positions.table.shape[0] > start
    assert far[1, 2].item() == pytest.approx(formula(start + 3, 2, 8), abs=1e-6)


def test_learned_positions_are_trained_vectors_with_a_clear_limit():
    positions = POSITIONAL.build(Variant("learned", {"max_positions": 5}), "model.positional", 8)
    assert isinstance(positions, LearnedPositions)
    assert positions(1, 3).shape == (3, 8)
    assert positions(0, 5).requires_grad
    with pytest.raises(ConfigError, match="model.positional.max_positions"):
        positions(3, 4)


def test_registry_names_and_unknown_choice():
    assert set(POSITIONAL.names()) == {"sinusoidal", "learned"}
    with pytest.raises(ConfigError, match="model.positional"):
        TransformerEmbedding(10, 8, "rotary", 0.0)


def test_embedding_is_scaled_tokens_plus_positions():
    embed = TransformerEmbedding(10, 16, "sinusoidal", dropout=0.0)
    ids = torch.tensor([[4, 5, 6], [7, 0, 0]])
    out = embed(ids, start=2)  # (B, T, D)
    expected = embed.tokens(ids) * 4.0 + sinusoidal_table(5, 16)[2:5]
    torch.testing.assert_close(out, expected)
    assert embed.tokens.weight[0].abs().sum() == 0  # padding row


def test_embedding_dropout_only_in_training():
    embed = TransformerEmbedding(10, 16, Variant("learned", {"max_positions": 32}), dropout=0.5)
    ids = torch.tensor([[4, 5, 6, 7]])
    embed.eval()
    torch.testing.assert_close(embed(ids), embed(ids))
    embed.train()
    assert (embed(ids) == 0).any()


def test_plot_positional_writes_a_png(tmp_path):
    from attnseq.viz.positional import plot_positional

    path = plot_positional(tmp_path / "pos.png", positions=20, dims=8)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
