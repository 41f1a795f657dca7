"""What the attention page shows of a hypothesis (decoding/attention_views.py): the
Transformer's every layer and head and its encoder self-attention, a multi-head scorer's heads,
local attention's window; all consistent with the attention the search itself kept."""

from __future__ import annotations

import numpy as np
import pytest

import attnseq


def searched(run, text="abcdef", beam=3):
    model = attnseq.load(run)
    result = model.search([text], keep_attention=True, beam_size=beam, n_best=beam)[0]
    views, encoder = model.attention_views(result)
    return model, result, views, encoder


def test_transformer_shows_every_layer_and_head(quick_runs):
    model, result, views, encoder = searched(quick_runs["transformer"])
    cfg = model.config.model
    source = len(result.source_tokens)
    assert encoder.shape == (cfg.layers, cfg.heads, source, source)
    np.testing.assert_allclose(encoder.sum(-1), 1.0, atol=1e-5)
    for k, v in enumerate(views):
        rows = result.attention[k].shape[0]
        assert v.cross.shape == (cfg.layers, cfg.heads, rows, source)
        # the last layer's average over heads is the attention the beam search kept
        np.testing.assert_allclose(v.cross[-1].mean(0), result.attention[k], atol=1e-5)
        assert v.window is None
    # the hypotheses differ, and so does what they attend to
    assert result.outputs[0] != result.outputs[1]


def test_multihead_scorer_shows_its_heads(quick_runs):
    _, result, views, encoder = searched(quick_runs["multihead"])
    assert encoder is None  # a recurrent encoder has no self-attention
    for k, v in enumerate(views):
        assert v.cross.shape == (1, 2, *result.attention[k].shape)
        np.testing.assert_allclose(v.cross[0].mean(0), result.attention[k], atol=1e-5)


@pytest.mark.parametrize("kind", ["local_p", "local_m"])
def test_local_attention_shows_its_window(quick_runs, kind):
    """The window holds every weight of the step (nothing outside it), its centre p_t lies
    inside, and it is in reading order even when the model reads the source reversed (local_p)."""
    model, result, views, _ = searched(quick_runs[kind], text="abcdefabcdef")
    width = model.config.model.attention.options["window"]
    source = len(result.source_tokens)
    for k, v in enumerate(views):
        attention = result.attention[k]
        assert v.window.shape == (attention.shape[0], 2) and v.centres.shape == (attention.shape[0],)
        assert v.width == width
        for row, (low, high) in zip(attention, v.window):
            assert 0 <= low <= high < source and high - low <= 2 * width
            assert row[low : high + 1].sum() == pytest.approx(1.0, abs=1e-5)
            assert np.all(row[:low] == 0) and np.all(row[high + 1 :] == 0)
    if kind == "local_m":  # p_t = t: the window walks forward one position per output step
        assert views[0].centres[:3].tolist() == [0.0, 1.0, 2.0]
        assert views[0].window[0].tolist() == [0, min(width, source - 1)]
    else:
        assert model.config.data.reverse_source


def test_reversed_source_counts_positions_from_the_other_end():
    from attnseq.decoding.common import AttentionViews

    v = AttentionViews(window=np.array([[0, 2], [1, 3]]), centres=np.array([1.0, 2.0]), width=1)
    flipped = v.reversed_source(5)  # positions counted from the other end
    assert flipped.window.tolist() == [[2, 4], [1, 3]] and flipped.centres.tolist() == [3.0, 2.0]
    assert flipped.cross is None
