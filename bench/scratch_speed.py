"""Speed of the NumPy engine on the book's chapter-8 experiment (date format, attention).

Trains attnseq.scratch's AttentionSeq2seq on date.txt exactly as the book does (reversed
source, embedding 16, LSTM 256, batch 128, Adam 1e-3, clip 5) on one BLAS thread (unless
--threads says otherwise), and prints per epoch: seconds per training iteration, training
seconds, evaluation seconds for the 5,000 test dates (batched greedy decoding), and test exact
match.  The book's own code, measured
single-threaded on this machine, takes 0.147 s per iteration and about 30 s to evaluate the
test set one date at a time (notes/book-reference.md).

    .venv/bin/python bench/scratch_speed.py [--epochs 3] [--data PATH] [--model attention]
                                            [--eval-batch 1000] [--threads 1] [--json FILE]
"""
from __future__ import annotations

import os
import sys


def _threads_from_argv() -> str:
    """--threads N, read before NumPy is imported (BLAS reads the variables when it loads)."""
    for k, arg in enumerate(sys.argv):
        if arg == "--threads" and k + 1 < len(sys.argv):
            return sys.argv[k + 1]
        if arg.startswith("--threads="):
            return arg.split("=", 1)[1]
    return "1"


for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = _threads_from_argv()

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from attnseq.scratch import run_book  # noqa: E402

BOOK_SECONDS_PER_ITER = 0.147
BOOK_EVAL_SECONDS = 30.0
BOOK_ACCURACY = {1: 0.0, 2: 0.5176, 3: 0.999}


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def blas_description() -> str:
    """Which BLAS NumPy uses and how many threads it will run."""
    name = "unknown BLAS"
    try:
        info = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        name = f"{info.get('name', '?')} {info.get('version', '')}".strip()
    except Exception:                             # older NumPy: no dict mode
        pass
    threads = f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}"
    try:
        from threadpoolctl import threadpool_info
        threads = ", ".join(f"{p['internal_api']} {p['num_threads']} thread(s)"
                            for p in threadpool_info())
    except ImportError:
        pass
    return f"NumPy {np.__version__}, {name}; {threads}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--data", default="/work/shared/data/book/date.txt")
    parser.add_argument("--model", default="attention",
                        help="baseline, peeky, attention or bi-attention")
    parser.add_argument("--seed", type=int, default=None,
                        help="reseed before building the model (default: the book's stream)")
    parser.add_argument("--eval-batch", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads (default 1, as the book's figures)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()

    print(f"attnseq.scratch speed: {args.model} on {args.data}")
    print(f"machine: {cpu_name()}, {os.cpu_count()} CPUs; "
          f"load average {os.getloadavg()[0]:.2f} at start")
    print(f"BLAS: {blas_description()}")
    print(f"book (1 thread, this machine): {BOOK_SECONDS_PER_ITER} s/iter, "
          f"~{BOOK_EVAL_SECONDS:.0f} s to evaluate 5,000 dates")
    print()
    header = (f"{'epoch':>5} {'s/iter':>8} {'train s':>8} {'eval s':>7} {'accuracy':>9} "
              f"{'loss':>6} {'iter x':>7} {'eval x':>7}")
    print(header)
    print("-" * len(header))

    def report(epoch: int, info: dict) -> None:
        print(f"{epoch:>5} {info['iter_seconds']:>8.4f} {info['train_seconds']:>8.1f} "
              f"{info['eval_seconds']:>7.2f} {100 * info['accuracy']:>8.3f}% "
              f"{info['loss']:>6.3f} {BOOK_SECONDS_PER_ITER / info['iter_seconds']:>6.2f}x "
              f"{BOOK_EVAL_SECONDS / info['eval_seconds']:>6.1f}x", flush=True)

    start = time.perf_counter()
    result = run_book(args.data, model=args.model, epochs=args.epochs, seed=args.seed,
                      on_epoch=report, eval_batch=args.eval_batch)
    total = time.perf_counter() - start
    print()
    print(f"iterations per epoch: {result['iterations_per_epoch']}; total {total:.0f} s; "
          f"load average {os.getloadavg()[0]:.2f} at end")
    if args.model == "attention":
        book = ", ".join(f"epoch {e}: {100 * a:.2f}%" for e, a in BOOK_ACCURACY.items())
        print(f"book's accuracy for comparison: {book}")
    if args.json:
        figures = {k: v for k, v in result.items() if k != "model"}
        figures.update(blas=blas_description(), model=args.model, total_seconds=total)
        Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
