"""The Python API's checking boundary: every public entry point (attnseq.load, attnseq.fit,
Translator.translate, search, evaluate) answers arbitrary Python values for its arguments with
a right answer, or a TypeError / ValueError whose message starts with the argument at fault
(``texts[2]: ...``); never another exception type."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from helpers import ROOT, TINY
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import attnseq
from attnseq.api import fit, load
from attnseq.errors import UserError
from attnseq.translator.arguments import ArgumentTypeError, ArgumentValueError

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Text a user may hand over: anything, and what attnseq must not trip on (a lone surrogate, NUL,
# a decomposed accent, blanks).
ODD = ["\ud800", "\x00", "e\u0301", "\u00e9", "\u200b", "   ", "", "\t", "abc", "cab", "ab\nc"]
texts_of = st.one_of(st.text(max_size=12), st.sampled_from(ODD))
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 20),
    st.integers(),
    st.floats(),
    texts_of,
    st.binary(max_size=6),
    st.just(object()),
    st.just(Path("no/such/run")),
)
anything = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.tuples(inner, inner, inner),
        st.dictionaries(st.text(max_size=4), inner, max_size=3),
        st.frozensets(st.integers(), max_size=3),
    ),
    max_leaves=8,
)


@pytest.fixture(scope="module")
def models(quick_runs):
    """A torch run and a NumPy-engine run (greedy only), loaded."""
    return {"torch": load(quick_runs["local_p"]), "numpy": load(quick_runs["numpy"])}


def outcome(call, arguments: tuple[str, ...]):
    """What ``call()`` returns, or the TypeError / ValueError it raised, whose message must start
    with one of ``arguments`` (an item of one: ``texts[2]``); any other exception fails the test."""
    try:
        return call()
    except (TypeError, ValueError) as err:
        assert isinstance(err, (ArgumentTypeError, ArgumentValueError)), repr(err)
        assert err.argument.split("[")[0] in arguments, str(err)
        assert re.match(re.escape(err.argument) + r"( \(decode\.\w+\))?: ", str(err)), str(err)
        return err


def right_outputs(outputs, texts) -> None:
    assert isinstance(outputs, list) and len(outputs) == len(texts)
    assert all(isinstance(o, str) for o in outputs)
    assert all(o == "" for o, t in zip(outputs, texts) if not t.strip())  # blank in, blank out


@FUZZ
@given(
    engine=st.sampled_from(["torch", "numpy"]),
    texts=st.one_of(anything, texts_of, st.lists(texts_of, max_size=4)),
    return_attention=st.one_of(st.booleans(), anything),
    beam_size=st.one_of(st.none(), st.integers(-1, 4), anything),
)
def test_translate_answers_or_names_the_argument(models, engine, texts, return_attention, beam_size):
    model = models[engine]
    result = outcome(
        lambda: model.translate(texts, return_attention=return_attention, beam_size=beam_size),
        ("texts", "return_attention", "beam_size"),
    )
    if isinstance(result, Exception):
        return
    single = isinstance(texts, str)
    outputs, attention = result if return_attention else (result, None)
    right_outputs([outputs] if single else outputs, [texts] if single else list(texts))
    if return_attention:
        for a in [attention] if single else attention:
            assert a is not None and a.ndim == 2


@FUZZ
@given(
    engine=st.sampled_from(["torch", "numpy"]),
    texts=st.one_of(anything, st.lists(texts_of, max_size=4)),
    keep_attention=st.one_of(st.booleans(), anything),
    progress=st.one_of(st.booleans(), anything),
    request=st.dictionaries(
        st.sampled_from(["beam_size", "n_best", "length_penalty", "max_len", "bogus"]),
        st.one_of(st.integers(-1, 4), st.floats(-1, 3), anything),
        max_size=3,
    ),
)
def test_search_answers_or_names_the_argument(models, engine, texts, keep_attention, progress, request):
    model = models[engine]
    result = outcome(
        lambda: model.search(texts, keep_attention=keep_attention, progress=progress, **request),
        ("texts", "keep_attention", "progress", *request),
    )
    if isinstance(result, Exception):
        return
    texts = [texts] if isinstance(texts, str) else list(texts)  # one str is one text
    right_outputs([r.outputs[0] for r in result], texts)
    for r, text in zip(result, texts):
        assert r.source == text and r.blank == (not text.strip())
        assert all(piece not in model.pipeline.src_vocab.stoi for piece in r.unknown)


@FUZZ
@given(
    engine=st.sampled_from(["torch", "numpy"]),
    pairs=st.one_of(
        anything,
        st.lists(st.tuples(texts_of, texts_of), max_size=4),
        st.lists(st.one_of(st.tuples(texts_of, texts_of), anything), max_size=3),
    ),
    beam_size=st.one_of(st.none(), st.integers(-1, 3), anything),
    bleu=st.one_of(st.booleans(), anything),
    progress=st.one_of(st.booleans(), anything),
)
def test_evaluate_answers_or_names_the_argument(models, engine, pairs, beam_size, bleu, progress):
    metrics = outcome(
        lambda: models[engine].evaluate(pairs, beam_size=beam_size, bleu=bleu, progress=progress),
        ("pairs", "beam_size", "bleu", "progress"),
    )
    if isinstance(metrics, Exception):
        return
    assert 0 <= metrics["exact_match"] <= 1 and 0 <= metrics["token_accuracy"] <= 1
    assert metrics["sentences"] == len(pairs)
    if bleu:
        assert 0 <= metrics["chrf"] <= 100 and metrics["chrf_signature"].startswith("nrefs:1|")


@FUZZ
@given(
    run=st.one_of(st.just("torch"), anything),
    checkpoint=st.one_of(st.sampled_from(["best", "last"]), anything),
    device=st.one_of(st.sampled_from(["cpu", "cuda", "cuda:0", "gpu"]), anything),
    overrides=st.one_of(
        st.lists(
            st.sampled_from(
                ["decode.beam_size=2", "decode.beam_size=0", "model.hidden_size=3", "x", "=", "decode.nope=1"]
            ),
            max_size=2,
        ),
        anything,
    ),
)
def test_load_answers_or_names_the_argument(quick_runs, run, checkpoint, device, overrides):
    run_dir = quick_runs["local_p"] if run == "torch" else run
    model = outcome(
        lambda: load(run_dir, checkpoint=checkpoint, device=device, overrides=overrides),
        ("run_dir", "checkpoint", "device", "overrides"),
    )
    if not isinstance(model, Exception):
        assert isinstance(model.translate("abc"), str)


@FUZZ
@given(
    config=st.one_of(anything, st.text(max_size=8).map(lambda s: f"/no/such/config/{s}.yaml")),
    overrides=st.one_of(st.lists(st.text(max_size=8), max_size=2), anything),
    resume=st.one_of(st.booleans(), anything),
    overwrite=st.one_of(st.booleans(), anything),
    on_eval=st.one_of(st.none(), st.just(print), anything),
)
def test_fit_refuses_what_it_cannot_train_naming_the_argument(
    tmp_path_factory, config, overrides, resume, overwrite, on_eval
):
    run_dir = tmp_path_factory.getbasetemp() / "never-trained"
    result = outcome(
        lambda: fit(config, run_dir, overrides, resume=resume, overwrite=overwrite, on_eval=on_eval),
        ("config", "run_dir", "overrides", "resume", "overwrite", "on_eval"),
    )
    assert isinstance(result, Exception)  # nothing here is a config that trains
    assert not run_dir.exists()


# -- the messages, one by one ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "call, kind, message",
    [
        (lambda m: m.translate([None]), TypeError, "texts[0]: expected a str, got NoneType"),
        (lambda m: m.translate(["ok", 3]), TypeError, "texts[1]: expected a str, got int"),
        (lambda m: m.translate(b"abc"), TypeError, "texts: expected a list of str, got bytes"),
        (lambda m: m.translate({"abc"}), TypeError, "texts: expected a list of str, got set"),
        (
            lambda m: m.translate("abc", beam_size=True),
            TypeError,
            "beam_size: expected a whole number or None, got bool",
        ),
        (
            lambda m: m.translate("abc", beam_size=2.0),
            TypeError,
            "beam_size: expected a whole number or None, got float",
        ),
        (
            lambda m: m.translate("abc", beam_size=0),
            ValueError,
            "beam_size (decode.beam_size): expected a value >= 1, got 0",
        ),
        (lambda m: m.translate("abc", return_attention="yes"), TypeError, "return_attention: expected True or False"),
        (lambda m: m.evaluate([]), ValueError, "pairs: empty; give at least one (source, reference) pair"),
        (lambda m: m.evaluate("abc"), TypeError, "pairs: expected a list of (source, reference) pairs, got str"),
        (
            lambda m: m.evaluate([("a", "b"), ("a", "b", "c")]),
            ValueError,
            "pairs[1]: expected a (source, reference) pair, got 3 items",
        ),
        (lambda m: m.evaluate([("a", "b"), "ab"]), TypeError, "pairs[1]: expected a (source, reference) pair, got str"),
        (lambda m: m.evaluate([("a", None)]), TypeError, "pairs[0][1]: expected a str, got NoneType"),
        (lambda m: m.evaluate([("a", "b")], bleu=None), TypeError, "bleu: expected True or False, got NoneType"),
        (lambda m: m.search(["a"], beam=3), TypeError, "beam: not a decode setting; a request takes beam_size"),
        (
            lambda m: m.search(["a"], beam_size=2, n_best=3),
            ValueError,
            "n_best (decode.n_best): decode.n_best (3) must not exceed",
        ),
    ],
)
def test_wrong_arguments_are_named(models, call, kind, message):
    with pytest.raises(kind) as err:
        call(models["torch"])
    assert str(err.value).startswith(message), str(err.value)
    assert isinstance(err.value, UserError)  # the command line prints it as one line


def test_load_and_fit_name_their_arguments(quick_runs, tmp_path):
    with pytest.raises(TypeError, match=r"^run_dir: expected a path \(str or os.PathLike\), got NoneType"):
        attnseq.load(None)
    with pytest.raises(ValueError, match=r"^run_dir: .*: not a run folder \(no config.yaml\)"):
        load(tmp_path)
    with pytest.raises(ValueError, match="^run_dir: a path cannot hold a NUL character"):
        load("a\x00b")
    with pytest.raises(ValueError, match="^checkpoint: expected one of best, last, got 'first'"):
        load(quick_runs["local_p"], checkpoint="first")
    with pytest.raises(ValueError, match="^device: expected 'cpu', 'cuda' or 'cuda:N', got 'gpu'"):
        load(quick_runs["local_p"], device="gpu")
    with pytest.raises(TypeError, match="^overrides: expected a list of str, got str"):
        load(quick_runs["local_p"], overrides="decode.beam_size=2")
    with pytest.raises(ValueError, match="^overrides: model.hidden_size: fixed when the model was trained"):
        load(quick_runs["local_p"], overrides=["model.hidden_size=3"])
    assert load(quick_runs["local_p"], overrides=["decode.beam_size=2"]).config.decode.beam_size == 2
    with pytest.raises(ValueError, match="^config: .*missing.yaml: cannot read config"):
        fit(tmp_path / "missing.yaml", tmp_path / "run")
    with pytest.raises(ValueError, match="^resume: resume and overwrite: choose one"):
        fit(tmp_path / "missing.yaml", tmp_path / "run", resume=True, overwrite=True)
    with pytest.raises(TypeError, match="^on_eval: expected a function"):
        fit(tmp_path / "missing.yaml", tmp_path / "run", on_eval=3)
    with pytest.raises(ValueError, match=r"^config: model.hidden_size: expected a value >= 1, got 0"):
        fit(ROOT / "configs" / "book-attention.yaml", tmp_path / "run", ["model.hidden_size=0"])
    assert not (tmp_path / "run").exists()


def test_evaluate_scores_a_translation_right_without_nan(models):
    metrics = models["torch"].evaluate([("abc", "cba"), ("  ", "")])
    assert all(not (isinstance(v, float) and math.isnan(v)) for v in metrics.values())
    assert metrics["blank_sources"] == [2]


def test_fit_applies_overrides_to_a_config_object_as_to_a_file(reverse_data, tmp_path):
    """attnseq.fit(Config, run, overrides): the overrides change the Config as they change a YAML
    file's settings (they were ignored for a Config)."""
    from attnseq.config import load_config

    config = load_config(None, [f"data.dir={reverse_data}", *TINY, "train.threads=1"])
    summary = attnseq.fit(config, tmp_path / "run", ["train.max_steps=3", "train.eval_every=3"])
    assert summary["step"] == 3


