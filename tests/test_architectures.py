"""Encoders (residual, GNMT) and decoder designs (cho2014, peeky, bahdanau with a GRU, book with
the context fed back): shapes, padding, teacher forcing equals stepping, a tiny task learned."""
from __future__ import annotations

import pytest
import torch

from attnseq.config import load_config
from attnseq.decoding.greedy import greedy_search
from attnseq.errors import ConfigError
from attnseq.nn import build_model
from attnseq.nn.rnn.decoders import DECODERS, summary_of
from attnseq.nn.rnn.encoders import ENCODERS

from conftest import assert_teacher_forcing_equals_stepping, padded_batch

SYMBOLS = 6  # token ids 4..9; 0 pad, 1 bos, 2 eos
V = 4 + SYMBOLS
SMALL = ["model.embed_size=8", "model.hidden_size=12"]


def model_for(*overrides: str, dtype=torch.double):
    torch.manual_seed(0)
    return build_model(load_config(None, SMALL + list(overrides)).model, V, V).to(dtype).eval()


def sample(n: int, generator: torch.Generator, lengths=(3, 5), reverse: bool = False):
    """A batch of the copy (or reversal) task: src, src_mask, tgt_in, tgt_out, tgt_mask and
    (targets (B, S), lengths (B, 1))."""
    size = torch.randint(lengths[0], lengths[1] + 1, (n, 1), generator=generator)  # (B, 1)
    t = torch.arange(lengths[1]).unsqueeze(0)  # (1, S)
    mask = t < size  # (B, S)
    src = torch.randint(4, V, (n, lengths[1]), generator=generator).masked_fill(~mask, 0)
    target = src.gather(1, torch.where(mask, size - 1 - t, t)) if reverse else src
    tgt_in = torch.cat([torch.ones(n, 1, dtype=torch.long), target], 1)  # bos y
    tgt_out = torch.cat([target, torch.zeros(n, 1, dtype=torch.long)], 1)
    tgt_out.scatter_(1, size, 2)  # y eos
    return src, mask, tgt_in, tgt_out, tgt_out != 0, (target, size)


def learn_task(*overrides: str, steps: int = 120, reverse: bool = False, lengths=(3, 5), batch: int = 128,
               hidden: int = 32) -> float:
    """Exact match (0..1) of greedy search on 100 fresh sequences after training a model with
    ``overrides`` (embeddings hidden / 2) for ``steps`` Adam updates on copying (reversing)
    sequences over 6 symbols."""
    torch.manual_seed(0)
    cfg = load_config(None, [f"model.embed_size={hidden // 2}", f"model.hidden_size={hidden}", *overrides]).model
    model = build_model(cfg, V, V)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(1)
    for _ in range(steps):
        src, mask, tgt_in, tgt_out, tgt_mask, _ = sample(batch, generator, lengths, reverse)
        loss, tokens = model.loss(src, mask, tgt_in, tgt_out, tgt_mask)
        optimizer.zero_grad()
        (loss / tokens).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
    model.eval()
    src, mask, *_, (targets, size) = sample(100, torch.Generator().manual_seed(2), lengths, reverse)
    hypotheses = greedy_search(model, src, mask, torch.full((100,), 2 * lengths[1]))
    return sum(h[0].tokens == y[: int(k)].tolist() for h, y, k in zip(hypotheses, targets, size)) / 100


# -- encoders -------------------------------------------------------------------------------
@pytest.mark.parametrize("encoder", ENCODERS.names())
@pytest.mark.parametrize("cell", ["lstm", "mingru", "lstm_proj"])
def test_encoder_shapes_and_padding(encoder, cell):
    model = model_for(f"model.encoder={encoder}", f"model.cell={cell}", "model.encoder_layers=3")
    src, mask, _ = padded_batch(V, V)
    memory = model.encode(src, mask)
    width = model.encoder.output_size
    assert width == (12 if cell != "lstm_proj" else 6)
    assert memory.keys.shape == (3, 7, width) and memory.final.shape == (3, 3, width)
    for b in range(3):  # each sentence alone gives the same memory as in the padded batch
        n = int(mask[b].sum())
        alone = model.encode(src[b : b + 1, :n], mask[b : b + 1, :n])
        torch.testing.assert_close(memory.keys[b, :n], alone.keys[0])
        torch.testing.assert_close(memory.final[:, b], alone.final[:, 0])


