"""``attnseq compare CONFIG... --data DIR``: train several configs under one time budget and
tabulate them."""

from __future__ import annotations

import argparse
from pathlib import Path

from .arguments import add_overwrite, add_set

HELP = "train several configs under one budget and tabulate them"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("configs", nargs="+", help="the YAML configs to compare")
    parser.add_argument("--data", required=True, help="folder with train.tsv, dev.tsv, test.tsv")
    parser.add_argument("--budget-minutes", type=float, default=5.0, help="training time per config")
    parser.add_argument("--out", default="runs/compare", help="folder for the runs and the table")
    add_set(parser, "override for every config")
    add_overwrite(parser, "replace the runs, table and curves an earlier comparison left in --out")


def run(args: argparse.Namespace) -> None:
    from ..compare import run_compare

    run_compare(
        args.configs, args.data, args.budget_minutes, Path(args.out), overrides=args.set or [], overwrite=args.overwrite
    )
