"""int8 decoding (decode.precision int8, nn/int8.py): every architecture and design of the
registries quantised and decoding close to fp32, a trained model's outputs kept, the settings
(config key, CLI flag, API argument) reaching the model once per load, and the refusals: one
warning and fp32 on a CPU without int8 dot products, an error for the numpy engine and per call."""

from __future__ import annotations

import copy
import dataclasses
import logging
import subprocess
import sys

import pytest
import torch
from helpers import ROOT, copy_batch, padded_batch, train_task
from learning import at_least, at_most, learns

from attnseq import hardware
from attnseq.config import load_config
from attnseq.data.batching import SourceBatch
from attnseq.data.vocab import Vocab
from attnseq.decoding.search import search
from attnseq.errors import ConfigError
from attnseq.nn import build_model
from attnseq.nn import int8 as int8_module
from attnseq.nn.attention import SCORERS
from attnseq.nn.int8 import Int8Linear, float_products, quantize_int8
from attnseq.nn.model import ARCHS
from attnseq.nn.rnn.cells import CELLS
from attnseq.nn.rnn.decoders import DECODERS
from attnseq.nn.rnn.encoders import ENCODERS

V, V_TGT = 12, 15
SMALL = ["model.embed_size=8", "model.hidden_size=12"]
MEMORY_VOCAB = Vocab([".", "?", "a", "b", "c", "d", "e", "where"])
ARCH_CASES = {  # model.arch -> its small settings (every architecture of the registry has one)
    "rnn": SMALL,
    "transformer": [
        "model.arch=transformer",
        "model.hidden_size=16",
        "model.heads=2",
        "model.layers=2",
        "model.ff_size=24",
    ],
    "memn2n": ["model.arch=memn2n", "model.embed_size=6"],
    "ntm": [
        "model.arch=ntm",
        "model.embed_size=6",
        "model.hidden_size=10",
        "model.memory_locations=12",
        "model.memory_width=5",
        "model.read_heads=2",
        "model.write_heads=2",
    ],
    "han": ["model.arch=han", "model.embed_size=6", "model.hidden_size=5"],
}


def design_cases() -> list[list[str]]:
    """Every decoder design (and its true/false options flipped), scorer and encoder of the
    registries, read from them: a new variant is covered without being listed."""
    cases = [[f"model.decoder={design}"] for design in DECODERS.names()]
    for design in DECODERS.names():
        for option in dataclasses.fields(DECODERS.options_class(design)):
            if option.type in (bool, "bool"):
                cases.append(
                    [f"model.decoder={design}", f"model.decoder.{option.name}={str(not option.default).lower()}"]
                )
    cases += [[f"model.attention={name}"] for name in SCORERS.names()]
    return cases + [[f"model.encoder={name}", "model.encoder_layers=3"] for name in ENCODERS.names()]


# every architecture, and every cell (each has int8 code of its own), in the fast suite; the
# designs, scorers and encoders, whose layers are linear ones, with the slow tests
CASES = (
    [ARCH_CASES[arch] for arch in ARCH_CASES if arch != "rnn"]
    + [SMALL + [f"model.cell={name}", "model.encoder_layers=2", "model.decoder_layers=2"] for name in CELLS.names()]
    + [pytest.param(SMALL + case, marks=pytest.mark.slow) for case in design_cases()]
)


def build(overrides: list[str]):
    """(the model ``overrides`` describe, float32, eval mode, seeded; its config)."""
    torch.manual_seed(0)
    config = load_config(None, list(overrides))
    if config.model.arch in ("memn2n", "ntm", "han"):
        model = build_model(
            config.model, len(MEMORY_VOCAB), len(MEMORY_VOCAB), shares_vocab=True, src_vocab=MEMORY_VOCAB
        )
    else:
        model = build_model(config.model, V, V_TGT)
    return model.eval(), config


def test_every_architecture_of_the_registry_has_a_case():
    assert set(ARCHS.names()) == set(ARCH_CASES)


@pytest.mark.parametrize(
    "overrides", CASES, ids=lambda case: ",".join(o.split("=", 1)[1] for o in case[2:] or case[:1])
)
def test_every_design_decodes_at_int8_close_to_fp32(overrides):
    model, config = build(overrides)
    quantised = quantize_int8(copy.deepcopy(model))
    # every product with a weight matrix is int8 but those a module reads itself (float_linears)
    kept = [f"{name}.{linear}" for name, m in quantised.named_modules() for linear in getattr(m, "float_linears", ())]
    assert sorted(float_products(quantised)) == sorted(kept)
    assert any(isinstance(m, Int8Linear) for m in quantised.modules())
    vocab = len(MEMORY_VOCAB) if config.model.arch in ("memn2n", "ntm", "han") else V
    src, mask, tgt_in = padded_batch(vocab, vocab)
    with torch.no_grad():
        fp32, int8 = (torch.log_softmax(m.logits(SourceBatch(src, mask), tgt_in), -1) for m in (model, quantised))
        assert (fp32 - int8).abs().max() < 0.05  # teacher forcing: the recurrent layers' int8 forward
        for beam in (1, 3):
            settings = dataclasses.replace(config.decode, beam_size=beam, n_best=1, max_len=6)
            found = search(quantised, SourceBatch(src, mask), settings)
            assert len(found) == 3 and all(len(h[0].tokens) <= 6 for h in found)


