"""Every registered recurrent cell: shapes, padding, gradients, hand-computed steps, a task learned."""

from __future__ import annotations

import math

import pytest
import torch
from learning import at_least, learns, seed
from torch import nn

from attnseq.nn.rnn.cells import CELLS, build_rnn, reverse_within
from attnseq.nn.rnn.loop_cells import MinimalGRULayer, PeepholeLSTMLayer
from attnseq.schema import Variant

B, T, I, H = 3, 5, 4, 6
CUSTOM = ["mingru", "lstm_peephole"]


def layer(cell: str, bidirectional: bool = False, layers: int = 1, dtype=torch.float32, **options):
    torch.manual_seed(0)
    return build_rnn(Variant(cell, options), I, H, layers, 0.0, bidirectional).to(dtype).eval()


def hidden(state) -> torch.Tensor:
    return state[0] if isinstance(state, tuple) else state


def state_parts(state) -> tuple[torch.Tensor, ...]:
    return state if isinstance(state, tuple) else (state,)


@pytest.mark.parametrize("cell", CELLS.names())
@pytest.mark.parametrize("bidirectional", [False, True])
def test_shapes(cell, bidirectional):
    rnn = layer(cell, bidirectional, layers=2)
    dirs = 2 if bidirectional else 1
    outputs, state = rnn(torch.randn(B, T, I))
    assert outputs.shape == (B, T, rnn.output_size)
    width = rnn.output_size // dirs  # H, or the projection P of lstm_proj
    assert hidden(state).shape == (2 * dirs, B, width)
    assert isinstance(state, tuple) == rnn.has_cell_state
    if rnn.has_cell_state:
        assert state[1].shape == (2 * dirs, B, H)
    again, _ = rnn(torch.randn(B, T, I), state)  # a given state is accepted back
    assert again.shape == outputs.shape


def test_projected_lstm_sizes():
    """projection_size is the outputs' width, directions together; 0: half of each direction's H."""
    assert layer("lstm_proj").output_size == H // 2
    assert layer("lstm_proj", True).output_size == 2 * (H // 2)
    assert layer("lstm_proj", projection_size=2).output_size == 2
    bi = layer("lstm_proj", True, projection_size=4)
    assert bi.output_size == 4 and bi.rnn.proj_size == 2


@pytest.mark.parametrize("cell", CELLS.names())
@pytest.mark.parametrize("bidirectional", [False, True])
def test_padding_never_enters(cell, bidirectional):
    """Each padded sequence gives the outputs and final state of the same sequence run alone."""
    rnn = layer(cell, bidirectional, layers=2)
    lengths = torch.tensor([5, 2, 4])
    x = torch.randn(B, T, I)
    x[torch.arange(T) >= lengths.unsqueeze(1)] = 7.0  # junk in the padding
    outputs, state = rnn(x, None, lengths)
    dirs = 2 if bidirectional else 1
    for b, n in enumerate(lengths.tolist()):
        alone_out, alone_state = rnn(x[b : b + 1, :n])
        torch.testing.assert_close(outputs[b, :n], alone_out[0], atol=1e-5, rtol=1e-5)
        assert torch.all(outputs[b, n:] == 0)
        for part, alone in zip(state_parts(state), state_parts(alone_state)):
            torch.testing.assert_close(part[:, b], alone[:, 0], atol=1e-5, rtol=1e-5)
    assert hidden(state).shape[0] == 2 * dirs


def test_reverse_within_lengths():
    x = torch.arange(10.0).view(2, 5, 1)
    r = reverse_within(x, torch.tensor([5, 3]))
    assert r[:, :, 0].tolist() == [[4, 3, 2, 1, 0], [7, 6, 5, 8, 9]]
    torch.testing.assert_close(reverse_within(r, torch.tensor([5, 3])), x)


@pytest.mark.parametrize("cell", CELLS.names())
def test_gradients_match_finite_differences(cell):
    rnn = build_rnn(cell, 2, 3, 2, 0.0, True).double()
    x = torch.randn(2, 3, 2, dtype=torch.double, requires_grad=True)
    lengths = torch.tensor([3, 2])

    def fn(inputs):
        outputs, state = rnn(inputs, None, lengths)
        return (outputs, *state_parts(state))

    assert torch.autograd.gradcheck(fn, (x,), eps=1e-6, atol=1e-5)
    outputs, _ = rnn(x, None, lengths)
    outputs.sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in rnn.parameters())


