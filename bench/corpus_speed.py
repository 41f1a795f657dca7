"""Corpora at scale: how fast `attnseq data` generates and splits millions of pairs, and in how
much memory.

    python bench/corpus_speed.py [--pairs 5000000] [--workers 1 2] [--sources dates passages] [--out FILE]
    python bench/run.py --corpus     # the same table, from the benchmark script

Each command runs in its own process as a user runs it (``attnseq -q data ...``); the table gives
its wall-clock time, pairs per second, the peak RSS of the command's own process and the peak of
the summed RSS of it and its worker processes (sampled every 0.1 s), and the size of what it
wrote. Generation is timed with each number of ``--workers`` (the output must be the same: the
table says so), then ``data split`` cuts the generated dates' train.tsv (2,000 dev and 2,000 test
pairs). The machine is shared: take figures of one run, and re-run on a quiet machine before
quoting them.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tree_rss_kb(pid: int) -> int:
    """The summed VmRSS (kB) of process ``pid`` and its descendants now."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as status:
                total += next((int(line.split()[1]) for line in status if line.startswith("VmRSS:")), 0)
            with open(f"/proc/{p}/task/{p}/children") as children:
                todo += [int(c) for c in children.read().split()]
        except OSError:
            pass
    return total


def timed(args: list[str]) -> dict:
    """Run ``python -m attnseq.cli -q ARGS``: seconds, peak RSS MB of its process and of its tree."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "attnseq.cli", "-q", *args], env=env, cwd=ROOT, stdout=subprocess.DEVNULL
    )
    peak = 0
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        peak = max(peak, tree_rss_kb(process.pid))
        time.sleep(0.1)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"attnseq {' '.join(args)} failed")
    return {"seconds": time.perf_counter() - started, "rss": usage.ru_maxrss / 1024, "tree_rss": peak / 1024}


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for name in ("train.tsv", "dev.tsv", "test.tsv"):
        with open(folder / name, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def megabytes(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.glob("*.tsv")) / 1e6


def corpus_table(pairs: int, workers: list[int], sources: list[str]) -> str:
    """The Markdown table of generating ``pairs`` training pairs of each source with each number of
    workers, then splitting the dates."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="attnseq-corpus-") as tmp:
        tmp = Path(tmp)
        for source in sources:
            first = None
            for n in workers:
                out = tmp / f"{source}-{n}"
                extra = ["--lang", "de"] if source == "passages" else []
                m = timed(["data", source, *extra, "--train", str(pairs), "--workers", str(n), "--out", str(out)])
                same = digest(out)
                note = "" if first is None else ("same output" if same == first else "OUTPUT DIFFERS")
                first = first or same
                rows.append((f"data {source}", n, pairs, m, megabytes(out), note))
                print(
                    f"  data {source}, {n} worker(s): {pairs / m['seconds']:,.0f} pairs/s", file=sys.stderr, flush=True
                )
                if source != "dates" or n != workers[-1]:
                    shutil.rmtree(out)
        dates = tmp / f"dates-{workers[-1]}"
        if dates.exists():
            out = tmp / "split"
            m = timed(
                [
                    "data",
                    "split",
                    "--input",
                    str(dates / "train.tsv"),
                    "--out",
                    str(out),
                    "--dev",
                    "2000",
                    "--test",
                    "2000",
                ]
            )
            rows.append(("data split (dates' train.tsv)", 1, pairs, m, megabytes(out), ""))
            print(f"  data split: {pairs / m['seconds']:,.0f} pairs/s", file=sys.stderr, flush=True)
    lines = [
        f"Corpora of {pairs:,} training pairs ({os.cpu_count()} CPUs)",
        "",
        "| step | workers | pairs | seconds | pairs/s | peak RSS MB | with workers MB | written MB | |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for step, n, count, m, size, note in rows:
        lines.append(
            f"| {step} | {n} | {count:,} | {m['seconds']:.1f} | {count / m['seconds']:,.0f} | "
            f"{m['rss']:,.0f} | {m['tree_rss']:,.0f} | {size:,.0f} | {note} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5_000_000, help="training pairs generated")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="numbers of processes to time")
    parser.add_argument("--sources", nargs="+", default=["dates", "passages"], choices=("dates", "passages"))
    parser.add_argument("--out", help="also write the table (Markdown) here")
    args = parser.parse_args(argv)
    return show(corpus_table(args.pairs, args.workers, args.sources), args.out)


def show(table: str, out: str | None) -> int:
    """Print ``table`` and, with ``out``, write it there too; the exit status (0)."""
    print(table)
    if out:
        Path(out).write_text(table, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
