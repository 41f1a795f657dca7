"""``attnseq plot WHAT [RUN...]``: an attention heatmap (or a page of them), training curves, the
positional encoding, a memory network's reading."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UserError
from ..files import check_output, write_output
from .arguments import add_checkpoint, add_overwrite, positive, run_files

HELP = "attention heatmap, training curve, positional encoding, a memory network's reading (memory)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("what", choices=tuple(DRAW), help="what to draw")
    parser.add_argument("run", nargs="*", help="a run folder; curve: one or several")
    parser.add_argument(
        "--metric",
        help="curve: the dev metric to draw against minutes of training, for one "
        "run or several (exact_match, token_accuracy, bleu, chrf, loss)",
    )
    parser.add_argument("--text", help="attention: the source sentence")
    parser.add_argument(
        "--file",
        help="attention: a source file of a run whose sources are files: a strip of an "
        "image with each output token's attention over it, or a WAV's spectrogram "
        "with the attention under it (default: none)",
    )
    parser.add_argument("--input", help="attention --html: a file of source sentences, one a line")
    parser.add_argument("--html", metavar="OUT.html", help="attention: one self-contained page of every input")
    parser.add_argument("--beam", type=int, help="attention: beam size (default: the run's)")
    parser.add_argument("--hyp", type=int, default=1, help="attention: which hypothesis of the beam, from 1")
    parser.add_argument("--layer", help="attention: a layer from 1 (default: the last) or 'all'")
    parser.add_argument("--head", help="attention: a head from 1, 'avg' (the default) or 'all' (a grid)")
    parser.add_argument("--encoder", action="store_true", help="attention: the encoder's self-attention")
    add_checkpoint(parser)
    parser.add_argument(
        "--out",
        help="the image to write, its suffix the format (.png, .pdf, .svg; default: "
        "attention.png, memory.png, positional.png; curve: RUN_DIR/curve.png, or "
        "curves.png for several runs or --metric)",
    )
    add_overwrite(parser, "replace the image (or --html page) if it exists")
    parser.add_argument("--positions", type=positive, default=100, help="positional: positions to draw")
    parser.add_argument("--dims", type=positive, default=64, help="positional: dimensions to draw")
    parser.set_defaults(parser=parser)  # run() tells a flag given from one left at its default


# the options only some drawings read: dest -> those drawings (any other refuses it, naming it)
READ_BY = {
    "metric": ("curve",),
    "text": ("attention", "memory"),
    "file": ("attention",),
    "input": ("attention",),
    "html": ("attention",),
    "beam": ("attention",),
    "hyp": ("attention",),
    "layer": ("attention",),
    "head": ("attention",),
    "encoder": ("attention",),
    "checkpoint": ("attention", "memory"),
    "positions": ("positional",),
    "dims": ("positional",),
}


def run(args: argparse.Namespace) -> None:
    """Draw what ``args.what`` names and print the file written."""
    for dest, readers in READ_BY.items():
        if args.what not in readers and getattr(args, dest) != args.parser.get_default(dest):
            raise UserError(f"plot {args.what}: --{dest} is for plot {' and '.join(readers)}; drop it")
    if args.what == "positional" and args.run:
        raise UserError("plot positional: draws no run; drop RUN")
    if args.what != "curve":  # the others draw one run
        if len(args.run) > 1:
            raise UserError(f"plot {args.what}: give one run")
        args.run = args.run[0] if args.run else None
    print(DRAW[args.what](args))


def check_out(args, default: str | Path) -> Path:
    """The image file to draw to (--out, else ``default``), refused before anything is drawn when
    it is a run's file or --input, or exists without --overwrite (attnseq.files.check_output)."""
    from ..viz import figure_file

    runs = args.run if isinstance(args.run, list) else [args.run]
    inputs = [args.input, *(path for run in runs for path in run_files(run))]
    return check_output(figure_file(args.out or default), inputs=inputs, overwrite=args.overwrite)


