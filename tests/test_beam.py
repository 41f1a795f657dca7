"""Beam search: scores worked out by hand on a table model, greedy equivalence, batch invariance."""

from __future__ import annotations

import json
import math

import pytest
import torch
from helpers import TINY, scorer_variant

from attnseq.config import load_config
from attnseq.data.batching import SourceBatch, pad
from attnseq.data.vocab import Vocab
from attnseq.decoding.beam import beam_search, gnmt_penalty
from attnseq.decoding.common import Hypothesis
from attnseq.decoding.greedy import greedy_search
from attnseq.decoding.search import search
from attnseq.errors import ConfigError
from attnseq.nn.attention import SCORERS, Locating
from attnseq.nn.model import build_model
from attnseq.nn.state import Memory, State

EOS, A, B = 2, 4, 5  # Vocab: pad 0, bos 1, eos 2, unk 3; two real tokens a and b
V = 6

# Next-token probabilities given the prefix generated so far (bos not included).
TABLE = {
    (): {A: 0.5, B: 0.4, EOS: 0.1},
    (A,): {EOS: 0.45, B: 0.3, A: 0.25},
    (B,): {A: 0.9, B: 0.06, EOS: 0.04},
    (B, A): {EOS: 0.55, A: 0.3, B: 0.15},
}
DEFAULT = {EOS: 0.9, A: 0.06, B: 0.04}  # every other prefix
ln = math.log


class TableDecoder:
    """The decoder step protocol over TABLE; attention is uniform over the real source tokens.
    ``rows`` records the state rows of every step."""

    def __init__(self):
        self.rows: list[int] = []

    def init_state(self, memory: Memory) -> State:
        batch = memory.mask.shape[0]
        return State(prefix=torch.zeros(batch, 0, dtype=torch.long), mask=memory.mask)

    def step(self, prev_tokens, state):
        self.rows.append(len(prev_tokens))
        prefix = torch.cat([state["prefix"], prev_tokens.unsqueeze(1)], 1)  # (B, t), bos first
        probs = torch.zeros(len(prev_tokens), V)
        for row, tokens in enumerate(prefix.tolist()):
            for token, p in TABLE.get(tuple(tokens[1:]), DEFAULT).items():
                probs[row, token] = p
        mask = state["mask"].float()
        alignment = mask / mask.sum(1, keepdim=True)  # (B, S)
        return probs.log(), state.replace(prefix=prefix), alignment


class TableModel:
    def __init__(self):
        self.decoder = TableDecoder()

    def encode(self, source: SourceBatch):
        return Memory(keys=source.ids.float(), values=source.ids.float(), mask=source.mask)


def table_search(beam, limit=10, n_best=1, alpha=0.0, keep_attention=False, lengths=(3,)):
    src, mask = pad([[7] * n for n in lengths])
    limits = torch.full((len(lengths),), limit)
    return beam_search(TableModel(), SourceBatch(src, mask), limits, beam, n_best, alpha, keep_attention)


def tokens_and_scores(hyps: list[Hypothesis]):
    return [(h.tokens, h.score) for h in hyps]


def assert_hyps(found: list[Hypothesis], expected):
    assert [h.tokens for h in found] == [t for t, _ in expected]
    for h, (_, score) in zip(found, expected):
        assert h.score == pytest.approx(score, abs=1e-6)  # float32 log-probs


# ----------------------------------------------------------------- worked by hand
def test_beam_two_without_length_penalty_by_hand():
    # step 1: a = ln .5 = -0.693, b = ln .4 = -0.916 (eos ln .1 = -2.303 is third): beam {a, b}
    # step 2: b a = ln(.4*.9) = ln .36 = -1.022, a eos = ln(.5*.45) = ln .225 = -1.492,
    #         a b = ln .15 = -1.897, ...  -> [a] finishes with ln .225; alive: {b a}
    #         (the n_best-th finished, -1.492, is below the best alive -1.022: go on)
    # step 3: from b a only: b a eos = ln(.36*.55) = ln .198 = -1.619 finishes,
    #         b a a = ln(.36*.3) = ln .108 = -2.226 stays alive
    #         -> 2nd best finished -1.619 >= best alive -2.226: stop
    (found,) = table_search(beam=2, n_best=2)
    assert_hyps(found, [([A], ln(0.225)), ([B, A], ln(0.198))])
    (best,) = table_search(beam=2, n_best=1)
    assert_hyps(best, [([A], ln(0.225))])


