"""A run folder whose files were damaged (cut short, bytes changed, emptied, replaced by other
bytes): each command that reads a run (translate, evaluate, plot curve) ends in a result or in
one clear line, never a traceback. The files damaged are the run's own, listed when the test
runs, so a file runs gain later is damaged too."""

from __future__ import annotations

import os
import shutil

import pytest
from helpers import write_tsv
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_properties_cli import assert_one_clear_line, run_main

KINDS = ["rnn", "transformer", "numpy", "copy"]


@pytest.fixture(scope="module")
def kept(quick_runs, tmp_path_factory):
    """An RNN quick run that kept the weights of its last 3 evaluations (train.keep_checkpoints)."""
    from helpers import train_quick

    quick_runs["rnn"]  # (writes the reverse data)
    return train_quick(
        "rnn",
        quick_runs.data,
        tmp_path_factory.mktemp("kept") / "run",
        steps=4,
        extra=("train.keep_checkpoints=3", "train.eval_every=1"),
    )


@pytest.fixture(scope="module")
def exported(quick_runs, tmp_path_factory):
    """The Transformer quick run exported to CTranslate2 (None without the optional package)."""
    from attnseq.ctranslate2_library import import_ctranslate2

    try:
        import_ctranslate2()
    except ImportError:
        return None
    from attnseq.export.ctranslate2_spec import export_ctranslate2

    return export_ctranslate2(quick_runs["transformer"], tmp_path_factory.mktemp("export") / "ct2", "float32")


@st.composite
def damaged(draw, data: bytes) -> bytes:
    """``data`` cut short, with bytes changed, emptied, or other bytes altogether."""
    how = draw(st.sampled_from(["cut", "change", "empty", "other"]))
    if how == "empty" or not data:
        return b""
    if how == "other":
        return draw(st.binary(max_size=200))
    if how == "cut":
        return data[: draw(st.integers(0, len(data) - 1))]
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        out[draw(st.integers(0, len(out) - 1))] = draw(st.integers(0, 255))
    return bytes(out)


@pytest.mark.slow  # 30 examples of three commands (8-10 s; ATTNSEQ_EXAMPLES=400 searches longer)
@settings(
    max_examples=int(os.environ.get("ATTNSEQ_EXAMPLES", 30)),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_a_damaged_run_is_read_or_named_in_one_line(quick_runs, kept, exported, tmp_path_factory, data):
    kind = data.draw(st.sampled_from(KINDS + ["kept"] + (["ctranslate2"] if exported else [])), label="kind")
    trained = {"ctranslate2": exported, "kept": kept}.get(kind) or quick_runs[kind]
    folder = tmp_path_factory.mktemp("damaged")
    run = folder / "run"
    shutil.copytree(trained, run)
    files = sorted(str(p.relative_to(run)) for p in run.rglob("*") if p.is_file())
    name = data.draw(st.sampled_from(files), label="file")
    (run / name).write_bytes(data.draw(damaged((run / name).read_bytes()), label="bytes"))
    pairs = write_tsv(folder / "test.tsv", [("a b c", "c b a"), ("d e", "e d")])
    (folder / "in.txt").write_text("a b c\nd e f\n", encoding="utf-8")
    for argv in (
        ["translate", str(run), "--input", str(folder / "in.txt")],
        ["evaluate", str(run), "--data", str(pairs)],
        ["plot", "curve", str(run), "--out", str(folder / "curve.png")],
        *([["average", str(run), "--last", "2", "--out", str(folder / "mean")]] if kind == "kept" else []),
    ):
        status, _, err = run_main(argv, folder)
        assert_one_clear_line(status, err, [name, *argv])


def test_a_config_with_a_character_yaml_refuses_names_its_line(tmp_path):
    """Found by the test above: PyYAML refuses a NUL when its loader is made, before parsing."""
    from attnseq.config import load_config
    from attnseq.errors import ConfigError

    path = tmp_path / "config.yaml"
    path.write_bytes(b"data:\n  tokenizer: char\nmodel:\n  hidden\x00_size: 8\n")
    with pytest.raises(ConfigError, match=r"config\.yaml: line 4 invalid YAML \(a character YAML does not allow\)$"):
        load_config(path)


@pytest.mark.slow  # 20 resumed runs of a step each (about 10 s; ATTNSEQ_EXAMPLES=500 searches longer)
@settings(
    max_examples=int(os.environ.get("ATTNSEQ_EXAMPLES", 20)),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_resuming_a_damaged_run_trains_on_or_names_it_in_one_line(quick_runs, tmp_path_factory, data):
    """``train --resume`` on a run with one of its files damaged: a run trained on (one more
    update), or one clear line (the checkpoint's training state, an optimiser state that only
    fails when it first steps, a metrics record without its type, ...)."""
    from helpers import QUICK_RUNS, ROOT, sets

    kind = data.draw(st.sampled_from(["rnn", "transformer", "numpy"]), label="kind")
    folder = tmp_path_factory.mktemp("resumed")
    run = folder / "run"
    shutil.copytree(quick_runs[kind], run)
    files = sorted(str(p.relative_to(run)) for p in run.rglob("*") if p.is_file())
    name = data.draw(st.sampled_from(files), label="file")
    (run / name).write_bytes(data.draw(damaged((run / name).read_bytes()), label="bytes"))
    config, settings_ = QUICK_RUNS[kind]
    argv = [
        "-q",
        "train",
        str(ROOT / "configs" / config),
        "--data",
        str(quick_runs.data),
        "--out",
        str(run),
        "--resume",
        *sets(
            *settings_, "train.max_steps=3", "train.progress=false", "train.log_every=0", "train.eval_max_sentences=10"
        ),
    ]
    status, _, err = run_main(argv, folder)
    assert_one_clear_line(status, err, [name, *argv])
