"""Each memory architecture learns its task from its preset, shrunk to seconds of training: the
accuracy above a stated threshold, and the attention where the answer is (slow tests)."""

from __future__ import annotations

import pytest
import torch
from helpers import ROOT
from learning import at_least, learns, seed

import attnseq
from attnseq.data.batching import SourceBatch
from attnseq.data.corpora.algorithmic import make_task_splits
from attnseq.data.corpora.documents import make_document_splits
from attnseq.data.corpora.stories import make_story_splits
from attnseq.data.splits import write_split_dir

QUIET = ["train.progress=false", "train.log_every=0", "train.threads=1"]


def train(preset: str, pairs: dict, tmp_path, *overrides: str):
    """A trained run of ``configs/PRESET.yaml`` on ``pairs`` (split name -> pairs), loaded."""
    write_split_dir(tmp_path / "data", pairs["train"], pairs["dev"], pairs["test"])
    attnseq.fit(
        ROOT / "configs" / f"{preset}.yaml",
        tmp_path / "run",
        [f"data.dir={tmp_path / 'data'}", *QUIET, f"train.seed={seed(1)}", *overrides],
    )
    return attnseq.load(tmp_path / "run")


@pytest.mark.slow
@learns
def test_memn2n_learns_where_people_are_and_reads_the_supporting_sentence(tmp_path):
    splits = make_story_splits(["single"], n_train=1000, n_dev=50, n_test=200, seed=1)
    model = train(
        "memn2n", {k: [s.pair() for s in v] for k, v in splits.items()}, tmp_path, "train.epochs=20", "train.lr=0.01"
    )
    test = splits["test"]
    at_least("test exact match", model.evaluate([s.pair() for s in test], bleu=False)["exact_match"], 0.9)
    results = model.search([s.pair()[0] for s in test], keep_attention=True)
    hits = 0
    for story in test:  # some hop's heaviest sentence is the supporting one
        hops = model.model.encode(SourceBatch(*_batch(model, story.pair()[0]))).sentences[0]  # (K, N)
        hits += story.support[0] in hops.argmax(-1).tolist()
    at_least("stories whose supporting sentence a hop reads most", hits / len(test), 0.9)
    assert all(r.attention[0].shape == (2, len(r.source_tokens)) for r in results[:5])


def _batch(model, text: str):
    ids = torch.tensor([model.pipeline.encode_source(text)])
    return ids, torch.ones_like(ids, dtype=torch.bool)


@pytest.mark.slow
@pytest.mark.minutes
@learns
def test_ntm_learns_to_copy_and_copies_longer_sequences(tmp_path):
    train_pairs, dev, test, longer = make_task_splits("copy", 3000, 50, 100, (1, 5), (8,), seed=1, bits=3)
    model = train(
        "ntm-copy",
        {"train": train_pairs, "dev": dev, "test": test},
        tmp_path,
        "train.max_steps=1500",
        "train.eval_every=1500",
        "train.lr=0.005",
        "model.memory_locations=16",
    )
    at_least("test exact match", model.evaluate(test, bleu=False)["exact_match"], 0.75)
    # beyond the lengths trained on: most vectors still right (chance: 1 in 8)
    at_least("token accuracy at length 8", model.evaluate(longer[8], bleu=False)["token_accuracy"], 0.3)


@pytest.mark.slow
@learns
def test_han_learns_the_verdict_and_attends_to_its_sentence(tmp_path):
    splits = make_document_splits(4000, 100, 200, seed=1)
    # the preset's 4 epochs end before some seeds have learned (the model learns in a jump, at epoch 3
    # to 5 by seed): up to 8, stopping once every dev verdict is right
    model = train(
        "han",
        {k: [d.pair() for d in v] for k, v in splits.items()},
        tmp_path,
        "train.epochs=8",
        "train.target_exact_match=1.0",
    )
    test = splits["test"]
    at_least("test exact match", model.evaluate([d.pair() for d in test], bleu=False)["exact_match"], 0.9)
    hits = sum(
        int(model.model.encode(SourceBatch(*_batch(model, d.pair()[0]))).sentences[0, 0].argmax()) == d.key
        for d in test
    )
    at_least("documents whose key sentence is attended most", hits / len(test), 0.5)  # chance: about 1 in 5.5 sentences
