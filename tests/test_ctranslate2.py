"""CTranslate2 for Transformer runs: ``attnseq export RUN --to ctranslate2`` fills CTranslate2's
Transformer specification from the run's weights, and the exported folder decodes through the
same Translator base as the torch engine: float32 greedy outputs equal the torch engine's, beam
search agrees (its scores where outputs differ), attention is the torch engine's alignment, int8
decodes, and a design the specification cannot express is refused by name.

The tests that decode need the optional ``ctranslate2`` package (``pip install
'attnseq[ctranslate2]'``, in the dev extra too) and are skipped, saying so, without it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import ROOT, reverse_pairs, write_tsv
from hypothesis import given, settings
from hypothesis import strategies as st

import attnseq
from attnseq.cli import main
from attnseq.config import TransformerConfig, from_dict
from attnseq.ctranslate2_library import import_ctranslate2
from attnseq.errors import ConfigError, UserError
from attnseq.export.ctranslate2_spec import check_exportable, special_names
from attnseq.schema import Variant


@pytest.fixture(scope="module")
def ct2():
    """The ctranslate2 module, its translators on one thread in this module as torch's are in
    the tests (conftest), or the module's tests skipped, saying why."""
    try:
        module = import_ctranslate2()  # as attnseq imports it: its own OpenMP runtime
    except ImportError:
        pytest.skip(
            "ctranslate2 is an optional extra: pip install 'attnseq[ctranslate2]' (make install puts it in .venv)"
        )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OMP_NUM_THREADS", "1")  # CTranslate2's intra_threads where a run sets none
        yield module


def random_run(folder: Path, *overrides: str, pairs=None) -> Path:
    """A small Transformer run (transformer-tiny's design, d_model 32) randomly initialised with a
    fixed seed: what it outputs does not matter, only that both engines output it."""
    from attnseq.config import load_config, save_config
    from attnseq.data.pipeline import TextPipeline
    from attnseq.nn.model import build_model, check_model, model_weights
    from attnseq.runs import write_checkpoint

    config = load_config(
        ROOT / "configs" / "transformer-tiny.yaml",
        ["model.hidden_size=32", "model.ff_size=64", "model.heads=4", *overrides],
    )
    config = dataclasses.replace(config, model=check_model(config.model))
    folder.mkdir(parents=True)
    pipeline = TextPipeline.fit(config.data, pairs or reverse_pairs(200, seed=1), folder)
    pipeline.save(folder)
    torch.manual_seed(0)
    model = build_model(config.model, len(pipeline.src_vocab), len(pipeline.tgt_vocab), pipeline.shares_vocab)
    write_checkpoint(folder / "best.safetensors", model_weights(model))
    save_config(config, folder / "config.yaml")
    return folder


def exported(run: Path, quantization: str = "float32") -> Path:
    from attnseq.export.ctranslate2_spec import export_ctranslate2

    return export_ctranslate2(run, run.parent / f"{run.name}-{quantization}", quantization)


SOURCES = [s for s, _ in reverse_pairs(40, seed=3, lengths=(1, 9))]
WORDS = [("a <s> b", "b </s> a"), ("<blank> c", "c <unk>"), ("b b a", "a b b")] * 20  # specials' spellings as words
DESIGNS = {  # name: (--set values, training pairs, sources)
    "pre-norm, sinusoidal, two vocabularies": ([], None, SOURCES),
    "post-norm, learned positions, one tied vocabulary, reversed source": (
        [
            "model.pre_norm=false",
            "model.positional={name: learned, max_positions: 64}",
            "data.shared_vocab=true",
            "model.tie_embeddings=true",
            "data.reverse_source=true",
        ],
        None,
        SOURCES,
    ),
    "words spelt as CTranslate2's special tokens": (
        ["data.tokenizer=word"],
        WORDS,
        ["a <s> b", "<blank> c </s>", "b", "c a <s>"],
    ),
}


