"""The ``attnseq`` command line. User errors print one line and exit with status 2."""
from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from .errors import UserError

log = logging.getLogger("attnseq")


# -- data ---------------------------------------------------------------------------------------
def write_splits(args, train, dev, test) -> None:
    """Write the three splits of ``attnseq data SOURCE`` into --out (never an empty one)."""
    from .data.splits import write_split_dir

    try:
        write_split_dir(args.out, train, dev, test)
    except ValueError as err:
        raise UserError(f"data {args.source}: {err}") from None
    print(f"wrote {len(train)} train, {len(dev)} dev, {len(test)} test pairs to {args.out}")


def cmd_data_dates(args) -> None:
    from .data.splits import make_date_splits

    from .data.dates import ALL_LOCALES

    locales = list(ALL_LOCALES) if args.locales == "all" else [s for s in args.locales.split(",") if s]
    try:
        train, dev, test = make_date_splits(args.train, args.dev, args.test, seed=args.seed, locales=locales)
    except ValueError as err:
        raise UserError(f"data dates: {err}") from None
    write_splits(args, train, dev, test)


def cmd_data_book(args) -> None:
    from .data.book import load_book

    try:
        train, dev, test = load_book(args.file, dev_size=args.dev_size)
    except ValueError as err:
        raise UserError(f"data book: --dev-size: {err}") from None
    write_splits(args, train, dev, test)


def cmd_data_split(args) -> None:
    from .data.corpus import read_aligned, read_tsv
    from .data.splits import split_pairs

    if args.input:
        pairs = read_tsv(args.input)
    elif args.src and args.tgt:
        pairs = read_aligned(args.src, args.tgt)
    else:
        raise UserError("data split: give --input FILE.tsv, or --src FILE and --tgt FILE")
    if not pairs:
        raise UserError(f"data split: no pairs in {args.input or args.src}")
    as_fraction = lambda x: x / len(pairs) if x >= 1 else x  # noqa: E731  (counts or fractions)
    try:
        train, dev, test = split_pairs(pairs, as_fraction(args.dev), as_fraction(args.test), seed=args.seed)
    except ValueError as err:
        raise UserError(f"data split: {err}") from None
    write_splits(args, train, dev, test)


def cmd_data_gettext(args) -> None:
    from .data.gettext import build_gettext_corpus

    train, dev, test = build_gettext_corpus(args.lang, args.paths or None, seed=args.seed)
    write_splits(args, train, dev, test)


def cmd_data_stories(args) -> None:
    from .data.splits import write_split_dir, write_tsv
    from .data.stories import make_story_splits

    kinds = [k for k in args.kinds.split(",") if k]
    try:
        splits = make_story_splits(kinds, args.train, args.dev, args.test, seed=args.seed)
    except ValueError as err:
        raise UserError(f"data stories: {err}") from None
    write_split_dir(args.out, *([s.pair() for s in splits[name]] for name in ("train", "dev", "test")))
    for kind in kinds:  # the test set once more, one file per kind of question
        write_tsv(Path(args.out) / f"test-{kind}.tsv", [s.pair() for s in splits["test"] if s.kind == kind])
    print(f"wrote {len(splits['train'])} train, {len(splits['dev'])} dev, {len(splits['test'])} test stories "
          f"({', '.join(kinds)}) to {args.out}, and test-KIND.tsv for each kind")


def cmd_data_algorithmic(args) -> None:
    from .data.algorithmic import make_task_splits, parse_range
    from .data.splits import write_split_dir, write_tsv

    options = {"bits": args.bits}
    try:
        if args.source == "repeat-copy":
            options["repeats"] = parse_range(args.repeats)
        if args.source == "sort":
            options["levels"] = args.levels
        longer = tuple(int(n) for n in args.test_lengths.split(",") if n.strip())
        train, dev, test, extra = make_task_splits(args.source, args.train, args.dev, args.test,
                                                   parse_range(args.lengths), longer, seed=args.seed, **options)
    except ValueError as err:
        raise UserError(f"data {args.source}: {err}") from None
    write_split_dir(args.out, train, dev, test)
    for length, pairs in extra.items():  # longer than trained on: how the program generalises
        write_tsv(Path(args.out) / f"test-len{length}.tsv", pairs)
    print(f"wrote {len(train)} train, {len(dev)} dev, {len(test)} test {args.source} pairs to {args.out}"
          + "".join(f", test-len{n}.tsv" for n in extra))


