"""``attnseq reproduce NAME``: check a claim of the literature (train, tabulate, plot) and write
its page; ``--list`` lists the reproductions."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UserError
from .arguments import add_overwrite, add_set, given_options

HELP = "check a claim of the literature: train, tabulate, plot, write a page"
DESCRIPTION = ("Reproduce one claim of the documents attnseq implements: train what it needs with attnseq's "
               "presets and write OUT/NAME.md with its table and PNG figures (and the index OUT/README.md).")
# where the page and the runs are written: not part of the command the page records
WHERE = ("out", "runs", "overwrite")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", metavar="NAME", help="the reproduction (see --list)")
    parser.add_argument("--list", action="store_true", help="list the reproductions and their default budgets")
    parser.add_argument("--all", action="store_true",
                        help="run every reproduction, one after the other, at its default budget (default: off)")
    parser.add_argument("--budget-minutes", type=float, metavar="N",
                        help="scale the default budget (steps, epochs or minutes) to about N minutes here")
    parser.add_argument("--seeds", type=int, metavar="K",
                        help="runs of each configuration (default: the reproduction's)")
    parser.add_argument("--threads", type=int, default=2, help="torch and BLAS threads of every run")
    parser.add_argument("--out", default="docs/results", help="folder for the page and its figures")
    parser.add_argument("--runs", help="folder for the run folders and data (default runs/reproduce/NAME)")
    add_overwrite(parser, "replace the page, numbers and figures an earlier run of NAME wrote in --out")
    add_set(parser, "an option of the reproduction (sizes, limits; --list shows the budget's)")
    parser.set_defaults(parser=parser)  # run() gives the options again in the page's command


def run(args: argparse.Namespace) -> None:
    from ..reproduce import listing, reproduce

    if args.list:
        if args.name:
            raise UserError(f"reproduce --list and {args.name}: --list lists every reproduction; drop one of them")
        for name, title, budget in listing():
            print(f"{name:20s} {title}\n{'':20s} default: {budget}")
        return
    if args.all:
        from ..reproduce import REPRODUCTIONS

        if args.name or args.list or args.set or args.budget_minutes is not None:
            raise UserError("reproduce --all runs every reproduction at its default budget; give no NAME, --list, "
                            "--set or --budget-minutes with it")
        names = REPRODUCTIONS.names()
        # every page is checked before the first one trains (page.check_page)
        from ..reproduce.page import check_page

        for name in names:
            check_page(Path(args.out), name, args.overwrite)
        for name in names:
            command = " ".join(["attnseq reproduce", name, *given_options(args.parser, args, skip=(*WHERE, "all"))])
            print(reproduce(name, args.out, Path(args.runs) / name if args.runs else None, seeds=args.seeds,
                            threads=args.threads, command=command, overwrite=args.overwrite))
        return
    if not args.name:
        raise UserError("reproduce: give a NAME (attnseq reproduce --list shows them)")
    command = " ".join(["attnseq reproduce", args.name, *given_options(args.parser, args, skip=WHERE)])
    page = reproduce(args.name, args.out, args.runs, budget_minutes=args.budget_minutes, seeds=args.seeds,
                     threads=args.threads, settings=args.set or [], command=command, overwrite=args.overwrite)
    print(page)
