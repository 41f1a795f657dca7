"""The benchmarks' own arguments: garbage gets one line and exit 2 before anything is made
(bench/scale.py: sizes, processes, steps, distinct pairs and torchrun's sizes)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import scale  # noqa: E402  (bench/scale.py)

NUMBERS = st.lists(st.integers(-3, 6), min_size=1, max_size=4)


@settings(max_examples=200, deadline=None)
@given(
    sizes=NUMBERS,
    processes=NUMBERS,
    torchrun=st.lists(st.integers(-3, 6), max_size=3),
    steps=st.integers(-3, 6),
    unique=st.integers(-3, 6),
)
def test_the_scale_table_refuses_what_it_cannot_measure_in_one_line(sizes, processes, torchrun, steps, unique):
    args = argparse.Namespace(sizes=sizes, processes=processes, torchrun=torchrun, steps=steps, unique=unique)
    wrong = scale.complaint(args)
    fine = min(sizes + processes + torchrun + [steps, unique]) >= 1 and set(torchrun) <= set(sizes)
    assert (wrong is None) == fine
    if wrong is not None:
        assert wrong.startswith("scale: --") and "\n" not in wrong


def test_a_torchrun_size_the_table_does_not_make_exits_2_before_any_work(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "scale.py"),
            "--sizes",
            "2000",
            "--torchrun",
            "4000",
            "--work",
            str(tmp_path / "work"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "scale: --torchrun 4000: not among --sizes 2000; torchrun trains on a corpus the table made"
    ]
    assert not (tmp_path / "work").exists()
