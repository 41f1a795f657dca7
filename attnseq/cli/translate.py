"""``attnseq translate RUN``: translate lines of --input or stdin (an interactive prompt on a
terminal), n-best lists, or the untranslated entries of a gettext catalog (--po); ``attnseq
translate RUN1 RUN2 ...`` with the runs' ensemble.

One warning line says which lines hold pieces outside the model's vocabulary (read as unknown),
with the first of those pieces, and one which lines were blank (a blank line gets a blank
output line, so outputs stay in line with inputs)."""

from __future__ import annotations

import argparse
import json
import logging
import sys

from ..errors import UserError
from ..files import check_output, write_output
from .arguments import (
    add_checkpoint,
    add_engine,
    add_overwrite,
    add_precision,
    add_runs,
    add_set_decode,
    one_or_ensemble,
    run_files,
)

HELP = "translate lines from stdin or --input"
log = logging.getLogger("attnseq")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_runs(parser)
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--input",
        help="a file of source sentences, one a line; for a run that reads files (data.input "
        "image), of their paths, relative to the current folder (default: stdin)",
    )
    source.add_argument(
        "--files",
        nargs="+",
        metavar="PATH",
        help="source files to translate, an output line each, for a run that reads files "
        "(data.input image) (default: none; --input or stdin)",
    )
    parser.add_argument("--output", help="the file to write the translations to (default: stdout)")
    add_overwrite(parser, "replace the --output file if it exists (never an input)")
    parser.add_argument("--beam", type=int, help="beam size (default: the run's decode.beam_size)")
    parser.add_argument("--n-best", type=int, help="print N 'score<TAB>hypothesis' lines per input (not with --po)")
    source.add_argument("--po", help="fill the untranslated entries of this gettext catalog (with --output)")
    add_checkpoint(parser)
    add_engine(parser)
    add_set_decode(parser)
    add_precision(parser)


def run(args: argparse.Namespace) -> None:
    from ..api import load
    from ..translator.base import InputReport

    if args.po and not args.output:
        raise UserError("translate --po: give --output FILE.po")
    if args.po and args.n_best is not None:
        raise UserError("translate --po and --n-best: a catalog takes one translation per entry; drop --n-best")
    inputs = [args.input, args.po, *(args.files or ()), *(path for run in args.run for path in run_files(run))]
    if args.output:  # before the model is loaded and anything translated
        check_output(args.output, inputs=inputs, overwrite=args.overwrite)
    translator = load(
        one_or_ensemble(args.run),
        checkpoint=args.checkpoint,
        overrides=args.set or [],
        precision=args.precision,
        engine=args.engine,
    )
    request = {"beam_size": args.beam, "n_best": args.n_best}
    settings = translator.decode_settings(**request)  # a wrong --beam / --n-best fails before any input is read
    if args.po:
        from ..data.corpora.gettext import translate_po

        summary = translate_po(translator, args.po, args.output, beam_size=args.beam, overwrite=args.overwrite)
        print(json.dumps(summary))
        return
    if args.files:
        if translator.pipeline.inputs.reads_text:
            raise UserError(
                "translate --files: the run reads text (data.input text); give its lines with --input or on stdin"
            )
        lines = args.files
    elif args.input:
        from ..data.corpus import read_lines

        lines = read_lines(args.input, controls=True)
    elif sys.stdin.isatty():
        return interactive(translator, request)
    else:
        from ..data.corpus import decode_lines

        lines = decode_lines(sys.stdin.buffer.read(), "stdin", controls=True)
    results = translator.search(lines, progress=True, **request)
    for line in InputReport.of(results).warnings("line"):  # pieces read as unknown, blank lines
        log.warning("translate: %s", line)
    out_lines = []
    for r in results:
        if settings.n_best > 1:  # n lines an input, so that blocks stay in step: a blank input's
            # one blank output, or a search that found fewer, is followed by lines of score -inf
            found = [f"{score:.4f}\t{text}" for text, score in zip(r.outputs, r.scores)]
            out_lines += found + ["-inf\t"] * (settings.n_best - len(found))
        else:
            out_lines.append(r.outputs[0])
    text = "".join(line + "\n" for line in out_lines)
    if args.output:
        write_output(args.output, text, inputs=inputs, overwrite=args.overwrite)
    else:
        sys.stdout.write(text)


def interactive(translator, request: dict) -> None:
    """Translate each line typed at the prompt (its hypotheses with their scores) until end of input.
    The prompt edits its line and keeps its history as a shell does (GNU readline, where Python has
    it): an arrow key moves the cursor, where without it its escape code was read as text."""
    try:
        import readline  # noqa: F401  (input() edits lines once it is imported)
    except ImportError:  # a Python built without it: plain input
        pass
    print("Type a sentence and press Enter (Ctrl-D to quit; arrow keys edit and recall).", file=sys.stderr)
    while True:
        try:
            line = input("> ")
        except EOFError:
            print(file=sys.stderr)
            return
        if line.strip():
            r = translator.search([line], **request)[0]
            if r.unknown:
                print(
                    f"(read as unknown, outside the model's vocabulary: {' '.join(map(repr, r.unknown))})",
                    file=sys.stderr,
                )
            for text, score in zip(r.outputs, r.scores):
                print(f"{text}\t({score:.3f})")
