"""``attnseq plot attention``: a hypothesis of the beam, a Transformer layer and head, a grid of
heads, the encoder's self-attention, and one self-contained HTML page for a file of inputs."""

from __future__ import annotations

import json
import re

import pytest

from attnseq.cli import main

PNG = b"\x89PNG\r\n\x1a\n"


def plot(capsys, *args) -> tuple[int, str, str]:
    status = main(["-q", "plot", "attention", *map(str, args)])
    captured = capsys.readouterr()
    return status, captured.out.strip(), captured.err.strip()


def image_size(path):
    from matplotlib.image import imread

    return imread(path).shape[:2]


def test_a_hypothesis_layer_and_head(quick_runs, tmp_path, capsys):
    tf = quick_runs["transformer"]
    outputs = {}
    for name, args in {
        "best": [],
        "second": ["--beam", "3", "--hyp", "2"],
        "head": ["--layer", "1", "--head", "3"],
        "encoder": ["--encoder", "--head", "2"],
        "grid": ["--head", "all"],
        "every": ["--layer", "all", "--head", "all"],
    }.items():
        status, out, err = plot(capsys, tf, "--text", "abcdef", "--out", tmp_path / f"{name}.png", *args)
        assert status == 0, err
        assert out == str(tmp_path / f"{name}.png")
        outputs[name] = (tmp_path / f"{name}.png").read_bytes()
        assert outputs[name].startswith(PNG)
    assert len(set(outputs.values())) == len(outputs)  # six different pictures
    # a grid of 4 heads is wider than one heatmap; every layer's grid is taller still
    (h1, w1), (h4, w4), (h8, w8) = (image_size(tmp_path / f"{n}.png") for n in ("head", "grid", "every"))
    assert w4 > 2 * w1 and h8 > 1.5 * h4


def test_the_local_window_and_svg_output(quick_runs, tmp_path, capsys):
    status, _, err = plot(capsys, quick_runs["local_p"], "--text", "abcabc", "--out", tmp_path / "local.svg")
    assert status == 0, err
    svg = (tmp_path / "local.svg").read_text()
    assert svg.count("#ff4d4d") >= 2  # the window outlined on the rows


@pytest.mark.parametrize(
    "kind, args, words",
    [
        ("transformer", ["--layer", "3"], ["--layer 3", "has 2"]),
        ("transformer", ["--head", "0"], ["--head", "from 1"]),
        ("transformer", ["--layer", "avg"], ["--layer", "'avg' is for --head"]),
        ("transformer", ["--beam", "2", "--hyp", "3"], ["--hyp 3", "beam of 2"]),
        ("local_p", ["--head", "2"], ["--layer/--head", "no layers or heads"]),
        ("local_p", ["--encoder"], ["--encoder", "no self-attention"]),
        ("numpy", ["--beam", "3"], ["decode.beam_size", "torch-only"]),
        ("transformer", ["--input", "nofile.txt"], ["--input", "--html"]),
    ],
)
def test_wrong_choices_are_one_line_errors(quick_runs, kind, args, words, tmp_path, capsys):
    status, _, err = plot(capsys, quick_runs[kind], "--text", "abc", *args, "--out", tmp_path / "x.png")
    assert status == 2
    assert len(err.splitlines()) == 1 and all(w in err for w in words), err
    assert not (tmp_path / "x.png").exists()


def test_html_page_of_a_file(quick_runs, tmp_path, capsys):
    (tmp_path / "in.txt").write_text("abc\n\nfedcba\ncafe</script><!--\n")
    status, out, err = plot(
        capsys,
        quick_runs["transformer"],
        "--input",
        tmp_path / "in.txt",
        "--beam",
        "2",
        "--html",
        tmp_path / "page.html",
    )
    assert status == 0, err
    page = (tmp_path / "page.html").read_text()
    assert out == str(tmp_path / "page.html")
    assert "<script src=" not in page and '<link rel="stylesheet"' not in page  # nothing to fetch
    assert "const Heatmap" in page and "const Panel" in page
    data = json.loads(
        re.search(r'<script type="application/json" id="attnseq-data">(.*?)</script>', page, re.S).group(1)
    )
    # blank lines left out; markup in the data stays data
    assert [item["source"] for item in data["items"]] == ["abc", "fedcba", "cafe</script><!--"]
    assert page.count("</script>") == page.count("<script")
    first = data["items"][0]
    assert len(first["hypotheses"]) == 2
    assert len(first["hypotheses"][0]["cross_attention"]) == 2 and len(first["encoder_attention"]) == 2
    assert data["run"]["arch"] == "transformer"
