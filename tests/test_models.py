"""The recurrent encoder-decoder (``model.arch: rnn``): encoders (residual, GNMT) and every decoder
design (cho2014, peeky, bahdanau, book, luong) with every cell, encoder and scorer of the
registries: shapes, padding, teacher forcing equals stepping, gradients, the State's bookkeeping,
and a tiny task learned."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from helpers import (
    LEARN,
    SYMBOLS,
    TINY,
    V,
    assert_teacher_forcing_equals_stepping,
    learn_task,
    padded_batch,
    reverse_pairs,
    write_tsv,
)
from learning import at_least, learns

from attnseq.config import load_config
from attnseq.data.batching import SourceBatch
from attnseq.errors import ConfigError
from attnseq.nn import build_model
from attnseq.nn.attention import SCORERS
from attnseq.nn.rnn.cells import CELLS
from attnseq.nn.rnn.decoders import DECODERS, summary_of
from attnseq.nn.rnn.encoders import ENCODERS

V_TGT = V + 3  # the target vocabulary differs from the source's: a mixed-up embedding fails
SMALL = ["model.embed_size=8", "model.hidden_size=12"]
DESIGNS = DECODERS.names()


def model_for(*overrides: str, dtype=torch.double):
    """A model of SMALL size with ``overrides``, in eval mode, seeded."""
    torch.manual_seed(0)
    return build_model(load_config(None, SMALL + list(overrides)).model, V, V_TGT).to(dtype).eval()


# -- encoders -------------------------------------------------------------------------------
@pytest.mark.parametrize("encoder", ENCODERS.names())
@pytest.mark.parametrize("cell", ["lstm", "mingru", "lstm_proj"])
def test_encoder_shapes_and_padding(encoder, cell):
    model = model_for(f"model.encoder={encoder}", f"model.cell={cell}", "model.encoder_layers=3")
    src, mask, _ = padded_batch(V, V_TGT)
    memory = model.encode(SourceBatch(src, mask))
    width = model.encoder.output_size
    assert width == (12 if cell != "lstm_proj" else 6)
    assert memory.keys.shape == (3, 7, width) and memory.final.shape == (3, 3, width)
    assert memory.mask.shape == (3, 7)
    for b in range(3):  # each sentence alone gives the same memory as in the padded batch
        n = int(mask[b].sum())
        alone = model.encode(SourceBatch(src[b : b + 1, :n], mask[b : b + 1, :n]))
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
    src, mask, _ = padded_batch(V, V_TGT)
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
COMMON_VARIANTS = [
    [],
    ["model.cell=gru"],
    ["model.encoder.bidirectional=false", "model.bridge=copy"],
    ["model.encoder_layers=2", "model.decoder_layers=2"],
]
COMBINATIONS = [
    ("cho2014", ["model.cell=gru", "model.bridge=zero"]),
    ("bahdanau", ["model.cell=gru", "model.attention=concat"]),
    ("luong", ["model.attention=local_m", "model.attention.window=1"]),
    ("luong", ["model.attention=local_p", "model.decoder.input_feeding=false"]),
]


def design_variants() -> list[tuple[str, list[str]]]:
    """Every design with the common variants and with each of its own true/false options flipped;
    the luong design with every scorer, encoder and cell; a few combinations besides. Read from
    the registries: a new design, option, scorer, encoder or cell is covered without listing it."""
    cases = [(design, variant) for design in DESIGNS for variant in COMMON_VARIANTS]
    for design in DESIGNS:
        for option in dataclasses.fields(DECODERS.options_class(design)):
            if option.type in (bool, "bool"):
                cases.append((design, [f"model.decoder.{option.name}={str(not option.default).lower()}"]))
    cases += [("luong", [f"model.attention={name}"]) for name in SCORERS.names()]
    cases += [("luong", [f"model.encoder={name}", "model.encoder_layers=3"]) for name in ENCODERS.names()]
    cases += [
        ("luong", [f"model.cell={name}", "model.encoder_layers=2", "model.decoder_layers=2"]) for name in CELLS.names()
    ]
    return cases + COMBINATIONS


@pytest.mark.parametrize(
    "design,variant", design_variants(), ids=lambda v: ",".join(v) or "default" if isinstance(v, list) else v
)
def test_teacher_forcing_equals_stepping(design, variant):
    model = model_for(f"model.decoder={design}", *variant)
    assert_teacher_forcing_equals_stepping(model, *padded_batch(V, V_TGT))


@pytest.mark.parametrize("design", DESIGNS)
def test_padding_does_not_change_a_sentence(design):
    """A sentence's logits are the same alone and padded inside a batch."""
    model = model_for(f"model.decoder={design}")
    src, mask, tgt_in = padded_batch(V, V_TGT)
    logits = model.logits(SourceBatch(src, mask), tgt_in)
    n = int(mask[2].sum())
    alone = model.logits(SourceBatch(src[2:3, :n], mask[2:3, :n]), tgt_in[2:3])
    torch.testing.assert_close(alone[0], logits[2])


