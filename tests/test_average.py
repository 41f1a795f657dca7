"""Checkpoint averaging: train.keep_checkpoints keeps the weights of a run's last N evaluations
(pruned as it goes, and after a resume as if never interrupted), and ``attnseq average`` makes a
new run of their mean (identical checkpoints give the very same weights, two known ones their
mean), refusing in one line what it cannot do."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from helpers import PRESET, SMALL, sets, weights

import attnseq
from attnseq.average import AVERAGED, average_weights
from attnseq.cli import main
from attnseq.config import load_config
from attnseq.errors import ConfigError, UserError
from attnseq.runs import (
    kept_checkpoint_path,
    kept_checkpoints,
    prune_kept_checkpoints,
    read_checkpoint,
    write_checkpoint,
)


def arrays(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "w": rng.standard_normal((3, 4)).astype(np.float32),
        "b": rng.standard_normal(5),  # float64
        "count": rng.integers(0, 9, (2,)),
        "flag": np.array([True, False]),
    }


def test_averaging_identical_checkpoints_gives_the_same_weights_bit_for_bit():
    same = arrays(1)
    averaged = average_weights([(f"c{i}", {k: v.copy() for k, v in same.items()}) for i in range(5)])
    for name, value in same.items():
        assert averaged[name].dtype == value.dtype and averaged[name].tobytes() == value.tobytes(), name


def test_averaging_two_known_checkpoints_gives_their_mean():
    a = {"w": np.array([1.0, 2.0, -3.0], np.float32), "count": np.array([1, 4]), "flag": np.array([True, True])}
    b = {"w": np.array([2.0, 5.0, 3.0], np.float32), "count": np.array([2, 4]), "flag": np.array([False, True])}
    averaged = average_weights([("a", a), ("b", b)])
    assert averaged["w"].tolist() == [1.5, 3.5, 0.0] and averaged["w"].dtype == np.float32
    assert averaged["count"].tolist() == [1, 4]  # integers: the floor of the mean, as fairseq's
    assert averaged["flag"].tolist() == [False, True]
    c = {**b, "w": np.array([0.1, 0.2, 0.3], np.float32)}
    mean = (a["w"].astype(np.float64) + b["w"] + c["w"]) / 3
    np.testing.assert_allclose(average_weights([("a", a), ("b", b), ("c", c)])["w"], mean, rtol=1e-7)
    with pytest.raises(UserError, match=r"^b: holds other weights than a \(extra\)"):
        average_weights([("a", a), ("b", {**b, "extra": np.zeros(1)})])
    with pytest.raises(UserError, match=r"^b: w is float32 \(2,\), a holds float32 \(3,\)"):
        average_weights([("a", a), ("b", {**b, "w": np.zeros(2, np.float32)})])


def test_keep_checkpoints_is_a_count_named_when_wrong():
    assert load_config(None, ["train.keep_checkpoints=5"]).train.keep_checkpoints == 5
    assert load_config(None, []).train.keep_checkpoints == 0
    for bad in ("-1", "true", "2.5", "five"):
        with pytest.raises(ConfigError) as error:
            load_config(None, [f"train.keep_checkpoints={bad}"])
        assert error.value.key == "train.keep_checkpoints" and str(error.value).startswith("train.keep_checkpoints: ")


def test_pruning_keeps_the_newest_and_drops_those_after_a_resumed_step(tmp_path):
    for step in (2, 4, 6, 8, 10):
        path = kept_checkpoint_path(tmp_path, step)
        path.parent.mkdir(exist_ok=True)
        write_checkpoint(path, {"w": np.full(2, step, np.float32)})
    (tmp_path / "checkpoints" / "notes.txt").write_text("mine")
    prune_kept_checkpoints(tmp_path, None, after=7)  # resumed at step 7: 8 and 10 were never saved with state
    assert [s for s, _ in kept_checkpoints(tmp_path)] == [2, 4, 6]
    prune_kept_checkpoints(tmp_path, 2)
    assert [s for s, _ in kept_checkpoints(tmp_path)] == [4, 6]
    assert (tmp_path / "checkpoints" / "notes.txt").read_text() == "mine"


def fake_run(folder, steps: list[int]):
    """A run folder as training leaves it, its kept checkpoints holding ``w`` = the step."""
    folder.mkdir()
    (folder / "config.yaml").write_text("train: {keep_checkpoints: 3}\n")
    (folder / "vocab.source.json").write_text('["a"]')
    (folder / "vocab.target.json").write_text('["b"]')
    (folder / "metrics.jsonl").write_text("")
    write_checkpoint(folder / "best.safetensors", {"w": np.zeros(2, np.float32)})
    for step in steps:
        path = kept_checkpoint_path(folder, step)
        path.parent.mkdir(exist_ok=True)
        write_checkpoint(path, {"w": np.full(2, step, np.float32)}, metadata={"engine": "torch"})
    return folder


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("attnseq: error: "), err
    return err[0]


def test_average_writes_a_run_of_the_mean_and_refuses_in_one_line(tmp_path, capsys):
    run, out = fake_run(tmp_path / "run", [3, 6, 9, 12]), tmp_path / "avg"
    assert main(["-q", "average", str(run), "--last", "3", "--out", str(out)]) == 0
    assert json.loads(capsys.readouterr().out) == {"run": str(run), "out": str(out), "steps": [6, 9, 12]}
    assert sorted(p.name for p in out.iterdir()) == [
        "best.safetensors",
        "config.yaml",
        "vocab.source.json",
        "vocab.target.json",
    ]
    averaged, metadata = read_checkpoint(out / "best.safetensors")
    assert averaged["w"].tolist() == [9.0, 9.0] and metadata["engine"] == "torch"
    assert json.loads(metadata[AVERAGED]) == {"run": str(run), "steps": [6, 9, 12]}
    for argv, words in [
        (
            ["average", str(run), "--last", "5", "--out", str(tmp_path / "new")],
            f"{run}: keeps 4 checkpoint(s), fewer than --last 5; average at most 4, or train with "
            "train.keep_checkpoints=5 (or more)",
        ),
        (
            ["average", str(fake_run(tmp_path / "none", [])), "--last", "2", "--out", str(tmp_path / "new")],
            "keeps no checkpoints, fewer than --last 2",
        ),
        (["average", str(run), "--last", "2", "--out", str(out)], f"{out}: holds files already"),
        (["average", str(run), "--last", "2", "--out", str(run), "--overwrite"], "this is the run averaged"),
        (["average", str(run), "--last", "2", "--out", str(run / "."), "--overwrite"], "this is the run averaged"),
        (["average", str(tmp_path / "nothing"), "--last", "2", "--out", str(tmp_path / "new")], "not a run folder"),
        (["average", str(run), "--last", "0", "--out", str(tmp_path / "new")], "expected a whole number >= 1, got 0"),
        (["average", str(run), "--out", str(tmp_path / "new")], "the following arguments are required: --last"),
    ]:
        assert main(argv) == 2
        assert words in one_error_line(capsys)
    assert not (tmp_path / "new").exists()
    # --overwrite over a folder a run was trained in: its files go, others stay
    shutil.copy(run / "best.safetensors", out / "last.safetensors")
    (out / "metrics.jsonl").write_text("{}\n")
    (out / "notes.txt").write_text("mine")
    assert main(["-q", "average", str(run), "--last", "2", "--out", str(out), "--overwrite"]) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "best.safetensors",
        "config.yaml",
        "notes.txt",
        "vocab.source.json",
        "vocab.target.json",
    ]
    assert weights(out / "best.safetensors")["w"].tolist() == [10.5, 10.5]


def train(data, out, *settings: str, flags: tuple = ()) -> int:
    return main(["-q", "train", PRESET, "--data", str(data), "--out", str(out), *flags, *sets(*SMALL, *settings)])


@pytest.mark.slow
def test_kept_checkpoints_are_pruned_survive_a_resume_and_average_into_a_run(reverse_data, tmp_path, capsys):
    """keep_checkpoints=3 with an evaluation every 2 updates keeps steps 6, 8, 10 of 10; a run
    stopped at step 4, with kept weights of a step 12 that its last checkpoint never reached (a
    session killed between the two writes), resumes to the same kept files, bit for bit, the
    stale one gone; their average evaluates and translates as a run."""
    keep = ("train.eval_every=2", "train.keep_checkpoints=3", "train.epochs=1")
    straight, cut = tmp_path / "straight", tmp_path / "cut"
    assert train(reverse_data, straight, *keep, "train.max_steps=10") == 0
    assert [s for s, _ in kept_checkpoints(straight)] == [6, 8, 10]
    assert np.array_equal(
        weights(kept_checkpoint_path(straight, 10))["decoder.generator.weight"],
        weights(straight / "last.safetensors")["decoder.generator.weight"],
    )
    assert train(reverse_data, cut, *keep, "train.max_steps=4") == 0
    assert [s for s, _ in kept_checkpoints(cut)] == [2, 4]
    shutil.copy(kept_checkpoint_path(cut, 2), kept_checkpoint_path(cut, 12))  # as if killed before last at 12
    assert train(reverse_data, cut, *keep, "train.max_steps=10", flags=("--resume",)) == 0
    assert [s for s, _ in kept_checkpoints(cut)] == [6, 8, 10]
    for step in (6, 8, 10):
        assert kept_checkpoint_path(cut, step).read_bytes() == kept_checkpoint_path(straight, step).read_bytes()
    capsys.readouterr()
    out = tmp_path / "avg"
    assert main(["-q", "average", str(cut), "--last", "3", "--out", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["steps"] == [6, 8, 10]
    expected = average_weights([(p, weights(p)) for _, p in kept_checkpoints(straight)])
    assert all(np.array_equal(v, expected[k]) for k, v in weights(out / "best.safetensors").items())
    assert main(["-q", "evaluate", str(out), "--data", str(reverse_data / "test.tsv"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["sentences"] == 40
    assert isinstance(attnseq.load(out).translate("abc"), str)
    assert (
        main(
            [
                "-q",
                "train",
                PRESET,
                "--data",
                str(reverse_data),
                "--out",
                str(cut),
                "--overwrite",
                *sets(*SMALL, "train.max_steps=1"),
            ]
        )
        == 0
    )
    assert not (cut / "checkpoints").exists()  # --overwrite removes the kept checkpoints with the run


def test_an_average_stopped_while_writing_leaves_the_earlier_one_whole(tmp_path, monkeypatch, capsys):
    """--overwrite over an earlier average: a stop (Ctrl-C) while the new files are written leaves
    the earlier average as it was, every file of it, and no temporary of this process."""
    import attnseq.average
    import attnseq.files

    run, out = fake_run(tmp_path / "run", [3, 6, 9, 12]), tmp_path / "avg"
    assert main(["-q", "average", str(run), "--last", "2", "--out", str(out)]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    real = attnseq.files.replace_with
    moved = []

    def stopped_after_one(tmp, path):
        if moved:
            raise KeyboardInterrupt
        moved.append(path)
        real(tmp, path)

    monkeypatch.setattr(attnseq.files, "replace_with", stopped_after_one)
    assert main(["-q", "average", str(run), "--last", "3", "--out", str(out), "--overwrite"]) == 130
    after = {p.name: p.read_bytes() for p in out.iterdir()}
    assert sorted(after) == sorted(before)  # nothing removed, nothing temporary left
    assert sum(after[name] != before[name] for name in before) <= 1  # at most the one moved in place


def test_a_folder_output_given_as_standard_output_is_refused_by_flag(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for argv in (["data", "dates", "--out", "-"], ["average", str(tmp_path), "--last", "2", "--out", "-"]):
        assert main(argv) == 2
        assert capsys.readouterr().err.startswith("attnseq: error: --out -: standard output takes text")
    assert list(tmp_path.iterdir()) == []