def test_an_n_best_list_holds_no_empty_hypothesis_but_at_its_head(monkeypatch):
    # beam 3, one token at most: a (ln .5), b (ln .4) and eos (ln .1, the empty output) all finish;
    # the empty one is no alternative to list after a and b
    (found,) = table_search(beam=3, n_best=3, limit=1)
    assert_hyps(found, [([A], ln(0.5)), ([B], ln(0.4))])
    # where ending at once is the model's best, the empty output heads the list
    monkeypatch.setitem(TABLE, (), {EOS: 0.6, A: 0.3, B: 0.1})
    (found,) = table_search(beam=2, n_best=2)
    assert_hyps(found, [([], ln(0.6)), ([A], ln(0.3 * 0.45))])


def test_beam_two_with_length_penalty_by_hand():
    # alpha = 1: lp(|Y|) = (5 + |Y|) / 6, |Y| counting eos; alive candidates share one length,
    # so the beam is the same as above, only the finished scores and the stopping change.
    # step 2: [a] finishes: ln .225 / lp(2) = -1.492 / (7/6) = -1.279
    #         bound for alive b a (raw -1.022): -1.022 / lp(10) = -1.022 / 2.5 = -0.409 > -1.279
    # step 3: [b a] finishes: ln .198 / lp(3) = -1.619 / (8/6) = -1.215  (now the best)
    #         bound for b a a (raw ln .108 = -2.226): -2.226 / 2.5 = -0.890 > -1.279: go on
    # step 4: prefix (b, a, a) uses DEFAULT: b a a eos = ln(.108*.9) = ln .0972 = -2.331,
    #         / lp(4) = -2.331 / 1.5 = -1.554 finishes; b a a a = ln(.108*.06) = -5.039 alive,
    #         bound -5.039 / 2.5 = -2.016 < 2nd best -1.279: stop
    (found,) = table_search(beam=2, n_best=2, alpha=1.0)
    assert_hyps(found, [([B, A], ln(0.198) / (8 / 6)), ([A], ln(0.225) / (7 / 6))])
    assert gnmt_penalty(4, 1.0) == pytest.approx(1.5) and gnmt_penalty(7, 0.0) == 1.0


def test_beam_three_with_length_penalty_and_a_limit_by_hand():
    # beam 3, alpha 1, limit 4, n_best 3
    # step 1: {a -0.693, b -0.916, eos ln .1 = -2.303}: [] finishes with -2.303 / lp(1) = -2.303
    # step 2: from a: a eos ln .225 = -1.492, a b ln .15 = -1.897, a a ln .125 = -2.079;
    #         from b: b a ln .36 = -1.022, b b ln .024, b eos ln .016
    #         top 3: b a, a eos, a b -> [a] finishes: -1.492 / (7/6) = -1.279
    # step 3: from b a: eos ln .198 = -1.619, b a a ln .108 = -2.226, b a b ln .054 = -2.919;
    #         from a b (DEFAULT): eos ln(.15*.9) = ln .135 = -2.003, a b a ln .009 = -4.711
    #         top 3: b a eos, a b eos, b a a -> [b a] -1.619/(8/6) = -1.215, [a b] -2.003/(8/6) = -1.502
    #         3rd best -1.502 < bound of b a a: -2.226 / lp(4) = -2.226 / 1.5 = -1.484: go on
    # step 4 = the limit: b a a eos ln .0972 / 1.5 = -1.554, b a a a ln .00648 / 1.5 = -3.359 ...
    #         all finish; the best three overall:
    (found,) = table_search(beam=3, n_best=3, alpha=1.0, limit=4)
    assert_hyps(found, [([B, A], ln(0.198) / (8 / 6)), ([A], ln(0.225) / (7 / 6)), ([A, B], ln(0.135) / (8 / 6))])


def test_a_beam_wider_than_the_vocabulary_finds_the_most_probable_outputs():
    # 8 slots but only eos, a and b are possible (pad, bos, unk have probability 0): the empty
    # slots are never extended. The three most probable outputs of TABLE overall are
    # [a] .5*.45 = .225, [b a] .4*.9*.55 = .198 and [a b] .5*.3*.9 = .135 (next: [a a] .1125).
    (found,) = table_search(beam=8, n_best=3)
    assert_hyps(found, [([A], ln(0.225)), ([B, A], ln(0.198)), ([A, B], ln(0.135))])