def assert_same_search(torch_results, ct2_results, atol: float = 1e-4) -> None:
    """Every source's outputs equal, scores and attention (same shapes) within ``atol``."""
    for a, b in zip(torch_results, ct2_results, strict=True):
        assert b.outputs == a.outputs, a.source
        np.testing.assert_allclose(b.scores, a.scores, atol=atol)
        for x, y in zip(a.attention, b.attention):
            assert (x is None) == (y is None)
            if y is not None:
                assert y.shape == np.asarray(x).shape
                np.testing.assert_allclose(y, np.asarray(x), atol=atol)


@pytest.fixture(scope="module")
def models(ct2, tmp_path_factory):
    """(run, export, the run's torch Translator, the export's) of the first design."""
    run = random_run(tmp_path_factory.mktemp("ctranslate2") / "run")
    folder = exported(run)
    return run, folder, attnseq.load(run), attnseq.load(folder)


def test_the_float32_export_searches_greedily_as_the_torch_engine(models):
    _, folder, torch_model, ct2_model = models
    assert type(ct2_model).__name__ == "CTranslate2Translator" and ct2_model.config.engine == "ctranslate2"
    assert json.loads((folder / "export.json").read_text())["quantization"] == "float32"
    found = ct2_model.search(SOURCES, keep_attention=True)
    assert_same_search(torch_model.search(SOURCES, keep_attention=True), found)
    for r in found:  # one attention row a decoding step: the tokens', and the end's when it ended
        assert r.attention[0].shape[0] in (len(r.output_ids[0]) + 1, len(r.output_ids[0]))
        assert r.attention[0].shape[1] == len(r.source_tokens)
        np.testing.assert_allclose(r.attention[0].sum(1), 1.0, atol=1e-5)
    outputs, attention = ct2_model.translate(["abc", ""], return_attention=True)
    assert outputs[1] == "" and attention[0].shape[1] == 3 and attention[1].shape == (0, 0)
    with pytest.raises(
        ValueError,
        match=r"^engine: engine: .* the ctranslate2 engine, which the torch engine "
        "cannot decode",
    ):
        attnseq.load(folder, engine="torch")


@pytest.mark.slow
@pytest.mark.parametrize("design", list(DESIGNS)[1:])
def test_every_design_of_the_transformer_exports(tmp_path, ct2, design):
    settings, pairs, sources = DESIGNS[design]
    run = random_run(tmp_path / "run", *settings, pairs=pairs)
    torch_model, ct2_model = attnseq.load(run), attnseq.load(exported(run))
    assert_same_search(torch_model.search(sources, keep_attention=True), ct2_model.search(sources, keep_attention=True))
    assert_same_search(
        torch_model.search(sources, beam_size=3, n_best=2), ct2_model.search(sources, beam_size=3, n_best=2), atol=1e-3
    )
    if "learned" in design:  # past the learned positions: the same error from both engines
        for model in (torch_model, ct2_model):
            with pytest.raises(ConfigError) as error:
                model.search(["abc" * 30])
            assert error.value.key == "model.positional.max_positions"


@pytest.mark.parametrize("length_penalty", [pytest.param(0.0, marks=pytest.mark.slow), 0.6])
def test_beam_search_of_the_export_agrees_with_the_torch_engine(models, length_penalty):
    """CTranslate2's beam refills where attnseq's narrows, so outputs may differ where hypotheses
    score alike; the n-best lists agree in their best score, and a sentence's result does not
    depend on the sentences searched with it (each has its own output limit)."""
    _, _, torch_model, ct2_model = models
    request = dict(beam_size=5, n_best=3, length_penalty=length_penalty, keep_attention=True)
    ours, theirs = torch_model.search(SOURCES, **request), ct2_model.search(SOURCES, **request)
    same = 0
    for a, b in zip(ours, theirs):
        assert len(b.outputs) == 3 and b.scores == sorted(b.scores, reverse=True)
        assert b.scores[0] == pytest.approx(a.scores[0], abs=1e-3), (a.source, a.outputs, b.outputs)
        same += a.outputs[0] == b.outputs[0]
        if a.outputs[0] == b.outputs[0]:
            np.testing.assert_allclose(b.attention[0], np.asarray(a.attention[0]), atol=1e-4)
    assert same >= 0.9 * len(SOURCES)
    alone = [ct2_model.search([source], **request)[0] for source in SOURCES[:8]]
    for a, b in zip(alone, theirs):
        assert a.outputs == b.outputs and a.scores == pytest.approx(b.scores, abs=1e-5)
        for x, y in zip(a.attention, b.attention):
            np.testing.assert_allclose(x, y, atol=1e-5)  # the first step's row too (CTranslate2 4.8's batch)


