"""attnseq compare: several configs trained under one budget, evaluated and tabulated."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from helpers import ROOT

import attnseq
from attnseq.cli import main
from attnseq.compare import COLUMNS, markdown_table, run_compare, run_names
from attnseq.data.corpus import read_tsv
from attnseq.data.splits import make_date_splits, write_split_dir
from attnseq.errors import UserError
from attnseq.runs import read_metrics

CONFIGS = ROOT / "configs"
SMALL = [
    "model.embed_size=8",
    "model.hidden_size=16",
    "train.max_steps=3",
    "train.batch_size=16",
    "train.progress=false",
    "train.log_every=0",
    "train.threads=1",
    "train.eval_max_sentences=8",
]


@pytest.fixture
def dates(tmp_path) -> Path:
    folder = tmp_path / "dates"
    write_split_dir(folder, *make_date_splits(96, 10, 12, seed=0))
    return folder


def test_two_configs_are_trained_evaluated_and_tabulated(dates, tmp_path, capsys):
    configs = [CONFIGS / "luong2015-dot.yaml", CONFIGS / "cho2014.yaml"]
    out = tmp_path / "compare"
    rows = run_compare([str(c) for c in configs], dates, 0.5, out, overrides=SMALL)
    printed = capsys.readouterr().out
    assert [row["config"] for row in rows] == ["luong2015-dot", "cho2014"]
    for row in rows:
        assert row["parameters"] > 0 and row["steps"] == 3 and row["tokens_per_second"] > 0
        model = attnseq.load(out / row["config"])  # each run keeps its folder; the best checkpoint
        assert read_metrics(out / row["config"])[0]["parameters"] == row["parameters"]
        for split in ("dev", "test"):  # the table's scores are the run's, evaluated as users do
            metrics = model.evaluate(read_tsv(dates / f"{split}.tsv"))
            assert row[f"{split}_exact_match"] == metrics["exact_match"]
            assert "bleu" not in metrics and row[f"{split}_bleu"] is None  # one-word dates: BLEU means nothing
    assert rows[0]["parameters"] != rows[1]["parameters"]
    with open(out / "comparison.csv", encoding="utf-8") as fh:
        table = list(csv.DictReader(fh))
    assert [r["config"] for r in table] == ["luong2015-dot", "cho2014"]
    assert list(table[0]) == list(COLUMNS)
    assert int(table[1]["parameters"]) == rows[1]["parameters"]
    markdown = (out / "comparison.md").read_text(encoding="utf-8")
    assert "| config | parameters |" in markdown and "| cho2014 |" in markdown
    assert "| luong2015-dot |" in printed
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # each run's dev score by minutes
    both = [str(out / row["config"]) for row in rows]
    assert main(["-q", "plot", "curve", *both, "--metric", "exact_match", "--out", str(tmp_path / "c.png")]) == 0
    assert (tmp_path / "c.png").exists()
    assert main(["-q", "plot", "curve", *both, "--metric", "bleu"]) == 2  # one-word dates have no BLEU
    assert "has no dev bleu" in capsys.readouterr().err
    assert main(["-q", "plot", "attention", *both, "--text", "x"]) == 2  # one run only


def test_a_missing_test_split_leaves_its_columns_empty(dates, tmp_path, capsys):
    (dates / "test.tsv").unlink()
    rows = run_compare([str(CONFIGS / "book-baseline.yaml")], dates, 0.5, tmp_path / "c", overrides=SMALL)
    assert rows[0]["test_exact_match"] is None and rows[0]["dev_exact_match"] is not None
    assert "| - |" in (tmp_path / "c" / "comparison.md").read_text(encoding="utf-8")


def test_repeated_config_names_get_their_own_folders():
    assert run_names(["a/x.yaml", "b/x.yaml", "y.yaml", "x.yaml"]) == ["x", "x-2", "y", "x-3"]


def test_table_formats_percentages_and_bleu():
    text = markdown_table([{"config": "c", "parameters": 12345, "dev_exact_match": 0.5, "dev_bleu": 12.345}])
    assert "| c | 12,345 |" in text and "50.00%" in text and "12.3" in text


def test_bad_arguments_are_user_errors(dates, tmp_path):
    with pytest.raises(UserError, match="train.tsv"):
        run_compare([str(CONFIGS / "cho2014.yaml")], tmp_path / "nowhere", 1.0, tmp_path / "c")
    with pytest.raises(UserError, match="budget"):
        run_compare([str(CONFIGS / "cho2014.yaml")], dates, 0, tmp_path / "c")


def test_a_diverging_config_is_a_row_that_says_so_and_the_others_still_train(reverse_data, tmp_path, caplog):
    """A config whose loss diverges after its first evaluation (a rate of 1, no clipping: as in
    test_runs) is scored from that last good checkpoint and the table says where it diverged; the
    config after it is trained as if nothing happened."""
    import yaml
    from helpers import PRESET, SMALL

    hot = yaml.safe_load(Path(PRESET).read_text(encoding="utf-8"))
    hot.setdefault("train", {}).update(lr=1.0, clip_norm=0)
    (tmp_path / "hot.yaml").write_text(yaml.safe_dump(hot), encoding="utf-8")
    settings = [*SMALL, "train.eval_every=1", "train.max_steps=60", "train.clip_norm=0"]
    out = tmp_path / "c"
    rows = run_compare([str(tmp_path / "hot.yaml"), PRESET], reverse_data, 0.5, out, overrides=settings)
    assert "training diverged at step" in caplog.text  # a warning, not the end of the command
    hot_row, calm = rows
    assert hot_row["diverged"] > hot_row["steps"] == hot_row["best_step"] == 1  # its last good checkpoint
    assert hot_row["dev_exact_match"] is not None and hot_row["test_exact_match"] is not None
    last = read_metrics(out / "hot")[-1]  # the log says so too
    assert last["type"] == "diverged" and last["step"] == hot_row["diverged"] and "dev loss" in last["what"]
    assert calm["diverged"] is None and calm["steps"] == 60
    with open(out / "comparison.csv", encoding="utf-8") as fh:
        table = list(csv.DictReader(fh))
    assert table[0]["diverged"] == str(hot_row["diverged"]) and table[1]["diverged"] == ""
