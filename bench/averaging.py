"""Averaged checkpoints and ensembles against single models, by BLEU on gettext English->German.

    python bench/averaging.py --minutes 30     # the figures of docs/engines.md (about 70 minutes)
    python bench/averaging.py --minutes 30 --side-by-side --threads 1   # both at once, about 35 minutes
    python bench/averaging.py --minutes 5 --eval-every 50 --sentences 200 --threads 1   # a smoke run

Trains two models of one preset (default: recommended-subword, what ``attnseq train --data D``
picks for this data) for ``--minutes`` each, seeds 1 and 2, one after the other, the first
keeping the weights of its last ``--keep`` evaluations (train.keep_checkpoints); then, with the
commands a user runs:

    attnseq average RUNS/seed1 --last K --out RUNS/seed1-avgK
    attnseq evaluate RUN [RUN2] --data D/dev.tsv --json      (and D/test.tsv)

and prints one table: dev and test BLEU (and chrF) of seed 1's best checkpoint, the average of its
last K checkpoints, seed 2's best checkpoint, and the two best checkpoints' ensemble, each decoded
with the preset's decode settings (beam 5), with the differences docs/engines.md reports: the average
against the best single checkpoint, the ensemble against the better single model (by dev BLEU).
The data is made with ``attnseq data gettext --lang de`` when ``--data`` holds none. Speeds in
the table are only indicative: measure speed on a quiet machine. On a machine whose cores other
processes keep busy, give ``--threads 1``: there two threads per training ran a step of this
preset 10-20 times slower than one (0.6-0.75 s against 7-12 s, measured alternately on the
project's 2-core machine under a load of 15), as they wait for each other at every product.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def start(*words: str, threads: int) -> subprocess.Popen:
    """``attnseq WORDS`` started with this tree's attnseq, its output captured."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": str(threads)}
    return subprocess.Popen(
        [sys.executable, "-m", "attnseq.cli", "-q", *words],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen) -> str:
    """The output of a started ``attnseq``; exits on a failure."""
    out, err = process.communicate()
    if process.returncode:
        sys.exit(f"averaging: {' '.join(process.args[2:])} failed ({process.returncode}):\n{err[-2000:]}")
    return out


def attnseq(*words: str, threads: int) -> str:
    """The output of ``attnseq WORDS`` run with this tree's attnseq; exits on a failure."""
    return finish(start(*words, threads=threads))


def train(args, data: Path, run: Path, seed: int) -> subprocess.Popen | None:
    """Start training one model into ``run`` (unless --reuse finds it there)."""
    if args.reuse and (run / "best.safetensors").exists():
        return None
    settings = [
        f"train.max_minutes={args.minutes}",
        f"train.seed={seed}",
        f"train.keep_checkpoints={args.keep}",
        f"train.threads={args.threads}",
        "train.progress=false",
        *args.set,
    ]
    if args.eval_every:
        settings.append(f"train.eval_every={args.eval_every}")
    return start(
        "train",
        args.config,
        "--data",
        str(data),
        "--out",
        str(run),
        *(["--overwrite"] if args.overwrite else []),
        *[w for s in settings for w in ("--set", s)],
        threads=args.threads,
    )


def train_both(args, data: Path, runs: list[Path]) -> dict[Path, float | None]:
    """Train seeds 1 and 2 into ``runs``, one after the other or (--side-by-side) at once; the
    minutes each took (None: reused)."""
    took: dict[Path, float | None] = {}
    started = {}
    for seed, run in enumerate(runs, 1):
        started[run] = (time.perf_counter(), train(args, data, run, seed))
        if not args.side_by_side:
            took[run] = wait(*started.pop(run))
    took.update({run: wait(*begun) for run, begun in started.items()})
    return took


def wait(began: float, process: subprocess.Popen | None) -> float | None:
    if process is None:
        return None
    finish(process)
    return (time.perf_counter() - began) / 60


def best_step(run: Path) -> int | None:
    """The step of the run's best evaluation (what best.safetensors holds)."""
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    steps = [r["step"] for r in records if r.get("type") == "eval" and r.get("best")]
    return steps[-1] if steps else None


