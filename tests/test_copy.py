"""Copy attention (model.copy: See et al. 2017's pointer-generator) and coverage (model.coverage):
the mixture over the extended vocabulary, its loss and gradients, every attending design and the
Transformer stepped as trained, unseen source tokens copied by greedy and beam search, coverage
carried through the beam's reordering, the extended ids of the text pipeline, and the settings
refused by name."""

from __future__ import annotations

import pytest
import torch
from helpers import assert_teacher_forcing_equals_stepping, padded_batch

from attnseq.config import load_config
from attnseq.data.batching import SourceBatch, collate
from attnseq.data.pipeline import TextPipeline
from attnseq.data.tokenizers import WordTokenizer
from attnseq.data.vocab import Vocab
from attnseq.decoding.beam import beam_search
from attnseq.decoding.greedy import greedy_search
from attnseq.errors import ConfigError
from attnseq.nn import build_model
from attnseq.nn.copy import PointerGenerator, extended_size
from attnseq.nn.loss import coverage_loss, linear_log_prob, pointer_generator_nll
from attnseq.nn.rnn.decoders import DECODERS

V_SRC, V = 10, 13  # source and target vocabularies; extended target ids from 13
ATTENDING = [name for name in DECODERS.names() if DECODERS.get(name).uses_attention]


def random_mixture(seed: int = 0, n: int = 4, s: int = 5, extra: int = 3):
    """(pointer, logits (n, V), gate (n,), alignment (n, s), extended ids (n, s), size) in float64."""
    g = torch.Generator().manual_seed(seed)
    pointer = PointerGenerator(2, 2, 2, V).double()
    logits = torch.randn(n, V, generator=g, dtype=torch.float64, requires_grad=True)
    gate = torch.randn(n, generator=g, dtype=torch.float64, requires_grad=True)
    alignment = torch.softmax(torch.randn(n, s, generator=g, dtype=torch.float64), -1).requires_grad_()
    extended = torch.randint(4, V + extra, (n, s), generator=g)
    extended[0, :2] = V + extra - 1  # one token outside the vocabulary twice in a sentence
    return pointer, logits, gate, alignment, extended, extended_size(V, extended)


def test_p_gen_is_a_probability_and_the_mixture_sums_to_one_over_the_extended_vocabulary():
    pointer, logits, gate, alignment, extended, size = random_mixture()
    p_gen = torch.sigmoid(pointer.gate_logits(*(torch.randn(50, 2, dtype=torch.float64) * 30 for _ in range(3))))
    assert bool(((p_gen >= 0) & (p_gen <= 1)).all())
    probs = pointer.mixture(logits, gate, alignment, extended, size)
    assert probs.shape == (4, V + 3) and bool((probs >= 0).all())
    torch.testing.assert_close(probs.sum(1), torch.ones(4, dtype=torch.float64))
    # the token outside the vocabulary gets (1 - p_gen) times the attention on both its positions
    copied = (1 - torch.sigmoid(gate[0])) * alignment[0, :2].sum()
    torch.testing.assert_close(
        probs[0, V + 2], copied + (1 - torch.sigmoid(gate[0])) * alignment[0, 2:][extended[0, 2:] == V + 2].sum()
    )


def test_the_copy_distribution_passes_gradcheck():
    pointer, logits, gate, alignment, extended, size = random_mixture(1)
    assert torch.autograd.gradcheck(lambda l, g, a: pointer.mixture(l, g, a, extended, size), (logits, gate, alignment))
    assert torch.autograd.gradcheck(
        lambda l, g, a: pointer.log_probs(l, g, a, extended, size)[:, :V], (logits, gate, alignment)
    )


