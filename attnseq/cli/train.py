"""``attnseq train [CONFIG] --data DIR --out RUN``: train a model from a config (or the recommended
preset for the data) into a run folder; prints the run's summary as one JSON line."""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path

from ..errors import UserError
from .arguments import add_set, given_options

HELP = "train a model from a config"
DESCRIPTION = (
    "Train a model: a config (see configs/) on --data, into --out. Without a config the recommended "
    "preset for the data is used. Bound the run with --max-minutes (wall-clock, evaluations "
    "included) or --set train.max_steps=N."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "config",
        nargs="?",
        help="YAML config (see configs/); default: the recommended preset for the data (characters or subwords)",
    )
    parser.add_argument(
        "--data",
        help="folder with train.tsv, dev.tsv, test.tsv, or one file of the "
        "book's question_answer lines (date.txt: data.format book)",
    )
    parser.add_argument("--out", help="run folder (default runs/CONFIG_NAME)")
    add_set(parser, "override a config value")
    parser.add_argument("--resume", action="store_true", help="continue the run in --out where it stopped")
    parser.add_argument("--overwrite", action="store_true", help="replace the run in --out (its files are removed)")
    parser.add_argument(
        "--max-minutes",
        type=float,
        metavar="N",
        help="stop training after N minutes of wall-clock time (train.max_minutes)",
    )
    parser.set_defaults(parser=parser)  # an interrupted run() gives the options again in the command that resumes


def run(args: argparse.Namespace) -> None:
    from ..engines import trainer_for
    from ..train.interrupts import Interrupted

    given = args.config
    config = load_config(args)
    engine = trainer_for(config)
    config = engine.check(config)
    run_dir = Path(args.out or Path("runs") / Path(args.config).stem)
    try:
        summary = engine.train(config, run_dir, resume=args.resume, overwrite=args.overwrite)
    except Interrupted as err:
        err.resume_with = resume_command(args, given, run_dir)
        raise
    if summary is not None:  # None: a process of a distributed run that does not write the run
        print(json.dumps({k: v for k, v in summary.items() if k != "type"}))


def resume_command(args: argparse.Namespace, config: str | None, run_dir: Path) -> str:
    """The command that continues the run ``args`` trains in ``run_dir``: the same config and
    options (--overwrite left out) with --resume."""
    words = [
        "attnseq",
        "train",
        *([config] if config else []),
        *given_options(args.parser, args, skip=("out", "resume", "overwrite")),
        "--out",
        str(run_dir),
        "--resume",
    ]
    return shlex.join(words)


def load_config(args: argparse.Namespace):
    """The Config of CONFIG (or, without one, of the recommended preset for --data, which then
    becomes ``args.config``) with --data, --set and --max-minutes applied."""
    from ..config import load_config
    from ..data.sources import data_overrides

    overrides = list(args.set or [])
    if args.max_minutes is not None:
        overrides.append(f"train.max_minutes={args.max_minutes}")
    if args.config is None:
        if not args.data:
            raise UserError("train: give a config, or --data for the recommended preset")
        from ..presets import recommended_config

        preset, for_data = recommended_config(args.data)
        args.config, overrides[:0] = str(preset), for_data  # the user's settings after the preset's
    if args.data:
        overrides[:0] = data_overrides(args.data)  # a folder of splits, or the book's file
    return load_config(args.config, overrides)
