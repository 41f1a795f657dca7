"""Every registered attention scorer: shapes, masks, normalisation, padding that changes nothing,
gradients, one step at a time equal to all steps at once; local windows, multi-head and cosine
specifics; configuration errors; and a tiny task learned."""

from __future__ import annotations

import json

import pytest
import torch
from helpers import learn_task, scorer_variant
from hypothesis import given, settings
from hypothesis import strategies as st
from learning import at_least, learns

from attnseq.errors import ConfigError
from attnseq.nn.attention import SCORERS, Scorer, build_scorer
from attnseq.schema import Variant

B, T, S, HQ, HK = 3, 4, 7, 6, 8
LENGTHS = torch.tensor([7, 5, 2])


def make(name: str, query_size: int = HQ, key_size: int = HK, **options):
    torch.manual_seed(0)
    options = {"heads": 2, "window": 1, "head": "general", "size": 8, **options}
    return build_scorer(scorer_variant(name, **options), query_size, key_size).double()


def inputs(query_size: int = HQ, key_size: int = HK):
    g = torch.Generator().manual_seed(1)
    query = torch.randn(B, T, query_size, generator=g, dtype=torch.double)
    keys = torch.randn(B, S, key_size, generator=g, dtype=torch.double)
    mask = torch.arange(S).unsqueeze(0) < LENGTHS.unsqueeze(1)  # (B, S)
    positions = torch.tensor([[0, 1, 2, 3], [3, 4, 5, 6], [0, 3, 6, 9]])  # target steps (B, T)
    return query, keys, mask, positions


def sizes(name: str) -> tuple[int, int]:
    """Query and key sizes: unequal where the scorer allows it."""
    return (HK, HK) if SCORERS.get(name).same_size else (HQ, HK)


def made_with_inputs(name: str):
    """(scorer ``name``, query (B, T, q), keys (B, S, k), mask (B, S), target positions (B, T)),
    the sizes unequal where the scorer allows it."""
    qs, ks = sizes(name)
    return (make(name, qs, ks), *inputs(qs, ks))


@pytest.mark.parametrize("name", SCORERS.names())
def test_shapes_masks_and_normalisation(name):
    scorer, query, keys, mask, positions = made_with_inputs(name)
    context, alignment = scorer(query, scorer.prepare(keys), keys, mask, positions)
    assert context.shape == (B, T, keys.shape[-1])
    assert alignment.shape == (B, T, S)
    assert torch.all(alignment[~mask.unsqueeze(1).expand(B, T, S)] == 0)  # exactly zero
    assert torch.all(alignment >= 0)
    torch.testing.assert_close(alignment.sum(-1), torch.ones(B, T, dtype=torch.double))
    assert torch.isfinite(context).all()


@pytest.mark.parametrize("name", SCORERS.names())
def test_padding_content_does_not_matter(name):
    scorer, query, keys, mask, positions = made_with_inputs(name)
    other = keys.clone()
    other[~mask] = 100.0  # change only padded positions
    c1, a1 = scorer(query, scorer.prepare(keys), keys, mask, positions)
    c2, a2 = scorer(query, scorer.prepare(other), other, mask, positions)
    torch.testing.assert_close(c1, c2)
    torch.testing.assert_close(a1, a2)


@pytest.mark.parametrize("name", SCORERS.names())
def test_stepwise_equals_whole_sequence(name):
    """A query of T steps gives the same as T queries of one step, each with its own target
    position (what decoders rely on)."""
    scorer, query, keys, mask, positions = made_with_inputs(name)
    prepared = scorer.prepare(keys)
    whole, whole_alignment = scorer(query, prepared, keys, mask, positions)
    steps = [scorer(query[:, t : t + 1], prepared, keys, mask, positions[:, t : t + 1]) for t in range(T)]
    torch.testing.assert_close(whole, torch.cat([context for context, _ in steps], 1))
    torch.testing.assert_close(whole_alignment, torch.cat([alignment for _, alignment in steps], 1))


@pytest.mark.parametrize("name", SCORERS.names())
def test_gradients_are_finite_and_match_finite_differences(name):
    scorer, query, keys, mask, positions = made_with_inputs(name)
    query.requires_grad_(True)
    keys.requires_grad_(True)

    def fn(q, k):
        return scorer(q, scorer.prepare(k), k, mask, positions)[0]

    assert torch.autograd.gradcheck(fn, (query, keys), eps=1e-6, atol=1e-5)
    fn(query, keys).sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in scorer.parameters() if p.grad is not None)