def sigmoid(v: float) -> float:
    return 1.0 / (1.0 + math.exp(-v))


def test_minimal_gru_matches_hand_computed_steps():
    """H = 2, I = 1, two steps, weights set by hand; rows are [update; candidate]."""
    rnn = MinimalGRULayer(1, 2).double()
    with torch.no_grad():
        rnn.weight_ih_l0.copy_(torch.tensor([[0.5], [-0.3], [0.8], [0.2]], dtype=torch.double))
        rnn.weight_hh_l0.copy_(torch.tensor([[0.1, -0.2], [0.3, 0.4], [-0.5, 0.6], [0.7, -0.1]], dtype=torch.double))
        rnn.bias_l0.copy_(torch.tensor([0.05, -0.05, 0.1, 0.0], dtype=torch.double))
    xs = [1.0, -2.0]
    h = [0.0, 0.0]
    for x in xs:
        u = [sigmoid(0.5 * x + 0.1 * h[0] - 0.2 * h[1] + 0.05), sigmoid(-0.3 * x + 0.3 * h[0] + 0.4 * h[1] - 0.05)]
        c = [math.tanh(0.8 * x - 0.5 * h[0] + 0.6 * h[1] + 0.1), math.tanh(0.2 * x + 0.7 * h[0] - 0.1 * h[1])]
        h = [u[k] * c[k] + (1 - u[k]) * h[k] for k in range(2)]
    outputs, state = rnn(torch.tensor([[[xs[0]], [xs[1]]]], dtype=torch.double))
    torch.testing.assert_close(state[0, 0], torch.tensor(h, dtype=torch.double), rtol=0, atol=1e-12)
    torch.testing.assert_close(outputs[0, -1], torch.tensor(h, dtype=torch.double), rtol=0, atol=1e-12)


def test_peephole_lstm_matches_hand_computed_step():
    """H = 1, I = 1, one step from a nonzero (h, c); rows are [i; f; g; o], peepholes [p_i, p_f, p_o]."""
    rnn = PeepholeLSTMLayer(1, 1).double()
    w_ih, w_hh, b, peep = [0.5, -0.4, 0.9, 0.3], [0.2, 0.6, -0.7, 0.1], [0.1, 0.2, 0.0, -0.1], [0.25, -0.5, 0.75]
    with torch.no_grad():
        rnn.weight_ih_l0.copy_(torch.tensor(w_ih, dtype=torch.double).view(4, 1))
        rnn.weight_hh_l0.copy_(torch.tensor(w_hh, dtype=torch.double).view(4, 1))
        rnn.bias_l0.copy_(torch.tensor(b, dtype=torch.double))
        rnn.peephole_l0.copy_(torch.tensor(peep, dtype=torch.double))
    x, h0, c0 = 0.7, -0.3, 0.4
    a = [w_ih[k] * x + w_hh[k] * h0 + b[k] for k in range(4)]
    i = sigmoid(a[0] + peep[0] * c0)
    f = sigmoid(a[1] + peep[1] * c0)
    c1 = f * c0 + i * math.tanh(a[2])
    o = sigmoid(a[3] + peep[2] * c1)  # the output gate sees the new cell
    h1 = o * math.tanh(c1)
    state0 = (torch.tensor([[[h0]]], dtype=torch.double), torch.tensor([[[c0]]], dtype=torch.double))
    outputs, (h, c) = rnn(torch.tensor([[[x]]], dtype=torch.double), state0)
    assert outputs.item() == pytest.approx(h1, abs=1e-12)
    assert h.item() == pytest.approx(h1, abs=1e-12)
    assert c.item() == pytest.approx(c1, abs=1e-12)


