"""The decoder State keeps its layout through every way of deriving one; the hypotheses of a
sentence read its shared entries together."""

from __future__ import annotations

import pytest
import torch

from attnseq.nn.state import RowLayout, State


def layout(state: State):
    return state.batch_dims, state.shared, state.deferred, state.row_layout


def beam_state() -> State:
    """Two sentences, a hidden state (layers, B, H) and a shared memory, then two hypotheses each."""
    state = State(
        hidden=torch.arange(12.0).view(1, 3, 4)[:, :2],
        rows=torch.arange(2),
        cache=torch.zeros(2, 1),
        batch_dims={"hidden": 1},
        deferred={"cache"},
    )
    return state.share(memory=torch.arange(4.0).view(2, 2)).repeat(2)


def test_every_derived_state_keeps_the_layout():
    state = beam_state()
    expected = ({"hidden": 1}, frozenset({"memory"}), frozenset({"cache"}), RowLayout(2))
    assert layout(state) == expected
    assert layout(state.replace(rows=state["rows"] + 1, extra=torch.ones(4))) == expected
    assert layout(state.select(torch.tensor([1, 0, 3, 2]), group=2)) == expected
    shared = state.share(summary=torch.zeros(2, 3))
    assert layout(shared)[1] == {"memory", "summary"} and layout(shared)[3] == RowLayout(2)
    assert layout(state.select(torch.tensor([0, 1]), group=1))[:3] == expected[:3]  # one hypothesis each
    assert layout(state.repeat(2))[3] == RowLayout(4)


def test_a_state_cannot_be_copied_into_a_dict_or_a_new_state():
    state = beam_state()
    with pytest.raises(TypeError):
        dict(state)
    with pytest.raises(TypeError):
        State(**state)
    with pytest.raises(TypeError):
        State(state)
    with pytest.raises(TypeError):
        state["rows"] = torch.zeros(4)


def test_replace_leaves_the_old_state_alone():
    state = beam_state()
    rows = state["rows"]
    new = state.replace(rows=rows + 10)
    assert state["rows"] is rows and new["rows"].tolist() == [10, 10, 11, 11]
    assert new["memory"] is state["memory"] and "rows" in new and "nothing" not in new


def test_select_reorders_rows_and_batch_dims_and_leaves_deferred_entries():
    state = beam_state()
    picked = state.select(torch.tensor([3, 0]), group=1)
    assert picked["rows"].tolist() == [1, 0]
    assert picked["hidden"][0, :, 0].tolist() == [4.0, 0.0]  # along dim 1
    assert picked["memory"].tolist() == [[2.0, 3.0], [0.0, 1.0]]  # the sentences of rows 3 and 0
    assert picked["cache"] is state["cache"]
    assert picked.batch_size() == 2


def test_row_layout_of_a_sentence_attend_to_its_memory_together():
    layout = RowLayout(3)
    query = torch.arange(6 * 2 * 4.0).view(6, 2, 4)  # (B, T, H): 2 sentences of 3 hypotheses
    grouped = layout.by_sentence(query)  # (2, 6, 4)
    assert grouped.shape == (2, 6, 4) and torch.equal(grouped[1, 2:4], query[4])
    assert torch.equal(layout.by_hypothesis(grouped), query)
    weights = torch.arange(2 * 5 * 6 * 7.0).view(2, 5, 6, 7)  # (B / k, heads, k * T, S)
    expected = weights.view(2, 5, 3, 2, 7).transpose(1, 2).reshape(6, 5, 2, 7)  # (B, heads, T, S)
    assert torch.equal(layout.by_hypothesis(weights, dim=2), expected)
    assert torch.equal(layout.per_hypothesis(torch.tensor([1, 2])), torch.tensor([1, 1, 1, 2, 2, 2]))

    memory = torch.arange(2 * 5 * 4.0).view(2, 5, 4) % 3  # one row per sentence (small integers: exact sums)
    state = State(rows=torch.arange(2)).share(memory=memory).repeat(3)

    def attention(q, keys, positions):
        assert q.shape == (2, 6, 4) and keys is memory  # a sentence's hypotheses side by side
        scores = q @ keys.transpose(1, 2)  # (B / k, k * T, S)
        return scores, scores + positions.unsqueeze(-1)

    positions = torch.arange(6 * 2).view(6, 2)
    scores, shifted = state.attend(attention, query, state["memory"], positions=positions)
    assert torch.equal(scores, query @ memory.repeat_interleave(3, 0).transpose(1, 2))  # (B, T, S)
    assert torch.equal(shifted - scores, positions.unsqueeze(-1).expand_as(scores).float())
    assert torch.equal(state.per_hypothesis("memory"), memory.repeat_interleave(3, 0))
