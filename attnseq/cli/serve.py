"""``attnseq serve RUN_DIR...``: a web page (and its JSON API) to type a sentence and see each
run's outputs and attention."""

from __future__ import annotations

import argparse

from .arguments import add_checkpoint, add_engine, add_precision

HELP = "a web page: type a sentence, see each run's outputs and attention"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "runs",
        nargs="+",
        metavar="RUN_DIR",
        help="one or more run folders or exported models, shown side by side (NAME=RUN_DIR names one)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    parser.add_argument("--port", type=int, default=8000, help="the port to listen on; 0: any free port")
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a name requests may give in their Host header besides the --host address and localhost "
        "(repeatable; '*': any). Other names are refused, so that no page of another site reaches the "
        "server through a name it makes resolve here (DNS rebinding)",
    )
    add_checkpoint(parser)
    add_precision(parser)
    add_engine(parser)
    parser.add_argument("--max-chars", type=int, default=1000, help="longest source text a request may send")
    parser.add_argument("--max-beam", type=int, default=16, help="widest beam a request may ask for")
    parser.add_argument(
        "--max-file-bytes",
        type=int,
        default=4_000_000,
        help="largest file (an image) POST /translate/file takes, for runs whose sources are files",
    )


def run(args: argparse.Namespace) -> None:
    from ..serve.app import allowed_hosts, create_app, load_runs
    from ..serve.server import listen, serve, url

    runs = load_runs(args.runs, checkpoint=args.checkpoint, precision=args.precision, engine=args.engine)
    app = create_app(
        runs,
        max_chars=args.max_chars,
        max_beam=args.max_beam,
        max_file_bytes=args.max_file_bytes,
        hosts=allowed_hosts(args.host, args.allowed_host),
    )
    sock = listen(args.host, args.port)
    line = f"Serving {', '.join(r.name for r in runs)} at {url(sock)}  (API docs at {url(sock)}docs; Ctrl-C to stop)"
    serve(app, sock, log_level="warning" if args.quiet else "info", ready=lambda: print(line, flush=True))