@pytest.mark.parametrize("engine", ["torch", "numpy"])
def test_an_empty_best_output_is_marked_and_said_never_silent(models, engine, monkeypatch):
    """Where the model's best output for a source that is not blank is the empty string (eos
    first), the result says so (Translation.empty), evaluate's metrics list it (empty_outputs),
    the command line warns with its number, and the server's answer carries ``empty``; a blank
    source is not such a case."""
    from attnseq.decoding.common import Hypothesis
    from attnseq.serve.payload import translation_payload
    from attnseq.translator.base import InputReport

    model = models[engine]
    decode = type(model).decode_sources

    c = model.pipeline.tgt_vocab.encode(["c"])

    def eos_first_for_the_second(self, sources, settings, keep_attention):  # (a two-step model says anything)
        decode(self, sources, settings, keep_attention)
        return [[Hypothesis([] if list(s.tokens) == list("abd") else c, -0.5)] for s in sources]

    monkeypatch.setattr(type(model), "decode_sources", eos_first_for_the_second)
    results = model.search(["abc", "abd", "  "])
    assert [r.empty for r in results] == [False, True, False] and results[1].outputs == [""]
    report = InputReport.of(results)
    assert report.empty_outputs == [2]
    assert (
        report.warnings("line")[-1]
        == "1 of 3 lines (2) get an empty output: the model's best translation is the empty string"
    )
    assert model.evaluate([("abc", "cba"), ("abd", "dba")])["empty_outputs"] == [2]
    assert translation_payload("run", model, results[1], with_attention=False)["empty"] is True
    assert translation_payload("run", model, results[0], with_attention=False)["empty"] is False
