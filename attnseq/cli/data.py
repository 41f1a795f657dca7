"""``attnseq data SOURCE --out DIR``: write DIR/train.tsv, dev.tsv and test.tsv from a data source
(generated dates, the book's files, a corpus of your own, gettext catalogs and passages of their
messages, stories, the NTM's tasks, documents, requests naming people never seen in training). A
corpus of your own is split, and dates and passages are generated, as they stream: millions of
pairs in memory that does not grow with them."""

from __future__ import annotations

import argparse

from ..errors import UserError
from ..files import check_folder, rereadable, write_files
from .arguments import add_overwrite, count, positive, share

SPLIT_FILES = ("train.tsv", "dev.tsv", "test.tsv")

HELP = "write DIR/train.tsv, dev.tsv, test.tsv from a data source"

SORT_LEVELS = 32  # sort's priorities unless a sequence is longer
# the NTM's tasks, one generator with its options (data/corpora/algorithmic.py)
ALGORITHMIC = {
    "copy": "copy a sequence of random bit vectors (the NTM's copy task)",
    "repeat-copy": "copy a sequence N times (the NTM's repeat copy task)",
    "sort": "sort bit vectors by priority (the NTM's priority sort task)",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sources = parser.add_subparsers(dest="source", required=True)

    p = sources.add_parser("dates", help="generated dates in many formats and locales -> ISO")
    _add_out(p)
    _add_sizes(p, 40000, 2000, 2000)
    p.add_argument("--seed", type=int, default=1, help="seed of the generator")
    p.add_argument(
        "--locales", default="en", help="comma-separated CLDR locales, e.g. en,de,fr, or all (en,de,fr,es,it,nl,pt,sv)"
    )
    _add_workers(p)
    p.set_defaults(write=data_dates)

    p = sources.add_parser("book", help="the book's date.txt or addition.txt with the book's split")
    p.add_argument("--file", required=True, help="the book's date.txt or addition.txt")
    _add_out(p)
    p.add_argument(
        "--dev-size", type=count, default=500, help="pairs of the book's training part held out as dev (0: none)"
    )
    p.set_defaults(write=data_book)

    p = sources.add_parser("split", help="split one parallel corpus (TSV, or two aligned files)")
    p.add_argument("--input", help="source<TAB>target file")
    p.add_argument("--src", help="source side, one sentence a line")
    p.add_argument("--tgt", help="target side, aligned with --src")
    _add_out(p)
    p.add_argument("--dev", type=share, default=0.05, help="fraction (or count if >= 1) for dev")
    p.add_argument("--test", type=share, default=0.05, help="fraction (or count if >= 1) for test")
    p.add_argument(
        "--seed", type=int, default=1, help="seed of the hash that assigns sources to splits, and of the shuffle"
    )
    p.set_defaults(write=data_split)

    p = sources.add_parser("gettext", help="English->LANG pairs from gettext catalogs (.mo/.po)")
    p.add_argument("--lang", required=True, help="target language, e.g. de")
    p.add_argument(
        "--from",
        dest="paths",
        nargs="+",
        metavar="PATH",
        help=".po/.mo files or folders (default: /usr/share/locale/LANG/LC_MESSAGES)",
    )
    _add_out(p)
    p.add_argument("--seed", type=int, default=0, help="salt of the hash that assigns splits")
    p.set_defaults(write=data_gettext)

    p = sources.add_parser("passages", help="passages of gettext messages, about 25 words a side (English->LANG)")
    p.add_argument("--lang", required=True, help="target language, e.g. de")
    p.add_argument(
        "--from",
        dest="paths",
        nargs="+",
        metavar="PATH",
        help=".po/.mo files or folders (default: /usr/share/locale/LANG/LC_MESSAGES)",
    )
    _add_out(p)
    _add_sizes(p, 100000, 1000, 1000, "passages")
    p.add_argument(
        "--seed", type=int, default=0, help="seed of the passages and salt of the hash that assigns messages to splits"
    )
    _add_workers(p)
    p.set_defaults(write=data_passages)

    p = sources.add_parser("stories", help="bAbI-style stories and questions for memory networks")
    _add_out(p)
    p.add_argument(
        "--kinds",
        default="single,two,three,yes-no,counting",
        help="comma-separated kinds of question: single, two, three, yes-no, counting",
    )
    p.add_argument("--train", type=count, default=1000, help="training stories of each kind")
    p.add_argument("--dev", type=count, default=100, help="dev stories of each kind")
    p.add_argument("--test", type=count, default=1000, help="test stories of each kind")
    p.add_argument("--seed", type=int, default=1, help="seed of the generator")
    p.set_defaults(write=data_stories)

    for task, about in ALGORITHMIC.items():
        p = sources.add_parser(task, help=about)
        _add_out(p)
        _add_sizes(p, 20000, 200, 500)
        p.add_argument("--lengths", default="1-10", help="sequence lengths of train, dev and test, e.g. 1-10")
        p.add_argument(
            "--test-lengths", default="20,30,40", help="comma-separated longer lengths, each written as test-lenN.tsv"
        )
        p.add_argument("--bits", type=positive, default=8, help="bits per vector (each vector is one token)")
        if task == "repeat-copy":
            p.add_argument("--repeats", default="1-5", help="range of the repeat count")
        if task == "sort":
            p.add_argument(
                "--levels",
                type=positive,
                help="distinct priorities to draw from (default: 32, or as many as the longest sequence has items)",
            )
        p.add_argument("--seed", type=int, default=1, help="seed of the generator")
        p.set_defaults(write=data_algorithmic)

    p = sources.add_parser(
        "names", help="generated requests -> commands, test names never in training (for copy attention)"
    )
    _add_out(p)
    _add_sizes(p, 20000, 500, 1000, "requests")
    p.add_argument("--seed", type=int, default=1, help="seed of the generator")
    p.set_defaults(write=data_names)

    p = sources.add_parser(
        "formulas", help="LaTeX-like formulas drawn by mathtext into PNGs -> their tokens (for data.input image)"
    )
    _add_out(p)
    _add_sizes(p, 20000, 500, 1000, "formulas")
    p.add_argument("--seed", type=int, default=1, help="seed of the generator")
    p.add_argument(
        "--workers",
        type=positive,
        help="processes drawing the training formulas (the same files for any number; default: one per CPU)",
    )
    p.set_defaults(write=data_formulas)

    p = sources.add_parser("documents", help="generated reviews labelled by one sentence (for han)")
    _add_out(p)
    _add_sizes(p, 10000, 500, 1000, "documents")
    p.add_argument("--sentences", default="3-8", help="range of sentences per document")
    p.add_argument(
        "--neutral", type=float, default=0.0, help="share of reviews without a verdict, labelled neutral (default 0)"
    )
    p.add_argument("--seed", type=int, default=1, help="seed of the generator")
    p.set_defaults(write=data_documents)

    p = sources.add_parser(
        "speech",
        help="numbers and dates spoken by espeak-ng into 16 kHz WAV files, with their text (for data.input: audio)",
    )
    _add_out(p)
    _add_sizes(p, 12000, 500, 1000, "utterances")
    p.add_argument("--seed", type=int, default=1, help="seed of the texts, voices, speeds, pitches and noise")
    _add_workers(p, "processes speaking the utterances (the same files for any number; default: one per CPU)")
    p.set_defaults(write=data_speech)


def _add_out(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, help="the folder to write train.tsv, dev.tsv and test.tsv into")
    add_overwrite(p, "write into --out when it holds files already (the files of the same names are replaced)")


def _add_workers(
    p: argparse.ArgumentParser,
    about: str = "processes generating the training pairs beyond the "
    "first 100,000 (the same output for any number; default: one per CPU)",
) -> None:
    """--workers: processes generating the examples (the output is the same for any)."""
    p.add_argument("--workers", type=positive, help=about)


def _add_sizes(p: argparse.ArgumentParser, train: int, dev: int, test: int, what: str = "pairs") -> None:
    """--train, --dev and --test: how many examples each split gets."""
    p.add_argument("--train", type=count, default=train, help=f"training {what}")
    p.add_argument("--dev", type=count, default=dev, help=f"dev {what}")
    p.add_argument("--test", type=count, default=test, help=f"test {what}")


def run(args: argparse.Namespace) -> None:
    """Write the folder of the source named (each source's parser sets its ``write``)."""
    check_folder(args.out, overwrite=args.overwrite)  # before anything is read or generated
    args.write(args)


def write_splits(
    args, train, dev, test, extra=None, *, inputs=(), more: str = "larger --train/--dev/--test", what: str = "pairs"
) -> None:
    """Write the splits of ``attnseq data SOURCE`` into --out (never an empty one), and each of
    ``extra`` ({"test-len20": pairs}) beside them; ``more`` says how to get larger splits, and
    an error names the ``inputs`` the pairs came from."""
    from ..data.splits import write_split_dir

    try:
        write_split_dir(args.out, train, dev, test, extra, inputs=inputs, overwrite=args.overwrite)
    except ValueError as err:
        hint = f"; give {more}" if "would be empty" in str(err) else ""
        read = ", ".join(str(path) for path in inputs if path)
        raise UserError(f"data {args.source}: {read + ': ' if read else ''}{err}{hint}") from None
    say_written(args, {"train": len(train), "dev": len(dev), "test": len(test)}, what, extra)


def say_written(args, counts: dict[str, int], what: str = "pairs", extra=None) -> None:
    """``wrote 40000 train, 2000 dev, 2000 test pairs to DIR`` (and the names of ``extra`` files)."""
    also = "".join(f", {name}.tsv" for name in extra or {})
    print(f"wrote {counts['train']} train, {counts['dev']} dev, {counts['test']} test {what} to {args.out}{also}")


def data_dates(args) -> None:
    from ..data.corpora.dates import ALL_LOCALES
    from ..data.corpora.generated import date_corpus

    locales = list(ALL_LOCALES) if args.locales == "all" else [s for s in args.locales.split(",") if s]
    counts = {"train": args.train, "dev": args.dev, "test": args.test}
    try:
        splits = date_corpus(args.train, args.dev, args.test, seed=args.seed, locales=locales, workers=_workers(args))
    except ValueError as err:
        hint = "; give larger --train/--dev/--test" if "would be empty" in str(err) else ""
        raise UserError(f"data dates: {err}{hint}") from None
    write_generated(args, splits, counts)


def data_passages(args) -> None:
    from ..data.corpora.generated import passage_corpus
    from ..data.corpora.gettext import build_gettext_corpus

    counts = {"train": args.train, "dev": args.dev, "test": args.test}
    train, dev, test = build_gettext_corpus(args.lang, args.paths or None, seed=args.seed)
    try:
        splits = passage_corpus(
            {"train": train, "dev": dev, "test": test}, counts, seed=args.seed, workers=_workers(args)
        )
    except ValueError as err:
        raise UserError(f"data passages: {err}; give larger --train/--dev/--test") from None
    write_generated(args, splits, counts, what="passages")


def _workers(args) -> int:
    """--workers, or one per CPU; more than the CPUs this process may use is a UserError (they
    gain nothing, the output being the same for any number, and each is a process)."""
    from ..hardware import past_cpus, usable_cpus

    too_many = past_cpus(args.workers or 0, "--workers")
    if too_many:
        raise UserError(f"{too_many} (the output is the same for any number)")
    return args.workers or usable_cpus()


def write_generated(args, splits, counts: dict[str, int], what: str = "pairs") -> None:
    """Write the splits of a generated corpus into --out as they are made."""
    from ..data.corpora.generated import write_generated as write

    write(args.out, splits, counts, name=f"data {args.source}", overwrite=args.overwrite)
    say_written(args, counts, what)


def data_book(args) -> None:
    from ..data.corpora.book import load_book

    try:
        train, dev, test = load_book(args.file, dev_size=args.dev_size)
    except ValueError as err:
        raise UserError(f"data book: --dev-size: {err}") from None
    write_splits(args, train, dev, test, inputs=[args.file], more="a larger --dev-size")


def data_split(args) -> None:
    from ..config import DataConfig
    from ..data.corpus import CorpusChecks, iter_aligned, iter_tsv
    from ..data.splits import split_corpus

    if args.input and (args.src or args.tgt):
        raise UserError(
            f"data split: --input and {'--src' if args.src else '--tgt'}: give one TSV file "
            "(--input), or two aligned files (--src and --tgt)"
        )
    if not (args.input or args.src and args.tgt):
        raise UserError("data split: give --input FILE.tsv, or --src FILE and --tgt FILE")
    inputs = [args.input, args.src, args.tgt]
    check_folder(args.out, SPLIT_FILES, inputs=inputs, overwrite=args.overwrite)  # before the corpus is read
    defaults = DataConfig()
    longest = min(defaults.max_source_len, defaults.max_target_len)  # what training takes by default
    # the splitter reads its input three times: a pipe, a FIFO or - (standard input) is read once, into a copy
    with rereadable(args.input, args.src, args.tgt) as (tsv, src, tgt):
        if args.input:
            checks = CorpusChecks(args.input, long_words=longest)
            read = lambda found: iter_tsv(tsv, checks=found)  # noqa: E731  (one pass over the file)
        else:
            checks = CorpusChecks(f"{args.src} / {args.tgt}", long_words=longest)
            read = lambda found: iter_aligned(src, tgt, checks=found)  # noqa: E731
        try:
            counts = split_corpus(
                read, args.out, args.dev, args.test, args.seed, checks=checks, inputs=inputs, overwrite=args.overwrite
            )
        except ValueError as err:
            if not checks.pairs:
                raise UserError(
                    f"{args.input or args.src}: no pairs (an empty file, or only blank lines); "
                    "give a file of source<TAB>target lines"
                ) from None
            hint = "; give more pairs, or larger --dev/--test" if "would be empty" in str(err) else ""
            raise UserError(f"data split: {checks.name}: --dev/--test: {err}{hint}") from None
    say_written(args, counts)


def data_gettext(args) -> None:
    from ..data.corpora.gettext import build_gettext_corpus

    train, dev, test = build_gettext_corpus(args.lang, args.paths or None, seed=args.seed)
    write_splits(args, train, dev, test, inputs=args.paths or (), more="more catalogs (--from)")


def data_stories(args) -> None:
    from ..data.corpora.stories import make_story_splits

    kinds = [k for k in args.kinds.split(",") if k]
    try:
        splits = make_story_splits(kinds, args.train, args.dev, args.test, seed=args.seed)
    except ValueError as err:
        raise UserError(f"data stories: {err}") from None
    # the test set once more, one file per kind of question
    by_kind = {f"test-{kind}": [s.pair() for s in splits["test"] if s.kind == kind] for kind in kinds}
    write_splits(
        args,
        *([s.pair() for s in splits[name]] for name in ("train", "dev", "test")),
        by_kind,
        what=f"stories ({', '.join(kinds)})",
    )


def data_algorithmic(args) -> None:
    from ..data.corpora.algorithmic import make_task_splits, parse_range

    options = {"bits": args.bits}
    try:
        lengths = parse_range(args.lengths)
        longer = tuple(int(n) for n in args.test_lengths.split(",") if n.strip())
        if args.source == "repeat-copy":
            options["repeats"] = parse_range(args.repeats)
        if args.source == "sort":  # every item its own priority, in the longest test set too
            options["levels"] = args.levels or max(SORT_LEVELS, lengths[1], *longer)
        train, dev, test, extra = make_task_splits(
            args.source, args.train, args.dev, args.test, lengths, longer, seed=args.seed, **options
        )
    except ValueError as err:
        raise UserError(f"data {args.source}: {err}") from None
    # longer than trained on: how the program generalises
    write_splits(
        args,
        train,
        dev,
        test,
        {f"test-len{length}": pairs for length, pairs in extra.items()},
        what=f"{args.source} pairs",
    )


def data_names(args) -> None:
    from ..data.corpora.names import make_name_splits

    write_splits(args, *make_name_splits(args.train, args.dev, args.test, seed=args.seed), what="requests")


def data_speech(args) -> None:
    from ..data.corpora.speech import write_speech

    counts = {"train": args.train, "dev": args.dev, "test": args.test}
    try:
        write_speech(args.out, counts, args.seed, _workers(args), overwrite=args.overwrite)
    except ValueError as err:
        raise UserError(f"data speech: {err}; give larger --train/--dev/--test") from None
    say_written(args, counts, "utterances")


def data_formulas(args) -> None:
    from ..data.corpora.formulas import formula_files
    from ..data.splits import check_split_sizes

    counts = {"train": args.train, "dev": args.dev, "test": args.test}
    try:
        check_split_sizes(counts)
    except ValueError as err:
        raise UserError(f"data formulas: {err}; give larger --train/--dev/--test") from None
    write_files(args.out, formula_files(counts, seed=args.seed, workers=_workers(args)), overwrite=args.overwrite)
    say_written(args, counts, "formulas (images/SPLIT/*.png)")


def data_documents(args) -> None:
    from ..data.corpora.algorithmic import parse_range
    from ..data.corpora.documents import make_document_splits

    try:
        splits = make_document_splits(
            args.train, args.dev, args.test, seed=args.seed, sentences=parse_range(args.sentences), neutral=args.neutral
        )
    except ValueError as err:
        raise UserError(f"data documents: {err}") from None
    write_splits(args, *([d.pair() for d in splits[name]] for name in ("train", "dev", "test")), what="documents")
