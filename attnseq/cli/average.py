"""``attnseq average RUN --last N --out RUN2``: the weights of a run's last N kept checkpoints
(``train.keep_checkpoints``) averaged into a new run folder that translate, evaluate and serve
load like any run; prints a summary as one JSON line."""

from __future__ import annotations

import argparse
import json

from .arguments import add_overwrite, positive

HELP = "average the weights of a run's last kept checkpoints into a new run"
DESCRIPTION = (
    "Average the weights of the last N checkpoints a run kept (trained with "
    "train.keep_checkpoints=N) into a new run folder --out: its config, vocabularies and "
    "best.safetensors, for translate, evaluate and serve."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", help="the run folder whose checkpoints are averaged (attnseq train --out)")
    parser.add_argument(
        "--last",
        type=positive,
        required=True,
        metavar="N",
        help="how many of the run's newest kept checkpoints to average",
    )
    parser.add_argument("--out", required=True, help="the folder of the averaged run (not the run itself)")
    add_overwrite(parser, "write into --out even if it holds files (a run's files there are replaced)")


def run(args: argparse.Namespace) -> None:
    from ..average import average_run

    print(json.dumps(average_run(args.run, args.last, args.out, overwrite=args.overwrite)))
