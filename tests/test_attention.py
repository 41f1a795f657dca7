"""Every registered scorer: shapes, masking, normalisation, gradients."""
from __future__ import annotations

import pytest
import torch

from attnseq.nn.attention import SCORERS, build_scorer

from conftest import scorer_variant

B, T, S, H = 3, 4, 6, 8


def make(name: str):
    torch.manual_seed(0)
    return build_scorer(scorer_variant(name, heads=2, window=2, size=8), H, H).double()


def inputs():
    g = torch.Generator().manual_seed(1)
    query = torch.randn(B, T, H, generator=g, dtype=torch.double)
    keys = torch.randn(B, S, H, generator=g, dtype=torch.double)
    mask = torch.ones(B, S, dtype=torch.bool)
    mask[1, 4:] = False
    mask[2, 2:] = False
    return query, keys, mask


@pytest.mark.parametrize("name", SCORERS.names())
def test_shapes_masks_and_normalisation(name):
    scorer = make(name)
    query, keys, mask = inputs()
    context, alignment = scorer(query, scorer.prepare(keys), keys, mask)
    assert context.shape == (B, T, H)
    assert alignment.shape == (B, T, S)
    assert torch.all(alignment[~mask.unsqueeze(1).expand(B, T, S)] == 0)  # exactly zero on padding
    torch.testing.assert_close(alignment.sum(-1), torch.ones(B, T, dtype=torch.double))
    assert torch.all(alignment >= 0)


@pytest.mark.parametrize("name", SCORERS.names())
def test_padding_content_does_not_matter(name):
    scorer = make(name)
    query, keys, mask = inputs()
    other = keys.clone()
    other[~mask] = 100.0  # change only padded positions
    c1, a1 = scorer(query, scorer.prepare(keys), keys, mask)
    c2, a2 = scorer(query, scorer.prepare(other), other, mask)
    torch.testing.assert_close(c1, c2)
    torch.testing.assert_close(a1, a2)


@pytest.mark.parametrize("name", SCORERS.names())
def test_gradients_match_finite_differences(name):
    scorer = make(name)
    query, keys, mask = inputs()
    query.requires_grad_(True)
    keys.requires_grad_(True)

    def fn(q, k):
        return scorer(q, scorer.prepare(k), k, mask)[0]

    assert torch.autograd.gradcheck(fn, (query, keys), eps=1e-6, atol=1e-5)


def test_stepwise_equals_whole_sequence():
    """A query of T steps gives the same as T queries of one step (what decoders rely on)."""
    for name in SCORERS.names():
        scorer = make(name)
        if getattr(scorer, "needs_positions", False):
            continue
        query, keys, mask = inputs()
        prepared = scorer.prepare(keys)
        whole, _ = scorer(query, prepared, keys, mask)
        steps = torch.cat([scorer(query[:, t : t + 1], prepared, keys, mask)[0] for t in range(T)], 1)
        torch.testing.assert_close(whole, steps)


def test_dot_needs_equal_sizes():
    from attnseq.errors import ConfigError

    with pytest.raises(ConfigError, match="model.attention"):
        build_scorer("dot", 8, 16)