def cmd_data_documents(args) -> None:
    from .data.algorithmic import parse_range
    from .data.documents import make_document_splits
    from .data.splits import write_split_dir

    try:
        splits = make_document_splits(args.train, args.dev, args.test, seed=args.seed,
                                      sentences=parse_range(args.sentences))
    except ValueError as err:
        raise UserError(f"data documents: {err}") from None
    write_split_dir(args.out, *([d.pair() for d in splits[name]] for name in ("train", "dev", "test")))
    print(f"wrote {len(splits['train'])} train, {len(splits['dev'])} dev, {len(splits['test'])} test "
          f"documents to {args.out}")


# -- train / evaluate / translate --------------------------------------------------------------
def _load_config(args):
    from .config import load_config
    from .data.sources import data_overrides

    overrides = list(args.set or [])
    if getattr(args, "data", None):
        overrides[:0] = data_overrides(args.data)  # a folder of splits, or the book's file
    if getattr(args, "max_minutes", None) is not None:
        overrides.append(f"train.max_minutes={args.max_minutes}")
    if args.config is None:
        if not getattr(args, "data", None):
            raise UserError("train: give a config, or --data for the recommended preset")
        from .presets import recommended_config

        args.config = str(recommended_config(args.data))
    return load_config(args.config, overrides)


def cmd_train(args) -> None:
    from .engines import engine_for

    config = _load_config(args)
    engine = engine_for(config)
    config = engine.check(config)
    run_dir = Path(args.out or Path("runs") / Path(args.config).stem)
    summary = engine.train(config, run_dir, resume=args.resume, overwrite=args.overwrite)
    if summary is not None:  # None: a process of a distributed run that does not write the run
        print(json.dumps({k: v for k, v in summary.items() if k != "type"}))


def cmd_evaluate(args) -> None:
    from .api import load
    from .data.sources import evaluation_pairs

    translator = load(args.run, checkpoint=args.checkpoint, overrides=args.set or [])
    pairs = evaluation_pairs(args.data, translator.config.data)
    metrics = translator.evaluate(pairs, beam_size=args.beam)
    if "bleu" not in metrics:
        from .eval.metrics import BLEU_MIN_WORDS

        log.warning("evaluate: no BLEU, the references average fewer than %d words (chrF and exact match "
                    "judge them)", BLEU_MIN_WORDS)
    if args.json:
        print(json.dumps(metrics))
    else:
        for key, value in metrics.items():
            print(f"{key:>22}: {value:.4f}" if isinstance(value, float) else f"{key:>22}: {value}")


def cmd_translate(args) -> None:
    from .api import load

    translator = load(args.run, checkpoint=args.checkpoint, overrides=args.set or [])
    request = {"beam_size": args.beam, "n_best": args.n_best}
    translator.decode_settings(**request)  # a wrong --beam / --n-best fails before any input is read
    if args.po:
        from .data.gettext import translate_po

        if not args.output:
            raise UserError("translate --po: give --output FILE.po")
        summary = translate_po(translator, args.po, args.output, beam_size=args.beam)
        print(json.dumps(summary))
        return
    if args.input:
        from .data.corpus import read_lines

        lines = read_lines(args.input)
    elif sys.stdin.isatty():
        return _interactive(translator, request)
    else:
        from .data.corpus import decode_lines

        lines = decode_lines(sys.stdin.buffer.read(), "stdin")
    results = translator.search(lines, **request)
    out_lines = []
    for r in results:
        if len(r.outputs) > 1:
            out_lines += [f"{score:.4f}\t{text}" for text, score in zip(r.outputs, r.scores)]
        else:
            out_lines.append(r.outputs[0])
    text = "".join(line + "\n" for line in out_lines)
    if args.output:
        from .utils import atomic_write_text

        atomic_write_text(args.output, text)
    else:
        sys.stdout.write(text)


def _interactive(translator, request: dict) -> None:
    print("Type a sentence and press Enter (Ctrl-D to quit).", file=sys.stderr)
    while True:
        try:
            line = input("> ")
        except EOFError:
            print(file=sys.stderr)
            return
        if line.strip():
            r = translator.search([line], **request)[0]
            for text, score in zip(r.outputs, r.scores):
                print(f"{text}\t({score:.3f})")


