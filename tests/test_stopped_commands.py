"""Every writing command stopped at any moment (SIGTERM as timeout, a scheduler or docker stop
send it; SIGKILL, which nothing can catch) leaves nothing half made that the rerun trips over,
and nothing of the user's is gone: the rerun of the same command succeeds, its outputs are whole,
no temporary file or folder of the stopped one is left, and a file the user had put beside the
outputs is still there."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import ROOT, TINY, sets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.slow


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "attnseq.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def temporaries(*folders: Path) -> list[str]:
    """What attnseq's writers leave while they write: .NAME.PID-XXXX.tmp (or .old) files and folders."""
    return [
        p.name for folder in folders if folder.is_dir() for p in folder.iterdir() if p.name.endswith((".tmp", ".old"))
    ]


@pytest.fixture(scope="module")
def averaged_run(tmp_path_factory) -> Path:
    """A run that kept the weights of its last two evaluations, to average."""
    from helpers import write_reverse_dir

    from attnseq.cli import main

    root = tmp_path_factory.mktemp("kept")
    data = write_reverse_dir(root / "data")
    args = sets(f"data.dir={data}", *TINY, "train.max_steps=4", "train.eval_every=2", "train.keep_checkpoints=2")
    assert main(["train", str(ROOT / "configs" / "luong2015-general.yaml"), "--out", str(root / "run"), *args]) == 0
    return root / "run"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """A TSV of 200,000 pairs: long enough to split or translate for a few seconds."""
    path = tmp_path_factory.mktemp("corpus") / "corpus.tsv"
    words = ["".join("abcdef"[(i * 7 + j * 3) % 6] for j in range(3 + i % 4)) for i in range(200_000)]
    path.write_text("".join(f"{w}\t{w[::-1]}\n" for w in words), encoding="utf-8")
    return path


def commands(out: Path, averaged: Path, transformer: Path, corpus: Path) -> dict[str, tuple[list[str], list[str]]]:
    """{command: (its arguments, the files it writes into ``out``)}: each command that writes files."""
    sources = corpus.with_name("sources.txt")
    if not sources.exists():
        sources.write_text("".join(line.split("\t")[0] + "\n" for line in corpus.read_text().splitlines()[:3000]))
    return {
        "data split": (["data", "split", "--input", str(corpus), "--out", str(out)], ["train.tsv", "dev.tsv", "test.tsv"]),
        "translate": (["translate", str(transformer), "--input", str(sources), "--output", str(out / "out.txt")],
                      ["out.txt"]),
        "data dates": (["data", "dates", "--out", str(out), "--train", "20000", "--dev", "500", "--test", "500"],
                       ["train.tsv", "dev.tsv", "test.tsv"]),
        "average": (["average", str(averaged), "--last", "2", "--out", str(out)], ["config.yaml", "best.safetensors"]),
        "export": (["export", str(transformer), "--to", "ctranslate2", "--out", str(out)], ["export.json", "model.bin"]),
    }  # fmt: skip


@pytest.mark.parametrize("command", ["data dates", "data split", "translate", "average", "export"])
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(moment=st.floats(0.3, 4.0), signum=st.sampled_from([signal.SIGTERM, signal.SIGKILL]))
def test_a_stopped_writing_command_leaves_nothing_the_rerun_trips_over(
    command, moment, signum, tmp_path_factory, averaged_run, quick_runs, corpus
):
    pytest.importorskip("ctranslate2") if command == "export" else None
    root = tmp_path_factory.mktemp("stopped")
    out = root / "out"
    args, written = commands(out, averaged_run, quick_runs["transformer"], corpus)[command]
    args = [*args, "--overwrite"]
    if command == "export":  # --overwrite replaces an earlier export only: the user's file is put in one
        assert start(*args).wait(300) == 0
    out.mkdir(exist_ok=True)
    (out / "notes.txt").write_text("the user's", encoding="utf-8")  # beside the outputs, not one of them
    process = start(*args)
    time.sleep(moment)
    process.send_signal(signum)
    _, err = process.communicate(timeout=120)
    stopped = process.returncode
    assert b"Traceback" not in err, err
    if signum == signal.SIGTERM:  # done (0), stopped by attnseq (one line, the shell's 143), or by the
        # system before attnseq had set its handler or after it had ended (-15)
        assert stopped in (0, 128 + signal.SIGTERM, -signal.SIGTERM), (stopped, err)
        if stopped == 128 + signal.SIGTERM:
            assert err.decode().strip().splitlines()[-1].startswith("attnseq: stopped (SIGTERM)"), err
    again = start(*args)
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert all((out / name).is_file() and (out / name).stat().st_size for name in written), sorted(os.listdir(out))
    assert (out / "notes.txt").read_text(encoding="utf-8") == "the user's"
    assert temporaries(out, root) == []


def test_a_bad_line_found_by_a_worker_of_attnseq_train_ends_in_one_line_not_a_hang(tmp_path):
    """The command's SIGTERM handler is not the forked tokenising workers': the pool ends them with
    SIGTERM when one finds a bad line, and they must die (with the handler they raised where they
    were, and the pool waited for them for ever)."""
    data = tmp_path / "data"
    data.mkdir()
    lines = [f"a {i} b c d e f\tg {i} h" for i in range(40_000)]  # about 800 kB: two processes tokenise it
    lines[30_000] = "no tab here"
    (data / "train.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (data / "dev.tsv").write_text("a b\tc d\n", encoding="utf-8")
    args = ["train", str(ROOT / "configs" / "luong2015-general.yaml"), "--out", str(tmp_path / "run")]
    process = start(*args, *sets(f"data.dir={data}", "data.processes=2", "data.tokenizer=word", *TINY))
    _, err = process.communicate(timeout=240)
    assert process.returncode == 2, err
    assert err.decode().strip().endswith("train.tsv:30001: expected 'source<TAB>target', found 0 tabs"), err
