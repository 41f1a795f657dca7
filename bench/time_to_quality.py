"""Time to a good model on character tasks: ``attnseq train --data D`` (no config: the recommended
preset for the data) for a wall-clock budget, one thread a run, two runs side by side, each scored
on its test split by ``attnseq evaluate``. Prints a Markdown table naming the CPU and its flags.

    python bench/time_to_quality.py [--minutes 1 2] [--tasks dates numbers addition]
                                    [--variant NAME[:KEY=VALUE,...]] ... [--seed 1] [--keep DIR]

The tasks are made here, none of them seen when the presets were chosen:
  dates     generated dates in eight CLDR locales and many formats -> ISO (attnseq data dates)
  numbers   English number words up to 9,999,999 -> digits ("four thousand and twelve" -> 4012)
  addition  the book's addition.txt with the book's split (attnseq data book)
Each ``--variant`` is a set of --set overrides (``fp32:train.precision=fp32``); without any, the
defaults alone. Runs of one (task, budget) start together, two at a time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from attnseq.hardware import cpu_flags, cpu_model  # noqa: E402
from attnseq.reproduce.datasets import BOOK_DIR  # noqa: E402

ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen \
seventeen eighteen nineteen".split()
TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
SHOWN_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16")


def below_thousand(n: int) -> str:
    """English words of 0 < n < 1000, British style ("three hundred and five")."""
    hundreds, rest = divmod(n, 100)
    words = [f"{ONES[hundreds]} hundred"] if hundreds else []
    if rest:
        tens, ones = divmod(rest, 10)
        said = ONES[rest] if rest < 20 else TENS[tens] + (f"-{ONES[ones]}" if ones else "")
        words.append(("and " if hundreds else "") + said)
    return " ".join(words)


def number_words(n: int) -> str:
    """English words of 0 <= n < 10**9: "two million, forty thousand and seven"."""
    if n == 0:
        return "zero"
    groups = []
    for scale, name in ((10**6, " million"), (10**3, " thousand"), (1, "")):
        group, n = divmod(n, scale)
        if group:
            groups.append(below_thousand(group) + name)
    if len(groups) > 1 and group and group < 100:  # the last group, below a hundred: "... and seven"
        return ", ".join(groups[:-1]) + " and " + groups[-1]
    return ", ".join(groups)


def write_numbers(folder: Path, seed: int, sizes=(40_000, 1_000, 2_000)) -> None:
    """train/dev/test.tsv of number words -> digits, distinct numbers in every split."""
    rng = random.Random(seed)
    drawn: set[int] = set()
    while len(drawn) < sum(sizes):
        digits = rng.randint(1, 7)
        drawn.add(rng.randint(10 ** (digits - 1) if digits > 1 else 0, 10**digits - 1))
    numbers = sorted(drawn)
    rng.shuffle(numbers)
    folder.mkdir(parents=True, exist_ok=True)
    start = 0
    for name, size in zip(("train", "dev", "test"), sizes):
        rows = numbers[start : start + size]
        start += size
        (folder / f"{name}.tsv").write_text("".join(f"{number_words(n)}\t{n}\n" for n in rows), encoding="utf-8")


def attnseq(*args: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "attnseq.cli", "-q", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


def make_task(name: str, folder: Path, seed: int) -> Path:
    data = folder / name
    if data.exists():
        return data
    if name == "numbers":
        write_numbers(data, seed)
        return data
    args = {
        "dates": ["data", "dates", "--locales", "all", "--train", "40000", "--dev", "1000", "--test", "2000"],
        "addition": ["data", "book", "--file", str(BOOK_DIR / "addition.txt")],
    }[name]
    extra = ["--seed", str(seed)] if name == "dates" else []
    process = attnseq(*args, *extra, "--out", str(data))
    _, err = process.communicate()
    if process.returncode:
        raise SystemExit(f"{name}: {err.strip()}")
    return data


def parse_variant(text: str) -> tuple[str, list[str]]:
    name, _, settings = text.partition(":")
    return name, [s for s in settings.split(",") if s]


def train_and_score(data: Path, run: Path, minutes: float, settings: list[str], seed: int) -> subprocess.Popen:
    sets = [
        x for s in [*settings, f"train.seed={seed}", "train.threads=1", "train.progress=false"] for x in ("--set", s)
    ]
    return attnseq("train", "--data", str(data), "--out", str(run), "--max-minutes", str(minutes), *sets)


def score(run: Path, data: Path) -> dict:
    process = attnseq(
        "evaluate", str(run), "--data", str(data / "test.tsv"), "--json", "--set", "decode.batch_size=256"
    )
    out, err = process.communicate()
    if process.returncode:
        raise SystemExit(f"evaluate {run}: {err.strip()}")
    metrics = json.loads(out)
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    evals = [r for r in records if r.get("type") == "eval"]
    start = next(r for r in records if r.get("type") == "start")
    return {
        "test": metrics["exact_match"],
        "dev": max((r.get("dev_exact_match", 0) for r in evals), default=0.0),
        "steps": evals[-1]["step"] if evals else 0,
        "precision": start.get("precision", "fp32"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, nargs="+", default=[1.0, 2.0])
    parser.add_argument("--tasks", nargs="+", default=["dates", "numbers", "addition"])
    parser.add_argument("--variant", action="append", default=[], help="NAME[:KEY=VALUE,...]")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="the folder of data and runs (default: a temporary one)")
    args = parser.parse_args()
    variants = [parse_variant(v) for v in args.variant] or [("defaults", [])]
    work = args.keep or Path(tempfile.mkdtemp(prefix="time-to-quality-"))
    work.mkdir(parents=True, exist_ok=True)
    flags = [f for f in SHOWN_FLAGS if f in cpu_flags()]
    print(
        f"CPU: {cpu_model()}, {os.cpu_count()} cores; flags: {', '.join(flags) or 'none of ' + ', '.join(SHOWN_FLAGS)}"
    )
    held = {
        k: os.environ[k]
        for k in ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS")
        if k in os.environ
    }
    if held:
        print("held to: " + ", ".join(f"{k}={v}" for k, v in held.items()))
    print(f"one thread a run, {args.parallel} side by side; seed {args.seed}; work {work}\n")
    print("| task | budget | variant | precision | steps | best dev exact match | test exact match |")
    print("|---|---|---|---|---|---|---|")
    jobs = [
        (task, minutes, name, settings)
        for task in args.tasks
        for minutes in args.minutes
        for name, settings in variants
    ]
    for start in range(0, len(jobs), args.parallel):
        batch = jobs[start : start + args.parallel]
        running = []
        for task, minutes, name, settings in batch:
            data = make_task(task, work / "data", args.seed)
            run = work / "runs" / f"{task}-{minutes:g}-{name}-{args.seed}"
            running.append((task, minutes, name, data, run, train_and_score(data, run, minutes, settings, args.seed)))
        for task, minutes, name, data, run, process in running:
            _, err = process.communicate()
            if process.returncode:
                print(f"| {task} | {minutes:g} min | {name} | failed: {err.strip().splitlines()[-1]} |||||")
                continue
            found = score(run, data)
            print(
                f"| {task} | {minutes:g} min | {name} | {found['precision']} | {found['steps']:,} | "
                f"{found['dev']:.1%} | {found['test']:.2%} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    started = time.perf_counter()
    code = main()
    print(f"\n{time.perf_counter() - started:.0f} s")
    raise SystemExit(code)