def test_the_loss_is_minus_the_log_of_the_mixture_and_passes_gradcheck(monkeypatch):
    from attnseq.nn import loss as loss_module

    monkeypatch.setattr(loss_module, "CHUNK_BYTES", 3 * V * 8)  # 3 rows a chunk: 2 chunks
    g = torch.Generator().manual_seed(2)
    pointer, _, gate, alignment, extended, size = random_mixture(2)
    features = torch.randn(4, 6, generator=g, dtype=torch.float64, requires_grad=True)
    generator = torch.nn.Linear(6, V).double()
    target = torch.tensor([V + 2, 5, extended[2, 3].item(), Vocab.unk_id])  # copied-only, any, in the source, neither
    got = pointer.loss(features, generator, gate, alignment, extended, target)
    probs = pointer.mixture(generator(features), gate, alignment, extended, size)
    torch.testing.assert_close(got, -probs.gather(1, target[:, None]).log().sum())
    assert torch.autograd.gradcheck(
        lambda x, w, b: linear_log_prob(x, w, b, target.clamp(max=V - 1)), (features, generator.weight, generator.bias)
    )
    assert torch.autograd.gradcheck(
        lambda x, w, b, gt, a: pointer_generator_nll(
            linear_log_prob(x, w, b, target.clamp(max=V - 1)).masked_fill(target >= V, float("-inf")),
            gt,
            (a * (extended == target[:, None])).sum(1),
        ),
        (features, generator.weight, generator.bias, gate, alignment),
    )


def copy_batch():
    """(src (3, 7), mask, src_ext, tgt_in, tgt_out (extended), tgt_mask): the sources hold tokens
    outside the target vocabulary (ids 13, 14) that the targets copy."""
    src, mask, _ = padded_batch(V_SRC, V_SRC)
    src_ext = src.clone()
    src_ext[0, 2], src_ext[0, 4], src_ext[2, 1] = V, V + 1, V
    tgt_out = torch.tensor([[5, V, 6, V + 1, 2], [7, 8, 2, 0, 0], [V, 5, 9, 2, 0]])
    tgt_in = torch.cat([torch.ones(3, 1, dtype=torch.long), tgt_out[:, :-1]], 1)  # bos y
    tgt_in = tgt_in.masked_fill(tgt_in == Vocab.eos_id, Vocab.pad_id)
    return src, mask, src_ext, tgt_in.masked_fill(tgt_in >= V, Vocab.unk_id), tgt_out, tgt_out != 0


def copying_model(*overrides: str):
    arch = next((o for o in overrides if o.startswith("model.arch")), None)
    sizes = (
        ["model.hidden_size=16", "model.ff_size=32", "model.layers=2"]
        if arch
        else ["model.embed_size=8", "model.hidden_size=12"]
    )
    torch.manual_seed(0)
    return build_model(load_config(None, sizes + ["model.copy=true", *overrides]).model, V_SRC, V).double().eval()


@pytest.mark.parametrize(
    "variant",
    [[f"model.decoder={d}"] for d in ATTENDING]
    + [
        ["model.decoder=luong", "model.decoder.input_feeding=false"],
        ["model.decoder=bahdanau", "model.attention=concat", "model.coverage=true"],
        ["model.arch=transformer"],
    ],
    ids=lambda v: ",".join(v),
)
def test_stepping_gives_the_distribution_the_loss_is_trained_on(variant):
    """Each step's log-probabilities over the extended vocabulary sum to one, and at the targets
    they add up to the teacher-forced loss (with coverage, plus the coverage loss)."""
    model = copying_model(*variant)
    src, mask, src_ext, tgt_in, tgt_out, tgt_mask = copy_batch()
    loss, tokens = model.loss(SourceBatch(src, mask, src_ext), tgt_in, tgt_out, tgt_mask)
    assert tokens == int(tgt_mask.sum())
    state = model.decoder.init_state(model.encode(SourceBatch(src, mask, src_ext)))
    stepped, alignments = torch.zeros((), dtype=torch.float64), []
    for t in range(tgt_in.shape[1]):
        log_probs, state, alignment = model.decoder.step(tgt_out[:, t - 1] if t else tgt_in[:, 0], state)
        assert log_probs.shape == (3, V + 2)
        torch.testing.assert_close(log_probs.exp().sum(1), torch.ones(3, dtype=torch.float64))
        stepped = stepped - log_probs.gather(1, tgt_out[:, t : t + 1]).squeeze(1)[tgt_mask[:, t]].sum()
        alignments.append(alignment)
    if "model.coverage=true" in variant:
        stepped = stepped + coverage_loss(torch.stack(alignments, 1), tgt_mask)
    torch.testing.assert_close(loss, stepped)
    loss.backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None or not torch.isfinite(p.grad).all()]
    assert not missing, missing