@pytest.mark.parametrize("cell", CELLS.names())
@pytest.mark.parametrize("design", DESIGNS)
def test_gradients_reach_every_parameter_with_every_kind_of_cell(design, cell):
    """Sizes line up, including a projected LSTM whose state (P) is narrower than its cell (H),
    and every parameter gets a finite gradient."""
    model = model_for(f"model.decoder={design}", f"model.cell={cell}", dtype=torch.float32).train()
    src, mask, tgt_in = padded_batch(V, V_TGT)
    loss, tokens = model.loss(SourceBatch(src, mask), tgt_in, tgt_in, torch.ones_like(tgt_in, dtype=torch.bool))
    loss.backward()
    assert torch.isfinite(loss) and tokens == 15
    missing = [name for name, p in model.named_parameters() if p.grad is None or not torch.isfinite(p.grad).all()]
    assert not missing, missing


@pytest.mark.parametrize("design", ["cho2014", "peeky"])
def test_summary_reaches_every_step(design):
    """With a zero first state, the source still changes the outputs through c at every step,
    which it cannot in the plain (none) design."""
    src, mask, tgt_in = padded_batch(V, V_TGT)
    other = src.clone()
    other[mask] = (other[mask] - 4 + 1) % SYMBOLS + 4  # another source of the same shape

    def outputs(name):
        model = model_for(f"model.decoder={name}", "model.bridge=zero")
        return model.logits(SourceBatch(src, mask), tgt_in), model.logits(SourceBatch(other, mask), tgt_in)

    a, b = outputs(design)
    assert not torch.allclose(a, b)
    a, b = outputs("none")
    torch.testing.assert_close(a, b)


def test_peeky_features_start_with_the_encoder_state():
    model = model_for("model.decoder=peeky", "model.encoder.bidirectional=false", "model.bridge=copy")
    src, mask, tgt_in = padded_batch(V, V_TGT)
    memory = model.encode(SourceBatch(src, mask))
    features, _ = model.decoder(memory, tgt_in)
    c = summary_of(memory)  # (B, H)
    torch.testing.assert_close(features[..., : c.shape[-1]], c.unsqueeze(1).expand(-1, 5, -1))
    assert model.decoder.rnn.input_size == 8 + 12  # concat(h_enc, embedding)


def test_book_context_into_input_widens_the_recurrent_input():
    plain = model_for("model.decoder=book")
    fed = model_for("model.decoder=book", "model.decoder.context_into_input=true")
    assert plain.decoder.parallel and not fed.decoder.parallel
    assert fed.decoder.rnn.input_size == plain.decoder.rnn.input_size + plain.decoder.memory_size
    src, mask, tgt_in = padded_batch(V, V_TGT)
    state = fed.decoder.init_state(fed.encode(SourceBatch(src, mask)))
    _, state, alignment = fed.decoder.step(tgt_in[:, 0], state)
    torch.testing.assert_close(state["context"][:, 0], torch.bmm(alignment.unsqueeze(1), state["values"])[:, 0])