# -- demo and plots ----------------------------------------------------------------------------
def cmd_demo(args) -> None:
    from .demo import run_demo

    run_demo(Path(args.out), minutes=args.minutes)


def cmd_compare(args) -> None:
    from .compare import run_compare

    run_compare(args.configs, args.data, args.budget_minutes, Path(args.out), overrides=args.set or [],
                overwrite=args.overwrite)


def cmd_reproduce(args) -> None:
    from .reproduce import listing, reproduce

    if args.list:
        for name, title, budget in listing():
            print(f"{name:20s} {title}\n{'':20s} default: {budget}")
        return
    if not args.name:
        raise UserError("reproduce: give a NAME (attnseq reproduce --list shows them)")
    flags = [f"--budget-minutes {args.budget_minutes:g}"] if args.budget_minutes is not None else []
    flags += [f"--seeds {args.seeds}"] if args.seeds is not None else []
    flags += [f"--threads {args.threads}"] if args.threads != 2 else []
    flags += [f"--set {s}" for s in args.set or []]
    page = reproduce(args.name, args.out, args.runs, budget_minutes=args.budget_minutes, seeds=args.seeds,
                     threads=args.threads, settings=args.set or [],
                     command=" ".join(["attnseq reproduce", args.name, *flags]))
    print(page)


def cmd_serve(args) -> None:
    from .serve.app import create_app, load_runs
    from .serve.server import listen, serve, url

    runs = load_runs(args.runs, checkpoint=args.checkpoint)
    app = create_app(runs, max_chars=args.max_chars, max_beam=args.max_beam)
    sock = listen(args.host, args.port)
    print(f"Serving {', '.join(r.name for r in runs)} at {url(sock)}  (API docs at {url(sock)}docs; "
          "Ctrl-C to stop)", flush=True)
    serve(app, sock, log_level="warning" if args.quiet else "info")


def cmd_plot_memory(args) -> None:
    from .api import load
    from .viz.memory import plot_memory

    if not args.run or args.text is None:
        raise UserError("plot memory: give RUN_DIR and --text")
    print(plot_memory(load(args.run), args.text, args.out or "memory.png"))


def _plot_curves(args) -> Path:
    """plot curve: one run's losses and accuracy by epoch; several runs' dev --metric by minutes."""
    from .runs import read_metrics
    from .viz.curves import METRICS, plot_curve, plot_progress

    if not args.run:
        raise UserError("plot curve: give RUN_DIR (or several, to compare them by minutes of training)")
    if args.metric is not None and args.metric not in METRICS:
        raise UserError(f"--metric: one of {', '.join(METRICS)}, got {args.metric!r}")
    if len(args.run) == 1 and args.metric is None:
        return plot_curve(read_metrics(args.run[0]), args.out or Path(args.run[0]) / "curve.png")
    names = [Path(run).name for run in args.run]
    if len(set(names)) < len(names):  # runs/a/run and runs/b/run: name them by their paths
        names = [str(Path(run)) for run in args.run]
    runs = {name: read_metrics(run) for name, run in zip(names, args.run)}
    for run, records in zip(args.run, runs.values()):
        if args.metric and not any(f"dev_{args.metric}" in r for r in records):
            raise UserError(f"plot curve: {run} has no dev {args.metric} in its metrics log")
    return plot_progress(runs, args.out or "curves.png", args.metric)


def cmd_plot(args) -> None:
    if len(args.run) > 1 and args.what != "curve":
        raise UserError(f"plot {args.what}: give one run")
    if args.what == "curve":
        return print(_plot_curves(args))
    args.run = args.run[0] if args.run else None
    if args.what == "memory":
        return cmd_plot_memory(args)
    if args.what == "attention":
        path = _plot_attention(args)
    else:
        from .viz.positional import plot_positional

        path = plot_positional(args.out or "positional.png", positions=args.positions, dims=args.dims)
    print(path)


