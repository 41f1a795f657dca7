"""``attnseq plot memory``: each memory architecture's picture from a (barely) trained run, and a
one-line error for a run that has none."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ROOT, write_reverse_dir

from attnseq.cli import main

RUN = [
    "--set",
    "train.max_steps=2",
    "--set",
    "train.progress=false",
    "--set",
    "train.log_every=0",
    "--set",
    "train.threads=1",
]
TEXTS = {
    "memn2n": (
        "stories",
        ["--kinds", "single,two", "--train", "20", "--dev", "4", "--test", "4"],
        [],
        "mary went to the kitchen . mary got the milk . mary went to the office . where is the milk ?",
    ),
    "ntm-copy": (
        "copy",
        ["--train", "20", "--dev", "4", "--test", "4", "--test-lengths", ""],
        ["--set", "model.hidden_size=8"],
        "01101001 11110000 00001111",
    ),
    "han": (
        "documents",
        ["--train", "20", "--dev", "4", "--test", "4"],
        ["--set", "model.hidden_size=8"],
        "we sat near the bar . the soup was not delicious . my friend ordered the fish .",
    ),
}


@pytest.mark.parametrize("preset", TEXTS)
def test_plot_memory_draws_the_architectures_picture(preset, tmp_path, capsys):
    source, options, sizes, text = TEXTS[preset]
    data, run, out = tmp_path / "data", tmp_path / "run", tmp_path / "picture.png"
    assert main(["-q", "data", source, "--out", str(data), *options]) == 0
    assert (
        main(
            [
                "-q",
                "train",
                str(ROOT / "configs" / f"{preset}.yaml"),
                "--data",
                str(data),
                "--out",
                str(run),
                "--set",
                "model.embed_size=8",
                *sizes,
                *RUN,
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["plot", "memory", str(run), "--text", text, "--out", str(out)]) == 0
    assert Path(capsys.readouterr().out.strip()) == out
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 5000
    assert main(["plot", "attention", str(run), "--text", text, "--out", str(tmp_path / "a.png")]) == 0


def test_plot_memory_of_another_architecture_is_a_one_line_error(tmp_path, capsys):
    data, run = write_reverse_dir(tmp_path / "data"), tmp_path / "run"
    assert (
        main(
            [
                "-q",
                "train",
                str(ROOT / "configs" / "luong2015-dot.yaml"),
                "--data",
                str(data),
                "--out",
                str(run),
                "--set",
                "model.hidden_size=8",
                *RUN,
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["plot", "memory", str(run), "--text", "abc"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "memn2n, ntm, han" in err
