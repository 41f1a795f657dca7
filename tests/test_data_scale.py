"""Data at scale: corpora read a line at a time in memory that does not grow with them, split in
three streaming passes, generated in seeded blocks (the same corpus whoever makes which block),
sentencepiece's sample drawn by a reservoir, and progress shown as training's display shows it."""
from __future__ import annotations

import logging
import random
import sys
from pathlib import Path

import pytest

from attnseq.data.corpus import read_tsv
from attnseq.data.splits import SPLIT_NAMES
from attnseq.errors import UserError
from attnseq.files import open_outputs
from attnseq.progress import StepProgress


def tsv_lines(n: int, sources: int | None = None, seed: int = 0) -> list[str]:
    """``n`` lines ``source<TAB>target``; ``sources`` distinct sources (default: all distinct)."""
    rng = random.Random(seed)
    return [f"sentence number {i % (sources or n)} of {rng.random():.6f}\tsatz {i}\n" for i in range(n)]


def read_split(folder: Path) -> dict[str, list[tuple[str, str]]]:
    return {name: read_tsv(folder / f"{name}.tsv") for name in SPLIT_NAMES}


# -- writing as it comes ----------------------------------------------------------------------------------
def test_outputs_streamed_appear_whole_or_not_at_all(tmp_path):
    with open_outputs(tmp_path / "new" / "deeper", ["a.tsv", "b.tsv"]) as streams:
        streams["a.tsv"].write("x\ty\n")
        assert not (tmp_path / "new" / "deeper" / "a.tsv").exists()  # a temporary file until the end
    assert (tmp_path / "new" / "deeper" / "a.tsv").read_text() == "x\ty\n"
    assert sorted(p.name for p in (tmp_path / "new" / "deeper").iterdir()) == ["a.tsv", "b.tsv"]
    with pytest.raises(RuntimeError):
        with open_outputs(tmp_path / "other" / "deeper", ["a.tsv"]) as streams:
            streams["a.tsv"].write("half")
            raise RuntimeError("stopped")
    assert not (tmp_path / "other").exists()  # nothing left, not even the folders it made
    with pytest.raises(UserError, match="holds files already"):
        with open_outputs(tmp_path / "new" / "deeper", ["a.tsv"]):
            pass


def test_a_full_disk_while_streaming_is_one_line_naming_the_folder(tmp_path):
    with pytest.raises(UserError, match=rf"^{tmp_path / 'out'}: no space left on the device"):
        with open_outputs(tmp_path / "out", ["a.tsv"]):
            raise OSError(28, "No space left on device")  # as write() raises it: no file name
    assert not (tmp_path / "out").exists()


# -- progress ---------------------------------------------------------------------------------------------------
def test_progress_is_a_bar_on_a_terminal_log_lines_elsewhere_nothing_when_quiet(monkeypatch, caplog):
    with caplog.at_level(logging.INFO, logger="attnseq"):
        with StepProgress("step", total=10, interval=0) as shown:
            assert shown.bar is None
            shown.update(4)
        assert "step: 4 of 10 pairs, " in caplog.text and "pairs/s" in caplog.text
        monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
        with StepProgress("step", total=10) as shown:
            assert shown.bar is not None
            assert list(shown.over(range(10), every=3)) == list(range(10)) and shown.done == 10
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="attnseq"):  # -q
        with StepProgress("step", total=10, interval=0) as shown:
            shown.update(4)
            assert shown.bar is None
    assert not caplog.text