def test_local_m_is_zero_outside_its_window_around_the_target_position():
    scorer = make("local_m", window=1)
    query, keys, mask, positions = inputs()
    _, alignment = scorer(query, scorer.prepare(keys), keys, mask, positions)
    s = torch.arange(S)
    for b in range(B):
        for t in range(T):
            centre = min(int(positions[b, t]), int(LENGTHS[b]) - 1)  # clamped into the source
            inside = ((s - centre).abs() <= 1) & mask[b]
            assert torch.all(alignment[b, t, ~inside] == 0)
            assert torch.all(alignment[b, t, inside] > 0)
    # row 2 has 2 real tokens: a window centred past them is clamped onto them, never empty
    assert alignment[2, 3, :2].sum().item() == pytest.approx(1.0)


def test_local_p_is_zero_outside_its_window_and_weights_by_a_gaussian():
    scorer = make("local_p", window=2)
    query, keys, mask, _ = inputs()
    _, alignment = scorer(query, scorer.prepare(keys), keys, mask)
    lengths = LENGTHS.double().unsqueeze(1)
    centres = scorer.predict(query, lengths).detach()  # p_t (B, T) in [0, S]
    assert torch.all((centres >= 0) & (centres <= lengths))
    s = torch.arange(S, dtype=torch.double)
    scores = scorer.score(query, scorer.prepare(keys))
    for b in range(B):
        for t in range(T):
            centre = min(round(float(centres[b, t])), int(LENGTHS[b]) - 1)
            inside = ((s - centre).abs() <= 2) & mask[b]
            assert torch.all(alignment[b, t, ~inside] == 0)
            # inside the window: softmax(score) * exp(-(s - p)^2 / (2 (D/2)^2)), renormalised
            expected = torch.softmax(scores[b, t, inside], -1) * torch.exp(-((s[inside] - centres[b, t]) ** 2) / 2)
            torch.testing.assert_close(alignment[b, t, inside], expected / expected.sum())


def test_local_p_prediction_is_differentiable():
    """The predicted position is differentiable: its parameters get gradients."""
    scorer = make("local_p", window=2)
    query, keys, mask, _ = inputs()
    context, _ = scorer(query, scorer.prepare(keys), keys, mask)
    context.sum().backward()
    assert scorer.W_p.weight.grad.abs().sum() > 0 and scorer.v_p.weight.grad.abs().sum() > 0


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(["local_m", "local_p"]),
    window=st.integers(0, 4),
    source=st.integers(1, 60),
    steps=st.integers(1, 5),
    data=st.data(),
)
def test_a_window_read_by_gathering_equals_all_scores_masked(name, window, source, steps, data):
    """Local scorers read only each window's 2D + 1 keys and values when the window is at most
    a quarter of the memory (GatheredWindow): the context, the alignment over all S and the gradients
    are those of scoring every position and masking (the base's forward)."""
    if name == "local_p":
        window = max(window, 1)
    scorer = make(name, window=window)
    g = torch.Generator().manual_seed(data.draw(st.integers(0, 2**16)))
    lengths = torch.tensor(data.draw(st.lists(st.integers(1, source), min_size=2, max_size=2)))
    query = torch.randn(2, steps, HQ, generator=g, dtype=torch.double, requires_grad=True)
    keys = torch.randn(2, source, HK, generator=g, dtype=torch.double)
    mask = torch.arange(source).unsqueeze(0) < lengths.unsqueeze(1)  # (B, S)
    positions = torch.randint(0, source + 3, (2, steps), generator=g)  # some past the source's end

    def run(forward):
        context, alignment = forward(query, scorer.prepare(keys), keys, mask, positions)
        grads = torch.autograd.grad(context.sum() + alignment.square().sum(), [query, *scorer.parameters()])
        return context, alignment, grads

    gathered, masked = run(scorer), run(lambda *a: Scorer.forward(scorer, *a))
    torch.testing.assert_close(gathered[0], masked[0])
    torch.testing.assert_close(gathered[1], masked[1])
    for a, b in zip(gathered[2], masked[2]):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("name", SCORERS.names())
def test_without_positions_a_scorer_takes_the_steps_in_order(name):
    """No target positions means arange(T) (the parallel path's), for the scorers that use them."""
    scorer, query, keys, mask, _ = made_with_inputs(name)
    prepared = scorer.prepare(keys)
    default = scorer(query, prepared, keys, mask)[1]
    explicit = scorer(query, prepared, keys, mask, torch.arange(T).expand(B, T))[1]
    torch.testing.assert_close(default, explicit)


def test_multihead_alignment_is_the_mean_of_its_heads():
    scorer = make("multihead", heads=3, head="scaled_dot")
    query, keys, mask, _ = inputs()
    prepared = scorer.prepare(keys)
    assert prepared.shape[:3] == (B, 3, S)  # batch first, so beam search can reorder it
    heads = scorer.head_alignments(query, prepared, mask)  # (B, h, T, S)
    _, alignment = scorer(query, prepared, keys, mask)
    torch.testing.assert_close(alignment, heads.mean(1))
    assert not torch.allclose(heads[:, 0], heads[:, 1])  # each head has its own projection