def test_peephole_lstm_without_peepholes_is_torch_lstm():
    rnn = layer("lstm_peephole", True, layers=2, dtype=torch.double)
    reference = nn.LSTM(I, H, num_layers=2, batch_first=True, bidirectional=True).double()
    with torch.no_grad():
        for name, p in reference.named_parameters():  # weight_ih_l0, ..., bias_hh_l1_reverse
            suffix = name.split("_", 2)[2]
            if name.startswith("weight"):
                p.copy_(getattr(rnn, name))
            elif name.startswith("bias_ih"):
                p.copy_(getattr(rnn, "bias_" + suffix))
            else:
                p.zero_()
        for name, p in rnn.named_parameters():
            if name.startswith("peephole"):
                p.zero_()
    x = torch.randn(B, T, I, dtype=torch.double)
    lengths = torch.tensor([5, 3, 1])
    ours, (h, c) = rnn(x, None, lengths)
    packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    theirs, (h_ref, c_ref) = reference(packed)
    theirs, _ = nn.utils.rnn.pad_packed_sequence(theirs, batch_first=True, total_length=T)
    torch.testing.assert_close(ours, theirs)
    torch.testing.assert_close(h, h_ref)
    torch.testing.assert_close(c, c_ref)


def test_dropout_between_layers_only_in_training():
    torch.manual_seed(0)
    rnn = build_rnn("mingru", I, H, 2, 0.5, False)
    x = torch.randn(B, T, I)
    rnn.eval()
    torch.testing.assert_close(rnn(x)[0], rnn(x)[0])
    rnn.train()
    assert not torch.equal(rnn(x)[0], rnn(x)[0])


def test_projection_must_be_smaller_than_hidden():
    from attnseq.errors import ConfigError

    with pytest.raises(ConfigError, match="model.cell.projection_size"):
        layer("lstm_proj", projection_size=H)
    with pytest.raises(ConfigError, match="model.cell.projection_size: unknown option"):
        layer("lstm", projection_size=2)


@pytest.mark.slow
@learns
@pytest.mark.parametrize("cell", CELLS.names())
def test_delayed_copy_task_learned(cell):
    """y_t = x_{t-2} over 6 symbols: the cell must carry two steps of memory."""
    torch.manual_seed(seed(0))
    symbols, steps, delay = 6, 8, 2
    embed = nn.Embedding(symbols, 8)
    rnn = build_rnn(cell, 8, 32)
    head = nn.Linear(rnn.output_size, symbols)
    params = [*embed.parameters(), *rnn.parameters(), *head.parameters()]
    optimizer = torch.optim.Adam(params, lr=0.02)

    def batch(n):
        x = torch.randint(0, symbols, (n, steps))
        return x, x[:, : steps - delay]

    for _ in range(250):
        x, y = batch(32)
        logits = head(rnn(embed(x))[0])[:, delay:]  # (B, T - delay, V)
        loss = nn.functional.cross_entropy(logits.reshape(-1, symbols), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        x, y = batch(200)
        accuracy = (head(rnn(embed(x))[0])[:, delay:].argmax(-1) == y).float().mean().item()
    at_least("accuracy", accuracy, 0.97)


@pytest.mark.parametrize("cell", CELLS.names())
@pytest.mark.parametrize("bidirectional", [False, True])
def test_encode_equals_the_packed_run_with_its_gradients(cell, bidirectional):
    """``encode`` (torch's kernels run per direction without packing) gives what packing gives:
    outputs zero at padding, each sequence's final hidden states, and the same gradients."""
    lengths = torch.tensor([5, 2, 4])
    runs = []
    for fast in (True, False):
        rnn = layer(cell, bidirectional, layers=2).double().train()  # dropout 0: training mode, no noise
        torch.manual_seed(1)
        x = torch.randn(B, T, I, dtype=torch.float64, requires_grad=True)
        if fast:
            outputs, final = rnn.encode(x, lengths)
        else:
            outputs, state = rnn(x, None, lengths)
            final = hidden(state)
        (outputs.sin().sum() + final.cos().sum()).backward()
        runs.append((outputs, final, x.grad, [p.grad for p in rnn.parameters()]))
    (out_a, final_a, gx_a, gp_a), (out_b, final_b, gx_b, gp_b) = runs
    assert torch.equal(out_a[1, 2:], torch.zeros_like(out_a[1, 2:]))  # padding
    torch.testing.assert_close(out_a, out_b)
    torch.testing.assert_close(final_a, final_b)
    torch.testing.assert_close(gx_a, gx_b)
    for a, b in zip(gp_a, gp_b):
        torch.testing.assert_close(a, b)
