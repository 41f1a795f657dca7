"""Shared fixtures: small generated data sets and quick configs."""
from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch

torch.set_num_threads(1)  # tests run in parallel processes (pytest -n 2)

ROOT = Path(__file__).resolve().parents[1]
BOOK_DIR = ROOT.parent / "shared" / "data" / "book"


def reverse_pairs(n: int, seed: int = 0, symbols: str = "abcdef", lengths=(3, 7), reverse: bool = True) -> list[tuple[str, str]]:
    """Pairs (w, reversed w) over ``symbols``: a task only attention-free memory or attention solves."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        word = "".join(rng.choice(symbols) for _ in range(rng.randint(*lengths)))
        pairs.append((word, word[::-1] if reverse else word))
    return pairs


def write_tsv(path: Path, pairs) -> Path:
    path.write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")
    return path


@pytest.fixture
def reverse_data(tmp_path: Path) -> Path:
    """A folder with train/dev/test.tsv of the reversal task."""
    d = tmp_path / "data"
    d.mkdir()
    write_tsv(d / "train.tsv", reverse_pairs(2000, seed=1, lengths=(3, 6)))
    write_tsv(d / "dev.tsv", reverse_pairs(100, seed=2, lengths=(3, 6)))
    write_tsv(d / "test.tsv", reverse_pairs(40, seed=3, lengths=(3, 6)))
    return d


# What every attention design needs to learn the reversal task perfectly.
LEARN = ["train.epochs=12", "train.lr=0.003", "train.schedule=plateau", "train.select_by=loss",
         "model.hidden_size=64"]

TINY = [
    "model.embed_size=16",
    "model.hidden_size=32",
    "model.attention_size=16",
    "train.batch_size=32",
    "train.progress=false",
    "train.log_every=0",
]
