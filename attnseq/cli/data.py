"""``attnseq data SOURCE --out DIR``: write DIR/train.tsv, dev.tsv and test.tsv from a data source
(generated dates, the book's files, a corpus of your own, gettext catalogs, stories, the NTM's
tasks, documents)."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UserError

HELP = "write DIR/train.tsv, dev.tsv, test.tsv from a data source"

# the NTM's tasks, one generator with its options (data/algorithmic.py)
ALGORITHMIC = {"copy": "copy a sequence of random bit vectors (the NTM's copy task)",
               "repeat-copy": "copy a sequence N times (the NTM's repeat copy task)",
               "sort": "sort bit vectors by priority (the NTM's priority sort task)"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sources = parser.add_subparsers(dest="source", required=True)

    p = sources.add_parser("dates", help="generated dates in many formats and locales -> ISO")
    _add_out(p)
    _add_sizes(p, 40000, 2000, 2000)
    p.add_argument("--seed", type=int, default=1, help="seed of the generator")
    p.add_argument("--locales", default="en", help="comma-separated CLDR locales, e.g. en,de,fr, or all "
                                                    "(en,de,fr,es,it,nl,pt,sv)")
    p.set_defaults(write=data_dates)

    p = sources.add_parser("book", help="the book's date.txt or addition.txt with the book's split")
    p.add_argument("--file", required=True, help="the book's date.txt or addition.txt")
    _add_out(p)
    p.add_argument("--dev-size", type=int, default=500,
                   help="pairs of the book's training part held out as dev (0: none)")
    p.set_defaults(write=data_book)

    p = sources.add_parser("split", help="split one parallel corpus (TSV, or two aligned files)")
    p.add_argument("--input", help="source<TAB>target file")
    p.add_argument("--src", help="source side, one sentence a line")
    p.add_argument("--tgt", help="target side, aligned with --src")
    _add_out(p)
    p.add_argument("--dev", type=float, default=0.05, help="fraction (or count if >= 1) for dev")
    p.add_argument("--test", type=float, default=0.05, help="fraction (or count if >= 1) for test")
    p.add_argument("--seed", type=int, default=1, help="seed of the shuffle")
    p.set_defaults(write=data_split)

    p = sources.add_parser("gettext", help="English->LANG pairs from gettext catalogs (.mo/.po)")
    p.add_argument("--lang", required=True, help="target language, e.g. de")
    p.add_argument("--from", dest="paths", nargs="+", metavar="PATH",
                   help=".po/.mo files or folders (default: /usr/share/locale/LANG/LC_MESSAGES)")
    _add_out(p)
    p.add_argument("--seed", type=int, default=0, help="salt of the hash that assigns splits")
    p.set_defaults(write=data_gettext)

    p = sources.add_parser("stories", help="bAbI-style stories and questions for memory networks")
    _add_out(p)
    p.add_argument("--kinds", default="single,two,three,yes-no,counting",
                   help="comma-separated kinds of question: single, two, three, yes-no, counting")
    p.add_argument("--train", type=int, default=1000, help="training stories of each kind")
    p.add_argument("--dev", type=int, default=100, help="dev stories of each kind")
    p.add_argument("--test", type=int, default=1000, help="test stories of each kind")
    p.add_argument("--seed", type=int, default=1, help="seed of the generator")
    p.set_defaults(write=data_stories)

    for task, about in ALGORITHMIC.items():
        p = sources.add_parser(task, help=about)
        _add_out(p)
        _add_sizes(p, 20000, 200, 500)
        p.add_argument("--lengths", default="1-10", help="sequence lengths of train, dev and test, e.g. 1-10")
        p.add_argument("--test-lengths", default="20,30,40",
                       help="comma-separated longer lengths, each written as test-lenN.tsv")
        p.add_argument("--bits", type=int, default=8, help="bits per vector (each vector is one token)")
        if task == "repeat-copy":
            p.add_argument("--repeats", default="1-5", help="range of the repeat count")
        if task == "sort":
            p.add_argument("--levels", type=int, default=32, help="distinct priorities to draw from")
        p.add_argument("--seed", type=int, default=1, help="seed of the generator")
        p.set_defaults(write=data_algorithmic)

    p = sources.add_parser("documents", help="generated reviews labelled by one sentence (for han)")
    _add_out(p)
    _add_sizes(p, 10000, 500, 1000, "documents")
    p.add_argument("--sentences", default="3-8", help="range of sentences per document")
    p.add_argument("--seed", type=int, default=1, help="seed of the generator")
    p.set_defaults(write=data_documents)


def _add_out(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, help="the folder to write train.tsv, dev.tsv and test.tsv into")


def _add_sizes(p: argparse.ArgumentParser, train: int, dev: int, test: int, what: str = "pairs") -> None:
    """--train, --dev and --test: how many examples each split gets."""
    p.add_argument("--train", type=int, default=train, help=f"training {what}")
    p.add_argument("--dev", type=int, default=dev, help=f"dev {what}")
    p.add_argument("--test", type=int, default=test, help=f"test {what}")


def run(args: argparse.Namespace) -> None:
    """Write the folder of the source named (each source's parser sets its ``write``)."""
    args.write(args)


def write_splits(args, train, dev, test) -> None:
    """Write the three splits of ``attnseq data SOURCE`` into --out (never an empty one)."""
    from ..data.splits import write_split_dir

    try:
        write_split_dir(args.out, train, dev, test)
    except ValueError as err:
        raise UserError(f"data {args.source}: {err}") from None
    print(f"wrote {len(train)} train, {len(dev)} dev, {len(test)} test pairs to {args.out}")


def data_dates(args) -> None:
    from ..data.dates import ALL_LOCALES
    from ..data.splits import make_date_splits

    locales = list(ALL_LOCALES) if args.locales == "all" else [s for s in args.locales.split(",") if s]
    try:
        train, dev, test = make_date_splits(args.train, args.dev, args.test, seed=args.seed, locales=locales)
    except ValueError as err:
        raise UserError(f"data dates: {err}") from None
    write_splits(args, train, dev, test)


def data_book(args) -> None:
    from ..data.book import load_book

    try:
        train, dev, test = load_book(args.file, dev_size=args.dev_size)
    except ValueError as err:
        raise UserError(f"data book: --dev-size: {err}") from None
    write_splits(args, train, dev, test)


def data_split(args) -> None:
    from ..data.corpus import read_aligned, read_tsv
    from ..data.splits import split_pairs

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


def data_gettext(args) -> None:
    from ..data.gettext import build_gettext_corpus

    train, dev, test = build_gettext_corpus(args.lang, args.paths or None, seed=args.seed)
    write_splits(args, train, dev, test)


def data_stories(args) -> None:
    from ..data.splits import write_split_dir, write_tsv
    from ..data.stories import make_story_splits

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


def data_algorithmic(args) -> None:
    from ..data.algorithmic import make_task_splits, parse_range
    from ..data.splits import write_split_dir, write_tsv

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


def data_documents(args) -> None:
    from ..data.algorithmic import parse_range
    from ..data.documents import make_document_splits
    from ..data.splits import write_split_dir

    try:
        splits = make_document_splits(args.train, args.dev, args.test, seed=args.seed,
                                      sentences=parse_range(args.sentences))
    except ValueError as err:
        raise UserError(f"data documents: {err}") from None
    write_split_dir(args.out, *([d.pair() for d in splits[name]] for name in ("train", "dev", "test")))
    print(f"wrote {len(splits['train'])} train, {len(splits['dev'])} dev, {len(splits['test'])} test "
          f"documents to {args.out}")