def _plot_attention(args) -> Path:
    """plot attention: one hypothesis' heatmap (a layer, a head, a grid of heads), or with
    --html one self-contained page of every line of --input."""
    from .api import load
    from .viz.hypothesis import parse_index, plot_hypothesis

    if not args.run:
        raise UserError("plot attention: give RUN_DIR")
    layer, head = parse_index(args.layer, "--layer"), parse_index(args.head, "--head")
    if args.hyp < 1:
        raise UserError(f"--hyp: expected a number from 1, got {args.hyp}")
    if args.input is not None and (args.text is not None or not args.html):
        raise UserError("plot attention --input: pages of a whole file are HTML (--html OUT.html), "
                        "without --text; a picture shows one sentence (--text)")
    if args.beam is not None and args.hyp > args.beam:
        raise UserError(f"--hyp {args.hyp}: a beam of {args.beam} (--beam) holds {args.beam} hypotheses")
    translator = load(args.run, checkpoint=args.checkpoint)
    if args.html:
        from .data.corpus import read_lines
        from .serve.payload import run_payload, translation_payload
        from .serve.report import write_report

        if args.input is None and args.text is None:
            raise UserError("plot attention --html: give --input FILE (one sentence a line) or --text")
        lines = [args.text] if args.input is None else [line for line in read_lines(args.input) if line.strip()]
        beam = args.beam or translator.config.decode.beam_size
        results = translator.search(lines, keep_attention=True, beam_size=beam, n_best=beam)
        name = Path(args.run).resolve().name
        items = [translation_payload(name, translator, r, with_attention=True) for r in results]
        return write_report(args.html, run_payload(name, str(args.run), translator, beam), items,
                            title=f"attention of {name}")
    if args.text is None:
        raise UserError("plot attention: give --text (or --input FILE with --html OUT.html)")
    n_best = args.hyp if args.hyp > 1 or args.beam else None
    r = translator.search([args.text], keep_attention=True, beam_size=args.beam, n_best=n_best)[0]
    if len(r.outputs) < args.hyp:
        raise UserError(f"--hyp {args.hyp}: the search found {len(r.outputs)} hypotheses")
    if r.attention[0] is None:
        raise UserError(f"{args.run}: this model has no attention to plot")
    views, encoder = translator.attention_views(r)
    return plot_hypothesis(r, args.hyp - 1, views[args.hyp - 1], encoder, args.out or "attention.png",
                           layer=layer, head=head, encoder_view=args.encoder)


