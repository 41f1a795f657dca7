"""Every ConfigError of the models and the beam search carries the key at fault (``err.key``)."""

from __future__ import annotations

import pytest
import torch

from attnseq.config import load_config
from attnseq.data.batching import SourceBatch
from attnseq.decoding.beam import beam_search
from attnseq.errors import ConfigError
from attnseq.nn import build_model
from attnseq.nn.attention import build_scorer
from attnseq.nn.transformer.positional import POSITIONAL
from attnseq.schema import Variant

RNN = ["model.embed_size=8", "model.hidden_size=16"]


@pytest.mark.parametrize(
    "overrides, key",
    [
        (["model.arch=transformer", "model.hidden_size=30", "model.heads=4"], "model.heads"),
        (RNN + ["model.bridge=copy", "model.encoder_layers=1", "model.decoder_layers=2"], "model.bridge"),
        (RNN + ["model.decoder=none", "model.attention=dot"], "model.attention"),
        (RNN + ["model.decoder=book", "model.tie_embeddings=true"], "model.tie_embeddings"),
        (["model.hidden_size=15", "model.encoder={name: stacked, bidirectional: true}"], "model.hidden_size"),
        (RNN + ["model.cell={name: lstm_proj, projection_size: 16}"], "model.cell.projection_size"),
        (
            RNN + ["model.encoder=gnmt", "model.encoder_layers=3", "model.cell={name: lstm_proj, projection_size: 5}"],
            "model.encoder",
        ),
        (["model.arch=memn2n"], "model.tying"),  # adjacent tying without one vocabulary
        (["model.arch=memn2n", "model.separator=a b"], "model.separator"),
        (["model.arch=ntm", "model.memory_locations=4", "model.shift_range=2"], "model.shift_range"),
    ],
)
def test_a_model_that_cannot_be_built_names_the_key(overrides, key):
    with pytest.raises(ConfigError) as err:
        build_model(load_config(None, overrides).model, 11, 11)
    assert err.value.key == key and str(err.value).startswith(key)


def test_scorers_name_the_attention_key():
    with pytest.raises(ConfigError) as err:
        build_scorer("dot", 4, 6)  # unprojected queries and keys of two sizes
    assert err.value.key == "model.attention"
    with pytest.raises(ConfigError) as err:
        build_scorer(Variant("multihead", {"head": "multihead"}), 4, 4)
    assert err.value.key == "model.attention.head"
    with pytest.raises(ConfigError) as err:  # an options' own check names the key of where they are
        build_scorer(Variant("multihead", {"head": {"name": "location", "width": 2}}), 4, 4)
    assert err.value.key == "model.attention.head.width"


def test_learned_positions_name_their_limit():
    positions = POSITIONAL.build(Variant("learned", {"max_positions": 5}), "model.positional", 8)
    with pytest.raises(ConfigError) as err:
        positions(3, 4)
    assert err.value.key == "model.positional.max_positions"


@pytest.mark.parametrize(
    "settings, key",
    [
        ({"beam_size": 2, "n_best": 3}, "decode.n_best"),
        ({"beam_size": 2, "length_penalty": -0.5}, "decode.length_penalty"),
    ],
)
def test_beam_search_settings_name_the_key(settings, key):
    src, mask = torch.ones(1, 3, dtype=torch.long), torch.ones(1, 3, dtype=torch.bool)
    with pytest.raises(ConfigError) as err:
        beam_search(None, SourceBatch(src, mask), torch.tensor([5]), **settings)  # refused before the model is read
    assert err.value.key == key
