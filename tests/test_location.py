"""Location-aware attention (model.attention: location, Chorowski et al. 2015): the score is the
concat score plus U (F * alpha_{i-1}), the convolution by hand; the first step reads all the mass
on the first position; every attending design carries the previous alignment from step to step
(teacher forcing equals stepping) and beam search carries each hypothesis' own through its
reordering; the settings where it does not apply are refused by name. (The registry-wide tests
of test_scorers, test_models, test_beam and test_int8 take it up as every scorer.)"""

from __future__ import annotations

import pytest
import torch
from helpers import assert_teacher_forcing_equals_stepping, padded_batch

from attnseq.config import load_config
from attnseq.data.batching import SourceBatch
from attnseq.data.vocab import Vocab
from attnseq.decoding.beam import beam_search
from attnseq.errors import ConfigError
from attnseq.nn import build_model
from attnseq.nn.attention import SCORERS, build_scorer, forward_only
from attnseq.nn.rnn.decoders import DECODERS
from attnseq.schema import Variant

V_SRC, V = 10, 13
ATTENDING = [name for name in DECODERS.names() if DECODERS.get(name).uses_attention]
SMALL = [
    "model.embed_size=8",
    "model.hidden_size=12",
    "model.attention={name: location, filters: 3, width: 5, window: 2, back: 1}",
]


def scorer(**options):
    torch.manual_seed(0)
    return build_scorer(Variant("location", {"filters": 3, "width": 5, "size": 8, **options}), 6, 8).double()


