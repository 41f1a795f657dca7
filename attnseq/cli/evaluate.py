"""``attnseq evaluate RUN --data FILE``: exact match, token accuracy, BLEU and chrF of a trained
run on a test set against the references as given, with sacrebleu's signature of each score, as
a table or one JSON object; a warning line names the sources holding pieces outside the model's
vocabulary. Several runs are evaluated as their ensemble."""

from __future__ import annotations

import argparse
import json
import logging

from .arguments import add_checkpoint, add_engine, add_precision, add_runs, add_set_decode, one_or_ensemble

HELP = "exact match, token accuracy, BLEU and chrF on a TSV file"
log = logging.getLogger("attnseq")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_runs(parser)
    parser.add_argument(
        "--data",
        required=True,
        help="source<TAB>reference file, a data folder (its test.tsv), or the book's file (its test set)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--beam", type=int, help="beam size (default: the run's decode.beam_size)")
    add_checkpoint(parser)
    add_engine(parser)
    add_set_decode(parser)
    add_precision(parser)


def run(args: argparse.Namespace) -> None:
    from ..api import load
    from ..data.sources import evaluation_pairs
    from ..translator.base import InputReport

    translator = load(
        one_or_ensemble(args.run),
        checkpoint=args.checkpoint,
        overrides=args.set or [],
        precision=args.precision,
        engine=args.engine,
    )
    pairs = evaluation_pairs(args.data, translator.config.data)
    metrics = translator.evaluate(pairs, beam_size=args.beam, progress=True)
    if "bleu" not in metrics:
        from ..eval.metrics import BLEU_MIN_WORDS

        log.warning(
            "evaluate: no BLEU, the references average fewer than %d words (chrF and exact match judge them)",
            BLEU_MIN_WORDS,
        )
    report = InputReport(len(pairs), **{key: metrics[key] for key in InputReport.of([]).as_dict()})
    for line in report.warnings("source"):  # pieces read as unknown, blank sources, empty outputs
        log.warning("evaluate: %s", line)
    if args.json:
        print(json.dumps(metrics))
    else:
        for key, value in metrics.items():
            if isinstance(value, (list, dict)):  # which sources held what: in the warnings above
                continue
            print(f"{key:>22}: {value:.4f}" if isinstance(value, float) else f"{key:>22}: {value}")
