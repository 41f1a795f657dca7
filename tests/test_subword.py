"""The sentencepiece tokenizer: trained into the run folder, reloaded identically, round trips."""

from __future__ import annotations

import random

import pytest

from attnseq.config import load_config
from attnseq.data.pipeline import TextPipeline
from attnseq.data.subword import SentencePieceTokenizer, model_path, sample_sentences
from attnseq.data.tokenizers import TOKENIZERS
from attnseq.errors import ConfigError

WORDS = (
    "open save file folder the a new recent close print settings window help about quit "
    "öffnen speichern Datei Ordner neu zuletzt schließen drucken Einstellungen Fenster Hilfe "
    "über beenden"
).split()


def sentences(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 7))).capitalize() + rng.choice(".…?!")
        for _ in range(n)
    ]


def data_config(*overrides: str):
    return load_config(None, ["data.tokenizer=sentencepiece", "data.tokenizer.vocab_size=80", *overrides]).data


def tokenizer(*overrides: str) -> SentencePieceTokenizer:
    """A fresh tokenizer with the options of ``data.tokenizer`` after ``overrides``."""
    return TOKENIZERS.build(data_config(*overrides).tokenizer, "data.tokenizer")


def test_registered_as_a_trainable_tokenizer():
    assert TOKENIZERS.get("sentencepiece", "data.tokenizer") is SentencePieceTokenizer
    assert SentencePieceTokenizer.trainable


@pytest.mark.parametrize("model_type", ["unigram", "bpe"])
def test_trained_saved_reloaded_gives_identical_pieces_and_round_trips(tmp_path, model_type):
    train, unseen = sentences(300), sentences(20, seed=1)
    tok = tokenizer(f"data.tokenizer.model_type={model_type}")
    assert tok.options.model_type == model_type
    tok.fit(train, tmp_path, "source")
    assert model_path(tmp_path, "source").is_file()
    assert len(tok.processor) == 80
    tok.save(tmp_path, "source")  # nothing to do: fit wrote it
    again = tokenizer(f"data.tokenizer.model_type={model_type}")
    again.restore(tmp_path, "source")
    for text in train[:20] + unseen:
        pieces = tok.tokenize(text)
        assert again.tokenize(text) == pieces
        assert len(pieces) < len(text)  # subwords, not characters
        assert tok.detokenize(pieces) == text  # identity normalisation keeps … and ß
    assert any("ß" in p for p in tok.tokenize("schließen"))


def test_training_is_deterministic_and_samples_at_most_max_sentences(tmp_path):
    a, b = tokenizer("data.tokenizer.max_sentences=150"), tokenizer("data.tokenizer.max_sentences=150")
    a.fit(sentences(400), tmp_path / "a", "joint")
    b.fit(sentences(400), tmp_path / "b", "joint")
    assert a.model_proto == b.model_proto
    sample = sample_sentences(sentences(400), 150)
    assert len(sample) == 150 and sample == sample_sentences(sentences(400), 150)
    assert set(sample) <= set(sentences(400))


def test_pipeline_with_joint_sentencepiece_reloads_with_identical_ids(tmp_path):
    config = data_config()
    pairs = list(zip(sentences(200), sentences(200, seed=2)))
    pipeline = TextPipeline.fit(config, pairs, tmp_path)
    pipeline.save(tmp_path)
    assert model_path(tmp_path, "joint").is_file()
    loaded = TextPipeline.load(config, tmp_path)
    for source, target in pairs[:30]:
        assert loaded.encode_source(source) == pipeline.encode_source(source)
        ids = loaded.encode_target(target)
        assert ids == pipeline.encode_target(target)
        assert loaded.decode_target(ids) == target


def test_vocabulary_too_large_for_the_text_is_a_config_error(tmp_path):
    tok = tokenizer("data.tokenizer.vocab_size=5000")
    with pytest.raises(ConfigError, match=r"data.tokenizer.vocab_size: 5000 .* at most \d+"):
        tok.fit(sentences(50), tmp_path, "joint")
    assert not model_path(tmp_path, "joint").exists()