def test_the_int8_export_decodes(models, ct2):
    run, folder, _, ct2_model = models
    int8 = attnseq.load(exported(run, "int8"))
    assert int8.export["quantization"] == "int8"
    assert (run.parent / "run-int8" / "model.bin").stat().st_size < (folder / "model.bin").stat().st_size
    from attnseq.hardware import int8_in_hardware

    if not int8_in_hardware()[0]:  # MKL's int8 products without VNNI saturate: decoded in float32
        assert int8.model.compute_type == "float32" and int8.precision == "fp32"
    elif "int8_float32" in ct2.get_supported_compute_types("cpu"):  # else CTranslate2 computes in float32
        assert int8.model.compute_type.startswith("int8")
    outputs, attention = int8.translate(SOURCES, return_attention=True)
    assert len(outputs) == len(SOURCES) and all(a.shape[1] == len(s) for a, s in zip(attention, SOURCES))
    assert sum(a == b for a, b in zip(outputs, ct2_model.translate(SOURCES))) >= 0.5 * len(SOURCES)


def test_precision_int8_computes_a_float32_export_in_int8(models, ct2):
    """--precision int8 (decode.precision) with CTranslate2: its int8 compute type, whatever the
    export stores; fp32 computes as stored. The Translator's precision says which it got."""
    run, folder, _, ct2_model = models
    assert ct2_model.precision == "fp32" and not ct2_model.model.compute_type.startswith("int8")
    on_the_fly = attnseq.load(run, engine="ctranslate2", precision="int8")
    int8 = attnseq.load(folder, precision="int8")
    from attnseq.hardware import int8_in_hardware

    for translator in (on_the_fly, int8):
        if int8_in_hardware()[0] and "int8_float32" in ct2.get_supported_compute_types("cpu"):
            assert translator.model.compute_type.startswith("int8") and translator.precision == "int8"
        else:  # no int8 dot products (or CTranslate2 has no int8 here): float32, said in a warning
            assert translator.precision == "fp32"
        assert len(translator.translate(SOURCES)) == len(SOURCES)


@pytest.mark.slow
def test_what_a_source_holds_that_the_model_never_saw_is_said(models):
    ct2_model = models[3]
    unknown, blank = ct2_model.search(["ab☃c", "  "])
    assert unknown.unknown == ["☃"] and blank.blank and blank.outputs == [""]
    metrics = ct2_model.evaluate([("ab☃c", "cba"), ("", "x"), ("abc", "cba")])
    assert metrics["unknown_sources"] == [1] and metrics["blank_sources"] == [2]


@pytest.mark.slow
def test_the_page_shows_the_exports_alignment(models):
    from fastapi.testclient import TestClient

    from attnseq.serve.app import create_app, load_runs

    _, folder, _, ct2_model = models
    with TestClient(create_app(load_runs([str(folder)]))) as client:
        run = client.get("/runs").json()[0]
        assert run["engine"] == "ctranslate2" and "ctranslate2 engine" in run["description"]
        answer = client.post("/translate", json={"text": "abcde", "beam_size": 3, "n_best": 2}).json()
    expected = ct2_model.search(["abcde"], keep_attention=True, beam_size=3, n_best=2)[0]
    assert [h["output"] for h in answer["hypotheses"]] == expected.outputs
    for h, alignment in zip(answer["hypotheses"], expected.attention):
        np.testing.assert_allclose(h["attention"], alignment, atol=1e-4)
        assert h["cross_attention"] is None  # CTranslate2 returns the heads' average of the last layer only
    assert answer["encoder_attention"] is None