# -- the parser ----------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="attnseq", description="Attention-based sequence-to-sequence learning.")
    parser.add_argument("-q", "--quiet", action="store_true", help="only warnings and results")
    sub = parser.add_subparsers(dest="command", required=True)

    data = sub.add_parser("data", help="write DIR/train.tsv, dev.tsv, test.tsv from a data source")
    data_sub = data.add_subparsers(dest="source", required=True)
    p = data_sub.add_parser("dates", help="generated dates in many formats and locales -> ISO")
    p.add_argument("--out", required=True)
    p.add_argument("--train", type=int, default=40000)
    p.add_argument("--dev", type=int, default=2000)
    p.add_argument("--test", type=int, default=2000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--locales", default="en", help="comma-separated CLDR locales, e.g. en,de,fr, or all "
                                                    "(en,de,fr,es,it,nl,pt,sv)")
    p.set_defaults(func=cmd_data_dates)
    p = data_sub.add_parser("book", help="the book's date.txt or addition.txt with the book's split")
    p.add_argument("--file", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--dev-size", type=int, default=500)
    p.set_defaults(func=cmd_data_book)
    p = data_sub.add_parser("split", help="split one parallel corpus (TSV, or two aligned files)")
    p.add_argument("--input", help="source<TAB>target file")
    p.add_argument("--src", help="source side, one sentence a line")
    p.add_argument("--tgt", help="target side, aligned with --src")
    p.add_argument("--out", required=True)
    p.add_argument("--dev", type=float, default=0.05, help="fraction (or count if >= 1) for dev")
    p.add_argument("--test", type=float, default=0.05, help="fraction (or count if >= 1) for test")
    p.add_argument("--seed", type=int, default=1)
    p.set_defaults(func=cmd_data_split)

    p = data_sub.add_parser("gettext", help="English->LANG pairs from gettext catalogs (.mo/.po)")
    p.add_argument("--lang", required=True, help="target language, e.g. de")
    p.add_argument("--from", dest="paths", nargs="+", metavar="PATH",
                   help=".po/.mo files or folders (default: /usr/share/locale/LANG/LC_MESSAGES)")
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=0, help="salt of the hash that assigns splits")
    p.set_defaults(func=cmd_data_gettext)

    p = data_sub.add_parser("stories", help="bAbI-style stories and questions for memory networks")
    p.add_argument("--out", required=True)
    p.add_argument("--kinds", default="single,two,three,yes-no,counting",
                   help="comma-separated kinds of question: single, two, three, yes-no, counting")
    p.add_argument("--train", type=int, default=1000, help="training stories of each kind")
    p.add_argument("--dev", type=int, default=100, help="dev stories of each kind")
    p.add_argument("--test", type=int, default=1000, help="test stories of each kind")
    p.add_argument("--seed", type=int, default=1)
    p.set_defaults(func=cmd_data_stories)
    for task, about in (("copy", "copy a sequence of random bit vectors (the NTM's copy task)"),
                        ("repeat-copy", "copy a sequence N times (the NTM's repeat copy task)"),
                        ("sort", "sort bit vectors by priority (the NTM's priority sort task)")):
        p = data_sub.add_parser(task, help=about)
        p.add_argument("--out", required=True)
        p.add_argument("--train", type=int, default=20000)
        p.add_argument("--dev", type=int, default=200)
        p.add_argument("--test", type=int, default=500)
        p.add_argument("--lengths", default="1-10", help="sequence lengths of train, dev and test, e.g. 1-10")
        p.add_argument("--test-lengths", default="20,30,40",
                       help="comma-separated longer lengths, each written as test-lenN.tsv")
        p.add_argument("--bits", type=int, default=8, help="bits per vector (each vector is one token)")
        if task == "repeat-copy":
            p.add_argument("--repeats", default="1-5", help="range of the repeat count")
        if task == "sort":
            p.add_argument("--levels", type=int, default=32, help="distinct priorities to draw from")
        p.add_argument("--seed", type=int, default=1)
        p.set_defaults(func=cmd_data_algorithmic)
    p = data_sub.add_parser("documents", help="generated reviews labelled by one sentence (for han)")
    p.add_argument("--out", required=True)
    p.add_argument("--train", type=int, default=10000)
    p.add_argument("--dev", type=int, default=500)
    p.add_argument("--test", type=int, default=1000)
    p.add_argument("--sentences", default="3-8", help="range of sentences per document")
    p.add_argument("--seed", type=int, default=1)
    p.set_defaults(func=cmd_data_documents)

    p = sub.add_parser("train", help="train a model from a config",
                       description="Train a model: a config (see configs/) on --data, into --out. Without a "
                                   "config the recommended preset for the data is used. Bound the run with "
                                   "--max-minutes (wall-clock, evaluations included) or --set train.max_steps=N.")
    p.add_argument("config", nargs="?", help="YAML config (see configs/); default: the recommended preset for "
                                             "the data (characters or subwords)")
    p.add_argument("--data", help="folder with train.tsv, dev.tsv, test.tsv, or one file of the "
                                  "book's question_answer lines (date.txt: data.format book)")
    p.add_argument("--out", help="run folder (default runs/CONFIG_NAME)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a config value")
    p.add_argument("--resume", action="store_true", help="continue the run in --out where it stopped")
    p.add_argument("--overwrite", action="store_true", help="replace the run in --out (its files are removed)")
    p.add_argument("--max-minutes", type=float, metavar="N",
                   help="stop training after N minutes of wall-clock time (train.max_minutes)")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("evaluate", help="exact match, token accuracy, BLEU and chrF on a TSV file")
    p.add_argument("run")
    p.add_argument("--data", required=True, help="source<TAB>reference file, a data folder (its test.tsv), "
                                                 "or the book's file (its test set)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--beam", type=int, help="beam size (default: the run's decode.beam_size)")
    p.add_argument("--checkpoint", choices=("best", "last"), default="best")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a decode setting, e.g. decode.length_penalty=0.6")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("translate", help="translate lines from stdin or --input")
    p.add_argument("run")
    p.add_argument("--input")
    p.add_argument("--output")
    p.add_argument("--beam", type=int)
    p.add_argument("--n-best", type=int, help="print N 'score<TAB>hypothesis' lines per input")
    p.add_argument("--po", help="fill the untranslated entries of this gettext catalog (with --output)")
    p.add_argument("--checkpoint", choices=("best", "last"), default="best")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a decode setting, e.g. decode.length_penalty=0.6")
    p.set_defaults(func=cmd_translate)

    p = sub.add_parser("compare", help="train several configs under one budget and tabulate them")
    p.add_argument("configs", nargs="+")
    p.add_argument("--data", required=True, help="folder with train.tsv, dev.tsv, test.tsv")
    p.add_argument("--budget-minutes", type=float, default=5.0, help="training time per config")
    p.add_argument("--out", default="runs/compare")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override for every config")
    p.add_argument("--overwrite", action="store_true", help="replace runs left in --out by an earlier comparison")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("reproduce", help="check a claim of the literature: train, tabulate, plot, write a page",
                       description="Reproduce one claim of the documents attnseq implements: train what it "
                                   "needs with attnseq's presets and write OUT/NAME.md with its table and "
                                   "PNG figures (and the index OUT/README.md).")
    p.add_argument("name", nargs="?", metavar="NAME", help="the reproduction (see --list)")
    p.add_argument("--list", action="store_true", help="list the reproductions and their default budgets")
    p.add_argument("--budget-minutes", type=float, metavar="N",
                   help="scale the default budget (steps, epochs or minutes) to about N minutes here")
    p.add_argument("--seeds", type=int, metavar="K", help="runs of each configuration (default: the reproduction's)")
    p.add_argument("--threads", type=int, default=2, help="torch and BLAS threads of every run")
    p.add_argument("--out", default="docs/results", help="folder for the page and its figures")
    p.add_argument("--runs", help="folder for the run folders and data (default runs/reproduce/NAME)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="an option of the reproduction (sizes, limits; --list shows the budget's)")
    p.set_defaults(func=cmd_reproduce)

    p = sub.add_parser("demo", help="train an attention model on generated dates and show it")
    p.add_argument("--out", default="runs/demo")
    p.add_argument("--minutes", type=float, default=3.0, help="training time budget")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("serve", help="a web page: type a sentence, see each run's outputs and attention")
    p.add_argument("runs", nargs="+", metavar="RUN_DIR",
                   help="one or more run folders, shown side by side (NAME=RUN_DIR names one)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000, help="0: any free port")
    p.add_argument("--checkpoint", choices=("best", "last"), default="best")
    p.add_argument("--max-chars", type=int, default=1000, help="longest source text a request may send")
    p.add_argument("--max-beam", type=int, default=16, help="widest beam a request may ask for")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("plot", help="attention heatmap, training curve, positional encoding, a memory "
                                    "network's reading (memory)")
    p.add_argument("what", choices=("attention", "curve", "positional", "memory"))
    p.add_argument("run", nargs="*", help="a run folder; curve: one or several")
    p.add_argument("--metric", help="curve: the dev metric to draw against minutes of training, for one run "
                                    "or several (exact_match, token_accuracy, bleu, chrf, loss)")
    p.add_argument("--text", help="attention: the source sentence")
    p.add_argument("--input", help="attention --html: a file of source sentences, one a line")
    p.add_argument("--html", metavar="OUT.html", help="attention: one self-contained page of every input")
    p.add_argument("--beam", type=int, help="attention: beam size (default: the run's)")
    p.add_argument("--hyp", type=int, default=1, help="attention: which hypothesis of the beam, from 1")
    p.add_argument("--layer", help="attention: a layer from 1 (default: the last) or 'all'")
    p.add_argument("--head", help="attention: a head from 1, 'avg' (the default) or 'all' (a grid)")
    p.add_argument("--encoder", action="store_true", help="attention: the encoder's self-attention")
    p.add_argument("--checkpoint", choices=("best", "last"), default="best")
    p.add_argument("--out")
    p.add_argument("--positions", type=int, default=100)
    p.add_argument("--dims", type=int, default=64)
    p.set_defaults(func=cmd_plot)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                        format="%(message)s", stream=sys.stderr)
    try:
        args.func(args)
    except UserError as err:
        print(f"attnseq: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("attnseq: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
