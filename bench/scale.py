"""The scale table: corpora of 50,000, 500,000 and 5,000,000 generated date pairs prepared once
into the token store and trained from it (the section ``python bench/run.py --scale``).

    python bench/scale.py [--sizes 50000 500000 5000000] [--processes 1 2] [--torchrun 5000000]
    python bench/scale.py --sizes 20000 100000 --torchrun 100000   # a CI-sized run

For each size:
- prep: the training pairs tokenised into a fresh cache (data.prepare) by 1 and 2 processes, in a
  process of its own: seconds, pairs/s and the preparing process's peak RSS (its workers' beside);
- training (configs/recommended-char.yaml, train.threads=1, ``--steps`` updates): the seconds
  from the command's start to its first update with a cold cache (the preparation included, in
  one process for each CPU) and a warm one (the store prepared: mapped), and the warm run's peak
  RSS (VmHWM), peak RssAnon (the process's own memory, which must not grow with the corpus) and
  peak RssFile (file pages: the mapped store's among them, and the libraries'), read from
  /proc/PID/status every 20 ms;
- with ``--torchrun``: the same warm run under ``torchrun --standalone --nproc_per_node 2``, the
  peaks of each training process.
The corpora are ``attnseq data dates --locales all`` (distinct sources, at most --unique of
them); a larger size repeats that file (the tokenising, the store and the batches cost the same
for a repeated line). Files and caches go to --work (default: $TMPDIR/attnseq-bench-scale).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRESET = ROOT / "configs" / "recommended-char.yaml"
TARGETS = (
    "RssAnon at the largest size within 1.2x of the smallest's; a warm start at 5,000,000 pairs reaches its "
    "first update in under 10 s; prep at 2 processes at least 1.6x the pairs/s at 1"
)


def corpus(work: Path, pairs: int, unique: int) -> Path:
    """A folder of train.tsv (``pairs`` date pairs), dev.tsv (500) and test.tsv (100)."""
    base = work / f"dates-{unique}"
    if not (base / "train.tsv").exists():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "attnseq.cli",
                "-q",
                "data",
                "dates",
                "--locales",
                "all",
                "--train",
                str(unique),
                "--dev",
                "500",
                "--test",
                "100",
                "--out",
                str(base),
                "--overwrite",
            ],
            check=True,
            cwd=ROOT,
            env=environment(),
        )
    folder = work / f"pairs-{pairs}"
    if not (folder / "train.tsv").exists():
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("dev.tsv", "test.tsv"):
            shutil.copy(base / name, folder / name)
        lines = (base / "train.tsv").read_bytes().splitlines(keepends=True)
        with open(folder / "train.tsv.tmp", "wb") as out:
            for start in range(0, pairs, len(lines)):
                out.writelines(lines[: pairs - start])
        os.replace(folder / "train.tsv.tmp", folder / "train.tsv")
    return folder


def environment(**extra: str) -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", **extra}


def status(pid: int) -> dict[str, int]:
    """VmHWM, VmRSS, RssAnon and RssFile of process ``pid`` in MB ({} once it has ended)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return {}
    values = {}
    for line in lines:
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS", "RssAnon", "RssFile"):
            values[key] = int(value.split()[0]) // 1024
    return values