def test_int8_steps_and_encodes_like_fp32_within_quantisation():
    """The int8 cell kernels (a decoder step) and sequence kernels (a bidirectional encoder over
    padding) stay within a quantisation step of fp32, and padding still changes nothing."""
    for cell in ("lstm", "gru", "rnn", "lstm_proj", "mingru", "lstm_peephole"):
        model, _ = build(SMALL + [f"model.cell={cell}"])
        quantised = quantize_int8(copy.deepcopy(model))
        src, mask, _ = padded_batch(V, V_TGT)
        with torch.no_grad():
            memory, int8_memory = model.encode(SourceBatch(src, mask)), quantised.encode(SourceBatch(src, mask))
            assert (memory.keys - int8_memory.keys).abs().max() < 0.03, cell
            alone = quantised.encode(SourceBatch(src[2:, :3], mask[2:, :3]))  # the shortest sentence without padding
            assert (alone.keys[0] - int8_memory.keys[2, :3]).abs().max() < 0.02, cell
            assert torch.all(int8_memory.keys[~mask] == 0)
            state, int8_state = model.decoder.init_state(memory), quantised.decoder.init_state(int8_memory)
            tokens = torch.tensor([1, 1, 1])
            for _ in range(3):
                logits, state, _ = model.decoder.step(tokens, state)
                int8_logits, int8_state, _ = quantised.decoder.step(tokens, int8_state)
                assert (torch.log_softmax(logits, -1) - torch.log_softmax(int8_logits, -1)).abs().max() < 0.05, cell
                tokens = logits.argmax(-1)


@pytest.mark.slow
@learns
def test_a_trained_model_decodes_alike_in_int8():
    """A model trained to reverse sequences: int8 gives fp32's outputs on nearly every sentence,
    the log-probabilities of the right tokens within 0.02 and every probability within 0.02 (the
    log-probabilities of tokens the model all but rules out, below e^-10, move more)."""
    model = train_task("model.decoder=luong", "model.attention=general", steps=300, reverse=True)
    quantised = quantize_int8(copy.deepcopy(model))
    src, mask, tgt_in, tgt_out, tgt_mask, (targets, lengths) = copy_batch(
        200, torch.Generator().manual_seed(7), reverse=True
    )
    with torch.no_grad():
        fp32, int8 = (torch.log_softmax(m.logits(SourceBatch(src, mask), tgt_in), -1) for m in (model, quantised))
        right = [x.gather(-1, tgt_out.unsqueeze(-1)).squeeze(-1)[tgt_mask] for x in (fp32, int8)]
        at_most("largest change of a right token's log-probability", (right[0] - right[1]).abs().max(), 0.02)
        at_most("largest change of a probability", (fp32.exp() - int8.exp())[tgt_mask].abs().max(), 0.02)
        settings = dataclasses.replace(load_config(None).decode, beam_size=1, max_len=8)
        outputs = [h[0].tokens for h in search(model, SourceBatch(src, mask), settings)]
        int8_outputs = [h[0].tokens for h in search(quantised, SourceBatch(src, mask), settings)]
    expected = [y[: int(n)].tolist() for y, n in zip(targets, lengths)]
    at_least("fp32 exact match", sum(a == b for a, b in zip(outputs, expected)) / len(expected), 0.95)
    at_least("int8 outputs equal to fp32's", sum(a == b for a, b in zip(outputs, int8_outputs)) / len(outputs), 0.97)


# -- the setting reaches the model ---------------------------------------------------------------
@pytest.fixture
def vnni(monkeypatch):
    """A CPU with int8 dot products and its kernels free to use them, whatever this machine's is
    today and whatever bench/isa.py holds them to (the kernels run anyway)."""
    monkeypatch.setattr(hardware, "cpu_flags", lambda: frozenset({"avx2", "avx512_vnni"}))
    monkeypatch.setattr(hardware, "kernel_cap", lambda: None)