def test_a_copying_model_needs_the_extended_ids_and_no_label_smoothing():
    model = copying_model()
    src, mask, src_ext, tgt_in, tgt_out, tgt_mask = copy_batch()
    with pytest.raises(ValueError, match="extended ids"):
        model.decoder.step(tgt_in[:, 0], model.decoder.init_state(model.encode(SourceBatch(src, mask))))
    with pytest.raises(ValueError, match="label smoothing"):
        model.loss(SourceBatch(src, mask, src_ext), tgt_in, tgt_out, tgt_mask, label_smoothing=0.1)


# -- an unseen source token copied ------------------------------------------------------------------
def word_pipeline(*data: str) -> TextPipeline:
    """A word pipeline with one vocabulary of a few words for both sides (``data``: settings)."""
    vocab = Vocab("send the report to tomorrow".split())
    config = load_config(None, ["data.tokenizer=word", "data.shared_vocab=true", *data]).data
    return TextPipeline(config, WordTokenizer(), WordTokenizer(), vocab, vocab, shares_vocab=True)


def copying_translator(*decode: str, gate: float = -40.0):
    """A word-level Translator of a copying model whose p_gen is sigmoid(``gate``) at every step
    (~0: it writes from the attention alone)."""
    from attnseq.engines.torch_engine.translator import TorchTranslator

    pipeline = word_pipeline()
    config = load_config(
        None, ["model.embed_size=8", "model.hidden_size=12", "model.copy=true", "data.tokenizer=word", *decode]
    )
    torch.manual_seed(0)
    model = build_model(config.model, len(pipeline.src_vocab), len(pipeline.tgt_vocab), True)
    with torch.no_grad():
        model.decoder.pointer.gate.weight.zero_()
        model.decoder.pointer.gate.bias.fill_(gate)
    return TorchTranslator(model, pipeline, config)


@pytest.mark.parametrize("beam", [1, 3])
def test_a_source_token_outside_the_vocabulary_is_copied_by_greedy_and_beam_search(beam):
    """A model whose p_gen is ~0 writes from the attention alone: given only a name it never saw,
    it writes that name, by its extended id mapped back to the source's text."""
    translator = copying_translator(f"decode.beam_size={beam}", "decode.max_len=1")
    pipeline, model = translator.pipeline, translator.model
    assert translator.copies
    result = translator.search(["Xylander"], keep_attention=True)[0]
    assert result.outputs[0] == "Xylander" and result.unknown == ["Xylander"]
    assert result.output_ids[0] == [len(pipeline.tgt_vocab)]  # the first extended id
    assert result.output_tokens[0] == ["Xylander"]
    views, _ = translator.attention_views(result)
    assert views[0].p_gen.shape == (1,) and views[0].p_gen[0] < 1e-6
    # the same through the searches themselves, the extended ids as the translator passes them
    src = torch.tensor([[Vocab.unk_id]])
    search = greedy_search if beam == 1 else lambda *a, **k: beam_search(*a[:3], beam, **k)
    assert search(model, SourceBatch(src, src != 0, torch.tensor([[len(pipeline.tgt_vocab)]])), torch.tensor([1]))[0][
        0
    ].tokens == [len(pipeline.tgt_vocab)]


