"""``attnseq demo``: train an attention model on generated dates, print its test accuracy and
examples, and draw its attention and learning curve (attnseq/demo.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from .arguments import add_overwrite

HELP = "train an attention model on generated dates and show it"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="runs/demo", help="folder for the data, the run and the plots")
    parser.add_argument(
        "--minutes",
        type=float,
        default=3.0,
        help="training time budget (training stops sooner once every dev date is right)",
    )
    add_overwrite(parser, "replace what an earlier demo wrote in --out (its data, run and pictures)")


def run(args: argparse.Namespace) -> None:
    from ..demo import run_demo

    run_demo(Path(args.out), minutes=args.minutes, overwrite=args.overwrite)