def test_gnmt_layout_bidirectional_bottom_and_residuals_from_the_third_layer():
    encoder = model_for("model.encoder=gnmt", "model.encoder_layers=4").encoder
    assert [layer.bidirectional for layer in encoder.layers] == [True, False, False, False]
    assert encoder.residual == [False, False, True, True]
    residual = model_for("model.encoder=residual", "model.encoder_layers=3").encoder
    assert [layer.bidirectional for layer in residual.layers] == [True, True, True]
    assert residual.residual == [False, True, True]
    # GNMT fixes its own layout: a bidirectional option is not one of its settings
    with pytest.raises(ConfigError, match="model.encoder.bidirectional: unknown option"):
        model_for("model.encoder=gnmt", "model.encoder.bidirectional=false")


def test_residual_connections_add_the_layer_input():
    """With the top layer's output forced to zero, the encoder returns the layer below's output."""
    encoder = model_for("model.encoder=residual", "model.encoder_layers=2", "model.cell=rnn").encoder
    src, mask, _ = padded_batch(V, V)
    full = encoder(src, mask).keys
    with torch.no_grad():
        for p in encoder.layers[1].parameters():
            p.zero_()  # tanh(0) = 0: the second layer outputs zeros
    below = encoder(src, mask).keys
    x = encoder.embed(src)
    first, _ = encoder.layers[0](x, None, mask.sum(1))
    torch.testing.assert_close(below, first)
    assert not torch.allclose(full, below)


# -- decoder designs ---------------------------------------------------------------------------
DESIGN_VARIANTS = [
    ("cho2014", []), ("cho2014", ["model.cell=gru", "model.bridge=zero"]),
    ("peeky", []), ("peeky", ["model.encoder.bidirectional=false", "model.bridge=copy"]),
    ("bahdanau", ["model.cell=gru", "model.attention=concat"]),
    ("book", ["model.decoder.context_into_input=true"]),
    ("luong", ["model.attention=local_m", "model.attention.window=1"]),
    ("luong", ["model.attention=local_p", "model.decoder.input_feeding=false"]),
    ("luong", ["model.encoder=gnmt", "model.encoder_layers=3"]),
    ("luong", ["model.cell=lstm_proj", "model.decoder_layers=2", "model.encoder_layers=2"]),
]


@pytest.mark.parametrize("design,extra", DESIGN_VARIANTS, ids=lambda v: ",".join(v) if isinstance(v, list) else v)
def test_teacher_forcing_equals_stepping(design, extra):
    model = model_for(f"model.decoder={design}", *extra)
    assert_teacher_forcing_equals_stepping(model, *padded_batch(V, V))


@pytest.mark.parametrize("cell", ["lstm_proj", "lstm_peephole", "mingru"])
@pytest.mark.parametrize("design", DECODERS.names())
def test_every_design_runs_with_every_kind_of_cell(design, cell):
    """Sizes line up, including a projected LSTM whose state (P) is narrower than its cell (H)."""
    model = model_for(f"model.decoder={design}", f"model.cell={cell}", dtype=torch.float32).train()
    src, mask, tgt_in = padded_batch(V, V)
    loss, tokens = model.loss(src, mask, tgt_in, tgt_in, torch.ones_like(tgt_in, dtype=torch.bool))
    loss.backward()
    assert torch.isfinite(loss) and tokens == 15
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)


@pytest.mark.parametrize("design", ["cho2014", "peeky"])
def test_summary_reaches_every_step(design):
    """With a zero first state, the source still changes the outputs through c at every step,
    which it cannot in the plain (none) design."""
    src, mask, tgt_in = padded_batch(V, V)
    other = src.clone()
    other[mask] = (other[mask] - 4 + 1) % SYMBOLS + 4  # another source of the same shape

    def outputs(name):
        model = model_for(f"model.decoder={name}", "model.bridge=zero")
        return model.logits(src, mask, tgt_in), model.logits(other, mask, tgt_in)

    a, b = outputs(design)
    assert not torch.allclose(a, b)
    a, b = outputs("none")
    torch.testing.assert_close(a, b)