def plot_memory(args) -> Path:
    """plot memory: what a memory network reads for --text."""
    from ..api import load
    from ..viz.memory import plot_memory

    if not args.run or args.text is None:
        raise UserError("plot memory: give RUN_DIR and --text")
    out = check_out(args, "memory.png")
    return plot_memory(load(args.run, checkpoint=args.checkpoint), args.text, out)


def plot_positional(args) -> Path:
    """plot positional: the sinusoidal positional encoding, --positions by --dims."""
    from ..viz.positional import plot_positional

    return plot_positional(check_out(args, "positional.png"), positions=args.positions, dims=args.dims)


def plot_curves(args) -> Path:
    """plot curve: one run's losses and accuracy by epoch; several runs' dev --metric by minutes."""
    from ..runs import read_metrics
    from ..viz.curves import METRICS, plot_curve, plot_progress

    if not args.run:
        raise UserError("plot curve: give RUN_DIR (or several, to compare them by minutes of training)")
    if args.metric is not None and args.metric not in METRICS:
        raise UserError(f"--metric: one of {', '.join(METRICS)}, got {args.metric!r}")
    if len(args.run) == 1 and args.metric is None:
        out = check_out(args, Path(args.run[0]) / "curve.png")
        return plot_curve(read_metrics(args.run[0]), out)
    names = [Path(run).name for run in args.run]
    if len(set(names)) < len(names):  # runs/a/run and runs/b/run: name them by their paths
        names = [str(Path(run)) for run in args.run]
    runs = {name: read_metrics(run) for name, run in zip(names, args.run)}
    for run, records in zip(args.run, runs.values()):
        if args.metric and not any(f"dev_{args.metric}" in r for r in records):
            raise UserError(f"plot curve: {run} has no dev {args.metric} in its metrics log")
    return plot_progress(runs, check_out(args, "curves.png"), args.metric)


def plot_attention(args) -> Path:
    """plot attention: one hypothesis' heatmap (a layer, a head, a grid of heads), or with
    --html one self-contained page of every line of --input."""
    from ..api import load
    from ..viz.hypothesis import parse_index, plot_hypothesis

    if not args.run:
        raise UserError("plot attention: give RUN_DIR")
    if args.file is not None:
        return plot_file_attention(args)
    layer, head = parse_index(args.layer, "--layer"), parse_index(args.head, "--head")
    if args.hyp < 1:
        raise UserError(f"--hyp: expected a number from 1, got {args.hyp}")
    if args.input is not None and (args.text is not None or not args.html):
        raise UserError(
            "plot attention --input: pages of a whole file are HTML (--html OUT.html), "
            "without --text; a picture shows one sentence (--text)"
        )
    if args.beam is not None and args.hyp > args.beam:
        raise UserError(f"--hyp {args.hyp}: a beam of {args.beam} (--beam) holds {args.beam} hypotheses")
    if args.html:
        if args.input is None and args.text is None:
            raise UserError("plot attention --html: give --input FILE (one sentence a line) or --text")
        if args.out is not None:
            raise UserError("plot attention --html and --out: the page is written to --html; drop --out")
        inputs = [args.input, *run_files(args.run)]
        check_output(args.html, inputs=inputs, overwrite=args.overwrite)
    elif args.text is None:
        raise UserError("plot attention: give --text (or --input FILE with --html OUT.html)")
    elif not args.text.strip():
        raise UserError("plot attention --text: blank; give a sentence to translate")
    else:
        out = check_out(args, "attention.png")
    translator = load(args.run, checkpoint=args.checkpoint)
    if args.html:
        from ..data.corpus import read_lines
        from ..serve.payload import run_payload, translation_payload
        from ..serve.report import report_html

        lines = (
            [args.text]
            if args.input is None
            else [line for line in read_lines(args.input, controls=True) if line.strip()]
        )
        beam = args.beam or translator.config.decode.beam_size
        results = translator.search(lines, keep_attention=True, beam_size=beam, n_best=beam)
        name = Path(args.run).resolve().name
        items = [translation_payload(name, translator, r, with_attention=True) for r in results]
        page = report_html(run_payload(name, str(args.run), translator, beam), items, title=f"attention of {name}")
        return write_output(args.html, page, inputs=inputs, overwrite=args.overwrite)
    n_best = args.hyp if args.hyp > 1 or args.beam else None
    r = translator.search([args.text], keep_attention=True, beam_size=args.beam, n_best=n_best)[0]
    if len(r.outputs) < args.hyp:
        raise UserError(f"--hyp {args.hyp}: the search found {len(r.outputs)} hypotheses")
    if r.attention[0] is None:
        raise UserError(f"{args.run}: this model has no attention to plot")
    views, encoder = translator.attention_views(r)
    return plot_hypothesis(
        r, args.hyp - 1, views[args.hyp - 1], encoder, out, layer=layer, head=head, encoder_view=args.encoder
    )


