"""``attnseq reproduce NAME``: check a claim of the literature (train, tabulate, plot) and write
its page; ``--list`` lists the reproductions."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..errors import UserError
from ..threads import MAX_THREADS
from .arguments import add_overwrite, add_set, given_options

HELP = "check a claim of the literature: train, tabulate, plot, write a page"
DESCRIPTION = (
    "Reproduce one claim of the documents attnseq implements: train what it needs with attnseq's "
    "presets and write OUT/NAME.md with its table and PNG figures (and the index OUT/README.md)."
)
# where the page and the runs are written: not part of the command the page records
WHERE = ("out", "runs", "overwrite", "resume")
THREADS = 2  # the default of --threads without --jobs


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", metavar="NAME", help="the reproduction (see --list)")
    parser.add_argument("--list", action="store_true", help="list the reproductions and their default budgets")
    parser.add_argument(
        "--all",
        action="store_true",
        help="run every reproduction at its default budget, one after the other (default: off)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="J",
        help="run J processes at a time, a core each: with --all, J reproductions; with NAME, its seeds "
        "cut into J ranges trained side by side, then read together into the page",
    )
    parser.add_argument(
        "--budget-minutes",
        type=float,
        metavar="N",
        help="scale the default budget (steps, epochs or minutes) to about N minutes here",
    )
    parser.add_argument(
        "--seeds",
        metavar="K",
        help="runs of each configuration (default: the reproduction's), train.seed 1 .. K; or FIRST-LAST, "
        "those seeds alone (split a page's runs over processes into one --runs folder, then read "
        "them all with --resume and every seed)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        metavar="T",
        help="torch and BLAS threads of every run (default: 2; with --jobs J, the cores / J)",
    )
    parser.add_argument("--out", default="docs/results", help="folder for the page and its figures")
    parser.add_argument("--runs", help="folder for the run folders and data (default runs/reproduce/NAME)")
    add_overwrite(parser, "replace the page, numbers and figures an earlier run of NAME wrote in --out")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue the runs an interrupted (or finished) reproduction left in --runs where they "
        "stopped, a finished run read rather than trained again, and replace its page; the "
        "options must be the ones the runs were made with (the budget may grow)",
    )
    add_set(parser, "an option of the reproduction (sizes, limits; --list shows the budget's)")
    parser.set_defaults(parser=parser)  # run() gives the options again in the page's command


def run(args: argparse.Namespace) -> None:
    from ..reproduce import listing, reproduce
    from ..reproduce.runner import seed_range

    if args.list:
        if args.name:
            raise UserError(f"reproduce --list and {args.name}: --list lists every reproduction; drop one of them")
        for name, title, budget in listing():
            print(f"{name:20s} {title}\n{'':20s} default: {budget}")
        return
    if args.jobs < 1:
        raise UserError(f"reproduce: --jobs must be at least 1, got {args.jobs}")
    if args.threads is not None and not 1 <= args.threads <= MAX_THREADS:
        raise UserError(
            f"reproduce: --threads must be 1 to {MAX_THREADS:,}, got {args.threads} (the cores, "
            f"{os.cpu_count() or 1} here, are the most that helps)"
        )
    if args.all:
        run_all(args)
        return
    if not args.name:
        raise UserError("reproduce: give a NAME (attnseq reproduce --list shows them)")
    command = " ".join(["attnseq reproduce", args.name, *given_options(args.parser, args, skip=WHERE)])
    first_seed, seeds = seed_range(args.seeds) if args.seeds is not None else (None, None)
    if args.jobs > 1:
        split_seeds(args, seeds, command)
        return
    page = reproduce(
        args.name,
        args.out,
        args.runs,
        budget_minutes=args.budget_minutes,
        seeds=seeds,
        first_seed=first_seed if "-" in (args.seeds or "") else None,
        threads=args.threads or THREADS,
        settings=args.set or [],
        command=command,
        overwrite=args.overwrite,
        resume=args.resume,
    )
    print(page)


def shared_threads(what: str, jobs: int, threads: int | None) -> int:
    """The threads of each of ``jobs`` processes at once: ``threads`` as given, else the cores
    shared out (THREADS for one process); a UserError where they would ask for more threads than
    the machine has cores."""
    cores = os.cpu_count() or 1
    threads = threads or (max(1, cores // jobs) if jobs > 1 else THREADS)
    if jobs * threads > cores:
        raise UserError(
            f"reproduce {what} --jobs {jobs} --threads {threads}: {jobs * threads} threads on {cores} cores "
            f"would slow every run; give --threads {max(1, cores // jobs)}"
        )
    return threads


def split_seeds(args: argparse.Namespace, seeds: int | None, command: str) -> None:
    """``reproduce NAME --jobs J``: the page's seeds cut into J ranges, each trained by its own
    process into the one runs folder (runner.train_seed_parts), then all of them read with
    --resume into the page, which then does what a part may not (timed runs) on the machine
    the parts have left."""
    from ..reproduce import REPRODUCTIONS, reproduce
    from ..reproduce.page import check_page
    from ..reproduce.runner import DEFAULT_RUNS, seed_parts, train_seed_parts

    if "-" in (args.seeds or ""):
        raise UserError(
            f"reproduce --jobs {args.jobs} cuts the seeds into ranges itself: give --seeds K, not {args.seeds}"
        )
    seeds = seeds or REPRODUCTIONS.get(args.name, "reproduce").default_seeds
    jobs = min(args.jobs, seeds)
    threads = shared_threads(args.name, jobs, args.threads)
    out = Path(args.out)
    check_page(out, args.name, args.overwrite or args.resume)  # before anything trains
    runs = Path(args.runs) if args.runs else DEFAULT_RUNS / args.name
    words = [
        "--threads",
        str(threads),
        *(["--budget-minutes", f"{args.budget_minutes:g}"] if args.budget_minutes is not None else []),
        *[w for s in args.set or [] for w in ("--set", s)],
        *(["--resume"] if args.resume else []),
    ]
    failed = train_seed_parts(args.name, words, seed_parts(seeds, jobs), runs)
    if failed:
        raise UserError(
            f"reproduce {args.name} --jobs {jobs}: seeds "
            + "; ".join(f"{part}: {why}" for part, why in failed.items())
            + f" (the runs done are kept in {runs}: --resume continues them)"
        )
    page = reproduce(
        args.name,
        out,
        runs,
        budget_minutes=args.budget_minutes,
        seeds=seeds,
        threads=threads,
        settings=args.set or [],
        command=command,
        overwrite=args.overwrite,
        resume=True,
    )
    print(page)


def run_all(args: argparse.Namespace) -> None:
    """``--all``: every reproduction at its default budget, one after the other or ``--jobs`` at a
    time (each in its own process, with the cores shared out among them); every page is checked
    before the first one trains (page.check_page), and the index is written once all have run."""
    from ..reproduce import REPRODUCTIONS, reproduce
    from ..reproduce.page import check_page, write_index
    from ..reproduce.runner import reproduce_in_processes, seed_range

    if args.name or args.list or args.set or args.budget_minutes is not None:
        raise UserError(
            "reproduce --all runs every reproduction at its default budget; give no NAME, --list, "
            "--set or --budget-minutes with it"
        )
    first_seed, seeds = seed_range(args.seeds) if args.seeds is not None else (1, None)
    if first_seed != 1 or "-" in (args.seeds or ""):
        raise UserError(f"reproduce --all --seeds {args.seeds}: --all takes a count of seeds, K")
    threads = shared_threads("--all", args.jobs, args.threads)
    names = REPRODUCTIONS.names()
    for name in names:
        check_page(Path(args.out), name, args.overwrite or args.resume)
    if args.jobs == 1:
        for name in names:
            command = " ".join(
                ["attnseq reproduce", name, *given_options(args.parser, args, skip=(*WHERE, "all", "jobs"))]
            )
            print(
                reproduce(
                    name,
                    args.out,
                    Path(args.runs) / name if args.runs else None,
                    seeds=seeds,
                    threads=threads,
                    command=command,
                    overwrite=args.overwrite,
                    resume=args.resume,
                )
            )
        return
    words = [
        "--out",
        args.out,
        "--threads",
        str(threads),
        *(["--seeds", str(seeds)] if seeds else []),
        *(["--overwrite"] if args.overwrite else []),
        *(["--resume"] if args.resume else []),
    ]
    failed = reproduce_in_processes(names, words, args.jobs, args.runs)
    write_index(Path(args.out))  # once more, after the last page: two pages ending together each wrote it
    if failed:
        raise UserError(
            f"reproduce --all: {len(failed)} of {len(names)} failed: "
            + "; ".join(f"{name}: {why}" for name, why in failed.items())
        )
