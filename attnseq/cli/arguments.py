"""What several commands share: the help formatter, the run folders, the ``--set``,
``--checkpoint``, ``--engine`` and ``--overwrite`` arguments, the types of counts, and the
command words that give the parsed options again."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import explained


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Argument help followed by ``(default: X)`` where there is a default; an argument without
    one (None) or a flag (False) says nothing more."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if action.default is None or action.default is False:
            return action.help or ""
        return super()._get_help_string(action)


def add_set(parser: argparse.ArgumentParser, help: str) -> None:
    """``--set KEY=VALUE``, repeatable: ``args.set`` is a list of them, or None."""
    parser.add_argument("--set", action="append", metavar="KEY=VALUE", help=help)


def add_set_decode(parser: argparse.ArgumentParser) -> None:
    """``--set`` for a trained run, which may change only its decode settings."""
    add_set(parser, "override a decode setting, e.g. decode.length_penalty=0.6")


def add_checkpoint(parser: argparse.ArgumentParser) -> None:
    """``--checkpoint best|last``: which weights of a run (of every run of an ensemble) to load."""
    parser.add_argument(
        "--checkpoint",
        choices=("best", "last"),
        default="best",
        help="the weights of the best evaluation, or the last ones saved",
    )


def add_runs(parser: argparse.ArgumentParser) -> None:
    """The run folder, or several: ``args.run`` is a list of them (one_or_ensemble gives what to load)."""
    parser.add_argument(
        "run",
        nargs="+",
        help="the run folder (attnseq train --out); several: their ensemble, "
        "the mean of the models' log-probabilities at every step",
    )


def one_or_ensemble(runs: list[str]) -> str | list[str]:
    """What ``attnseq.load`` loads for the runs given on the command line: the one run, or the list."""
    return runs[0] if len(runs) == 1 else runs


def add_precision(parser: argparse.ArgumentParser) -> None:
    """``--precision fp32|int8|bf16``: what a loaded torch model's products run in (decode.precision)."""
    from ..config import DECODE_PRECISIONS

    parser.add_argument(
        "--precision",
        choices=DECODE_PRECISIONS,
        help="int8: int8 weights for the linear layers and recurrent cells, on a CPU with VNNI or "
        "AMX (elsewhere one warning and fp32); bf16: bfloat16 products where they pay (AMX, a "
        "GPU; elsewhere one warning and fp32) (default: the run's decode.precision, fp32 unless set)",
    )


def add_engine(parser: argparse.ArgumentParser) -> None:
    """``--engine NAME``: decode a run with another engine than its own, converted on the fly."""
    parser.add_argument(
        "--engine",
        choices=("torch", "ctranslate2"),
        help="decode with this engine (default: the run's own; ctranslate2: a torch Transformer run "
        "exported to a temporary float32 folder first; an exported folder decodes as it is)",
    )


def add_overwrite(parser: argparse.ArgumentParser, help: str = "replace the output file if it exists") -> None:
    """``--overwrite``: the command may replace what its output path holds (attnseq.files)."""
    parser.add_argument("--overwrite", action="store_true", help=help)


def run_files(run_dir: str | None) -> list[Path]:
    """The files a trained run is made of (config, checkpoints, vocabularies, metrics), or an
    exported model (its engine's files): inputs of a command that reads the run, which its
    outputs must never replace."""
    if not run_dir:
        return []
    from ..runs import CTRANSLATE2_FILES, RUN_FILES

    return [Path(run_dir) / name for name in RUN_FILES + CTRANSLATE2_FILES]


def count(text: str) -> int:
    """An argument type: a whole number >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {value}")
    return value


def share(text: str) -> float:
    """An argument type: a fraction in [0, 1), or a count (a whole number >= 1)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction below 1 or a count, got {text!r}") from None
    if not (0 <= value < 1 or (value >= 1 and value.is_integer())):
        raise argparse.ArgumentTypeError(f"expected a fraction in [0, 1) or a whole count >= 1, got {text}")
    return value


def positive(text: str) -> int:
    """An argument type: a whole number >= 1."""
    value = count(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value}")
    return value


def given_options(parser: argparse.ArgumentParser, args: argparse.Namespace, skip: tuple[str, ...] = ()) -> list[str]:
    """The words that give ``parser``'s optional arguments as ``args`` holds them, those left at
    their defaults (and the dests in ``skip``) left out, in the parser's order:
    ``["--seeds", "3", "--set", "a=1", "--set", "b=2"]``. Floats are written with ``:g``."""
    words: list[str] = []
    for action in parser._actions:
        value = getattr(args, action.dest, action.default)
        if not action.option_strings or action.dest in skip or value == action.default:
            continue
        flag = action.option_strings[-1]  # the long form
        if value is True:
            words.append(flag)
        elif isinstance(value, list):
            words += [word for item in value for word in (flag, str(item))]
        else:
            words += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    return words


# the Python API's arguments (attnseq.load, Translator.translate) as the command line gives them:
# an argument that is a positional word names nothing ("" : its message names the path)
API_WORDS = {
    "run_dir": "",
    "overrides": "--set",
    "checkpoint": "--checkpoint",
    "precision": "--precision",
    "beam_size": "--beam",
    "n_best": "--n-best",
}


def command_line_message(err: BaseException) -> str | None:
    """The one line for ``err`` in the command line's words (attnseq.errors' table), None for a
    bug: the API's errors name their argument (``overrides: decode.nope: unknown key``), which a
    command names by its flag (``--set decode.nope: unknown key``) or, for a positional word,
    not at all."""
    found = explained(err)
    if found is None:
        return None
    argument, detail = getattr(err, "argument", None), getattr(err, "detail", None)
    word = API_WORDS.get(argument.split("[")[0]) if argument and detail is not None else None  # run_dir[1]
    if word is None:
        return found[0]
    if word and getattr(err, "key", None):
        return f"{word} ({err.key}): {detail}"
    return f"{word} {detail}" if word and not detail.startswith(word) else detail