@pytest.mark.slow
def test_export_and_decode_from_the_command_line(models, tmp_path, capsys):
    run, _, torch_model, _ = models
    out = tmp_path / "ct2"
    assert main(["-q", "export", str(run), "--to", "ctranslate2", "--out", str(out)]) == 0
    source = write_tsv(tmp_path / "test.tsv", [(s, s[::-1]) for s in SOURCES])
    lines = tmp_path / "sources.txt"
    lines.write_text("".join(s + "\n" for s in SOURCES))
    capsys.readouterr()
    expected = "".join(line + "\n" for line in torch_model.translate(SOURCES, beam_size=1))
    for args in ([str(out)], [str(run), "--engine", "ctranslate2"]):  # the export; the run exported on the fly
        assert main(["-q", "translate", *args, "--input", str(lines), "--beam", "1"]) == 0
        assert capsys.readouterr().out == expected
    assert main(["-q", "evaluate", str(out), "--data", str(source), "--json", "--beam", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["sentences"] == len(SOURCES)

    def refused(*argv) -> str:
        assert main(list(argv)) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1, err
        return err[0]

    assert "give --overwrite to replace it" in refused("export", str(run), "--to", "ctranslate2", "--out", str(out))
    assert (
        main(
            [
                "-q",
                "export",
                str(run),
                "--to",
                "ctranslate2",
                "--out",
                str(out),
                "--overwrite",
                "--quantization",
                "int8",
            ]
        )
        == 0
    )
    assert json.loads((out / "export.json").read_text())["quantization"] == "int8"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary folder left
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    assert "not an earlier output" in refused(
        "export", str(run), "--to", "ctranslate2", "--out", str(mine), "--overwrite"
    )
    assert (mine / "notes.txt").read_text() == "keep"
    assert "holds the input" in refused(
        "export", str(run), "--to", "ctranslate2", "--out", str(run.parent), "--overwrite"
    )
    assert "holds the weights of the run's best checkpoint" in refused("translate", str(out), "--checkpoint", "last")


@pytest.mark.parametrize(
    "values, key",
    [
        ({"model": {"arch": "rnn"}}, "model.arch"),
        ({"model": {"arch": "memn2n"}}, "model.arch"),
        ({"model": {"arch": "ntm"}}, "model.arch"),
        ({"model": {"arch": "han"}}, "model.arch"),
        ({"engine": "numpy", "model": {"arch": "transformer"}}, "engine"),
        ({"model": {"arch": "transformer", "copy": True}}, "model.copy"),
        ({"data": {"input": "image"}, "model": {"arch": "transformer", "frontend": "conv"}}, "model.frontend"),
    ],
)
def test_a_run_ctranslate2_cannot_express_is_refused_by_name(values, key):
    with pytest.raises(ConfigError) as error:
        check_exportable(from_dict(values))
    assert error.value.key == key and str(error.value).startswith(f"{key}: ")


@pytest.mark.parametrize("tie", ["none", "decoder", "all"])
def test_a_transformer_of_every_tying_without_copying_is_exportable(tie):
    data = {"shared_vocab": True} if tie == "all" else {}
    check_exportable(from_dict({"data": data, "model": {"arch": "transformer", "tie_embeddings": tie}}))


def test_an_option_or_an_encoding_the_exporter_does_not_express_is_refused_by_name():
    """Every option of the Transformer is checked: one added without a place in the export (here
    a relative-position window) is refused naming it, as is a positional encoding it does not know."""
    Relative = dataclasses.make_dataclass("Relative", [("relative_window", int, 16)], bases=(TransformerConfig,))
    config = from_dict({"model": {"arch": "transformer"}})
    with pytest.raises(
        ConfigError,
        match=r"^model\.relative_window: CTranslate2's Transformer specification "
        "cannot express",
    ) as error:
        check_exportable(dataclasses.replace(config, model=Relative()))
    assert error.value.key == "model.relative_window"
    rotary = dataclasses.replace(config, model=TransformerConfig(positional=Variant("rotary")))
    with pytest.raises(ConfigError, match=r"^model\.positional: rotary") as error:
        check_exportable(rotary)
    assert error.value.key == "model.positional"


def test_an_rnn_run_is_refused_in_one_line(tmp_path, capsys):
    from attnseq.config import load_config, save_config

    run = tmp_path / "rnn"
    run.mkdir()
    save_config(load_config(ROOT / "configs" / "luong2015-general.yaml"), run / "config.yaml")  # read before weights
    assert main(["export", str(run), "--to", "ctranslate2", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "attnseq: error: model.arch: rnn: CTranslate2's Transformer "
        "specification cannot express a recurrent encoder-decoder"
    ), err
    assert not (tmp_path / "x").exists()


def test_special_tokens_keep_ctranslate2s_names_unless_the_data_spells_them():
    from attnseq.data.vocab import Vocab

    assert special_names(Vocab(["a", "b"])) == {"pad": "<blank>", "bos": "<s>", "eos": "</s>", "unk": "<unk>"}
    assert special_names(Vocab(["<s>", "<s#1>"]), Vocab(["</s>"])) == {
        "pad": "<blank>",
        "bos": "<s#2>",
        "eos": "</s#1>",
        "unk": "<unk>",
    }


BINDS = """
import torch
torch.set_num_threads(2)
torch.ones(1 << 22).add_(1)  # a parallel region: torch's OpenMP runtime has started its threads
from attnseq.ctranslate2_library import import_ctranslate2
import_ctranslate2()
"""


def gomp_parallel_of_ctranslate2(env: dict) -> str:
    """The library CTranslate2's ``GOMP_parallel`` binds to in a process that ran torch first
    (glibc's loader says, LD_DEBUG=bindings)."""
    import os
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", BINDS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "LD_DEBUG": "bindings", **env},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if "libctranslate2" in line and "`GOMP_parallel'" in line]
    assert len(lines) == 1, lines
    return lines[0].split(" to ", 1)[1].split(" [", 1)[0]


@pytest.mark.slow  # two processes that import torch (3-4 s)
@pytest.mark.skipif(__import__("platform").libc_ver()[0] != "glibc", reason="the loader's bindings are glibc's")
def test_ctranslate2_calls_its_own_openmp_runtime_beside_torch(ct2):
    """Bound to torch's libgomp, CTranslate2 decodes on 2 threads at about half its speed once
    torch has run a parallel region (ctranslate2_library.import_ctranslate2); it binds to the one it ships
    with, except where LD_PRELOAD is set."""
    own = gomp_parallel_of_ctranslate2({})
    assert "ctranslate2" in own and "torch" not in own, own
    preloaded = gomp_parallel_of_ctranslate2({"LD_PRELOAD": "libc.so.6"})
    assert "torch" in preloaded, preloaded


@pytest.mark.parametrize("beam", [1, 3])
def test_batches_decoded_at_once_give_what_one_at_a_time_gives(models, beam):
    """threads=3: the search's batches go to CTranslate2's three workers at once (inter_threads),
    each in a thread of its own; every result is the one decoding them one by one gives, in the
    sources' order, however many batches there are (fewer sources than workers: one each)."""
    from attnseq.engines.ctranslate2_engine.translator import CTranslate2Translator
    from attnseq.runs import read_run_config

    _, folder, _, one = models
    three = CTranslate2Translator.load(folder, read_run_config(folder), threads=3)
    assert (one.batches_at_once, three.batches_at_once) == (1, 3)
    for sources, size in ((SOURCES, 4), (SOURCES, 64), (SOURCES[:2], 64), (["", *SOURCES[:5], ""], 2)):
        alone = one.search(sources, keep_attention=True, beam_size=beam, batch_size=size)
        # (scores within float32's rounding: a batch split among the workers has other shapes)
        assert_same_search(alone, three.search(sources, keep_attention=True, beam_size=beam, batch_size=size))


@pytest.mark.parametrize(
    "vendor, missing, expected",
    [
        ("AuthenticAMD", None, "AVX512"),
        ("AuthenticAMD", "avx512bw", None),
        ("GenuineIntel", None, None),
        (None, None, None),
    ],
)
def test_ctranslate2_runs_avx512_on_amd_processors_that_have_it(monkeypatch, vendor, missing, expected):
    """AVX-512 for CTranslate2's kernels on an AMD processor with every AVX-512 subset CTranslate2
    needs (measured faster there); CTranslate2's own choice on one without them, on Intel's
    (not measured here) and where /proc/cpuinfo does not say."""
    from attnseq import ctranslate2_library as library

    flags = {"avx2", *library.AVX512_FLAGS} - {missing}
    monkeypatch.setattr(library, "cpuinfo", lambda field: {"vendor_id": vendor, "flags": " ".join(flags)}[field])
    monkeypatch.setattr(library, "cpu_flags", lambda: frozenset(flags))
    assert library.ctranslate2_isa() == expected


ISA = """
import os
from attnseq.ctranslate2_library import ctranslate2_isa, import_ctranslate2
ct2 = import_ctranslate2()
print(os.environ.get("CT2_FORCE_CPU_ISA"), ctranslate2_isa(), sep=",")
"""


@pytest.mark.parametrize("given", [None, "AVX2"])
def test_importing_ctranslate2_sets_its_isa_unless_the_environment_does(ct2, given):
    """import_ctranslate2 sets CT2_FORCE_CPU_ISA to ctranslate2_isa() where it is unset (before
    CTranslate2 reads it) and leaves a value the user set."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "CT2_FORCE_CPU_ISA"}
    done = subprocess.run(
        [sys.executable, "-c", ISA],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, **({"CT2_FORCE_CPU_ISA": given} if given else {})},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen, chosen = done.stdout.strip().split(",")
    assert seen == (given or str(chosen))


@settings(max_examples=200, deadline=None)
@given(
    value=st.one_of(st.sampled_from(["AVX512", "AVX2", "AVX", "GENERIC", "NEON", "avx2", "AVX2 "]), st.text()),
    flags=st.sets(
        st.sampled_from(["avx", "avx2", *__import__("attnseq.ctranslate2_library").ctranslate2_library.AVX512_FLAGS])
    ),
)
def test_an_instruction_set_ctranslate2_would_refuse_is_one_line_naming_the_variable(value, flags):
    """CT2_FORCE_CPU_ISA, whatever it holds: accepted when empty or one of CTranslate2's names
    (its spelling) that the processor has; else a UserError naming the variable and the value,
    before CTranslate2 would raise at the first search."""
    from attnseq import ctranslate2_library as library

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(library, "cpu_flags", lambda: frozenset(flags))
        patch.setattr(library.platform, "machine", lambda: "x86_64")
        has = {
            "AVX512": set(library.AVX512_FLAGS) <= flags,
            "AVX2": "avx2" in flags,
            "AVX": "avx" in flags,
            "GENERIC": True,
        }
        if not value or has.get(value):
            library.check_ctranslate2_isa(value)
        else:
            with pytest.raises(UserError, match=r"^CT2_FORCE_CPU_ISA=.*; unset it to let attnseq choose$"):
                library.check_ctranslate2_isa(value)


def test_translate_with_an_instruction_set_ctranslate2_refuses_says_so_in_one_line(
    models, monkeypatch, capsys, tmp_path
):
    """The command line's boundary: exit 2 and one line naming the variable, not CTranslate2's
    ValueError from inside the search blamed on the export."""
    _, folder, _, _ = models
    (tmp_path / "in.txt").write_text("Open the file\n", encoding="utf-8")
    monkeypatch.setenv("CT2_FORCE_CPU_ISA", "AVX9")
    assert main(["translate", str(folder), "--input", str(tmp_path / "in.txt")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "CT2_FORCE_CPU_ISA='AVX9': CTranslate2 takes AVX512" in err[0], err


def test_a_setting_of_ctranslate2s_that_breaks_the_load_is_named_beside_the_export(models, tmp_path):
    """CTranslate2 reads its own CT2_* variables; one it cannot parse (CT2_VERBOSE=abc: ValueError
    "stoi" as the export loads) is named in the one line, not left to look like damaged files.
    A process of its own: CTranslate2 reads the variable once."""
    import os
    import subprocess
    import sys

    _, folder, _, _ = models
    (tmp_path / "in.txt").write_text("Open the file\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "attnseq.cli", "translate", str(folder), "--input", str(tmp_path / "in.txt")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CT2_VERBOSE": "abc"},
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
    assert "CTranslate2 also reads CT2_VERBOSE='abc' from the environment" in lines[0]