def test_length_limit_finishes_every_survivor_without_eos():
    # limit 1: the step-1 beam {a, b} both finish at the limit, their scores without eos
    (found,) = table_search(beam=2, n_best=2, limit=1)
    assert_hyps(found, [([A], ln(0.5)), ([B], ln(0.4))])


def test_beam_one_equals_greedy_on_the_table():
    src, mask = pad([[7, 7], [7]])
    limits = torch.tensor([10, 10])
    greedy = greedy_search(TableModel(), SourceBatch(src, mask), limits)
    beam = beam_search(TableModel(), SourceBatch(src, mask), limits, beam_size=1)
    assert [tokens_and_scores(g) for g in greedy] == [tokens_and_scores(b) for b in beam]
    assert_hyps(beam[0], [([A], ln(0.225))])  # a (.5) then eos (.45)


def test_finished_hypotheses_are_kept_and_attention_is_per_sentence():
    # [a] finishes at step 2 while the beam goes on with b a: it is neither extended nor lost
    short, long = table_search(beam=2, n_best=2, keep_attention=True, lengths=(2, 5))
    for found, length in ((short, 2), (long, 5)):
        assert [h.tokens for h in found] == [[A], [B, A]]
        a_eos, b_a_eos = found
        assert a_eos.alignment.shape == (2, length)  # steps a, eos; padding trimmed
        assert b_a_eos.alignment.shape == (3, length)
        torch.testing.assert_close(b_a_eos.alignment, torch.full((3, length), 1 / length))


def test_finished_sentences_leave_the_state():
    model = TableModel()
    src, mask = pad([[7], [7]])
    short, long = beam_search(model, SourceBatch(src, mask), torch.tensor([1, 10]), beam_size=2)
    assert short[0].tokens == [A] and long[0].tokens == [A]
    # step 1: one row per sentence; then the first sentence (limit 1) is done and only the
    # second's beam of 2 remains (4 rows if nothing were dropped); it stops after step 3
    assert model.decoder.rows == [2, 2, 2]


def test_n_best_larger_than_beam_is_a_config_error():
    with pytest.raises(ConfigError, match="decode.n_best"):
        table_search(beam=2, n_best=3)


# ----------------------------------------------------------------- real random models
def random_model(*overrides: str, vocab: int = 17):
    torch.manual_seed(0)
    base = TINY if "model.arch=transformer" not in overrides else [s for s in TINY if "embed_size" not in s]
    cfg = load_config(None, base + list(overrides)).model
    return build_model(cfg, 19, vocab).eval()


def random_sources(n: int, seed: int = 1, longest: int = 12) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, longest + 1, (n,), generator=g).tolist()
    return [torch.randint(4, 19, (n,), generator=g).tolist() for n in lengths]


DESIGNS = {
    "luong": ["model.decoder=luong"],
    "bahdanau-gru": ["model.decoder=bahdanau", "model.cell=gru"],
    "book-2-layers": ["model.decoder=book", "model.encoder_layers=2", "model.decoder_layers=2"],
    "none": ["model.decoder=none"],
    "transformer": ["model.arch=transformer", "model.layers=2", "model.heads=2", "model.ff_size=32"],
}
# scorers whose score reads the previous step's alignment: the state carries it, the search reorders it
# (with a window around it where the scorer takes one)
LOCATING = [name for name in SCORERS.names() if issubclass(SCORERS.get(name), Locating)]
LOCATED = {name: scorer_variant(name, window=2, back=1, anchor="peak").plain() for name in LOCATING}
DESIGNS.update(
    {f"luong-{name}": ["model.decoder=luong", f"model.attention={json.dumps(LOCATED[name])}"] for name in LOCATING}
)


@pytest.mark.parametrize("design", ["luong", "transformer", *(f"luong-{name}" for name in LOCATING)])
def test_beam_one_equals_greedy_on_a_random_model(design):
    model = random_model(*DESIGNS[design])
    src, mask = pad(random_sources(16))
    limits = torch.full((16,), 12)
    greedy = greedy_search(model, SourceBatch(src, mask), limits)
    beam = beam_search(model, SourceBatch(src, mask), limits, beam_size=1)
    for g, b in zip(greedy, beam):
        assert g[0].tokens == b[0].tokens
        assert g[0].score == pytest.approx(b[0].score, abs=1e-5)


