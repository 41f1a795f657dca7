"""Evaluation of a large set in bounded memory: the dev loss in batches bounded in positions and
logits, the dev set held packed, and Translator.evaluate decoding and scoring a part at a time,
with the metrics of the whole set at once (issue 43, item 5)."""

from __future__ import annotations

import gc
import random
import tracemalloc
import weakref

import numpy as np
import pytest
import torch
from helpers import TIMING, TINY

import attnseq
from attnseq.config import load_config
from attnseq.data.batching import collate, iterate_batches, sorted_batches
from attnseq.data.sampler import evaluation_batches
from attnseq.data.store import TokenStore
from attnseq.engines.torch_engine import trainer as torch_trainer
from attnseq.eval import metrics
from attnseq.eval.metrics import CorpusScore, RunningScores, exact_match, sacrebleu_score, token_accuracy
from attnseq.translator.base import InputReport

WORDS = "the a cat dog sat on mat ran to house red blue big small one two three".split()


def sentences(n: int, seed: int, words: int = 12) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, words))) for _ in range(n)]


def test_sacrebleu_scores_added_in_parts_equal_those_of_the_whole_set_at_once():
    references = sentences(300, 1)
    hypotheses = [r if i % 5 == 0 else h for i, (r, h) in enumerate(zip(references, sentences(300, 2)))]
    hypotheses[7] = ""  # an empty output is scored too
    for metric in ("bleu", "chrf"):
        whole = sacrebleu_score(metric, hypotheses, references)
        for size in (1, 7, 64, 300):
            corpus = CorpusScore(metric)
            parts = list(range(0, 300, size))
            random.Random(size).shuffle(parts)  # the order of the parts does not matter either
            for start in parts:
                corpus.add(hypotheses[start : start + size], references[start : start + size])
            assert corpus.score() == whole, (metric, size)


def test_running_scores_equal_the_scores_at_once_and_hold_one_part():
    references = sentences(800, 3, words=30)
    hypotheses = sentences(800, 4, words=30)

    def peak(n: int, part: int) -> int:
        scores = RunningScores(bleu=True, chrf=True)
        # the collector's counters as every test before left them decide when it frees cycles, and
        # so the peak (1.66x, not 4x, once under xdist): each measurement starts from a collection
        gc.collect()
        tracemalloc.start()
        for start in range(0, n, part):
            hyps, refs = hypotheses[start : min(n, start + part)], references[start : min(n, start + part)]
            scores.add(hyps, refs, [h.split() for h in hyps], [r.split() for r in refs])
        top = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        result = scores.result()
        assert result == {
            "exact_match": exact_match(hypotheses[:n], references[:n]),
            "token_accuracy": token_accuracy([h.split() for h in hypotheses[:n]], [r.split() for r in references[:n]]),
            **dict(zip(("bleu", "bleu_signature"), sacrebleu_score("bleu", hypotheses[:n], references[:n]))),
            **dict(zip(("chrf", "chrf_signature"), sacrebleu_score("chrf", hypotheses[:n], references[:n]))),
        }
        return top

    peak(800, 800)  # sacrebleu's tokenizer keeps what it tokenised (2**16 sentences at most): all of them now
    assert peak(800, 50) < 1.5 * peak(200, 50)  # four times the sentences, not four times the memory
    assert peak(800, 800) > 2.5 * peak(200, 200)  # where at once it grows with them


def test_bleu_applies_reads_a_generator_as_a_list():
    assert metrics.bleu_applies(r for r in ["a b c d", "e f g h i"])
    assert not metrics.bleu_applies(r for r in ["a b", "c d e"])
    assert not metrics.bleu_applies(iter([]))


def old_evaluate(model, pairs) -> dict:
    """Translator.evaluate as it was: every translation searched at once, scored at once."""
    results = model.search([s for s, _ in pairs])
    refs = [model.pipeline.normalise(t) for _, t in pairs]
    hyps = [r.outputs[0] for r in results]
    found = {
        "exact_match": exact_match(hyps, refs),
        "token_accuracy": token_accuracy(
            [r.output_tokens[0] for r in results], [model.pipeline.target_tokens(t) for _, t in pairs]
        ),
    }
    if metrics.bleu_applies(refs):
        found["bleu"], found["bleu_signature"] = sacrebleu_score("bleu", hyps, refs)
    found["chrf"], found["chrf_signature"] = sacrebleu_score("chrf", hyps, refs)
    found["sentences"] = len(pairs)
    return {**found, **InputReport.of(results).as_dict()}