def plot_file_attention(args) -> Path:
    """plot attention --file: each output token's attention over a source file of a run whose
    sources are files (FILE_DRAWINGS: a strip of an image's overlays, an utterance's spectrogram)."""
    from ..api import load

    for flag in ("text", "input", "html", "layer", "head"):
        if getattr(args, flag) is not None:
            raise UserError(f"plot attention --file and --{flag}: --file draws one file's attention; drop --{flag}")
    if args.encoder:
        raise UserError("plot attention --file and --encoder: --file draws the output's attention; drop --encoder")
    out = check_output(
        Path(args.out or "attention.png"), inputs=[args.file, *run_files(args.run)], overwrite=args.overwrite
    )
    translator = load(args.run, checkpoint=args.checkpoint)
    kind = translator.pipeline.inputs
    if kind.name not in FILE_DRAWINGS:
        raise UserError(
            f"plot attention --file: draws a run whose sources are files ({', '.join(FILE_DRAWINGS)}); "
            f"{args.run} reads {kind.name} (give --text)"
        )
    n_best = args.hyp if args.hyp > 1 or args.beam else None
    from ..data.pipeline import read_stream

    source = read_stream(args.file)  # a FIFO's bytes, read once, are both searched and drawn
    r = translator.search([source], keep_attention=True, beam_size=args.beam, n_best=n_best)[0]
    if len(r.outputs) < args.hyp:
        raise UserError(f"--hyp {args.hyp}: the search found {len(r.outputs)} hypotheses")
    data = source if isinstance(source, bytes) else None
    features = translator.pipeline.read_file(args.file, data=data).ids
    return FILE_DRAWINGS[kind.name](kind, features, r, args.hyp - 1, out)


def draw_image(kind, features, r, k: int, out: Path) -> Path:
    """A strip of the image with hypothesis ``k``'s attention of each output token over it."""
    from ..data.inputs.image import image_array
    from ..viz.image_attention import plot_image_attention

    return plot_image_attention(
        image_array(features, kind.options.invert),
        r.attention[k],
        r.shape.grid,
        r.output_tokens[k],
        out,
        title=r.outputs[k],
    )


def draw_audio(kind, features, r, k: int, out: Path) -> Path:
    """The utterance's spectrogram over hypothesis ``k``'s attention of each output token."""
    from ..viz.audio_attention import plot_audio_attention

    return plot_audio_attention(features, r.attention[k], r.output_tokens[k], out, title=r.outputs[k])


# how plot attention --file draws each input kind that reads files: (kind, features, translation, k, out)
FILE_DRAWINGS = {"image": draw_image, "audio": draw_audio}


# what each plot draws; the order of ``attnseq plot --help``
DRAW = {"attention": plot_attention, "curve": plot_curves, "positional": plot_positional, "memory": plot_memory}