@pytest.mark.parametrize("design", list(DESIGNS))
def test_batch_invariance(design):
    model = random_model(*DESIGNS[design])
    sources = random_sources(64)
    src, mask = pad(sources)
    limits = torch.tensor([len(s) + 4 for s in sources])
    batched = beam_search(model, SourceBatch(src, mask), limits, beam_size=4, n_best=2, keep_attention=True)
    for i in range(0, 64, 6):  # a sample of the sentences, decoded alone
        one_src, one_mask = pad([sources[i]])
        alone = beam_search(
            model, SourceBatch(one_src, one_mask), limits[i : i + 1], beam_size=4, n_best=2, keep_attention=True
        )[0]
        assert [h.tokens for h in alone] == [h.tokens for h in batched[i]]
        for a, b in zip(alone, batched[i]):
            assert a.score == pytest.approx(b.score, abs=1e-5)
            if a.alignment is not None:
                steps = len(a.tokens) + (len(a.tokens) < limits[i])  # + the eos step
                assert b.alignment.shape == a.alignment.shape == (steps, len(sources[i]))
                torch.testing.assert_close(a.alignment, b.alignment, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("design", list(DESIGNS))
def test_beam_scores_are_the_teacher_forced_log_probabilities(design):
    """Beam search keeps the memory once per sentence (its hypotheses attend together); every
    hypothesis it returns must score exactly what teacher forcing on the full memory gives."""
    model = random_model(*DESIGNS[design])
    sources = random_sources(12, seed=3)
    src, mask = pad(sources)
    limits = torch.full((12,), 8)
    found = beam_search(model, SourceBatch(src, mask), limits, beam_size=3, n_best=3)
    rows, outputs = [], []
    for i, hyps in enumerate(found):
        for h in hyps:
            rows.append(i)
            outputs.append(h.tokens + ([Vocab.eos_id] if len(h.tokens) < 8 else []))
    tgt_out, tgt_mask = pad(outputs)
    tgt_in = torch.cat([torch.full((len(outputs), 1), Vocab.bos_id), tgt_out[:, :-1]], 1)
    index = torch.tensor(rows)
    with torch.no_grad():
        log_probs = model.logits(SourceBatch(src[index], mask[index]), tgt_in).log_softmax(-1)  # (N, T, V)
    token_log_probs = log_probs.gather(2, tgt_out.unsqueeze(2)).squeeze(2) * tgt_mask
    scores = [h.score for hyps in found for h in hyps]
    torch.testing.assert_close(
        token_log_probs.sum(1).double(), torch.tensor(scores, dtype=torch.float64), atol=1e-4, rtol=0
    )


def test_n_best_is_ordered_and_distinct_and_beam_beats_greedy():
    model = random_model(*DESIGNS["luong"])
    sources = random_sources(24, seed=5)
    src, mask = pad(sources)
    limits = torch.full((24,), 10)
    greedy = greedy_search(model, SourceBatch(src, mask), limits)
    for alpha in (0.0, 0.6):
        decode = load_config(
            None, ["decode.beam_size=5", "decode.n_best=5", "decode.max_len=10", f"decode.length_penalty={alpha}"]
        ).decode
        for hyps in search(model, SourceBatch(src, mask), decode):
            assert len(hyps) == 5
            scores = [h.score for h in hyps]
            assert scores == sorted(scores, reverse=True)
            assert len({tuple(h.tokens) for h in hyps}) == 5
    plain = beam_search(model, SourceBatch(src, mask), limits, beam_size=5)
    better = sum(b[0].score >= g[0].score - 1e-6 for b, g in zip(plain, greedy))
    assert better >= 20  # beam search finds a more probable output for (almost) every sentence


@pytest.mark.parametrize("width", [3, 127, 128, 129, 700, 1000, 8001])
@pytest.mark.parametrize("k", [1, 2, 5, 12])
def test_row_top_k_equals_torch_top_k(width, k):
    from attnseq.decoding.scores import row_top_k

    g = torch.Generator().manual_seed(width * 31 + k)
    values = torch.log_softmax(torch.randn(40, width, generator=g) * 4, -1)
    values[0, -1] = 10.0  # the largest entry in the partial last block
    values[1, :] = float("-inf")
    values[1, 5 % width] = 0.0  # a row of -inf but one
    best, columns = row_top_k(values, k)
    expected = values.topk(min(k, width), dim=-1)
    assert torch.equal(best, expected.values)
    assert torch.equal(values.gather(1, columns), expected.values)  # the right entries (ties aside)
    finite = torch.isfinite(expected.values)
    assert torch.equal(columns[finite], expected.indices[finite])


def test_beam_search_over_a_large_vocabulary_matches_plain_top_k(monkeypatch):
    """The block-maxima top-k (vocabularies over 2 k blocks) finds what a top-k over the whole
    log-softmax finds: the same hypotheses and scores."""
    from attnseq.decoding import scores

    config = load_config(None, TINY + ["model.decoder=luong", "model.attention=general"])
    torch.manual_seed(3)
    model = build_model(config.model, 20, 3000).eval()
    src, mask = pad([[4, 5, 6, 7], [8, 9], [10, 11, 12, 13, 14, 15]])
    limits = torch.tensor([7, 7, 7])
    runs = []
    for block in (scores.BLOCK, 10**9):  # blocks; one block too wide: torch's top-k
        monkeypatch.setattr(scores, "BLOCK", block)
        runs.append(
            [[(h.tokens, h.score) for h in b] for b in beam_search(model, SourceBatch(src, mask), limits, 4, n_best=3)]
            + [[(h.tokens, h.score) for h in b] for b in greedy_search(model, SourceBatch(src, mask), limits)]
        )
    assert runs[0] == runs[1]


def every_variant() -> dict[str, list[str]]:
    """The designs above, and every scorer, cell, encoder and decoder design of the registries."""
    from attnseq.nn.rnn.cells import CELLS
    from attnseq.nn.rnn.decoders import DECODERS
    from attnseq.nn.rnn.encoders import ENCODERS

    variants = dict(DESIGNS)
    variants.update({f"scorer {n}": ["model.decoder=luong", f"model.attention={n}"] for n in SCORERS.names()})
    variants.update({f"cell {n}": ["model.decoder=bahdanau", f"model.cell={n}"] for n in CELLS.names()})
    variants.update(
        {
            f"encoder {n}": ["model.decoder=luong", f"model.encoder={n}", "model.encoder_layers=2"]
            for n in ENCODERS.names()
        }
    )
    variants.update({f"decoder {n}": [f"model.decoder={n}"] for n in DECODERS.names()})
    return variants


@pytest.mark.parametrize("variant", list(every_variant()))
def test_decoding_layout_changes_strides_not_results(variant):
    """A model laid out for decoding (weights stored column-major) finds the same hypotheses
    with the same scores and attention, and saves the same weights."""
    import copy

    from attnseq.nn.layout import lay_out_for_decoding
    from attnseq.nn.model import model_weights

    model = random_model(*every_variant()[variant])
    laid_out = lay_out_for_decoding(copy.deepcopy(model))
    embeddings = {id(m.weight) for m in laid_out.modules() if isinstance(m, torch.nn.Embedding)}
    matrices = [p for p in laid_out.parameters() if p.dim() == 2 and id(p) not in embeddings]
    assert matrices and all(p.t().is_contiguous() for p in matrices)  # column-major (K, N) storage
    assert all(not p.is_contiguous() for p in matrices if min(p.shape) > 1)  # (a single row is both)
    assert all(laid_out.get_parameter(n).is_contiguous() for n, p in laid_out.named_parameters() if id(p) in embeddings)
    sources = random_sources(24)
    src, mask = pad(sources)
    limits = torch.tensor([len(s) + 4 for s in sources])
    for beam in (1, 3):
        before, after = (
            beam_search(m, SourceBatch(src, mask), limits, beam_size=beam, n_best=beam, keep_attention=True)
            for m in (model, laid_out)
        )
        for a, b in zip(before, after):
            assert [h.tokens for h in a] == [h.tokens for h in b]
            assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-6)
            for x, y in zip(a, b):
                if x.alignment is not None:
                    torch.testing.assert_close(x.alignment, y.alignment, atol=1e-6, rtol=1e-5)
    saved, found = model_weights(model), model_weights(laid_out)
    assert saved.keys() == found.keys() and all((saved[k] == found[k]).all() for k in saved)