def test_p_gen_is_drawn_beside_the_heatmap_and_sent_to_the_page(tmp_path):
    from attnseq.serve.payload import translation_payload
    from attnseq.viz.hypothesis import plot_hypothesis

    translator = copying_translator("decode.max_len=3", gate=0.4)  # p_gen = sigmoid(0.4) = 0.599
    result = translator.search(["send Xylander the report"], keep_attention=True)[0]
    views, encoder = translator.attention_views(result)
    rows = result.attention[0].shape[0]
    torch.testing.assert_close(torch.as_tensor(views[0].p_gen), torch.full((rows,), 0.5987), atol=1e-4, rtol=0)
    svg = plot_hypothesis(result, 0, views[0], encoder, tmp_path / "a.svg").read_text()
    assert "p_gen" in svg and svg.count("0.60") >= rows  # each row's value written in its cell
    hypothesis = translation_payload("run", translator, result, with_attention=True)["hypotheses"][0]
    assert hypothesis["p_gen"] == [0.5987] * rows
    plain = translation_payload("run", translator, result, with_attention=False)["hypotheses"][0]
    assert "p_gen" not in plain


def test_the_pipeline_numbers_the_tokens_outside_the_vocabulary_per_sentence():
    pipeline = word_pipeline("data.reverse_source=true")
    source = pipeline.read_source("send Quorin the report to Xylander and Quorin")
    ext = pipeline.extend_source(source.tokens)
    size = len(pipeline.tgt_vocab)
    assert ext.oov == ("Quorin", "Xylander", "and")  # order of first appearance, reading order
    reading = ext.ids[::-1]  # reverse_source: the encoder's order is reversed
    assert reading[1] == reading[7] == size and reading[5] == size + 1 and reading[0] == pipeline.tgt_vocab.stoi["send"]
    target = pipeline.extend_target("send the report to Xylander Zed".split(), ext.oov)
    assert target[4] == size + 1 and target[5] == Vocab.unk_id  # not in the source: unk
    assert pipeline.decode_target(target, ext.oov) == "send the report to Xylander <unk>"
    [example] = pipeline.encode_pairs([("send Quorin the report", "to Quorin tomorrow")], extended=True)
    batch = collate([example], [0])
    assert batch.source.extended[0].tolist() == example.src_ext and batch.source.oov == [("Quorin",)]
    assert batch.tgt_out[0].tolist() == [
        pipeline.tgt_vocab.stoi["to"],
        size,
        pipeline.tgt_vocab.stoi["tomorrow"],
        Vocab.eos_id,
    ]
    assert batch.tgt_in[0].tolist() == [
        Vocab.bos_id,
        pipeline.tgt_vocab.stoi["to"],
        Vocab.unk_id,
        pipeline.tgt_vocab.stoi["tomorrow"],
    ]  # read back as unk


# -- coverage --------------------------------------------------------------------------------------
def test_the_coverage_loss_sums_the_overlap_with_the_attention_before():
    a = torch.tensor([[[0.5, 0.5, 0.0], [0.8, 0.2, 0.0], [0.0, 0.1, 0.9]]])  # (1, 3, 3)
    # step 2: min(0.8, 0.5) + min(0.2, 0.5) = 0.7; step 3: min(0.1, 0.7) = 0.1, (the padding step not counted)
    torch.testing.assert_close(coverage_loss(a, torch.tensor([[True, True, False]])), torch.tensor(0.7))
    torch.testing.assert_close(coverage_loss(a, torch.tensor([[True, True, True]])), torch.tensor(0.8))


@pytest.mark.parametrize("design", ATTENDING)
def test_coverage_steps_as_it_trains_and_changes_the_attention(design):
    overrides = ["model.embed_size=8", "model.hidden_size=12", f"model.decoder={design}", "model.attention=concat"]
    torch.manual_seed(0)
    covered = build_model(load_config(None, overrides + ["model.coverage=true"]).model, V_SRC, V).double().eval()
    assert_teacher_forcing_equals_stepping(covered, *padded_batch(V_SRC, V))
    with torch.no_grad():
        covered.decoder.scorer.w_c.weight.mul_(50)
    src, mask, tgt_in = padded_batch(V_SRC, V)
    _, alignment = covered(SourceBatch(src, mask), tgt_in)
    with torch.no_grad():
        covered.decoder.scorer.w_c.weight.zero_()  # no coverage term: another alignment after step 1
    _, plain = covered(SourceBatch(src, mask), tgt_in)
    torch.testing.assert_close(alignment[:, 0], plain[:, 0])
    assert not torch.allclose(alignment[:, 1:], plain[:, 1:])