@pytest.fixture
def quantisations(monkeypatch):
    """The models quantize_int8 is called on, in order."""
    calls = []
    original = int8_module.quantize_int8
    monkeypatch.setattr(int8_module, "quantize_int8", lambda model: calls.append(model) or original(model))
    return calls


def test_the_config_key_and_the_api_argument_reach_the_model(quick_runs, vnni, quantisations):
    import attnseq

    run = quick_runs["rnn"]
    assert attnseq.load(run).precision == "fp32" and not quantisations
    by_key = attnseq.load(run, overrides=["decode.precision=int8"])
    by_argument = attnseq.load(run, precision="int8")
    assert by_key.precision == by_argument.precision == "int8"
    assert [by_key.model, by_argument.model] == quantisations
    assert attnseq.load(run, overrides=["decode.precision=int8"], precision="fp32").precision == "fp32"
    with pytest.raises(ValueError, match=r"^precision: expected one of fp32, int8, bf16, got 'int4'"):
        attnseq.load(run, precision="int4")
    with pytest.raises(TypeError, match="^precision: set when the model is loaded"):
        by_argument.search(["abc"], precision="int8")


@pytest.mark.parametrize("command", ["translate", "evaluate"])
def test_the_cli_flag_quantises_once_for_every_batch(command, quick_runs, vnni, quantisations, tmp_path, capsys):
    from attnseq.cli import main

    run = quick_runs["rnn"]
    data = quick_runs.data / "test.tsv"
    args = ["--input", str(tmp_path / "in.txt")] if command == "translate" else ["--data", str(data)]
    (tmp_path / "in.txt").write_text("abc\ncab\nbca\n", encoding="utf-8")
    assert main([command, str(run), *args, "--precision", "int8", "--set", "decode.batch_size=1"]) == 0
    assert len(quantisations) == 1  # once at load, however many batches (3 and more here)
    capsys.readouterr()


def test_serve_loads_its_runs_at_the_precision(quick_runs, vnni):
    from attnseq.cli import build_parser
    from attnseq.serve.app import load_runs

    assert build_parser().parse_args(["serve", "r", "--precision", "int8"]).precision == "int8"
    runs = load_runs([str(quick_runs["rnn"]), f"tf={quick_runs['transformer']}"], precision="int8")
    assert [r.translator.precision for r in runs] == ["int8", "int8"]


# -- refusals ------------------------------------------------------------------------------------
def test_a_cpu_without_int8_dot_products_warns_once_and_decodes_in_fp32(quick_runs, monkeypatch, caplog):
    import attnseq

    monkeypatch.setattr(hardware, "cpu_flags", lambda: frozenset({"avx2", "avx512f", "avx512_bf16"}))
    with caplog.at_level(logging.WARNING, logger="attnseq"):
        translator = attnseq.load(quick_runs["rnn"], precision="int8")
        translator.translate(["abc", "cab"])
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "decode.precision int8" in warnings[0] and "decoding in fp32" in warnings[0]
    assert "avx512_vnni" in warnings[0]
    assert translator.precision == "fp32"
    assert not any(isinstance(m, Int8Linear) for m in translator.model.modules())


def test_int8_on_a_gpu_is_an_error_naming_the_key():
    from attnseq.engines.torch_engine import decoding_precision

    with pytest.raises(ConfigError, match="^decode.precision: int8 decodes on the CPU") as err:
        decoding_precision("int8", "cuda")
    assert err.value.key == "decode.precision"


def test_the_numpy_engine_refuses_int8_naming_the_key(quick_runs, tmp_path):
    import attnseq
    from attnseq.cli import main

    run = quick_runs["numpy"]
    with pytest.raises(ValueError, match=r'^precision \(decode.precision\): the numpy engine .* supports "fp32"'):
        attnseq.load(run, precision="int8")
    with pytest.raises(ConfigError, match="^decode.precision: the numpy engine") as err:
        attnseq.load(run, overrides=["decode.precision=int8"])
    assert err.value.key == "decode.precision"
    assert main(["evaluate", str(run), "--data", str(quick_runs.data / "test.tsv"), "--precision", "int8"]) == 2


@pytest.mark.slow
def test_no_warning_of_torch_reaches_the_user():
    """Packing a weight creates a torch.qint8 tensor, which torch warns is deprecated (once per
    process): a fresh process that turns every warning into an error quantises a model."""
    code = (
        "import torch, attnseq.nn.int8 as q; from attnseq.config import load_config; "
        "from attnseq.nn import build_model; "
        "m = q.quantize_int8(build_model(load_config(None, ['model.hidden_size=8']).model, 9, 9).eval()); "
        "print(sum(isinstance(x, q.Int8Linear) for x in m.modules()))"
    )
    done = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) >= 3 and done.stderr == ""
