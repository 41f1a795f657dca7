"""Bad input gets a clear error or a correct, announced handling: byte-order marks, invalid
UTF-8, empty splits, skipped lines named, over-long lines, file permissions, quiet logs,
bfloat16 where the CPU has none."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT, TINY, bf16_lstm_capped, reverse_pairs, sets, write_reverse_dir, write_tsv
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import attnseq
from attnseq.cli import main
from attnseq.data.corpus import decode_lines, read_tsv
from attnseq.engines.torch_engine.trainer import Trainer
from attnseq.errors import DataError
from attnseq.runs import read_metrics

PRESET = str(ROOT / "configs" / "luong2015-general.yaml")
SMALL = [*TINY, "train.max_steps=3", "train.eval_max_sentences=10"]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    data = write_reverse_dir(tmp_path_factory.mktemp("data"))
    out = tmp_path_factory.mktemp("runs") / "run"
    assert main(["-q", "train", PRESET, "--data", str(data), "--out", str(out), *sets(*SMALL)]) == 0
    return out


def test_a_byte_order_mark_is_not_text(tmp_path):
    assert decode_lines("\ufeffabc\tcba\r\nx\ty\n".encode(), "f") == ["abc\tcba", "x\ty"]
    path = write_tsv(tmp_path / "bom.tsv", [])
    path.write_bytes("\ufeffabc\tcba\n".encode())
    assert read_tsv(path) == [("abc", "cba")]


def test_invalid_utf8_names_the_line():
    with pytest.raises(DataError, match="stdin:2: not valid UTF-8"):
        decode_lines(b"ok\n\xff\xfe\n", "stdin")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    char=st.sampled_from([chr(c) for c in [*range(1, 9), 11, 12, *range(14, 32), *range(127, 160)]]),
    before=st.lists(st.sampled_from(["ab\tba", "x y\tz"]), max_size=3),
)
def test_control_characters_in_training_data_are_refused_or_counted(tmp_path_factory, char, before, caplog):
    """A NUL (a binary file) is a DataError naming the file and the line; any other control
    character but tab and line ends is read as text, with one warning naming it and its lines;
    translate's inputs keep them all, reported per input as unknown."""
    folder = tmp_path_factory.mktemp("data")
    path, nul = folder / "train.tsv", folder / "nul.tsv"
    path.write_text("\n".join([*before, f"a{char}b\tc", "d\te", f"{char}\tf"]) + "\n", encoding="utf-8")
    nul.write_text("\n".join([*before, f"a{char}\x00b\tc"]) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"^{re.escape(str(nul))}:{len(before) + 1}: a NUL character"):
        read_tsv(nul)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert read_tsv(path)[len(before)] == (f"a{char}b", "c")
    n = len(before)
    assert f"{path}: 2 lines hold control characters (U+{ord(char):04X}" in caplog.text
    assert f"(lines {n + 1}, {n + 3})" in caplog.text
    assert decode_lines(f"a{char}\x00b\n".encode(), "stdin", controls=True) == [f"a{char}\x00b"]  # translate's inputs


