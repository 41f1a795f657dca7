"""The two engines agree: the same weights give the same loss, gradients and greedy outputs.

The numpy models (the book's layers, hand-written backward) and the torch designs
``model.decoder`` none / peeky / book with ``model.bridge: copy`` and an LSTM are the same
functions; ``numpy_to_torch_state`` moves weights between them. Inputs hold no pad token (torch
packs and masks padding, the book's models read it), so both see the same sequences.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers import reverse_pairs

from attnseq.config import load_config
from attnseq.data.batching import SourceBatch
from attnseq.data.pipeline import TextPipeline
from attnseq.engines.numpy_engine.convert import numpy_to_torch_state, torch_to_numpy_state
from attnseq.engines.numpy_engine.designs import numpy_design
from attnseq.engines.numpy_engine.layouts import ArrayLayout
from attnseq.engines.numpy_engine.translator import NumpyTranslator
from attnseq.engines.torch_engine.translator import TorchTranslator
from attnseq.nn import build_model as build_torch_model
from attnseq.scratch import build_model as build_numpy_model
from attnseq.scratch import fused
from attnseq.scratch import layers as book

DESIGNS = {  # torch settings -> the numpy model they equal
    "baseline": ["model.decoder=none"],
    "peeky": ["model.decoder=peeky"],
    "attention": ["model.decoder=book", "model.attention=dot"],
}
COMMON = [
    "engine=numpy",
    "model.bridge=copy",
    "model.cell=lstm",
    "model.init=book",
    "model.embed_size=5",
    "model.hidden_size=6",
    "model.encoder.bidirectional=false",
]
SRC_V, TGT_V = 11, 13


def config_for(design: str, extra=()):
    return load_config(None, COMMON + DESIGNS[design] + list(extra))


def twin_models(
    design: str, src_v: int = SRC_V, tgt_v: int = TGT_V, scale: float = 0.5, seed: int = 0, extra=(), layers=fused
):
    """(numpy model, torch model) in float64 with the same random weights (biases non-zero); the
    numpy model built from ``layers`` (by default the fused ones the engine runs)."""
    cfg = config_for(design, extra)
    assert numpy_design(cfg) == design
    rng = np.random.RandomState(seed)
    np_model = build_numpy_model(
        design,
        src_v,
        cfg.model.embed_size,
        cfg.model.hidden_size,
        dtype=np.float64,
        rng=rng,
        ignore_label=0,
        target_vocab_size=tgt_v,
        layers=layers,
    )
    for p in np_model.params:
        p[...] = rng.standard_normal(p.shape) * scale
    torch_model = build_torch_model(cfg.model, src_v, tgt_v).double()
    state = {k: torch.from_numpy(v) for k, v in numpy_to_torch_state(np_model.named_params()).items()}
    torch_model.load_state_dict(state, strict=True)
    return np_model, torch_model, cfg


def rel_error(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / max(np.abs(a).max(), np.abs(b).max(), 1e-300))


@pytest.mark.parametrize("layers", [book, fused], ids=["book", "fused"])
@pytest.mark.parametrize("design", sorted(DESIGNS))
def test_same_loss_and_gradients(design, layers):
    np_model, torch_model, _ = twin_models(design, layers=layers)
    rng = np.random.RandomState(1)
    xs = rng.randint(4, SRC_V, size=(4, 7))  # (N, S) no padding
    ts = np.concatenate([np.full((4, 1), 1), rng.randint(4, TGT_V, size=(4, 5)), np.full((4, 1), 2)], 1)

    loss = np_model.forward(xs, ts)  # mean over the 4 * 6 target positions
    np_model.backward()

    src, tgt = torch.from_numpy(xs), torch.from_numpy(ts)
    src_mask, tgt_mask = torch.ones(4, 7, dtype=torch.bool), torch.ones(4, 6, dtype=torch.bool)
    with torch.no_grad():  # the trainer's loss: (sum, tokens), the sum taken in float32
        total, tokens = torch_model.loss(SourceBatch(src, src_mask), tgt[:, :-1], tgt[:, 1:], tgt_mask)
    assert tokens == 24
    assert rel_error(np.array(loss), (total / tokens).numpy()) < 1e-5
    logits = torch_model.logits(SourceBatch(src, src_mask), tgt[:, :-1])  # (4, 6, V) in float64 throughout
    mean = F.cross_entropy(logits.reshape(24, -1), tgt[:, 1:].reshape(24), reduction="sum") / tokens
    mean.backward()
    assert rel_error(np.array(loss), mean.detach().numpy()) < 1e-12

    expected = numpy_to_torch_state(np_model.named_grads())
    for name in expected:  # the book's one bias b feeds torch's bias_ih and bias_hh alike
        if "bias_hh" in name:
            expected[name] = expected[name.replace("bias_hh", "bias_ih")]
    grads = {k: p.grad.numpy() for k, p in torch_model.named_parameters()}
    assert set(grads) == set(expected)
    for name, g in grads.items():
        assert np.abs(g).max() > 0, name  # every parameter takes part
        assert rel_error(expected[name], g) < 1e-9, name


@pytest.mark.parametrize("design", sorted(DESIGNS) + ["bi-attention"])
def test_weights_round_trip(design):
    np_model = build_numpy_model(
        design, SRC_V, 5, 6, dtype=np.float64, rng=np.random.RandomState(2), target_vocab_size=TGT_V
    )
    for p in np_model.params[2::3]:  # make some biases non-zero
        p += 0.25
    params = np_model.named_params()
    state = numpy_to_torch_state(params)
    back = torch_to_numpy_state({k: torch.from_numpy(v) for k, v in state.items()}, np_model.param_names)
    assert set(back) == set(params)
    for name, value in params.items():
        np.testing.assert_array_equal(back[name], value)


def test_bidirectional_names_match_torch():
    np_model = build_numpy_model(
        "bi-attention", SRC_V, 5, 6, dtype=np.float64, rng=np.random.RandomState(2), target_vocab_size=TGT_V
    )
    cfg = load_config(
        None, COMMON[:-1] + ["model.encoder.bidirectional=true", "model.decoder=book", "model.attention=dot"]
    )
    assert numpy_design(cfg) == "bi-attention"
    torch_model = build_torch_model(cfg.model, SRC_V, TGT_V).double()
    torch_model.load_state_dict(
        {k: torch.from_numpy(v) for k, v in numpy_to_torch_state(np_model.named_params()).items()}, strict=True
    )


GREEDY = [
    "data.reverse_source=true",
    "model.embed_size=8",
    "model.hidden_size=16",
    "decode.max_len=8",
    "decode.max_len_ratio=2",
    "decode.max_len_offset=10",
]  # torch limit = 8 too


@pytest.mark.parametrize("design", sorted(DESIGNS))
def test_same_greedy_outputs(design, tmp_path: Path):
    """NumpyTranslator (batched generate, cut at eos) and Translator (torch greedy search) give
    the same outputs, scores and attention for the same weights."""
    cfg = config_for(design, GREEDY)
    pipeline = TextPipeline.fit(cfg.data, reverse_pairs(200, seed=4), tmp_path)
    np_model, _, _ = twin_models(
        design, len(pipeline.src_vocab), len(pipeline.tgt_vocab), scale=1.0, seed=5, extra=GREEDY
    )
    np_model.decoder.affine.params[1][2] += 0.5  # eos more likely: outputs end at different steps
    torch_model = build_torch_model(cfg.model, len(pipeline.src_vocab), len(pipeline.tgt_vocab)).double()
    torch_model.load_state_dict(
        {k: torch.from_numpy(v) for k, v in numpy_to_torch_state(np_model.named_params()).items()}
    )
    texts = [w for w, _ in reverse_pairs(24, seed=6, lengths=(6, 6))]  # one length: no padding

    numpy_results = NumpyTranslator(np_model, pipeline, cfg, ArrayLayout(pipeline, 6)).search(
        texts, keep_attention=True
    )
    torch_results = TorchTranslator(torch_model, pipeline, cfg).search(texts, keep_attention=True)

    lengths = set()
    for n, t in zip(numpy_results, torch_results):
        assert n.output_tokens == t.output_tokens and n.outputs == t.outputs
        np.testing.assert_allclose(n.scores, t.scores, rtol=1e-5, atol=1e-5)
        if design == "attention":
            assert n.attention[0].shape == t.attention[0].shape
            np.testing.assert_allclose(n.attention[0], t.attention[0], atol=1e-5)
        else:
            assert n.attention[0] is None and t.attention[0] is None
        lengths.add(len(n.output_tokens[0]))
    assert len(lengths) >= 3 and 8 in lengths  # outputs stop at eos at various steps, or run to max_len
