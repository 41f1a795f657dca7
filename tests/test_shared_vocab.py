"""One vocabulary for both sides (data.shared_vocab) and tied embeddings and output layer
(model.tie_embeddings: none, decoder, all; Press & Wolf 2017)."""

from __future__ import annotations

import random

import pytest
import torch

from attnseq.config import load_config
from attnseq.data.batching import SourceBatch
from attnseq.data.pipeline import TextPipeline
from attnseq.errors import ConfigError
from attnseq.nn import build_model, count_parameters
from attnseq.nn.model import load_model_weights, model_weights

IDENTIFIER = "pg_stat_activity"
ENGLISH = "show the open file in a new window and print the settings of every folder".split()
GERMAN = "zeige die offene Datei in einem neuen Fenster und drucke die Einstellungen von jedem Ordner".split()


def messages(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """UI-like pairs; a tenth of the sources name IDENTIFIER, which no target holds."""
    rng = random.Random(seed)
    pairs = []
    for i in range(n):
        picks = sorted(rng.sample(range(len(ENGLISH)), rng.randint(3, 7)))
        source, target = " ".join(ENGLISH[j] for j in picks), " ".join(GERMAN[j] for j in picks)
        if i % 10 == 0:
            source += f" of {IDENTIFIER}"
        pairs.append((source, target))
    return pairs


def pipeline(tmp_path, *overrides: str) -> TextPipeline:
    data = load_config(None, ["data.tokenizer={name: sentencepiece, vocab_size: 60}", *overrides]).data
    return TextPipeline.fit(data, messages(300), tmp_path)


def test_a_piece_seen_only_in_sources_can_be_written_with_one_vocabulary(tmp_path):
    shared = pipeline(tmp_path / "shared", "data.shared_vocab=true")
    assert shared.src_vocab == shared.tgt_vocab and shared.shares_vocab
    pieces = shared.src_tokenizer.tokenize(IDENTIFIER)
    ids = shared.tgt_vocab.encode(pieces)
    assert shared.tgt_vocab.unk_id not in ids  # the decoder has an output for each piece ...
    assert shared.decode_target(ids) == IDENTIFIER  # ... and writes the identifier back
    two = pipeline(tmp_path / "two")  # a joint model, two vocabularies: the target's never saw it
    assert not two.shares_vocab and len(two.tgt_vocab) < len(shared.tgt_vocab)
    assert two.tgt_vocab.unk_id in two.tgt_vocab.encode(pieces)


def test_one_vocabulary_needs_the_joint_sentencepiece_model():
    with pytest.raises(ConfigError) as err:
        load_config(None, ["data.tokenizer={name: sentencepiece, joint: false}", "data.shared_vocab=true"])
    assert err.value.key == "data.shared_vocab" and "joint" in str(err.value)


V, E = 50, 16  # one vocabulary of V, embeddings and the decoder's features of E


def rnn(tie: str, shares_vocab: bool = True, *overrides: str):
    config = load_config(
        None, [f"model.embed_size={E}", f"model.hidden_size={E}", f"model.tie_embeddings={tie}", *overrides]
    )
    torch.manual_seed(0)
    return build_model(config.model, V, V, shares_vocab)


@pytest.mark.parametrize("arch", ["rnn", "transformer"])
def test_tied_weights_are_one_tensor_and_the_parameters_drop_by_each_matrix(arch):
    def build(tie):
        if arch == "rnn":
            return rnn(tie)
        config = load_config(
            None,
            [
                "model.arch=transformer",
                f"model.hidden_size={E}",
                "model.ff_size=32",
                "model.layers=1",
                f"model.tie_embeddings={tie}",
            ],
        )
        return build_model(config.model, V, V, True)

    none, decoder, every = build("none"), build("decoder"), build("all")
    embeddings = (lambda m: m.encoder.embed.weight) if arch == "rnn" else (lambda m: m.encoder.embed.tokens.weight)
    target = (lambda m: m.decoder.embed.weight) if arch == "rnn" else (lambda m: m.decoder.embed.tokens.weight)
    assert target(decoder) is decoder.decoder.generator.weight
    assert embeddings(decoder) is not decoder.decoder.generator.weight
    assert embeddings(every) is target(every) is every.decoder.generator.weight
    assert count_parameters(none) - count_parameters(decoder) == V * E
    assert count_parameters(none) - count_parameters(every) == 2 * V * E
    assert sum(1 for name in model_weights(every) if name.endswith("weight") and "embed" in name) == 1


def test_all_tied_survives_a_checkpoint_and_learns_as_one_matrix(tmp_path):
    model = rnn("all")
    weights = model_weights(model)
    again = rnn("all")
    with torch.no_grad():
        again.encoder.embed.weight.zero_()
    load_model_weights(again, weights, tmp_path / "w")
    assert again.encoder.embed.weight is again.decoder.generator.weight
    torch.testing.assert_close(again.encoder.embed.weight, model.decoder.generator.weight)
    src = torch.randint(4, V, (2, 5))
    loss, _ = model.loss(
        SourceBatch(src, torch.ones_like(src, dtype=torch.bool)), src, src, torch.ones_like(src, dtype=torch.bool)
    )
    loss.backward()
    shared = model.decoder.generator.weight
    assert shared.grad is not None and shared.grad[src.unique()].abs().sum() > 0  # both sides' gradients in one


@pytest.mark.parametrize(
    "tie, shares, overrides, says",
    [
        ("all", False, [], "data.shared_vocab"),  # two vocabularies: the ids name other tokens
        ("decoder", True, ["model.decoder=book"], "model.embed_size to 32"),  # [c; h] is wider than E
        ("all", True, [f"model.embed_size={E + 1}"], f"model.embed_size to {E}"),
    ],
)
def test_a_tie_the_sizes_or_vocabularies_refuse_names_the_key(tie, shares, overrides, says):
    with pytest.raises(ConfigError) as err:
        rnn(tie, shares, *overrides)
    assert err.value.key == "model.tie_embeddings" and says in str(err.value)


@pytest.mark.parametrize(
    "arch, shares, ties",
    [
        ("rnn", True, "decoder"),  # the recurrent models tied the decoder's alone
        ("transformer", True, "all"),  # the Transformer the source's too where the vocabulary was one
        ("transformer", False, "decoder"),
    ],
)
def test_configs_written_before_the_names_tie_as_they_did(arch, shares, ties):
    from attnseq.nn.model import embedding_ties

    model = load_config(None, [f"model.arch={arch}", "model.tie_embeddings=true"]).model
    assert model.tie_embeddings is True  # kept as written, so the run's config reads back the same
    assert embedding_ties(model, shares, true_ties_all=arch == "transformer") == ties
    untied = load_config(None, [f"model.arch={arch}", "model.tie_embeddings=false"]).model
    assert untied.tie_embeddings == "none"  # read as today's name, so an old run resumes with today's presets
    assert embedding_ties(untied, shares) == "none"