def test_invalid_utf8_on_translate_stdin(run, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"abc\n\xff\n")))
    assert main(["translate", str(run)]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip() == "attnseq: error: stdin:2: not valid UTF-8" and captured.out == ""


def test_skipped_lines_are_located(tmp_path, caplog):
    path = tmp_path / "pairs.tsv"
    path.write_text("a\tb\n\nc\td\n\te\nf\tg\n")
    with caplog.at_level(logging.WARNING):
        assert read_tsv(path) == [("a", "b"), ("c", "d"), ("f", "g")]
    assert "skipped 2" in caplog.text and "lines 2, 4" in caplog.text


@pytest.mark.parametrize("content, words", [("", "no pairs"), ("a\tb\nc\td\n", "would be empty")])
def test_data_split_never_writes_an_empty_split(tmp_path, capsys, content, words):
    source = tmp_path / "in.tsv"
    source.write_text(content)
    assert main(["data", "split", "--input", str(source), "--out", str(tmp_path / "out")]) == 2
    assert words in capsys.readouterr().err
    assert not (tmp_path / "out" / "train.tsv").exists()


def test_small_corpora_get_a_dev_and_test_pair(tmp_path, capsys):
    source = write_tsv(tmp_path / "in.tsv", reverse_pairs(12, seed=3))
    assert main(["-q", "data", "split", "--input", str(source), "--out", str(tmp_path / "out")]) == 0
    sizes = [len((tmp_path / "out" / f"{s}.tsv").read_text().splitlines()) for s in ("train", "dev", "test")]
    assert sizes[1] >= 1 and sizes[2] >= 1 and sum(sizes) == 12


def test_overlong_training_pairs_are_dropped_and_said(tmp_path, caplog):
    data = write_reverse_dir(tmp_path / "data")
    lines = (data / "train.tsv").read_text().splitlines()
    lines.insert(4, "ab" * 400 + "\tx")  # pair 5: 800 characters
    (data / "train.tsv").write_text("\n".join(lines) + "\n")
    with caplog.at_level(logging.WARNING, logger="attnseq"):
        assert main(["train", PRESET, "--data", str(data), "--out", str(tmp_path / "run"), *sets(*SMALL)]) == 0
    assert "dropped 1 pair(s) longer than data.max_source_len=256" in caplog.text and "(pair 5)" in caplog.text


def test_overlong_inputs_are_cut_and_said(run, caplog):
    model = attnseq.load(run)
    with caplog.at_level(logging.WARNING, logger="attnseq"):
        result = model.search(["abc", "abcdef" * 10], max_source_len=20, keep_attention=True)
    assert "input 2 longer than decode.max_source_len=20" in caplog.text
    assert len(result[1].source_tokens) == 20 and result[1].attention[0].shape[1] == 20
    assert len(result[0].source_tokens) == 3


def test_files_are_written_with_the_users_umask(run, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("abc\n")
    old = os.umask(0o027)
    try:
        import importlib

        import attnseq.utils

        importlib.reload(attnseq.utils)  # FILE_MODE is read once, at import
        attnseq.utils.atomic_write_text(tmp_path / "out.txt", "x")
        assert stat.S_IMODE((tmp_path / "out.txt").stat().st_mode) == 0o640
    finally:
        os.umask(old)
        importlib.reload(attnseq.utils)
    assert main(["-q", "translate", str(run), "--input", str(source), "--output", str(tmp_path / "o.txt")]) == 0
    assert stat.S_IMODE((tmp_path / "o.txt").stat().st_mode) == 0o666 & ~old


@pytest.mark.slow  # two trainings in subprocesses
def test_logs_without_a_terminal_hold_no_progress_bar(tmp_path):
    data = write_reverse_dir(tmp_path / "data")
    command = [sys.executable, "-m", "attnseq.cli", "train", PRESET, "--data", str(data), "--out"]
    loud = subprocess.run(
        [*command, str(tmp_path / "a"), *sets(*SMALL, "train.progress=true")], capture_output=True, text=True, cwd=ROOT
    )
    assert loud.returncode == 0 and "training" in loud.stderr
    assert "\r" not in loud.stderr and "%|" not in loud.stderr  # a pipe gets plain lines, not bar frames
    quiet = subprocess.run(
        [
            sys.executable,
            "-m",
            "attnseq.cli",
            "-q",
            *command[3:],
            str(tmp_path / "b"),
            *sets(*SMALL, "train.progress=true"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert json.loads(quiet.stdout)["step"] == 3


@pytest.mark.parametrize(
    "in_hardware, rates, expected",
    [
        (False, None, "no bfloat16 in hardware"),
        (True, (150.0, 80.0), "bfloat16 would not train faster"),  # AVX-512 BF16 without AMX, measured
        (True, (150.0, 900.0), None),  # AMX: bfloat16 pays, and autocast is on
    ],
)
@pytest.mark.parametrize("precision", ["bf16", "auto"])
def test_bf16_only_where_it_is_faster_else_a_warning_and_fp32(
    tmp_path, caplog, monkeypatch, in_hardware, rates, expected, precision
):
    """train.precision bf16 autocasts where bfloat16 pays and warns where it does not; auto (the
    default) decides alike without a word."""
    import torch

    from attnseq import hardware

    capped = bf16_lstm_capped()
    if expected is None and capped:
        pytest.skip(f"{capped}; attnseq itself does not train in bf16 so")

    monkeypatch.setattr(hardware, "bf16_in_hardware", lambda device_type: in_hardware)
    monkeypatch.setattr(hardware, "cpu_matmul_rates", lambda: rates)
    autocast, enabled = torch.autocast, []

    def spy(device_type, **kwargs):
        enabled.append(kwargs.get("enabled", True))
        return autocast(device_type, **kwargs)

    monkeypatch.setattr(torch, "autocast", spy)
    if precision == "auto":  # the model's own updates measured faster in bfloat16 (see the probe's test)
        monkeypatch.setattr(Trainer, "_bf16_faster", lambda self: (True, ""))
        monkeypatch.setattr("attnseq.engines.torch_engine.trainer.PROBE_MIN_PARAMETERS", 0)
    data = write_reverse_dir(tmp_path / "data")
    with caplog.at_level(logging.WARNING, logger="attnseq"):
        summary = attnseq.fit(PRESET, tmp_path / "run", [f"data.dir={data}", *SMALL, f"train.precision={precision}"])
    assert summary["step"] == 3 and enabled
    start = next(r for r in read_metrics(tmp_path / "run") if r["type"] == "start")
    assert start["precision"] == ("bf16" if expected is None else "fp32")
    if expected is None:
        assert "train.precision" not in caplog.text and all(enabled)
    elif precision == "auto":
        assert "train.precision" not in caplog.text and not any(enabled)
    else:
        assert expected in caplog.text and "training in fp32" in caplog.text and not any(enabled)


@pytest.mark.bf16_lstm
@pytest.mark.parametrize("gain", [0.8, 1.3])
def test_auto_precision_follows_the_models_measured_updates_and_changes_nothing(tmp_path, monkeypatch, gain):
    """train.precision auto on a CPU where bfloat16 products pay times this model's forward and
    backward passes both ways (_bf16_faster) and autocasts only where they ran BF16_GAIN times as
    fast; the probe leaves the run as it was: the weights after three updates equal those of a run
    told the precision the probe chose."""
    import torch

    from attnseq import hardware
    from attnseq.config import load_config
    from attnseq.engines.torch_engine import trainer as module

    data = write_reverse_dir(tmp_path / "data")
    monkeypatch.setattr(hardware, "bf16_in_hardware", lambda device_type: True)
    monkeypatch.setattr(hardware, "cpu_matmul_rates", lambda: (150.0, 900.0))
    monkeypatch.setattr(hardware, "kernel_cap", lambda: None)
    real, ran = Trainer._bf16_faster, []

    def measured(self):
        ran.append(real(self))  # the real probe runs, for its side effects (there must be none)
        return gain >= module.BF16_GAIN, ""

    monkeypatch.setattr(Trainer, "_bf16_faster", measured)
    monkeypatch.setattr(module, "PROBE_MIN_PARAMETERS", 0)  # (a small model is probed too)
    config = load_config(PRESET, [f"data.dir={data}", *SMALL, "model.dropout=0.3"])
    auto = Trainer(config, tmp_path / "auto")
    auto.fit()
    assert len(ran) == 1 and auto.bf16 is (gain >= module.BF16_GAIN)
    told = "bf16" if auto.bf16 else "fp32"
    fixed = Trainer(
        load_config(PRESET, [f"data.dir={data}", *SMALL, "model.dropout=0.3", f"train.precision={told}"]),
        tmp_path / "told",
    )
    fixed.fit()
    for (name, a), (_, b) in zip(auto.model.state_dict().items(), fixed.model.state_dict().items()):
        assert torch.equal(a, b), name


@pytest.mark.bf16_lstm
def test_a_resumed_run_goes_on_in_the_precision_it_was_saved_in(tmp_path, monkeypatch, caplog):
    """train.precision auto decides once per run: resumed where the measured rates would decide
    otherwise, it keeps the precision its checkpoint records (so it resumes exactly); where the
    hardware has no bfloat16 at all, it goes on in float32 and says so."""
    from attnseq import hardware
    from attnseq.config import load_config

    data = write_reverse_dir(tmp_path / "data")
    config = load_config(PRESET, [f"data.dir={data}", *SMALL])
    monkeypatch.setattr(hardware, "bf16_in_hardware", lambda device_type: True)
    monkeypatch.setattr(hardware, "cpu_matmul_rates", lambda: (150.0, 900.0))
    monkeypatch.setattr(hardware, "kernel_cap", lambda: None)
    monkeypatch.setattr(Trainer, "_bf16_faster", lambda self: (True, ""))
    monkeypatch.setattr("attnseq.engines.torch_engine.trainer.PROBE_MIN_PARAMETERS", 0)
    Trainer(config, tmp_path / "run").fit()
    more = load_config(PRESET, [f"data.dir={data}", *SMALL, "train.max_steps=5"])
    monkeypatch.setattr(hardware, "cpu_matmul_rates", lambda: (150.0, 80.0))  # bf16 would no longer pay
    resumed = Trainer(more, tmp_path / "run", resume=True)
    resumed.lock.release()
    assert resumed.bf16
    monkeypatch.setattr(hardware, "bf16_in_hardware", lambda device_type: False)
    with caplog.at_level(logging.WARNING, logger="attnseq"):
        resumed = Trainer(more, tmp_path / "run", resume=True)
    resumed.lock.release()
    assert not resumed.bf16 and "no longer exactly as the uninterrupted run" in caplog.text
