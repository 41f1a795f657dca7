"""The Transformer: masks, cached incremental decoding, SDPA vs explicit weights, tying, learning."""

from __future__ import annotations

import pytest
import torch
from helpers import ROOT
from learning import at_least, learns, seed

from attnseq.config import from_dict, load_config
from attnseq.data.batching import SourceBatch, collate
from attnseq.data.pipeline import Example
from attnseq.data.vocab import Vocab
from attnseq.decoding.greedy import greedy_search
from attnseq.decoding.search import max_lengths
from attnseq.errors import ConfigError
from attnseq.nn.model import build_model, count_parameters
from attnseq.nn.transformer.layers import causal_mask, scaled_dot_product

SRC_V, TGT_V = 11, 13


def model_config(**model):
    values = {"arch": "transformer", "hidden_size": 32, "heads": 4, "ff_size": 64, "layers": 2, "dropout": 0.0}
    values.update(model)
    return from_dict({"model": values}).model


def tiny_model(seed: int = 0, src_vocab: int = SRC_V, tgt_vocab: int = TGT_V, shares_vocab: bool = False, **model):
    torch.manual_seed(seed)
    return build_model(model_config(**model), src_vocab, tgt_vocab, shares_vocab).eval()


def batch(seed: int = 0, b: int = 3, s: int = 7, t: int = 6):
    """src (B, S) with row 1 padded after 4 tokens, its mask, and target inputs (B, T)."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, SRC_V, (b, s), generator=g)
    mask = torch.ones(b, s, dtype=torch.bool)
    mask[1, 4:] = False
    src[~mask] = 0
    tgt = torch.randint(4, TGT_V, (b, t), generator=g)
    return src, mask, tgt


NORMS = pytest.mark.parametrize("pre_norm", [True, False], ids=["pre-norm", "post-norm"])


@NORMS
def test_decoder_position_t_ignores_later_target_tokens(pre_norm):
    model = tiny_model(pre_norm=pre_norm)
    src, mask, tgt = batch()
    changed = tgt.clone()
    changed[:, 3:] = torch.randint(4, TGT_V, changed[:, 3:].shape)
    changed[:, 3] = (tgt[:, 3] - 4 + 1) % (TGT_V - 4) + 4  # position 3 surely differs
    with torch.no_grad():
        memory = model.encode(SourceBatch(src, mask))
        before, _ = model.decoder(memory, tgt)
        after, _ = model.decoder(memory, changed)
    torch.testing.assert_close(before[:, :3], after[:, :3], atol=1e-6, rtol=0)
    assert (before[:, 3] - after[:, 3]).abs().max() > 1e-3


@NORMS
@pytest.mark.parametrize("positional", ["sinusoidal", "learned"])
def test_encoder_real_positions_ignore_padding_content_and_length(pre_norm, positional):
    model = tiny_model(pre_norm=pre_norm, positional=positional)
    src, mask, _ = batch()
    longer = torch.cat([src, torch.zeros(3, 3, dtype=torch.long)], 1)  # 3 more padding columns
    longer_mask = torch.cat([mask, torch.zeros(3, 3, dtype=torch.bool)], 1)
    longer[~longer_mask] = torch.randint(4, SRC_V, (int((~longer_mask).sum()),))  # junk in padding
    with torch.no_grad():
        short_out = model.encode(SourceBatch(src, mask)).keys
        long_out = model.encode(SourceBatch(longer, longer_mask)).keys
    real = mask
    torch.testing.assert_close(short_out[real], long_out[:, :7][real], atol=1e-5, rtol=0)


@NORMS
@pytest.mark.parametrize("positional", ["sinusoidal", "learned"])
def test_cached_steps_equal_full_prefix_steps_and_teacher_forcing(pre_norm, positional):
    model = tiny_model(pre_norm=pre_norm, positional=positional)
    src, mask, tgt = batch()
    with torch.no_grad():
        memory = model.encode(SourceBatch(src, mask))
        features, alignment = model.decoder(memory, tgt, need_weights=True)
        teacher = model.decoder.generator(features)  # (B, T, V)
        runs = {}
        for use_cache in (True, False):
            model.decoder.use_cache = use_cache
            state = model.decoder.init_state(memory)
            logits, alignments = [], []
            for t in range(tgt.shape[1]):
                step_logits, state, step_alignment = model.decoder.step(tgt[:, t], state)
                logits.append(step_logits)
                alignments.append(step_alignment)
            runs[use_cache] = torch.stack(logits, 1), torch.stack(alignments, 1)
            assert state["step"] == tgt.shape[1]
    cached, full = runs[True], runs[False]
    torch.testing.assert_close(cached[0], full[0], atol=1e-5, rtol=0)
    torch.testing.assert_close(cached[0], teacher, atol=1e-5, rtol=0)
    torch.testing.assert_close(cached[1], alignment, atol=1e-5, rtol=0)
    torch.testing.assert_close(full[1], alignment, atol=1e-5, rtol=0)


def test_cache_grows_one_position_per_step():
    model = tiny_model()
    src, mask, tgt = batch()
    with torch.no_grad():
        state = model.decoder.init_state(model.encode(SourceBatch(src, mask)))
        assert len(state["self_keys"]) == 2 and state["cross_keys"][0].shape == (3, 4, 7, 8)
        # the memory's projections are stored contiguous once, not copied by every step that returns weights
        assert all(t.is_contiguous() for t in state["cross_keys"] + state["cross_values"])
        for t in range(3):
            _, state, _ = model.decoder.step(tgt[:, t], state)
    assert state["self_keys"][0].shape == (3, 4, 3, 8)  # (B, heads, t, d_head)
    assert state["self_values"][1].shape == (3, 4, 3, 8)
    assert state.batch_size() == 3


def test_alignment_is_a_distribution_over_real_source_positions():
    model = tiny_model()
    src, mask, tgt = batch()
    with torch.no_grad():
        memory = model.encode(SourceBatch(src, mask))
        state = model.decoder.init_state(memory)
        logits, state, heads = model.decoder.step_heads(tgt[:, 0], state)
        per_layer = model.decoder.cross_attention(memory, tgt)  # (B, L, h, T, S)
    assert logits.shape == (3, TGT_V)
    assert heads.shape == (3, 2, 4, 7)  # (B, layers, heads, S)
    assert per_layer.shape == (3, 2, 4, 6, 7)
    torch.testing.assert_close(heads, per_layer[:, :, :, 0], atol=1e-6, rtol=0)
    torch.testing.assert_close(heads.sum(-1), torch.ones(3, 2, 4))
    assert heads[1, :, :, 4:].abs().max() == 0  # padding gets no attention


def test_sdpa_equals_explicit_weights_path():
    g = torch.Generator().manual_seed(3)
    query, keys, values = (torch.randn(2, 4, n, 8, generator=g) for n in (5, 6, 6))
    padding = torch.ones(2, 1, 1, 6, dtype=torch.bool)
    padding[0, ..., 4:] = False
    for mask in (padding, causal_mask(6)[1:], padding & causal_mask(6)[1:]):
        fused, none = scaled_dot_product(query, keys, values, mask)
        explicit, weights = scaled_dot_product(query, keys, values, mask, need_weights=True)
        assert none is None and weights.shape == (2, 4, 5, 6)
        torch.testing.assert_close(fused, explicit, atol=1e-6, rtol=0)
        assert weights.masked_select(~mask.expand_as(weights)).abs().max() == 0
    model = tiny_model()
    src, src_mask, tgt = batch()
    with torch.no_grad():
        memory = model.encode(SourceBatch(src, src_mask))
        fused, _ = model.decoder(memory, tgt)  # no weights asked: SDPA in every layer
        explicit, _ = model.decoder._teacher(memory, tgt, weights_from=0)  # weights in every layer
    torch.testing.assert_close(fused, explicit, atol=1e-6, rtol=0)


def test_greedy_decodes_each_sentence_as_if_alone():
    model = tiny_model(seed=5)
    src, mask, _ = batch(seed=5)
    limits = torch.tensor([5, 8, 3])
    together = greedy_search(model, SourceBatch(src, mask), limits, keep_attention=True)
    for i in range(3):
        length = int(mask[i].sum())
        alone = greedy_search(
            model,
            SourceBatch(src[i : i + 1, :length], mask[i : i + 1, :length]),
            limits[i : i + 1],
            keep_attention=True,
        )
        assert alone[0][0].tokens == together[i][0].tokens
        assert alone[0][0].score == pytest.approx(together[i][0].score, abs=1e-4)
        torch.testing.assert_close(alone[0][0].alignment, together[i][0].alignment[:, :length], atol=1e-5, rtol=0)


def test_beam_search_runs_through_the_shared_module():
    from attnseq.decoding.beam import beam_search

    model = tiny_model(seed=2)
    src, mask, _ = batch(seed=2)
    limits = torch.tensor([6, 6, 6])
    found = {}
    for use_cache in (True, False):
        model.decoder.use_cache = use_cache
        beams = beam_search(model, SourceBatch(src, mask), limits, beam_size=3, n_best=2, keep_attention=True)
        assert [len(b) for b in beams] == [2, 2, 2]
        assert all(b[0].score >= b[1].score for b in beams)
        assert beams[1][0].alignment.shape[1] == 4  # real source positions only
        found[use_cache] = [[h.tokens for h in b] for b in beams]
    assert found[True] == found[False]
    model.decoder.use_cache = True
    greedy = greedy_search(model, SourceBatch(src, mask), limits)
    one = beam_search(model, SourceBatch(src, mask), limits, beam_size=1)
    assert [g[0].tokens for g in greedy] == [b[0].tokens for b in one]


def test_tied_embeddings_share_storage_and_survive_a_checkpoint(tmp_path):
    from attnseq.nn.model import load_model_weights, model_weights
    from attnseq.runs import read_checkpoint, write_checkpoint

    shared = tiny_model(src_vocab=TGT_V, tie_embeddings=True, shares_vocab=True)
    generator = shared.decoder.generator.weight
    assert shared.decoder.embed.tokens.weight.data_ptr() == generator.data_ptr()
    assert shared.encoder.embed.tokens.weight.data_ptr() == generator.data_ptr()
    untied = tiny_model(src_vocab=TGT_V)
    assert count_parameters(untied) - count_parameters(shared) == 2 * TGT_V * 32
    # two vocabularies, even of the same size: only the decoder side is tied (ids mean other tokens)
    separate = tiny_model(src_vocab=TGT_V, tie_embeddings=True)
    assert separate.decoder.embed.tokens.weight.data_ptr() == separate.decoder.generator.weight.data_ptr()
    assert separate.encoder.embed.tokens.weight.data_ptr() != separate.decoder.generator.weight.data_ptr()

    write_checkpoint(tmp_path / "w.safetensors", model_weights(shared))
    restored = tiny_model(seed=9, src_vocab=TGT_V, tie_embeddings=True, shares_vocab=True)
    load_model_weights(restored, read_checkpoint(tmp_path / "w.safetensors")[0], tmp_path / "w.safetensors")
    assert restored.encoder.embed.tokens.weight.data_ptr() == restored.decoder.generator.weight.data_ptr()
    src, mask, tgt = batch()
    with torch.no_grad():
        torch.testing.assert_close(
            restored.logits(SourceBatch(src, mask), tgt), shared.logits(SourceBatch(src, mask), tgt)
        )


def test_every_parameter_learns_under_dropout():
    model = tiny_model(
        src_vocab=TGT_V, dropout=0.1, positional="learned", tie_embeddings=True, shares_vocab=True
    ).train()
    src, mask, tgt = batch()
    loss, tokens = model.loss(
        SourceBatch(src, mask), tgt, tgt, torch.ones_like(tgt, dtype=torch.bool), label_smoothing=0.1
    )
    assert tokens == tgt.numel()
    loss.backward()
    missing = [name for name, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum()]
    assert not missing


@pytest.mark.parametrize(
    "values, key",
    [
        ({"hidden_size": 30, "heads": 4}, "model.heads"),
        ({"layers": 0}, "model.layers"),
        ({"ff_size": 0}, "model.ff_size"),
        ({"dropout": 1.0}, "model.dropout"),
        ({"cell": "gru"}, "model.cell: unknown key"),  # an RNN setting is no Transformer setting
        ({"positional": {"name": "sinusoidal", "max_positions": 5}}, "model.positional.max_positions: unknown option"),
    ],
)
def test_inconsistent_sizes_name_the_key(values, key):
    with pytest.raises(ConfigError, match=key):
        build_model(model_config(**values), SRC_V, TGT_V)


def reversal(n: int, g: torch.Generator) -> list[Example]:
    """Random words over 8 symbols and their reversal; the source ends with an end marker (eos),
    as toolkits that append eos to the source do, so the last word position is easy to find."""
    examples = []
    for _ in range(n):
        length = int(torch.randint(2, 6, (1,), generator=g))
        word = torch.randint(4, 12, (length,), generator=g).tolist()
        examples.append(Example(word + [Vocab.eos_id], word[::-1]))
    return examples


@pytest.mark.slow
@learns
def test_learns_to_reverse_sequences():
    torch.manual_seed(seed(0))
    model = build_model(model_config(layers=1, heads=4, hidden_size=64, ff_size=128), 12, 12)
    steps, warmup = 220, 30
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3, betas=(0.9, 0.98))
    schedule = torch.optim.lr_scheduler.LambdaLR(  # linear warm-up, then linear decay to 0
        optimizer, lambda s: min((s + 1) / warmup, (steps - s) / (steps - warmup))
    )
    g = torch.Generator().manual_seed(1)
    for _ in range(steps):
        b = collate(reversal(128, g), range(128))
        loss, tokens = model.loss(b.source, b.tgt_in, b.tgt_out, b.tgt_mask)
        optimizer.zero_grad()
        (loss / tokens).backward()
        optimizer.step()
        schedule.step()
    model.eval()
    test = reversal(200, g)
    b = collate(test, range(len(test)))
    hyps = greedy_search(model, b.source, max_lengths(b.source.mask, 1.0, 2, 20))
    at_least("exact match", sum(h[0].tokens == e.tgt for h, e in zip(hyps, test)) / len(test), 1.0)


@pytest.mark.parametrize("preset", ["transformer-tiny", "transformer-gettext-de"])
def test_presets_load_and_build(preset):
    config = load_config(ROOT / "configs" / f"{preset}.yaml")
    assert config.model.arch == "transformer"
    model = build_model(config.model, 40, 40, config.data.shared_vocab)  # tying all needs the preset's one vocabulary
    assert model.decoder.feature_size == config.model.hidden_size


def test_stepping_with_reordered_rows_keeps_gradients():
    """Steps whose rows are reordered between them (as beam search does) give the logits of
    the reordered prefixes, and gradients flow through the cache when autograd is on."""
    model = tiny_model(seed=4).train()
    model.decoder.layers.apply(lambda m: setattr(m, "p", 0.0) if isinstance(m, torch.nn.Dropout) else None)
    src, mask, _ = batch(seed=4, b=2)
    state = model.decoder.init_state(model.encode(SourceBatch(src, mask)))
    tokens = [torch.tensor([Vocab.bos_id, Vocab.bos_id]), torch.tensor([5, 6]), torch.tensor([7, 8])]
    logits, state, _ = model.decoder.step(tokens[0], state)
    logits, state, _ = model.decoder.step(tokens[1], state)
    state = state.select(torch.tensor([1, 0]))  # the rows swap: row 0 now continues sentence 1
    logits, state, _ = model.decoder.step(tokens[2], state)
    logits.sum().backward()
    assert model.decoder.layers[0].self_attn.W_k.weight.grad.abs().sum() > 0
    with torch.no_grad():  # the same prefixes, fed in order
        swapped = src[[1, 0]], mask[[1, 0]]
        again = model.decoder.init_state(model.encode(SourceBatch(*swapped)))
        for step in tokens:
            expected, again, _ = model.decoder.step(step[[1, 0]] if step is not tokens[2] else step, again)
    torch.testing.assert_close(logits.detach(), expected, rtol=1e-5, atol=1e-5)
