"""``attnseq export RUN --to ctranslate2 --out DIR``: a Transformer run made into a folder that
CTranslate2 decodes (float32 or int8 weights), with the run's vocabularies and tokenizer, which
``attnseq translate``, ``evaluate``, ``serve`` and ``plot attention`` read as they read a run.

A design CTranslate2's Transformer specification cannot express (a recurrent or memory
architecture, an option it has no place for) is refused in one line naming it."""

from __future__ import annotations

import argparse

from .arguments import add_checkpoint, add_overwrite

HELP = "export a Transformer run to another inference engine (CTranslate2)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..export import FORMATS, QUANTIZATIONS

    parser.add_argument("run", help="the run folder (attnseq train --out)")
    parser.add_argument("--to", choices=FORMATS, required=True, help="the engine to export to")
    parser.add_argument(
        "--quantization",
        choices=QUANTIZATIONS,
        default="float32",
        help="the weights' type: float32 (the run's), or int8 (CTranslate2's, per output row)",
    )
    add_checkpoint(parser)
    parser.add_argument("--out", required=True, help="the folder to write (built whole, then renamed into place)")
    add_overwrite(parser, "replace the --out folder if it holds an earlier export (never a folder of other files)")


def run(args: argparse.Namespace) -> None:
    from ..export.ctranslate2_spec import export_ctranslate2
    from ..files import check_new_folder
    from ..runs import EXPORT_FILE

    check_new_folder(args.out, marker=EXPORT_FILE, inputs=[args.run], overwrite=args.overwrite)  # before any work
    folder = export_ctranslate2(args.run, args.out, args.quantization, args.checkpoint, args.overwrite)
    print(f"wrote {folder} ({args.quantization}): attnseq translate {folder}")
