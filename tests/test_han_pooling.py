"""HAN's ``model.pooling``: mean pooling is the masked average of the annotations at both levels,
padding weighs nothing, and the option is an error for any other architecture."""

from __future__ import annotations

import pytest
import torch

from attnseq.config import load_config
from attnseq.data.batching import SourceBatch
from attnseq.data.vocab import Vocab
from attnseq.errors import ConfigError
from attnseq.nn import build_model
from attnseq.nn.memory_networks.han import ContextAttention, MeanPooling

VOCAB = Vocab([".", "a", "b", "c", "d"])
SEP = VOCAB.stoi["."]
A, B, C, D = (VOCAB.stoi[t] for t in ("a", "b", "c", "d"))


def han(pooling: str):
    torch.manual_seed(0)
    cfg = load_config(
        None, ["model.arch=han", "model.embed_size=6", "model.hidden_size=5", f"model.pooling={pooling}"]
    ).model
    return build_model(cfg, len(VOCAB), len(VOCAB), shares_vocab=True, src_vocab=VOCAB).double().eval()


def documents():
    """Two padded documents: three sentences; one sentence."""
    rows = [[A, B, SEP, C, SEP, D, A, B, SEP], [C, D, SEP]]
    src = torch.zeros(2, 9, dtype=torch.long)
    for i, row in enumerate(rows):
        src[i, : len(row)] = torch.tensor(row)
    return src, src != 0


def test_mean_pooling_is_the_masked_average():
    h = torch.randn(2, 4, 3, dtype=torch.double)  # (B, T, size)
    mask = torch.tensor([[True, True, False, False], [True, True, True, False]])
    h_padded = h.clone()
    h_padded[~mask] = 1e6  # padding must not count
    pooled, weights = MeanPooling()(h_padded, mask)
    torch.testing.assert_close(pooled[0], h[0, :2].mean(0))
    torch.testing.assert_close(pooled[1], h[1, :3].mean(0))
    assert weights.tolist() == [[0.5, 0.5, 0, 0], [1 / 3, 1 / 3, 1 / 3, 0]]
    empty, _ = MeanPooling()(h, torch.zeros(2, 4, dtype=torch.bool))
    assert not empty.abs().sum()  # a row with no real position pools to zeros


def test_mean_han_averages_words_and_sentences_and_has_no_context_vectors():
    model = han("mean")
    reader = model.encoder
    assert isinstance(reader.word_attention, MeanPooling) and isinstance(reader.sentence_attention, MeanPooling)
    assert isinstance(han("attention").encoder.word_attention, ContextAttention)  # the default stays the paper's
    src, mask = documents()
    reading = reader(src, mask)
    assert torch.allclose(reading.words[0, 2, :3], torch.full((3,), 1 / 3, dtype=torch.double))  # D A B
    assert torch.allclose(reading.words[0, 1, :1], torch.ones(1, dtype=torch.double))  # C alone
    assert reading.sentences[0, 0, :3].tolist() == pytest.approx([1 / 3] * 3)
    assert reading.sentences[1, 0].sum().item() == pytest.approx(1.0)


@pytest.mark.parametrize("pooling", ["mean", "attention"])
def test_padding_changes_nothing(pooling):
    model = han(pooling)
    src, mask = documents()
    tgt_in = torch.tensor([[1], [1]])
    logits = model.logits(SourceBatch(src, mask), tgt_in)
    n = int(mask[1].sum())
    alone = model.logits(SourceBatch(src[1:, :n], mask[1:, :n]), tgt_in[1:])
    torch.testing.assert_close(logits[1], alone[0])


@pytest.mark.parametrize("arch", ["rnn", "memn2n", "transformer"])
def test_pooling_is_an_error_for_other_architectures(arch):
    with pytest.raises(ConfigError, match="pooling"):
        load_config(None, [f"model.arch={arch}", "model.pooling=mean"])


def test_unknown_pooling_is_an_error():
    with pytest.raises(ConfigError, match="pooling"):
        load_config(None, ["model.arch=han", "model.pooling=max"])


def test_an_attention_size_with_mean_pooling_is_an_error():
    cfg = load_config(None, ["model.arch=han", "model.pooling=mean", "model.attention_size=8"]).model
    with pytest.raises(ConfigError, match="model.attention_size"):
        build_model(cfg, len(VOCAB), len(VOCAB), shares_vocab=True, src_vocab=VOCAB)