@pytest.mark.parametrize("words", [1, 5], ids=["exact-match-task", "bleu-task"])
def test_evaluate_in_parts_equals_evaluate_at_once_and_holds_a_part(quick_runs, monkeypatch, words):
    """A set decoded a part at a time (parts of 2 batches of 8) scores what it scored decoded
    and scored at once, its report (unknown pieces, blank sources, empty outputs) numbered the
    same; no more than a batch of translations exists at any time."""
    model = attnseq.load(quick_runs["rnn"], overrides=["decode.batch_size=8"])
    rng = random.Random(5)
    pairs = []
    for i in range(90):
        source = "".join(rng.choice("abcdef" if i % 9 else "abcdefxyz") for _ in range(rng.randint(2, 9)))
        reference = " ".join([source[::-1]] * rng.randint(1, 2 * words - 1)) if words > 1 else source[::-1]
        pairs.append(("  " if i % 17 == 3 else source, reference))
    expected = old_evaluate(model, pairs)
    assert expected["unknown_sources"] and expected["blank_sources"]
    assert ("bleu" in expected) == (words > 1)

    made: list[weakref.ref] = []  # every translation made (a dataclass with __eq__: not hashable)
    alive, given = [], []
    translation, decode_sources = type(model)._translation, type(model).decode_sources

    def recorded_translation(self, *args):
        result = translation(self, *args)
        made.append(weakref.ref(result))
        return result

    def recorded_decode(self, sources, *args):
        given.append(len(sources))
        alive.append(sum(ref() is not None for ref in made))
        return decode_sources(self, sources, *args)

    monkeypatch.setattr(type(model), "_translation", recorded_translation)
    monkeypatch.setattr(type(model), "decode_sources", recorded_decode)
    for part in (10_000, 16, 1):
        monkeypatch.setattr(metrics, "EVALUATION_PART", part)
        given.clear()
        alive.clear()
        found = model.evaluate(pairs)
        assert {k: v for k, v in found.items() if k not in TIMING} == expected, part
        assert max(given) == 8 and sum(given) == len(pairs) - len(expected["blank_sources"])
        assert max(alive) <= 8 + 1  # a batch's, and the one that stands for those the report says nothing of


def test_evaluation_batches_keep_short_pairs_as_before_and_bound_long_ones():
    rng = np.random.default_rng(0)
    src, tgt = rng.integers(1, 12, 1000), rng.integers(1, 12, 1000)
    examples = [type("E", (), {"src": [0] * s, "tgt": [0] * t})() for s, t in zip(src, tgt)]
    short = evaluation_batches(src, tgt, 256, 1 << 15, 1 << 20)
    assert [b.tolist() for b in short] == sorted_batches(examples, 256)
    src[::50], tgt[::70] = 400, 300  # long pairs among them
    batches = evaluation_batches(src, tgt, 256, 2000, 900)
    assert np.array_equal(np.concatenate(batches), np.argsort(src, kind="stable"))
    for b in batches:
        side = np.maximum(src[b], tgt[b] + 1)
        assert len(b) == 1 or (len(b) * side.max() <= 2000 and (tgt[b] + 1).sum() <= 900)
        assert len(b) <= 256


def trainer(data, run, *extra):
    settings = [*TINY, f"data.dir={data}", "train.eval_max_sentences=20", "train.precision=fp32", *extra]
    return torch_trainer.Trainer(load_config(None, settings), run)


def test_the_dev_set_is_held_packed_and_its_loss_scored_in_bounded_batches(reverse_data, tmp_path, monkeypatch):
    """The dev pairs are held as packed ids (a TokenStore in memory) that give the Examples and
    batches the lists gave; the dev loss of pairs that fit in a batch is the one scored in
    batches of 256 before, to the bit, and where the logits' bound cuts batches, each holds at
    most that many target tokens, the loss the same to rounding."""
    t = trainer(reverse_data, tmp_path / "run")
    dev = t.dev_examples
    assert isinstance(dev, TokenStore) and len(dev) == 100 and len(t.dev_pairs) == 20  # what the evaluations decode
    pairs = attnseq.data.corpus.read_tsv(reverse_data / "dev.tsv")
    examples = t.pipeline.encode_pairs(pairs)
    assert dev.examples() == examples and dev[:3] == examples[:3] and dev[-1] == examples[-1]
    index = [5, 1, 42]
    a, b = dev.batch(index), collate([examples[i] for i in index], index)
    for x, y in ((a.source.ids, b.source.ids), (a.source.mask, b.source.mask), (a.tgt_in, b.tgt_in)):
        assert torch.equal(x, y)
    assert torch.equal(a.tgt_out, b.tgt_out) and torch.equal(a.tgt_mask, b.tgt_mask)

    with torch.no_grad():
        t.model.eval()
        total = tokens = 0.0
        for batch in iterate_batches(examples, sorted_batches(examples, 256)):
            loss, n = t.model.loss(batch.source, batch.tgt_in, batch.tgt_out, batch.tgt_mask)
            total, tokens = total + float(loss), tokens + n
    assert t.dev_loss() == total / tokens

    rows = []
    loss = type(t.model).loss

    def recorded(self, source, tgt_in, tgt_out, tgt_mask, *args):
        rows.append(int(tgt_mask.sum()))
        return loss(self, source, tgt_in, tgt_out, tgt_mask, *args)

    monkeypatch.setattr(type(t.model), "loss", recorded)
    monkeypatch.setattr(torch_trainer, "DEV_LOGIT_BYTES", 4 * len(t.pipeline.tgt_vocab) * 40)  # 40 target tokens
    assert t.dev_loss() == pytest.approx(total / tokens, rel=1e-6)
    assert max(rows) <= 40 and sum(rows) == tokens and len(rows) > 10