def test_multihead_of_local_heads_keeps_their_windows():
    scorer = make("multihead", heads=2, head={"name": "local_m", "window": 0})
    assert scorer.needs_positions
    query, keys, mask, positions = inputs()
    _, alignment = scorer(query, scorer.prepare(keys), keys, mask, positions)
    centre = torch.minimum(positions, (LENGTHS - 1).unsqueeze(1))  # window 0: one position
    expected = torch.nn.functional.one_hot(centre, S).double()
    torch.testing.assert_close(alignment, expected)


def test_configuration_errors_name_the_option():
    with pytest.raises(ConfigError, match="model.attention.head: a head cannot itself be multihead"):
        build_scorer(Variant("multihead", {"heads": 2, "head": "multihead"}), HQ, HK)
    with pytest.raises(ConfigError, match="model.attention.head: unknown attention scorer 'nonsense'"):
        build_scorer(Variant("multihead", {"heads": 2, "head": "nonsense"}), HQ, HK)
    with pytest.raises(ConfigError, match=r"model.attention.head.window: expected a value >= 0"):
        build_scorer(Variant("multihead", {"head": {"name": "local_m", "window": -1}}), HQ, HK)
    with pytest.raises(ConfigError, match=r"model.attention.window: expected a value >= 1, got 0"):
        build_scorer(Variant("local_p", {"window": 0}), HQ, HK)
    with pytest.raises(ConfigError, match="model.attention.window: unknown option; attention scorer 'dot'"):
        build_scorer(Variant("dot", {"window": 3}), HK, HK)
    with pytest.raises(ConfigError, match="model.attention.temperature: expected a value > 0"):
        build_scorer(Variant("cosine", {"temperature": 0}), HQ, HK)


@pytest.mark.parametrize("name", [n for n in SCORERS.names() if SCORERS.get(n).same_size])
def test_scorers_without_a_projection_refuse_unequal_sizes(name):
    with pytest.raises(ConfigError, match=r"model.attention: .*decoder state \(6\).*encoder outputs \(8\).*one size"):
        build_scorer(name, 6, 8)


def test_cosine_ignores_the_query_length_and_has_a_temperature():
    scorer = make("cosine")
    query, keys, mask, _ = inputs()
    prepared = scorer.prepare(keys)
    a1 = scorer(query, prepared, keys, mask)[1]
    a2 = scorer(query * 5, prepared, keys, mask)[1]
    torch.testing.assert_close(a1, a2)
    scores = scorer.score(query, prepared)
    assert scores.abs().max() <= 10.0 + 1e-9  # |cos| <= 1, over the temperature 0.1
    fixed = build_scorer(Variant("cosine", {"temperature": 0.5, "learn_temperature": False}), HQ, HK)
    assert not fixed.log_scale.requires_grad
    assert fixed.base_scale == pytest.approx(2.0)


@pytest.mark.slow
@learns
@pytest.mark.parametrize("name", SCORERS.names())
def test_copy_task_learned(name):
    """Each scorer inside the Luong decoder learns to copy strings of 3-5 symbols."""
    variant = scorer_variant(name, window=2, size=16)
    accuracy = learn_task(
        f"model.attention={json.dumps(variant.plain())}", "model.decoder=luong", "model.decoder.input_feeding=false"
    )
    at_least("exact match", accuracy, 0.85)


def test_local_m_on_a_reversed_source_centres_on_the_mirror_position():
    """p_t = t counts the source in reading order: read backwards (data.reverse_source), the
    t-th token is at S - 1 - t of the memory, and the window is there (clamped into the source)."""
    scorer = make("local_m", window=0, reversed=True)
    query, keys, mask, positions = inputs()
    _, alignment = scorer(query, scorer.prepare(keys), keys, mask, positions)
    mirror = ((LENGTHS - 1).unsqueeze(1) - positions).clamp(min=0)  # (B, T)
    torch.testing.assert_close(alignment, torch.nn.functional.one_hot(mirror, S).double())


@pytest.mark.parametrize("attention", ["local_m", "{name: multihead, heads: 2, head: local_m}"])
def test_local_m_follows_data_reverse_source_when_the_config_is_checked(attention):
    from attnseq.config import load_config
    from attnseq.engines import engine_for

    def checked(*overrides):
        config = load_config(None, ["data.dir=x", f"model.attention={attention}", *overrides])
        options = engine_for(config).check(config).model.attention.options
        return options.get("head", options)["reversed"]

    assert checked("data.reverse_source=true") is True and checked() is False
    key = "model.attention" + (".head" if "multihead" in attention else "") + ".reversed"
    reversed_option = f"model.attention.{'head.' if 'multihead' in attention else ''}reversed=true"
    with pytest.raises(ConfigError) as err:
        checked(reversed_option)
    assert err.value.key == key