@pytest.mark.parametrize("copy", [False, True])
def test_coverage_is_carried_through_the_beams_reordering(copy):
    """Each hypothesis beam search returns has the attention of its own history: teacher-forcing
    its tokens gives the alignments the search kept, which depend on the coverage of that
    history alone (a coverage row left behind when the beam reorders would change them)."""
    torch.manual_seed(3)
    model = (
        build_model(
            load_config(
                None,
                [
                    "model.embed_size=8",
                    "model.hidden_size=12",
                    "model.attention=concat",
                    "model.coverage=true",
                    f"model.copy={str(copy).lower()}",
                ],
            ).model,
            V_SRC,
            V,
        )
        .double()
        .eval()
    )
    with torch.no_grad():
        model.decoder.scorer.w_c.weight.mul_(20)
    src, mask, src_ext, *_ = copy_batch()
    hypotheses = beam_search(
        model,
        SourceBatch(src, mask, src_ext if copy else None),
        torch.tensor([6, 6, 6]),
        4,
        n_best=4,
        keep_attention=True,
    )
    reordered = 0
    for b, nbest in enumerate(hypotheses):
        assert len(nbest) == 4
        for h in nbest:
            steps = h.alignment.shape[0]
            tgt_in = torch.tensor([[Vocab.bos_id] + h.tokens][:steps])[:, :steps]
            memory = model.encode(SourceBatch(src[b : b + 1], mask[b : b + 1], src_ext[b : b + 1] if copy else None))
            _, alignment = model.decoder(memory, tgt_in)
            n = int(mask[b].sum())
            torch.testing.assert_close(alignment[0, :, :n].float(), h.alignment, atol=1e-5, rtol=1e-4)
        reordered += len({tuple(h.tokens[:1]) for h in nbest}) < len(nbest)  # hypotheses that share a prefix
    assert reordered  # some beams held two continuations of one hypothesis


# -- settings refused by name ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "overrides, key",
    [
        (["model.decoder=cho2014", "model.copy=true"], "model.copy"),  # no attention to copy with
        (["model.decoder=none", "model.coverage=true"], "model.coverage"),
        (["model.coverage=true"], "model.coverage"),  # general attention has no coverage term
        (["model.coverage=true", "model.attention={name: multihead, head: concat}"], "model.coverage"),
        (["model.coverage_loss_weight=2"], "model.coverage_loss_weight"),  # without coverage
        (["model.arch=transformer", "model.coverage=true"], "model.coverage"),  # not a Transformer key
    ],
)
def test_copy_and_coverage_where_they_do_not_apply_are_refused_by_name(overrides, key):
    with pytest.raises(ConfigError) as err:
        build_model(load_config(None, overrides).model, V_SRC, V)
    assert err.value.key == key and str(err.value).startswith(key)


NUMPY_BOOK = [
    "engine=numpy",
    "model.decoder=book",
    "model.attention=dot",
    "model.encoder.bidirectional=false",
    "model.bridge=copy",
    "model.init=book",
]  # the book's attention model, which the NumPy engine runs


@pytest.mark.parametrize(
    "overrides, key",
    [
        (["model.copy=true", "train.label_smoothing=0.1"], "train.label_smoothing"),
        (["model.copy=true", "data.tokenizer={name: sentencepiece, joint: false}"], "data.tokenizer.joint"),
        (["model.copy=true", *NUMPY_BOOK], "model.copy"),
        (["model.coverage=true", *NUMPY_BOOK], "model.coverage"),
    ],
)
def test_a_copying_run_the_engine_cannot_train_is_refused_by_name(overrides, key):
    from attnseq.engines import engine_for

    config = load_config(None, ["data.dir=x", *overrides])
    with pytest.raises(ConfigError) as err:
        engine_for(config).check(config)
    assert err.value.key == key
