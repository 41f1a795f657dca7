"""Encoders and decoder designs: shapes, masks, teacher forcing equals stepping, a task learned."""
from __future__ import annotations

import pytest
import torch

import dataclasses

from attnseq.config import load_config
from attnseq.nn import build_model
from attnseq.nn.rnn.decoders import DECODERS

from conftest import LEARN, TINY, assert_teacher_forcing_equals_stepping, padded_batch

V_SRC, V_TGT = 11, 13


def model_for(decoder: str, *extra: str):
    torch.manual_seed(0)
    cfg = load_config(None, TINY + [f"model.decoder={decoder}", *extra]).model
    return build_model(cfg, V_SRC, V_TGT).double().eval()


DESIGNS = DECODERS.names()
COMMON_VARIANTS = [[], ["model.cell=gru"], ["model.encoder.bidirectional=false", "model.bridge=copy"],
                   ["model.encoder_layers=2", "model.decoder_layers=2"]]


def design_variants() -> list[tuple[str, list[str]]]:
    """Every design with the common variants, and with each of its own true/false options flipped
    (read from the registry: a new design's options are covered without listing them here)."""
    cases = [(design, variant) for design in DESIGNS for variant in COMMON_VARIANTS]
    for design in DESIGNS:
        for option in dataclasses.fields(DECODERS.options_class(design)):
            if option.type in (bool, "bool"):
                cases.append((design, [f"model.decoder.{option.name}={str(not option.default).lower()}"]))
    return cases


@pytest.mark.parametrize("design,variant", design_variants(),
                         ids=lambda v: ",".join(v) or "default" if isinstance(v, list) else v)
def test_teacher_forcing_equals_stepping(design, variant):
    model = model_for(design, *variant)
    assert_teacher_forcing_equals_stepping(model, *padded_batch(V_SRC, V_TGT))


@pytest.mark.parametrize("design", DESIGNS)
def test_padding_does_not_change_a_sentence(design):
    """A sentence's logits are the same alone and padded inside a batch."""
    model = model_for(design)
    src, mask, tgt_in = padded_batch(V_SRC, V_TGT)
    logits = model.logits(src, mask, tgt_in)
    n = int(mask[2].sum())
    alone = model.logits(src[2:3, :n], mask[2:3, :n], tgt_in[2:3])
    torch.testing.assert_close(alone[0], logits[2])


@pytest.mark.parametrize("design", DESIGNS)
def test_encoder_memory_shapes(design):
    model = model_for(design, "model.encoder_layers=2")
    src, mask, _ = padded_batch(V_SRC, V_TGT)
    memory = model.encode(src, mask)
    assert memory.keys.shape == (3, 7, 32) and memory.mask.shape == (3, 7)
    assert memory.final.shape == (2, 3, 32)


def test_gradients_reach_every_parameter():
    for design in DESIGNS:
        model = model_for(design).train()
        src, mask, tgt_in = padded_batch(V_SRC, V_TGT)
        tgt_out = torch.roll(tgt_in, -1, 1)
        loss, n = model.loss(src, mask, tgt_in, tgt_out, torch.ones_like(tgt_in, dtype=torch.bool))
        loss.backward()
        missing = [name for name, p in model.named_parameters() if p.grad is None]
        assert not missing, (design, missing)


@pytest.mark.slow
@pytest.mark.parametrize("design", DESIGNS)
def test_reverse_task_learned(design, reverse_data, tmp_path):
    """Every decoder design learns to reverse short strings perfectly."""
    from attnseq.api import load
    from attnseq.data.corpus import read_tsv
    from attnseq.train.loop import Trainer

    from conftest import reverse_pairs, write_tsv

    extra = ["model.decoder.input_feeding=false"] if design == "luong" else []
    if DECODERS.get(design).uses_attention:
        extra.append("model.attention=general")
    else:  # the whole string must pass through one state
        for split, n, seed in (("train", 1500, 1), ("dev", 100, 2), ("test", 40, 3)):
            write_tsv(reverse_data / f"{split}.tsv", reverse_pairs(n, seed=seed, lengths=(3, 5)))
        extra += ["model.hidden_size=128", "model.cell=gru", "model.encoder.bidirectional=false", "model.bridge=copy",
                  "train.lr=0.005"]
    cfg = load_config(None, TINY + LEARN + [f"model.decoder={design}", f"data.dir={reverse_data}", *extra])
    Trainer(cfg, tmp_path / "run").fit()
    metrics = load(tmp_path / "run").evaluate(read_tsv(reverse_data / "test.tsv"), bleu=False)
    assert metrics["exact_match"] == 1.0, metrics


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