def test_decoders_pass_target_positions_to_local_attention():
    """Stepping the decoder gives the same alignment as the parallel path, which uses arange(T):
    the state's step counter advances by one per step."""
    model = model_for(
        "model.decoder=luong",
        "model.attention=local_m",
        "model.attention.window=0",
        "model.decoder.input_feeding=false",
    )
    src, mask, tgt_in = padded_batch(V, V_TGT)
    _, alignment = model(SourceBatch(src, mask), tgt_in)
    lengths = mask.sum(1, keepdim=True)
    centre = torch.minimum(torch.arange(5).unsqueeze(0), lengths - 1)  # window 0: p_t = t exactly
    torch.testing.assert_close(alignment, torch.nn.functional.one_hot(centre, 7).double())
    state = model.decoder.init_state(model.encode(SourceBatch(src, mask)))
    for t in range(5):
        _, state, step_alignment = model.decoder.step(tgt_in[:, t], state)
        torch.testing.assert_close(step_alignment, alignment[:, t])


def test_state_select_keeps_the_step_counter():
    model = model_for("model.decoder=luong", "model.attention=local_m")
    src, mask, tgt_in = padded_batch(V, V_TGT)
    state = model.decoder.init_state(model.encode(SourceBatch(src, mask)))
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


def test_output_layer_equals_linear_with_its_gradients():
    from attnseq.nn.output import OutputLayer

    torch.manual_seed(0)
    layer = OutputLayer(16, 300)
    for shape in [(7, 16), (3, 5, 16)]:
        x = torch.randn(*shape, requires_grad=True)
        got = layer(x)
        want = torch.nn.functional.linear(x, layer.weight, layer.bias)
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
        grads = torch.autograd.grad(got.sin().sum(), (x, layer.weight, layer.bias))
        expected = torch.autograd.grad(want.sin().sum(), (x, layer.weight, layer.bias))
        for g, e in zip(grads, expected):
            torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-6)


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
@learns
@pytest.mark.parametrize("name", LEARNED)
def test_copy_task_learned(name):
    at_least("exact match", learn_task(*LEARNED[name]), 0.85)


@pytest.mark.slow
@learns
@pytest.mark.parametrize("name", NO_ATTENTION)
def test_reversal_learned_without_attention(name):
    accuracy = learn_task(*NO_ATTENTION[name], steps=200, reverse=True, lengths=(2, 4))  # 6^2..6^4 strings
    at_least("exact match", accuracy, 0.9)


@pytest.mark.slow
@learns
@pytest.mark.parametrize("design", DESIGNS)
def test_reverse_task_learned(design, reverse_data, tmp_path):
    """Every decoder design learns to reverse short strings (95% of the test exact), trained and
    evaluated as a user does (Trainer, attnseq.load)."""
    from attnseq.api import load
    from attnseq.data.corpus import read_tsv
    from attnseq.engines.torch_engine.trainer import Trainer

    extra = ["model.decoder.input_feeding=false"] if design == "luong" else []
    if DECODERS.get(design).uses_attention:
        extra.append("model.attention=general")
    else:  # the whole string must pass through one state
        for split, n, seed in (("train", 1500, 1), ("dev", 100, 2), ("test", 40, 3)):
            write_tsv(reverse_data / f"{split}.tsv", reverse_pairs(n, seed=seed, lengths=(3, 5)))
        extra += [
            "model.hidden_size=128",
            "model.cell=gru",
            "model.encoder.bidirectional=false",
            "model.bridge=copy",
            "train.lr=0.005",
        ]
    cfg = load_config(None, TINY + LEARN + [f"model.decoder={design}", f"data.dir={reverse_data}", *extra])
    Trainer(cfg, tmp_path / "run").fit()
    metrics = load(tmp_path / "run").evaluate(read_tsv(reverse_data / "test.tsv"), bleu=False)
    at_least("test exact match", metrics["exact_match"], 0.95)