def splits(data: Path, folder: Path, sentences: int) -> dict[str, Path]:
    """The dev and test files evaluated: the data's, or their first ``sentences`` pairs written
    into ``folder``."""
    if not sentences:
        return {split: data / f"{split}.tsv" for split in ("dev", "test")}
    files = {}
    for split in ("dev", "test"):
        lines = (data / f"{split}.tsv").read_text(encoding="utf-8").splitlines(keepends=True)[:sentences]
        files[split] = folder / f"{split}-first-{sentences}.tsv"
        files[split].write_text("".join(lines), encoding="utf-8")
    return files


def scores(runs: list[Path], files: dict[str, Path], threads: int) -> dict:
    """BLEU and chrF of ``runs`` (one, or several as their ensemble) on each of ``files`` (dev, test)."""
    return {
        split: json.loads(
            attnseq("evaluate", *map(str, runs), "--data", str(path), "--json", threads=threads).splitlines()[-1]
        )
        for split, path in files.items()
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data",
        default="data/gettext-de",
        help="a data folder (made with attnseq data gettext --lang de when it holds no train.tsv)",
    )
    parser.add_argument("--config", default=str(ROOT / "configs" / "recommended-subword.yaml"))
    parser.add_argument("--minutes", type=float, default=30.0, help="training budget of each model")
    parser.add_argument("--keep", type=int, default=5, help="the checkpoints averaged (train.keep_checkpoints)")
    parser.add_argument(
        "--eval-every",
        type=int,
        default=0,
        help="updates between evaluations (0: the preset's; a short budget needs --keep of them)",
    )
    parser.add_argument("--threads", type=int, default=2, help="threads of each process")
    parser.add_argument(
        "--side-by-side",
        action="store_true",
        help="train the two models at once (give --threads 1 on 2 cores): half the wall clock",
    )
    parser.add_argument(
        "--sentences", type=int, default=0, help="evaluate on the first N dev and test pairs (0: all of them)"
    )
    parser.add_argument("--runs", default="runs/averaging", help="where the runs go")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="more training settings")
    parser.add_argument("--overwrite", action="store_true", help="replace runs already in --runs")
    parser.add_argument("--reuse", action="store_true", help="evaluate the runs already in --runs, not train them")
    args = parser.parse_args()

    data, runs = Path(args.data), Path(args.runs)
    if not (data / "train.tsv").exists():
        attnseq("data", "gettext", "--lang", "de", "--out", str(data), threads=args.threads)
    first, second, averaged = runs / "seed1", runs / "seed2", runs / f"seed1-avg{args.keep}"
    trained = train_both(args, data, [first, second])
    summary = json.loads(
        attnseq(
            "average",
            str(first),
            "--last",
            str(args.keep),
            "--out",
            str(averaged),
            *(["--overwrite"] if args.overwrite or args.reuse else []),
            threads=args.threads,
        ).splitlines()[-1]
    )
    files = splits(data, runs, args.sentences)
    rows = {
        f"seed 1, best checkpoint (step {best_step(first)})": scores([first], files, args.threads),
        f"seed 1, average of its last {args.keep} (steps {', '.join(map(str, summary['steps']))})": scores(
            [averaged], files, args.threads
        ),
        f"seed 2, best checkpoint (step {best_step(second)})": scores([second], files, args.threads),
        "ensemble of seed 1 and seed 2 (best checkpoints)": scores([first, second], files, args.threads),
    }
    print(
        f"{Path(args.config).name} on {data}, {args.minutes:g} minutes of training each"
        + "".join(f"; {run.name} trained in {t:.1f} min" for run, t in trained.items() if t is not None)
        + ("; side by side" if args.side_by_side else "")
        + f"; {args.threads} threads; evaluated on "
        + ", ".join(
            f"{split} ({sum(1 for _ in open(path, encoding='utf-8')):,} pairs)" for split, path in files.items()
        )
    )
    print("| model | dev BLEU | test BLEU | dev chrF | test chrF | dev sent/s |")
    print("|---|---|---|---|---|---|")
    for name, s in rows.items():
        print(
            f"| {name} | {s['dev'].get('bleu', float('nan')):.2f} | {s['test'].get('bleu', float('nan')):.2f} | "
            f"{s['dev']['chrf']:.2f} | {s['test']['chrf']:.2f} | {s['dev']['sentences_per_second']:.1f} |"
        )
    (best_1, avg, best_2, ensemble) = (s["dev"].get("bleu", float("nan")) for s in rows.values())
    better = max(best_1, best_2)
    print(
        f"average - best single checkpoint: {avg - best_1:+.2f} dev BLEU; "
        f"ensemble - better single model: {ensemble - better:+.2f} dev BLEU"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
