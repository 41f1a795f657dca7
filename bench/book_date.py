"""The book's chapter-8 experiment through attnseq: configs/book-attention.yaml on date.txt.

Prints, per epoch, the training seconds, the seconds to decode the 5,000 test dates, and test
exact match, next to the book's own accuracy (0% / 51.8% / 99.9% after epochs 1-3). The book's
code is timed against the NumPy engine in one run by ``bench/scratch_speed.py --book-code DIR``.

    python bench/book_date.py [--epochs 3] [--threads 1] [--set KEY=VALUE]

The NumPy engine's own reproduction of the book is bench/scratch_speed.py.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch

from attnseq.reproduce.datasets import BOOK_DIR

BOOK = BOOK_DIR / "date.txt"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", default=str(BOOK))
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from attnseq.config import load_config
    from attnseq.data.corpora.book import load_book
    from attnseq.data.splits import write_split_dir
    from attnseq.engines.torch_engine.trainer import Trainer

    train, dev, test = load_book(args.file)
    work = Path(tempfile.mkdtemp(prefix="book-date-"))
    write_split_dir(work / "data", train, dev, test)
    config = load_config(
        Path(__file__).resolve().parents[1] / "configs" / "book-attention.yaml",
        [f"data.dir={work / 'data'}", f"train.epochs={args.epochs}", "train.progress=false", *args.set],
    )
    rows = []
    last_train = [0.0]

    def on_eval(record: dict) -> None:
        started = time.perf_counter()
        metrics = trainer.translator.evaluate(test, bleu=False)
        seconds = time.perf_counter() - started
        rows.append((record["epoch"], record["train_seconds"] - last_train[0], seconds, metrics["exact_match"]))
        last_train[0] = record["train_seconds"]
        print(
            f"epoch {record['epoch']:.0f}: train {rows[-1][1]:.1f} s, test decode {seconds:.1f} s "
            f"({len(test) / seconds:,.0f} sentences/s), test exact match {metrics['exact_match']:.3%}",
            flush=True,
        )

    trainer = Trainer(config, work / "run", on_eval=on_eval)
    print(
        f"book-attention on {args.file}: {len(trainer.train_store)} train / {len(test)} test, "
        f"{trainer.parameters:,} parameters, threads={args.threads}"
    )
    trainer.fit()
    print("book (NumPy): 0.000% / 51.760% / 99.900% after epochs 1-3 (its seconds: bench/scratch_speed.py --book-code)")


if __name__ == "__main__":
    main()
