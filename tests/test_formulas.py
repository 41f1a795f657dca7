"""attnseq data formulas (data/formulas.py) and reading attention over an image
(viz/image_attention.py): the files, their determinism, the left-to-right check, the strip."""

from __future__ import annotations

import numpy as np
import pytest

from attnseq.cli import main
from attnseq.data.corpora.formulas import MAX_TOKENS, formula_files, latex, random_formula
from attnseq.eval.alignment import reach
from attnseq.viz.image_attention import argmax_columns, monotonic_share, moves_left_to_right, overlay


def test_formulas_have_up_to_20_tokens_and_balanced_braces():
    rng = np.random.default_rng(0)
    for _ in range(300):
        tokens = random_formula(rng)
        assert 1 <= len(tokens) <= MAX_TOKENS
        assert tokens.count("{") == tokens.count("}") and tokens.count("(") == tokens.count(")")
    assert latex(["x", "^", "{", "2", "}", "+", r"\alpha", "b"]) == r"$x^{2}+\alpha b$"


def test_the_files_depend_on_the_seed_alone_and_test_formulas_are_never_trained_on():
    counts = {"train": 6, "dev": 3, "test": 3}
    files = formula_files(counts, seed=3)
    assert files == formula_files(counts, seed=3, workers=1)
    assert files != formula_files(counts, seed=4)
    lines = {split: files[f"{split}.tsv"].splitlines() for split in counts}
    assert {split: len(v) for split, v in lines.items()} == counts
    targets = {split: [line.split("\t")[1] for line in v] for split, v in lines.items()}
    assert not set(targets["test"]) & (set(targets["train"]) | set(targets["dev"]))
    name = lines["test"][0].split("\t")[0]
    assert name == "images/test/000000.png" and files[name][:8] == b"\x89PNG\r\n\x1a\n"


def test_data_formulas_writes_the_folder_through_the_writer(tmp_path, capsys):
    out = tmp_path / "f"
    assert (
        main(["data", "formulas", "--out", str(out), "--train", "3", "--dev", "1", "--test", "1", "--workers", "1"])
        == 0
    )
    assert (out / "images" / "train" / "000002.png").is_file() and len((out / "dev.tsv").read_text().splitlines()) == 1
    assert main(["data", "formulas", "--out", str(out), "--train", "3", "--dev", "1", "--test", "1"]) == 2
    assert "holds files already" in capsys.readouterr().err


def test_argmax_columns_the_left_to_right_check_and_the_reach():
    grid = (2, 4)
    steps = np.zeros((3, 8))
    steps[0, 2 * 1], steps[1, 2 * 2 + 1], steps[2, 2 * 3] = 1, 1, 1  # columns 1, 2 (second row), 3
    assert argmax_columns(steps, grid).tolist() == [1, 2, 3]
    assert moves_left_to_right([1, 2, 3]) and moves_left_to_right([2, 1, 3], slack=1)
    assert not moves_left_to_right([3, 1, 4], slack=1) and not moves_left_to_right([2, 1], slack=0)

    class Result:  # what monotonic_share reads of a Translation
        def __init__(self, attention, tokens):
            self.attention, self.output_tokens = [attention], [tokens]
            self.shape = type("Shape", (), {"grid": grid})

    backwards = steps[::-1].copy()
    assert monotonic_share([Result(steps, ["a", "b"]), Result(backwards, ["a", "b", "c"])], slack=0) == 0.5
    # the end step is left out: a last row that looks back does not count
    assert monotonic_share([Result(np.vstack([steps[:2], steps[:1]]), ["a", "b"])], slack=0) == 1.0
    # markup that draws nothing is left out where asked: a brace that looks ahead
    ahead = steps[[0, 2, 1]]  # columns 1, 3, 2
    assert monotonic_share([Result(ahead, ["a", "{", "b"])], slack=0) == 0.0
    assert monotonic_share([Result(ahead, ["a", "{", "b"])], slack=0, skip=("{",)) == 1.0
    # how far the attention gets: the last token's column over the grid's last column (3 of 4 columns)
    assert reach([Result(steps, ["a", "b", "c"])]) == 1.0
    assert reach([Result(steps, ["a", "b"]), Result(steps[:1], ["a"])]) == pytest.approx((2 / 3 + 1 / 3) / 2)
    assert reach([Result(steps[:1], [])]) == 0.0  # no token: nothing to say


def test_overlay_spreads_each_cell_over_its_pixels():
    weights = np.array([[0.0, 1.0], [0.5, 0.0]])
    spread = overlay(weights, (4, 6))
    assert spread.shape == (4, 6)
    assert spread[0, :3].max() == 0 and spread[0, 3:].min() == 1 and spread[2:, :3].min() == 0.5


@pytest.fixture(scope="module")
def image_run(quick_runs):
    return quick_runs["image"]


@pytest.mark.slow
def test_plot_attention_draws_a_strip_of_an_image(image_run, tmp_path, capsys):
    from helpers import bar_image
    from PIL import Image

    path = tmp_path / "b.png"
    Image.fromarray(bar_image(["B", "s"])).save(path)
    out = tmp_path / "strip.png"
    assert main(["plot", "attention", str(image_run), "--file", str(path), "--out", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
    assert (
        main(
            ["plot", "attention", str(image_run), "--file", str(path), "--text", "x", "--out", str(tmp_path / "x.png")]
        )
        == 2
    )
    assert "--file and --text" in capsys.readouterr().err
