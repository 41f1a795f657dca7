"""The learning tests' measurement: tests/learning.py's records and asserts, the kernels a pass
is held to (bench/isa.py), the margins table (bench/margins.py), and that every learning test
is marked and measures through the one helper (so the second pass of .ci/run runs them all)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import learning
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import isa  # noqa: E402  (bench/isa.py)
import margins  # noqa: E402  (bench/margins.py)


def test_a_value_short_of_its_bound_fails_with_both_and_one_that_reaches_it_passes(monkeypatch):
    monkeypatch.delenv("ATTNSEQ_MARGINS", raising=False)
    learning.at_least("exact match", 0.95, 0.95)
    learning.at_most("error", 0.05, 0.05)
    with pytest.raises(AssertionError, match=r"exact match: 0.94, the test asks >= 0.95"):
        learning.at_least("exact match", 0.94, 0.95)
    with pytest.raises(AssertionError, match=r"error: 0.06, the test asks <= 0.05"):
        learning.at_most("error", 0.06, 0.05)


def test_under_the_margins_run_values_are_recorded_not_asserted(monkeypatch, tmp_path):
    records = tmp_path / "records.jsonl"
    monkeypatch.setenv("ATTNSEQ_MARGINS", str(records))
    monkeypatch.setenv("ATTNSEQ_TEST_SEED", "2")
    monkeypatch.setenv("ATTNSEQ_KERNELS", "avx2")
    learning.at_least("exact match", 0.5, 0.95)  # short, and no assertion: the script judges
    learning.at_most("error", 0.01, 0.05)
    lines = [json.loads(line) for line in records.read_text().splitlines()]
    assert [(r["what"], r["value"], r["bound"], r["kind"], r["seed"], r["kernels"]) for r in lines] == [
        ("exact match", 0.5, 0.95, "at_least", 2, "avx2"),
        ("error", 0.01, 0.05, "at_most", 2, "avx2"),
    ]
    assert lines[0]["test"] == "tests/test_margins.py::test_under_the_margins_run_values_are_recorded_not_asserted"
    assert learning.seed(1) == 3


def test_the_second_pass_is_avx2_on_an_avx512_machine_and_else_the_plainest(monkeypatch):
    from attnseq import hardware

    monkeypatch.setattr(hardware, "cpu_flags", lambda: frozenset({"avx2", "avx512f"}))
    assert isa.second() == "avx2"
    monkeypatch.setattr(hardware, "cpu_flags", lambda: frozenset({"avx2"}))
    assert isa.second() == "plainest"
    for name in isa.KERNELS:
        env = isa.environment(name)
        assert env["ATTNSEQ_KERNELS"] == name
        assert name == "native" or {"ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA"} <= set(env)


def test_the_kernels_script_prints_variables_or_refuses_in_one_line():
    run = [sys.executable, str(ROOT / "bench" / "isa.py")]
    done = subprocess.run([*run, "plainest"], capture_output=True, text=True)
    assert done.returncode == 0 and "ATEN_CPU_CAPABILITY=default" in done.stdout.split()
    done = subprocess.run([*run, "avx9"], capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == "" and len(done.stderr.splitlines()) == 1


def record(test, what, value, bound, kernels="native", seed=0, kind="at_least"):
    return {"test": test, "what": what, "value": value, "bound": bound, "kind": kind, "seed": seed, "kernels": kernels}


def test_the_table_gives_each_measures_worst_value_per_kernels_and_the_runs_short_of_it():
    records = [
        record("tests/a.py::t", "exact match", v, 0.9, k, s)
        for k, s, v in [("native", 0, 0.97), ("native", 1, 0.95), ("avx2", 0, 0.88), ("avx2", 1, 0.99)]
    ]
    records += [record("tests/b.py::u", "plain", v, 0.05, "native", s, "at_most") for s, v in [(0, 0.0), (1, 0.02)]]
    text = margins.table(records, ["tests/a.py::t", "tests/b.py::u", "tests/c.py::never"])
    rows = [line.split(" | ") for line in text.splitlines() if line.startswith("| ") and "::" in line]
    assert rows[0][:7] == ["| a.py::t", "exact match", ">= 0.9", "0.88", "0.95", "0.88", "-0.02"]  # worst first
    assert rows[0][-1] == "avx2/0 |"
    assert rows[1][:7] == ["| b.py::u", "plain", "<= 0.05", "0.02", "0.02", "-", "+0.03"]
    assert "tests/b.py::u: no value recorded in avx2/0, avx2/1" in text
    assert "tests/c.py::never: no value recorded in avx2/0, avx2/1, native/0, native/1" in text


def _learning_functions() -> dict[str, tuple[bool, bool]]:
    """Each test function of the suite: (marked learns, holds a value through tests/learning.py)."""
    found = {}
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                marked = any(isinstance(d, ast.Name) and d.id == "learns" for d in node.decorator_list)
                holds = any(
                    isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in ("at_least", "at_most")
                    for c in ast.walk(node)
                )
                found[f"{path.name}::{node.name}"] = (marked, holds)
    return found


def test_every_test_that_holds_a_trained_value_is_marked_learns_and_every_marked_one_holds_one():
    found = _learning_functions()
    assert sum(marked for marked, _ in found.values()) >= 20
    wrong = [name for name, (marked, holds) in found.items() if marked != holds]
    assert not wrong, f"marked learns without at_least/at_most, or the reverse: {wrong}"
