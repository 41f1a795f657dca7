"""The margins of the learning tests: every test that trains a model to a threshold (marked
``learns``), run over several seeds and under several CPU kernels, and the worst value each
measure reached beside its threshold.

    python bench/margins.py [--seeds 0 1 2] [--kernels native avx2 plainest] [--out FILE]
    python bench/margins.py --from FILE [FILE ...]      # the table of records kept before
    python bench/margins.py -k bars --seeds 0 1 2 3 4   # some tests, more seeds

Each (kernels, seed) is one ``pytest -m learns`` run (two processes, as ``make test``) with
ATTNSEQ_TEST_SEED shifting each test's training seed and the kernels' variables (bench/isa.py)
set; tests/learning.py records each measured value instead of asserting. The table has a row per
measure: its bound, the worst value over every run, the worst under each kernels, the margin
(worst minus bound, or bound minus worst for an upper bound) and the runs in which it fell short.
A test that recorded nothing in a run (it failed before measuring, or was skipped) is listed
under the table. The records are appended to ``--out`` (JSON lines) so that runs made apart, or
in other sessions on other CPUs, make one table with ``--from``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from isa import KERNELS, environment  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from attnseq.hardware import cpu_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def collected(select: list[str]) -> list[str]:
    """The ids of the learning tests that ``select`` (pytest's -k) picks."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--collect-only", "-m", "learns", *select, "tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    return [line for line in done.stdout.splitlines() if "::" in line]


def run(kernels: str, seed: int, records: Path, select: list[str], workers: int) -> None:
    """One pytest run of the learning tests, its closing line and failures printed."""
    env = {**os.environ, **environment(kernels), "ATTNSEQ_TEST_SEED": str(seed), "ATTNSEQ_MARGINS": str(records)}
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            str(workers),
            "-m",
            "learns",
            *select,
            "tests",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    tail = done.stdout.strip().splitlines()[-1:] or ["(no output)"]
    print(f"  {kernels:9} seed {seed}: {tail[0]} ({time.perf_counter() - started:.0f} s)", flush=True)
    for line in done.stdout.splitlines():  # an assertion of a test beside its measures (tests/learning.py)
        if line.startswith(("FAILED ", "ERROR ")):
            print(f"    {line}", flush=True)


def table(records: list[dict], tests: list[str] | None = None) -> str:
    """The Markdown table of ``records`` (tests/learning.py's lines), worst first."""
    kernels = [k for k in KERNELS if any(r["kernels"] == k for r in records)]
    kernels += sorted({r["kernels"] for r in records} - set(kernels))
    rows: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in records:
        rows[r["test"], r["what"]].append(r)

    def margin(rs: list[dict]) -> float:
        worst = worst_of(rs)
        return worst - rs[0]["bound"] if rs[0]["kind"] == "at_least" else rs[0]["bound"] - worst

    def worst_of(rs: list[dict]) -> float:
        values = [r["value"] for r in rs]
        return min(values) if rs[0]["kind"] == "at_least" else max(values)

    head = ["test", "measure", "bound", "worst", *[f"worst, {k}" for k in kernels], "margin", "runs", "short"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (test, what), rs in sorted(rows.items(), key=lambda kv: margin(kv[1])):
        bound = rs[0]["bound"]
        sign = ">=" if rs[0]["kind"] == "at_least" else "<="
        per = []
        for k in kernels:
            mine = [r for r in rs if r["kernels"] == k]
            per.append(f"{worst_of(mine):.3g}" if mine else "-")
        short = [
            f"{r['kernels']}/{r['seed']}"
            for r in rs
            if (r["value"] < bound if r["kind"] == "at_least" else r["value"] > bound)
        ]
        lines.append(
            f"| {test.removeprefix('tests/')} | {what} | {sign} {bound:g} | {worst_of(rs):.3g} | "
            + " | ".join(per)
            + f" | {margin(rs):+.3g} | {len(rs)} | {' '.join(short) or '-'} |"
        )
    runs = sorted({(r["kernels"], r["seed"]) for r in records})
    silent = []
    for test in tests or sorted({r["test"] for r in records}):
        missing = [
            f"{k}/{s}"
            for k, s in runs
            if not any(r["test"] == test and r["kernels"] == k and r["seed"] == s for r in records)
        ]
        if missing:
            silent.append(f"- {test}: no value recorded in {', '.join(missing)}")
    if silent:
        lines += ["", "Tests that recorded nothing in a run (failed before measuring, or skipped):", *silent]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--kernels", nargs="+", default=list(KERNELS), choices=list(KERNELS))
    parser.add_argument("-k", dest="select", help="pytest's -k: only the learning tests it picks")
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist processes (default 2)")
    parser.add_argument("--out", type=Path, help="append the records to this file (JSON lines)")
    parser.add_argument("--from", dest="sources", type=Path, nargs="+", help="only print the table of these records")
    args = parser.parse_args(argv)
    if args.sources:
        records = [json.loads(line) for path in args.sources for line in path.read_text().splitlines() if line]
        print(table(records))
        return 0
    select = ["-k", args.select] if args.select else []
    tests = collected(select)
    print(
        f"{len(tests)} learning tests; {cpu_model()}; "
        f"kernels {' '.join(args.kernels)}; seeds {' '.join(map(str, args.seeds))}",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as tmp:
        records_file = Path(tmp) / "records.jsonl"
        records_file.touch()
        for kernels in args.kernels:
            for seed in args.seeds:
                run(kernels, seed, records_file, select, args.workers)
        text = records_file.read_text()
    if args.out:
        with args.out.open("a", encoding="utf-8") as f:
            f.write(text)
    records = [json.loads(line) for line in text.splitlines() if line]
    print(table(records, [t.split(" ")[0] for t in tests]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