def family(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*/children"):
            try:
                todo += [int(child) for child in task.read_text().split()]
            except OSError:
                pass
    return found


def trainers(pid: int) -> list[int]:
    """The training processes under ``pid`` (itself, or torchrun's workers)."""
    found = []
    for member in family(pid):
        try:
            command = Path(f"/proc/{member}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"attnseq.cli" in command and b"torch.distributed.run" not in command:
            found.append(member)
    return found


def watch(command: list[str], run: Path, env: dict) -> dict:
    """Run ``command`` (a training into ``run``) to its end: the seconds to its first update (the
    first train record in metrics.jsonl) and the peaks of each training process."""
    shutil.rmtree(run, ignore_errors=True)  # a metrics log of the run before is not this one's
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peaks: dict[int, dict[str, int]] = {}
    first = None
    metrics = run / "metrics.jsonl"
    while process.poll() is None:
        for pid in trainers(process.pid):
            for key, value in status(pid).items():
                peaks.setdefault(pid, {})[key] = max(peaks.get(pid, {}).get(key, 0), value)
        if first is None and metrics.exists() and '"type": "train"' in metrics.read_text(errors="replace"):
            first = time.perf_counter() - started
        time.sleep(0.02)
    err = process.stderr.read()
    if process.returncode != 0:
        raise SystemExit(f"scale: {' '.join(command[-12:])} failed: {err.strip().splitlines()[-1:]}")
    return {"first_update": first, "seconds": time.perf_counter() - started, "processes": list(peaks.values())}


def seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def train_command(data: Path, run: Path, cache: Path, steps: int, torchrun: bool = False) -> list[str]:
    prefix = (
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
        if torchrun
        else [sys.executable]
    )
    return [
        *prefix,
        "-m",
        "attnseq.cli",
        "-q",
        "train",
        str(PRESET),
        "--data",
        str(data),
        "--out",
        str(run),
        "--overwrite",
        "--set",
        f"data.cache={cache}",
        "--set",
        f"train.max_steps={steps}",
        "--set",
        "train.threads=1",
        "--set",
        "train.log_every=1",
        "--set",
        "train.eval_max_sentences=20",
        "--set",
        "train.progress=false",
    ]


def prepare_alone(data: Path, cache: Path, processes: int) -> dict:
    """Prepare ``data``'s training pairs into ``cache`` (fresh) with ``processes``, in a process
    of its own: its JSON line (seconds, pairs, peaks)."""
    shutil.rmtree(cache, ignore_errors=True)
    result = subprocess.run(
        [sys.executable, __file__, "--prepare", str(data), str(cache), str(processes)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=environment(),
    )
    if result.returncode != 0:
        raise SystemExit(f"scale: preparing {data} failed: {result.stderr.strip().splitlines()[-1:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def prepare_here(data: str, cache: str, processes: str) -> None:
    """``--prepare``: what prepare_alone runs (prints one JSON line)."""
    import resource

    from attnseq.config import load_config
    from attnseq.data.prepare import prepare_training
    from attnseq.data.sources import SOURCES

    config = load_config(PRESET, [f"data.dir={data}", f"data.cache={cache}", f"data.processes={processes}"])
    started = time.perf_counter()
    _, store = prepare_training(config.data, SOURCES.get("tsv")().training_text(config.data))
    seconds = time.perf_counter() - started
    own = status(os.getpid())
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
    disk = sum(f.stat().st_size for f in store.folder.iterdir()) / 2**20
    print(
        json.dumps(
            {
                "seconds": seconds,
                "pairs": store.manifest["read"],
                "used": store.manifest["processes"],
                "peak_rss": own["VmHWM"],
                "rss_anon": own["RssAnon"],
                "workers_peak_rss": workers,
                "disk_mb": round(disk, 1),
            }
        )
    )


def scale_table(
    sizes: list[int], processes: list[int], torchrun_sizes: list[int], steps: int, work: Path, unique: int
) -> str:
    """The scale table (Markdown), with the targets and whether they are met."""
    work.mkdir(parents=True, exist_ok=True)
    rows, anon, warm, rates, ranks = [], {}, {}, {}, {}
    for size in sizes:
        data = corpus(work, size, min(size, unique))
        for count in processes:
            prep = prepare_alone(data, work / "cache-prep", count)
            rates[size, count] = prep["pairs"] / prep["seconds"]
            used = "" if prep["used"] == count else f" ({prep['used']} used: the file makes as many parts)"
            rows.append(
                f"| {size:,} | prep, {count} process{'es' if count > 1 else ''}{used} | {prep['seconds']:.1f} s, "
                f"{rates[size, count]:,.0f} pairs/s, {prep['disk_mb']:,.0f} MB on disk | "
                f"{prep['peak_rss']:,} (workers {prep['workers_peak_rss']:,}) | {prep['rss_anon']:,} | | |"
            )
            print(f"  {rows[-1]}", file=sys.stderr, flush=True)
        cache = work / f"cache-{size}"
        shutil.rmtree(cache, ignore_errors=True)
        cold = watch(train_command(data, work / "run", cache, steps), work / "run", environment())
        run = watch(train_command(data, work / "run", cache, steps), work / "run", environment())
        peak = run["processes"][0]
        anon[size], warm[size] = peak["RssAnon"], run["first_update"]
        rows.append(
            f"| {size:,} | train, 1 process | | {peak['VmHWM']:,} | {peak['RssAnon']:,} | {peak['RssFile']:,} "
            f"| {seconds(cold['first_update'])} / {seconds(run['first_update'])} |"
        )
        print(f"  {rows[-1]}", file=sys.stderr, flush=True)
        if size in torchrun_sizes:
            run = watch(
                train_command(data, work / "run", cache, steps, torchrun=True),
                work / "run",
                environment(OMP_NUM_THREADS="1"),
            )
            ranks[size] = [peak["RssAnon"] for peak in run["processes"]]
            for rank, peak in enumerate(run["processes"]):
                rows.append(
                    f"| {size:,} | torchrun, process {rank} of 2 | | {peak['VmHWM']:,} | {peak['RssAnon']:,} | "
                    f"{peak['RssFile']:,} | - / {seconds(run['first_update'])} |"
                )
                print(f"  {rows[-1]}", file=sys.stderr, flush=True)
    smallest, largest = min(sizes), max(sizes)
    checks = [
        f"RssAnon {largest:,} / {smallest:,} pairs: {anon[largest] / anon[smallest]:.2f}x (target <= 1.2x)",
        f"warm start to the first update at {largest:,} pairs: {seconds(warm[largest])} s (target < 10 s at 5,000,000)",
    ]
    checks += [
        f"torchrun at {size:,} pairs, RssAnon of each process / one process at {smallest:,}: "
        f"{', '.join(f'{a / anon[smallest]:.2f}x' for a in peaks)} (target <= 1.2x)"
        for size, peaks in ranks.items()
    ]
    if 1 in processes and 2 in processes:
        checks += [
            f"prep at {size:,} pairs, 2 processes / 1: {rates[size, 2] / rates[size, 1]:.2f}x (target >= 1.6x)"
            for size in sizes
        ]
    header = [
        "| pairs | step | prep | peak RSS MB | peak RssAnon MB | RssFile MB | first update s, cold / warm |",
        "|---|---|---|---|---|---|---|",
    ]
    return "\n".join(
        [
            f"Scale ({steps} updates of {PRESET.name}, train.threads=1; {os.cpu_count()} CPUs):",
            "",
            *header,
            *rows,
            "",
            *(f"- {check}" for check in checks),
            "",
        ]
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[50_000, 500_000, 5_000_000],
        help="training pairs of each corpus (default: 50000 500000 5000000)",
    )
    parser.add_argument(
        "--processes", type=int, nargs="+", default=[1, 2], help="processes that prepare the store (default: 1 2)"
    )
    parser.add_argument(
        "--torchrun",
        type=int,
        nargs="*",
        default=None,
        help="sizes (among --sizes) also trained under torchrun with 2 processes (default: the "
        "largest size; none: give --torchrun alone)",
    )
    parser.add_argument("--steps", type=int, default=20, help="updates of each training run (default: 20)")
    parser.add_argument(
        "--unique",
        type=int,
        default=500_000,
        help="distinct pairs generated; larger corpora repeat them (default: 500000)",
    )
    parser.add_argument(
        "--work",
        type=Path,
        default=Path(tempfile.gettempdir()) / "attnseq-bench-scale",
        help="where the corpora, caches and runs go (default: $TMPDIR/attnseq-bench-scale)",
    )


def complaint(args: argparse.Namespace) -> str | None:
    """What is wrong with the scale table's arguments, in one line; None when nothing is."""
    for flag, values in (
        ("--sizes", args.sizes),
        ("--processes", args.processes),
        ("--torchrun", args.torchrun),
        ("--steps", [args.steps]),
        ("--unique", [args.unique]),
    ):
        if any(v < 1 for v in values):
            return f"scale: {flag} {' '.join(map(str, values))}: give whole numbers of at least 1"
    others = [size for size in args.torchrun if size not in args.sizes]
    if others:
        return (
            f"scale: --torchrun {' '.join(map(str, others))}: not among --sizes {' '.join(map(str, args.sizes))}; "
            "torchrun trains on a corpus the table made"
        )
    return None


def run(args: argparse.Namespace) -> str:
    if args.torchrun is None:
        args.torchrun = [max(args.sizes)] if args.sizes else []
    wrong = complaint(args)
    if wrong:
        print(wrong, file=sys.stderr)
        raise SystemExit(2)
    return scale_table(args.sizes, args.processes, args.torchrun, args.steps, args.work, args.unique)


def main() -> int:
    if sys.argv[1:2] == ["--prepare"]:
        prepare_here(*sys.argv[2:5])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    print(run(parser.parse_args()))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