def test_the_score_is_the_concat_score_plus_the_convolved_previous_alignment():
    """e_{i,j} = w^T tanh(W s + V h_j + U f_{i,j} + b), f_{i,j} = sum_m F[:, m] alpha_{i-1}[j + m - r // 2]
    (zeros beyond the ends), computed here by hand."""
    location = scorer()
    g = torch.Generator().manual_seed(1)
    query = torch.randn(2, 3, 6, generator=g, dtype=torch.double)
    keys = location.prepare(torch.randn(2, 7, 8, generator=g, dtype=torch.double))  # (B, S, A)
    previous = torch.softmax(torch.randn(2, 3, 7, generator=g, dtype=torch.double), -1)  # (B, T, S)
    filters, r = location.F.weight[:, 0], 5  # (k, r)
    padded = torch.nn.functional.pad(previous, (r // 2, r // 2))  # (B, T, S + r - 1)
    f = torch.stack([padded[..., j : j + r] @ filters.T for j in range(7)], 2)  # (B, T, S, k)
    expected = location.v(torch.tanh(location.W_q(query).unsqueeze(2) + keys.unsqueeze(1) + location.U(f))).squeeze(-1)
    torch.testing.assert_close(location.score_located(query, keys, previous), expected)


def test_the_first_step_reads_all_the_mass_on_the_first_position():
    location = scorer()
    mask = torch.tensor([[True, True, False], [True, True, True]])
    first = location.first_alignment(mask, torch.double)
    assert torch.equal(first, torch.tensor([[1.0, 0, 0], [1.0, 0, 0]], dtype=torch.double))
    query, keys = torch.randn(2, 4, 6, dtype=torch.double), location.prepare(torch.randn(2, 3, 8, dtype=torch.double))
    torch.testing.assert_close(
        location.score(query, keys), location.score_located(query, keys, first.unsqueeze(1).expand(2, 4, 3))
    )


def test_the_previous_alignment_moves_the_scores():
    """The same query scores the keys otherwise after another previous alignment: the score reads it."""
    location = scorer()
    query, keys = torch.randn(1, 1, 6, dtype=torch.double), location.prepare(torch.randn(1, 7, 8, dtype=torch.double))
    at = torch.eye(7, dtype=torch.double)  # previous alignments with all the mass on one position
    scores = [location.score_located(query, keys, at[p].view(1, 1, 7)) for p in (1, 5)]
    assert not torch.allclose(*scores)


def test_a_window_keeps_the_positions_from_back_before_the_previous_median_to_window_after_it():
    """[m - back, m + W], m the first position where the previous alignment's mass reaches one half,
    clamped to the memory's own positions; the first step's m is 0 (all the mass on position 0)."""
    location = scorer(window=2, back=1)
    g = torch.Generator().manual_seed(1)
    query = torch.randn(2, 3, 6, generator=g, dtype=torch.double)
    keys = location.prepare(torch.randn(2, 7, 8, generator=g, dtype=torch.double))
    mask = torch.tensor([[True] * 7, [True] * 4 + [False] * 3])
    previous = torch.tensor(
        [
            [[0.1, 0.3, 0.1, 0.4, 0.1, 0, 0], [0, 0, 0, 0, 0, 0.5, 0.5], [1, 0, 0, 0, 0, 0, 0]],
            [[0.2, 0.2, 0.2, 0.4, 0, 0, 0], [0, 0.5, 0.5, 0, 0, 0, 0], [0, 0, 0.3, 0.7, 0, 0, 0]],
        ],
        dtype=torch.double,
    )
    medians = [[2, 5, 0], [2, 1, 3]]  # 0.1 + 0.3 + 0.1 = 0.5 at position 2; 0.2 + 0.2 + 0.2 >= 0.5 at 2; ...
    _, alignment = location(query, keys, keys, mask, previous=previous)
    for b in range(2):
        for t in range(3):
            inside = torch.zeros(7, dtype=torch.bool)
            inside[max(medians[b][t] - 1, 0) : medians[b][t] + 3] = True
            inside &= mask[b]
            assert torch.all(alignment[b, t, ~inside] == 0) and torch.all(alignment[b, t, inside] > 0), (b, t)
    first = location(query, keys, keys, mask)[1]  # no previous alignment: the first step's, m = 0
    assert torch.all(first[..., 3:] == 0) and torch.all(first[..., :3] > 0)
    peaks = [[3, 5, 0], [3, 1, 3]]  # the first most attended position (0.5 and 0.5: the first)
    _, alignment = scorer(window=2, anchor="peak")(query, keys, keys, mask, previous=previous)
    for b in range(2):
        for t in range(3):
            inside = torch.zeros(7, dtype=torch.bool)
            inside[peaks[b][t] : peaks[b][t] + 3] = True
            inside &= mask[b]
            assert torch.all(alignment[b, t, ~inside] == 0) and torch.all(alignment[b, t, inside] > 0), (b, t)


def test_with_a_window_from_the_peak_no_step_looks_most_before_the_step_before():
    """anchor: peak, back 0: each step's most attended position is at or after the previous step's,
    where the same weights without a window look back."""
    peaks = {}
    for window in ("", ", window: 2, anchor: peak"):
        torch.manual_seed(3)
        model = (
            build_model(
                load_config(
                    None, SMALL[:2] + [f"model.attention={{name: location, filters: 3, width: 5{window}}}"]
                ).model,
                V_SRC,
                V,
            )
            .double()
            .eval()
        )
        with torch.no_grad():  # a strong location term
            model.decoder.scorer.F.weight.mul_(10)
            model.decoder.scorer.U.weight.mul_(10)
        src, mask, tgt_in = padded_batch(V_SRC, V)
        _, alignment = model(SourceBatch(src, mask), tgt_in)
        peaks[window] = alignment.argmax(-1)  # (B, T)
    free, windowed = peaks.values()
    assert torch.any(free[:, 1:] < free[:, :-1])  # without the window, some step looks back
    assert torch.all(windowed[:, 1:] >= windowed[:, :-1])
    assert torch.any(windowed[:, 1:] > windowed[:, :-1])  # and it moves on


@pytest.mark.parametrize(
    "attention, forward",
    [
        ("{name: location, window: 2, anchor: peak}", True),
        ("{name: location, window: 2, anchor: peak, back: 1}", False),  # may look one position back
        ("{name: location, window: 2}", False),  # from the median: the peak may lie after it
        ("location", False),
        ("general", False),
    ],
)
def test_a_scorer_says_whether_its_argmax_moves_forward_by_construction(attention, forward):
    """What the speech reproduction reads to say that its monotonic share cannot fail."""
    variant = load_config(None, [f"model.attention={attention}"]).model.attention
    assert forward_only(SCORERS.get(variant.name), SCORERS.options(variant, "model.attention")) is forward


@pytest.mark.parametrize("design", ATTENDING)
def test_every_design_carries_the_previous_alignment_from_step_to_step(design):
    torch.manual_seed(0)
    model = build_model(load_config(None, SMALL + [f"model.decoder={design}"]).model, V_SRC, V).double().eval()
    assert not model.decoder.parallel  # each step's score reads the step before's alignment
    with torch.no_grad():
        model.decoder.scorer.U.weight.mul_(20)  # a strong location term
    src, mask, tgt_in = padded_batch(V_SRC, V)
    assert_teacher_forcing_equals_stepping(model, src, mask, tgt_in)
    state = model.decoder.init_state(model.encode(SourceBatch(src, mask)))
    assert torch.equal(state["previous"][:, 0], torch.ones(3, dtype=torch.double))  # alpha_0
    _, state, alignment = model.decoder.step(tgt_in[:, 0], state)
    torch.testing.assert_close(state["previous"], alignment)  # the next step reads this one's
    _, teacher = model(SourceBatch(src, mask), tgt_in)
    with torch.no_grad():
        model.decoder.scorer.U.weight.zero_()  # no location term: the concat score, another alignment
    _, plain = model(SourceBatch(src, mask), tgt_in)
    assert not torch.allclose(teacher, plain)


def test_beam_search_carries_each_hypothesis_its_own_previous_alignment():
    """Teacher-forcing each hypothesis beam search returns gives the alignments the search kept,
    which depend on that hypothesis' own previous alignments (a row left behind when the beam
    reorders would change them)."""
    torch.manual_seed(3)
    model = build_model(load_config(None, SMALL).model, V_SRC, V).double().eval()
    with torch.no_grad():
        model.decoder.scorer.U.weight.mul_(20)
    src, mask, _ = padded_batch(V_SRC, V)
    hypotheses = beam_search(model, SourceBatch(src, mask), torch.tensor([6, 6, 6]), 4, n_best=4, keep_attention=True)
    reordered = 0
    for b, nbest in enumerate(hypotheses):
        for h in nbest:
            steps = h.alignment.shape[0]
            tgt_in = torch.tensor([[Vocab.bos_id] + h.tokens])[:, :steps]
            _, alignment = model.decoder(model.encode(SourceBatch(src[b : b + 1], mask[b : b + 1])), tgt_in)
            n = int(mask[b].sum())
            torch.testing.assert_close(alignment[0, :, :n].float(), h.alignment, atol=1e-5, rtol=1e-4)
        reordered += len({tuple(h.tokens[:1]) for h in nbest}) < len(nbest)  # hypotheses that share a prefix
    assert reordered  # some beams held two continuations of one hypothesis


@pytest.mark.parametrize(
    "overrides, key",
    [
        (["model.attention={name: location, width: 4}"], "model.attention.width"),  # not centred
        (["model.attention={name: location, filters: 0}"], "model.attention.filters"),
        (["model.attention={name: location, back: 2}"], "model.attention.back"),  # without a window
        (["model.attention={name: location, anchor: peak}"], "model.attention.anchor"),
        (["model.attention={name: location, window: 2, anchor: mode}"], "model.attention.anchor"),
        (["model.attention={name: location, heads: 3}"], "model.attention.heads"),  # not an option of it
        (["model.attention={name: multihead, head: location}"], "model.attention.head"),  # one previous alignment
        (["model.attention=location", "model.coverage=true"], "model.coverage"),  # coverage is concat's term
        (["model.decoder=none", "model.attention=location"], "model.attention"),
    ],
)
def test_where_it_does_not_apply_it_is_refused_by_name(overrides, key):
    """Refused when the config is checked (before any data is read or model built), naming the key."""
    from attnseq.engines import engine_for

    with pytest.raises(ConfigError) as err:
        config = load_config(None, ["data.dir=x", *overrides])
        engine_for(config).check(config)
    assert err.value.key == key and str(err.value).startswith(key)


def test_the_numpy_engine_refuses_it_by_name():
    """The NumPy engine runs the book's models, whose attention is the unscaled dot."""
    from attnseq.engines import engine_for

    config = load_config(
        None,
        [
            "data.dir=x",
            "engine=numpy",
            "model.decoder=book",
            "model.attention=location",
            "model.encoder.bidirectional=false",
            "model.bridge=copy",
            "model.init=book",
        ],
    )
    with pytest.raises(
        ConfigError,
        match=r"^model.attention: the numpy engine's book decoder scores with dot; "
        r"got .*location",
    ) as err:
        engine_for(config).check(config)
    assert err.value.key == "model.attention"
