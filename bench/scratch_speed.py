"""Speed of the NumPy engine on the book's chapter-8 experiment (date format, attention).

Trains attnseq.scratch's AttentionSeq2seq on date.txt exactly as the book does (reversed
source, embedding 16, LSTM 256, batch 128, Adam 1e-3, clip 5), through the numpy engine
(``run_book``: the same run as ``attnseq train configs/book-attention.yaml --data date.txt --set
engine=numpy``), on one BLAS thread (unless --threads says otherwise), and prints per epoch: seconds per training iteration, training
seconds, evaluation seconds for the 5,000 test dates (batched greedy decoding), and test exact
match.  The book's own code, measured
single-threaded on this machine, takes 0.147 s per iteration and about 30 s to evaluate the
test set one date at a time (notes/book-reference.md).

Those figures were taken on one machine at one time.  With ``--book-code DIR``, a checkout of
the book's repository (github.com/oreilly-japan/deep-learning-from-scratch-2), the script also
times the book's own code here, in the same run: training iterations of both engines on the
same batches in alternating rounds, and the book's one-at-a-time evaluation on
``--book-eval-samples`` test dates (scaled to the whole test set), then prints the ratios.

    .venv/bin/python bench/scratch_speed.py [--epochs 3] [--data PATH] [--model attention]
                                            [--eval-batch 1000] [--threads 1] [--json FILE]
                                            [--book-code DIR] [--book-eval-samples 500]
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
from attnseq.engines.numpy_engine.book import book_arrays, run_book  # noqa: E402

DATE_TXT = Path(__file__).resolve().parents[2] / "shared" / "data" / "book" / "date.txt"

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
    except Exception:  # older NumPy: no dict mode
        pass
    threads = f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}"
    try:
        from threadpoolctl import threadpool_info

        threads = ", ".join(f"{p['internal_api']} {p['num_threads']} thread(s)" for p in threadpool_info())
    except ImportError:
        pass
    return f"NumPy {np.__version__}, {name}; {threads}"


def compare_with_book(book_dir: str, data_path: str, rounds: int = 3, iters: int = 30, eval_samples: int = 500) -> dict:
    """Seconds per training iteration (median per round) and to evaluate the test set, for the
    book's AttentionSeq2seq and attnseq.scratch's, timed alternately on the same batches."""
    from attnseq.scratch import Adam, build_model, clip_grads, fused

    root = Path(book_dir).resolve()
    sys.path[:0] = [str(root), str(root / "ch08")]
    from attention_seq2seq import AttentionSeq2seq as BookAttentionSeq2seq  # noqa: E402
    from common.optimizer import Adam as BookAdam  # noqa: E402
    from common.trainer import remove_duplicate  # noqa: E402
    from common.util import clip_grads as book_clip_grads  # noqa: E402

    data = book_arrays(data_path)  # questions already reversed, as the book feeds them
    x_train, x_test = data.x_train, data.x_test
    np.random.seed(1984)
    book = BookAttentionSeq2seq(data.vocab_size, 16, 256)
    ours = build_model("attention", data.vocab_size, layers=fused)  # the engine's layers
    book_adam, our_adam = BookAdam(), Adam()

    def book_step(x, t):  # the body of the book's Trainer.fit
        book.forward(x, t)
        book.backward()
        params, grads = remove_duplicate(book.params, book.grads)
        book_clip_grads(grads, 5.0)
        book_adam.update(params, grads)

    def our_step(x, t):
        ours.forward(x, t)
        ours.backward()
        clip_grads(ours.grads, 5.0)
        our_adam.update(ours.params, ours.grads)

    def timed(step, batches) -> float:
        seconds = []
        for b in batches:
            tick = time.perf_counter()
            step(x_train[b], data.t_train[b])
            seconds.append(time.perf_counter() - tick)
        return float(np.median(seconds))

    order = np.random.permutation(len(x_train))
    batches = [order[k * 128 : (k + 1) * 128] for k in range(iters)]
    timed(book_step, batches[:2])  # warm-up: buffers, caches
    timed(our_step, batches[:2])
    book_iter, our_iter = [], []
    for r in range(rounds):
        book_iter.append(timed(book_step, batches))
        our_iter.append(timed(our_step, batches))
        print(
            f"round {r + 1}: s/iter book {book_iter[-1]:.4f}, attnseq {our_iter[-1]:.4f} "
            f"({book_iter[-1] / our_iter[-1]:.2f}x)",
            flush=True,
        )

    n = min(eval_samples, len(x_test))
    tick = time.perf_counter()
    for i in range(n):  # the book's evaluation: one date at a time
        answer = data.t_test[i]
        book.generate(x_test[[i]], answer[0], len(answer) - 1)
    book_eval = (time.perf_counter() - tick) * len(x_test) / n
    tick = time.perf_counter()
    for lo in range(0, len(x_test), 1000):  # batched greedy generation of every answer
        ours.generate(x_test[lo : lo + 1000], data.t_test[0, 0], data.t_test.shape[1] - 1)
    our_eval = time.perf_counter() - tick
    result = {
        "book_iter_seconds": min(book_iter),
        "iter_seconds": min(our_iter),
        "book_eval_seconds": book_eval,
        "eval_seconds": our_eval,
        "book_eval_samples": n,
    }
    print(
        f"best round: s/iter book {result['book_iter_seconds']:.4f}, attnseq "
        f"{result['iter_seconds']:.4f}: {result['book_iter_seconds'] / result['iter_seconds']:.2f}x"
    )
    print(
        f"evaluate {len(x_test):,} test dates: book {book_eval:.1f} s (one at a time, from "
        f"{n:,}), attnseq {our_eval:.2f} s (batched): {book_eval / our_eval:.1f}x"
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--data", default=str(DATE_TXT))
    parser.add_argument("--model", default="attention", help="baseline, peeky, attention or bi-attention")
    parser.add_argument("--eval-batch", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1, as the book's figures)")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument(
        "--book-code", metavar="DIR", help="a checkout of the book's repository: time its code here too"
    )
    parser.add_argument(
        "--book-eval-samples", type=int, default=500, help="test dates the book's evaluation is timed on (default 500)"
    )
    args = parser.parse_args()

    print(f"attnseq.scratch speed: {args.model} on {args.data}")
    print(f"machine: {cpu_name()}, {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f} at start")
    print(f"BLAS: {blas_description()}")
    print(
        f"book (1 thread, this machine): {BOOK_SECONDS_PER_ITER} s/iter, "
        f"~{BOOK_EVAL_SECONDS:.0f} s to evaluate 5,000 dates"
    )
    print()
    comparison = None
    if args.book_code:
        print("the book's code and attnseq.scratch, timed alternately in this run:")
        comparison = compare_with_book(args.book_code, args.data, eval_samples=args.book_eval_samples)
        print()
    if args.epochs < 1:
        return
    header = (
        f"{'epoch':>5} {'s/iter':>8} {'train s':>8} {'eval s':>7} {'accuracy':>9} "
        f"{'loss':>6} {'iter x':>7} {'eval x':>7}"
    )  # loss: on the test dates
    print(header)
    print("-" * len(header))

    def report(epoch: int, info: dict) -> None:
        print(
            f"{epoch:>5} {info['iter_seconds']:>8.4f} {info['train_seconds']:>8.1f} "
            f"{info['eval_seconds']:>7.2f} {100 * info['accuracy']:>8.3f}% "
            f"{info['loss']:>6.3f} {BOOK_SECONDS_PER_ITER / info['iter_seconds']:>6.2f}x "
            f"{BOOK_EVAL_SECONDS / info['eval_seconds']:>6.1f}x",
            flush=True,
        )

    start = time.perf_counter()
    result = run_book(args.data, model=args.model, epochs=args.epochs, on_epoch=report, eval_batch=args.eval_batch)
    total = time.perf_counter() - start
    print()
    print(
        f"iterations per epoch: {result['iterations_per_epoch']}; total {total:.0f} s; "
        f"load average {os.getloadavg()[0]:.2f} at end"
    )
    if args.model == "attention":
        book = ", ".join(f"epoch {e}: {100 * a:.2f}%" for e, a in BOOK_ACCURACY.items())
        print(f"book's accuracy for comparison: {book}")
    if args.json:
        figures = {k: v for k, v in result.items() if k != "model"}
        figures.update(blas=blas_description(), model=args.model, total_seconds=total, book_comparison=comparison)
        Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