def test_peeky_features_start_with_the_encoder_state():
    model = model_for("model.decoder=peeky", "model.encoder.bidirectional=false", "model.bridge=copy")
    src, mask, tgt_in = padded_batch(V, V)
    memory = model.encode(src, mask)
    features, _ = model.decoder(memory, tgt_in)
    c = summary_of(memory)  # (B, H)
    torch.testing.assert_close(features[..., : c.shape[-1]], c.unsqueeze(1).expand(-1, 5, -1))
    assert model.decoder.rnn.input_size == 8 + 12  # concat(h_enc, embedding)


def test_book_context_into_input_widens_the_recurrent_input():
    plain = model_for("model.decoder=book")
    fed = model_for("model.decoder=book", "model.decoder.context_into_input=true")
    assert plain.decoder.parallel and not fed.decoder.parallel
    assert fed.decoder.rnn.input_size == plain.decoder.rnn.input_size + plain.decoder.memory_size
    src, mask, tgt_in = padded_batch(V, V)
    state = fed.decoder.init_state(fed.encode(src, mask))
    _, state, alignment = fed.decoder.step(tgt_in[:, 0], state)
    torch.testing.assert_close(state["context"][:, 0], torch.bmm(alignment.unsqueeze(1), state["values"])[:, 0])


def test_state_select_keeps_the_step_counter():
    model = model_for("model.decoder=luong", "model.attention=local_m")
    src, mask, tgt_in = padded_batch(V, V)
    state = model.decoder.init_state(model.encode(src, mask))
    _, state, _ = model.decoder.step(tgt_in[:, 0], state)
    picked = state.select(torch.tensor([2, 0]))
    assert picked["step"].tolist() == [1, 1]
    assert state.repeat(2)["step"].shape == (6,)


def test_state_select_copies_the_memory_only_when_the_sentences_change():
    from attnseq.nn.state import State

    memory = torch.arange(6.0).view(3, 2)  # one row per sentence
    state = State(memory=memory, rows=torch.arange(3), shared={"memory"}).repeat(2)  # 2 hypotheses each
    assert state["memory"] is memory and state["rows"].tolist() == [0, 0, 1, 1, 2, 2]
    reordered = state.select(torch.tensor([1, 0, 2, 2, 5, 4]), group=2)  # within each sentence: no copy
    assert reordered["memory"] is memory and reordered["rows"].tolist() == [0, 0, 1, 1, 2, 2]
    dropped = state.select(torch.tensor([0, 1, 4, 5]), group=2)  # the second sentence ends
    assert dropped["memory"].tolist() == [[0.0, 1.0], [4.0, 5.0]]
    permuted = State(memory=memory, rows=torch.arange(3), shared={"memory"}).select(torch.tensor([2, 1, 0]))
    assert permuted["memory"][:, 0].tolist() == [4.0, 2.0, 0.0]


# -- a tiny task learned -------------------------------------------------------------------------
# luong (with every scorer) is trained in test_scorers.py, every cell in test_cells.py
LEARNED = {
    "book+context_into_input": ["model.decoder=book", "model.decoder.context_into_input=true"],
    "bahdanau+gru": ["model.decoder=bahdanau", "model.cell=gru", "model.attention={name: concat, size: 16}"],
    "gnmt": ["model.encoder=gnmt", "model.encoder_layers=3", "model.decoder.input_feeding=false"],
}
NO_ATTENTION = {  # the whole string must pass through the state: reversal, short strings
    "none": ["model.decoder=none", "model.encoder.bidirectional=false", "model.bridge=copy"],
    "cho2014": ["model.decoder=cho2014", "model.cell=gru"],
    "peeky": ["model.decoder=peeky", "model.encoder.bidirectional=false", "model.bridge=copy"],
}


@pytest.mark.slow
@pytest.mark.parametrize("name", LEARNED)
def test_copy_task_learned(name):
    accuracy = learn_task(*LEARNED[name])
    assert accuracy >= 0.9, (name, accuracy)


@pytest.mark.slow
@pytest.mark.parametrize("name", NO_ATTENTION)
def test_reversal_learned_without_attention(name):
    accuracy = learn_task(*NO_ATTENTION[name], steps=200, reverse=True, lengths=(2, 4))  # 6^2..6^4 strings
    assert accuracy >= 0.9, (name, accuracy)
