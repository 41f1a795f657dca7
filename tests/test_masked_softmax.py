"""The one masked softmax of the scorers, the Transformer and the memory networks."""

from __future__ import annotations

import torch

from attnseq.nn.attention.softmax import masked_softmax


def test_masked_softmax_is_the_masked_fill_and_the_softmax():
    g = torch.Generator().manual_seed(0)
    scores = torch.randn(2, 3, 4, generator=g)
    mask = torch.tensor([[True, True, False, False], [False, False, False, False]]).unsqueeze(1)
    weights = masked_softmax(scores, mask)
    assert torch.equal(weights[0], torch.softmax(scores[0].masked_fill(~mask[0], float("-inf")), -1))
    assert torch.all(weights[0][:, 2:] == 0) and torch.isnan(weights[1]).all()  # nothing to attend to: 0 / 0
    zeroed = masked_softmax(scores, mask, zero_empty_rows=True)
    assert torch.equal(zeroed[0], weights[0]) and torch.all(zeroed[1] == 0)
    assert torch.equal(masked_softmax(scores, None), torch.softmax(scores, -1))
