"""The pyramidal bidirectional encoder of Listen, Attend and Spell (Chan et al. 2016): each layer
divides time, the mask follows, and an utterance's memory is the same alone and in a batch."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from attnseq.data.batching import SourceBatch
from attnseq.nn.frontends.pyramidal import PyramidalFrontend, PyramidOptions, join_steps, reduced_lengths
from attnseq.schema import Variant


def encoder(layers=3, reduction=2, cell="lstm", stack=1):
    torch.manual_seed(0)
    cfg = SimpleNamespace(dropout=0.0, cell=Variant(cell, {}))
    return PyramidalFrontend(cfg, 8, 32, PyramidOptions(layers, reduction, stack)).eval()


def padded(lengths, size=8):
    torch.manual_seed(1)
    mask = torch.arange(max(lengths)).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    return torch.randn(len(lengths), max(lengths), size) * mask.unsqueeze(-1), mask


def test_joining_steps_concatenates_neighbours_and_completes_the_last_group_with_zeros():
    x = torch.arange(10.0).view(1, 5, 2)
    assert join_steps(x, 2).tolist() == [[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 0]]]
    assert reduced_lengths(torch.tensor([5, 4, 1, 9]), 2).tolist() == [3, 2, 1, 5]
    assert reduced_lengths(torch.tensor([9, 7]), 3).tolist() == [3, 3]


@pytest.mark.parametrize(
    "layers, reduction, cell, stack", [(3, 2, "lstm", 1), (2, 3, "gru", 1), (0, 2, "lstm", 1), (2, 2, "lstm", 3)]
)
def test_each_pyramidal_layer_divides_time_and_the_mask_follows(layers, reduction, cell, stack):
    lengths = [50, 37, 9, 1]
    model = encoder(layers, reduction, cell, stack)
    assert len(model.layers) == 1 + layers
    with torch.no_grad():
        memory = model(*padded(lengths))
    steps = [-(-n // stack) for n in lengths]
    for _ in range(layers):
        steps = [-(-n // reduction) for n in steps]
    assert memory.keys.shape == (4, max(steps), 32)
    assert memory.mask.sum(1).tolist() == steps
    assert [model.grid(n) for n in lengths] == [(n,) for n in steps]
    assert float(memory.keys[~memory.mask].abs().max()) == 0.0  # padding is zeros (never attended: masked)


@torch.no_grad()
def test_an_utterance_encoded_alone_equals_the_same_in_a_batch():
    model = encoder()
    lengths = [50, 37, 9, 23]
    features, mask = padded(lengths)
    batch = model(features, mask)
    for row, n in enumerate(lengths):
        alone = model(features[row : row + 1, :n], mask[row : row + 1, :n])
        steps = int(alone.mask.sum())
        assert steps == int(batch.mask[row].sum())
        torch.testing.assert_close(alone.keys[0], batch.keys[row, :steps], atol=1e-6, rtol=0)
        torch.testing.assert_close(alone.final[:, 0], batch.final[:, row], atol=1e-6, rtol=0)


def audio_model(arch: str):
    from attnseq.config import from_dict
    from attnseq.engines.torch_engine.trainer import check_config
    from attnseq.nn.model import build_model

    frontend = {"name": "pyramidal", "layers": 2, "reduction": 2, "stack": 2}
    sizes = {
        "rnn": {"hidden_size": 16, "embed_size": 8},
        "transformer": {"arch": "transformer", "hidden_size": 16, "layers": 1, "heads": 2, "ff_size": 32},
    }[arch]
    config = check_config(
        from_dict(
            {
                "data": {"dir": "unused", "input": {"name": "audio", "n_mels": 8}, "tokenizer": "char"},
                "model": {**sizes, "frontend": frontend},
            }
        )
    )
    torch.manual_seed(0)
    return build_model(config.model, 4, 9, features=8).eval()


@pytest.mark.parametrize("arch", ["rnn", "transformer"])
@torch.no_grad()
def test_an_utterance_decoded_alone_equals_the_same_in_a_batch_and_padding_gets_no_attention(arch):
    from attnseq.data.batching import pad_features
    from attnseq.decoding.greedy import greedy_search

    model = audio_model(arch)
    utterances = [
        np.random.default_rng(i).standard_normal((n, 8)).astype(np.float32) for i, n in enumerate((41, 13, 30))
    ]
    src, mask = pad_features(utterances)
    batch = greedy_search(model, SourceBatch(src, mask), torch.full((3,), 6), keep_attention=True)
    for i, features in enumerate(utterances):
        alone = greedy_search(model, SourceBatch(*pad_features([features])), torch.full((1,), 6), keep_attention=True)[
            0
        ][0]
        frontend = getattr(model.encoder, "frontend", None) or model.encoder
        steps = frontend.grid(len(features))[0]
        assert steps == -(-len(features) // 8)  # stack 2, then two layers joining 2
        assert batch[i][0].tokens == alone.tokens
        assert batch[i][0].alignment.shape == alone.alignment.shape
        assert alone.alignment.shape[1] == steps
        torch.testing.assert_close(batch[i][0].alignment, alone.alignment, atol=1e-5, rtol=1e-4)
    memory = model.encode(SourceBatch(src, mask))
    logits, state, attention = model.decoder.step(torch.full((3,), 1), model.decoder.init_state(memory))
    assert float(attention[~memory.mask].abs().max()) == 0.0  # padded steps are never attended
