"""Inputs and outputs as a shell user expects: ``-`` is standard input or output, and a pipe or a
FIFO (what ``<(zcat corpus.tsv.gz)`` names) is read once, whatever the command does with it after."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from helpers import ROOT

CORPUS = "".join(f"a {i} b\tc {i} d\n" for i in range(300))


def attnseq(*args: str, stdin: bytes | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "attnseq.cli", *args],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=300,
    )


def fifo(folder: Path, name: str, text: str) -> Path:
    """A named pipe that a thread fills with ``text`` once, as a shell's process substitution does."""
    path = folder / name
    os.mkfifo(path)

    def fill():
        with open(path, "w", encoding="utf-8") as pipe:
            pipe.write(text)

    threading.Thread(target=fill, daemon=True).start()
    return path


def splits(folder: Path) -> dict[str, str]:
    return {name: (folder / name).read_text(encoding="utf-8") for name in ("train.tsv", "dev.tsv", "test.tsv")}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX's")
def test_data_split_reads_a_pipe_a_fifo_or_standard_input_as_it_reads_a_file(tmp_path):
    """The splitter reads its input three times; from a FIFO or from - (standard input) it reads it
    once into a copy: the same splits as from the file, where a FIFO ended in a traceback."""
    corpus = tmp_path / "c.tsv"
    corpus.write_text(CORPUS, encoding="utf-8")
    args = ("--dev", "0.1", "--test", "0.1")
    assert attnseq("data", "split", "--input", str(corpus), "--out", str(tmp_path / "file"), *args).returncode == 0
    piped = attnseq(
        "data", "split", "--input", str(fifo(tmp_path, "p", CORPUS)), "--out", str(tmp_path / "fifo"), *args
    )
    stdin = attnseq("data", "split", "--input", "-", "--out", str(tmp_path / "stdin"), *args, stdin=CORPUS.encode())
    sources, targets = ("".join(line.split("\t")[i] + "\n" for line in CORPUS.splitlines()) for i in (0, 1))
    aligned = attnseq(
        "data", "split", "--src", str(fifo(tmp_path, "s", sources)), "--tgt", str(fifo(tmp_path, "t", targets)),
        "--out", str(tmp_path / "aligned"), *args,
    )  # fmt: skip
    for done in (piped, stdin, aligned):
        assert done.returncode == 0, done.stderr
    want = splits(tmp_path / "file")
    assert sum(text.count("\n") for text in want.values()) == 300
    for name in ("fifo", "stdin", "aligned"):
        assert splits(tmp_path / name) == want, name


def test_what_is_wrong_in_standard_input_is_said_of_standard_input(tmp_path):
    done = attnseq("data", "split", "--input", "-", "--out", str(tmp_path / "o"), stdin=b"a\tb\nx\xff\ty\n")
    assert done.returncode == 2
    assert done.stderr.decode().strip() == "attnseq: error: standard input:2: not valid UTF-8"


def test_translate_reads_and_writes_standard_streams_for_dash(quick_runs, tmp_path):
    """translate --input - --output -: lines from standard input, outputs to standard output, and
    no file named "-" (one was written before)."""
    done = attnseq(
        "translate", str(quick_runs["local_p"]), "--input", "-", "--output", "-", stdin=b"abc\ncab\n", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().count("\n") == 2
    assert not (tmp_path / "-").exists()
