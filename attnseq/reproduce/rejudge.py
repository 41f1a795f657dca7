"""Write reproduction pages again from their numbers, judged by the current code; nothing trains::

    python -m attnseq.reproduce.rejudge [--out docs/results] [NAME ...]

A change of a reproduction's judge (its tests, which findings are core) or of the verdict's rule
reaches the published pages this way: each ``OUT/NAME.json`` is judged again (page.rejudge), and
``OUT/NAME.md`` and the index written from it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .page import rejudge


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attnseq.reproduce.rejudge",
        description="Write reproduction pages again from their numbers (OUT/NAME.json), judged by the current code.",
    )
    parser.add_argument("names", nargs="*", metavar="NAME", help="the pages (default: every OUT/NAME.json)")
    parser.add_argument("--out", default="docs/results", help="the folder of the pages (default: docs/results)")
    args = parser.parse_args(argv)
    for page in rejudge(Path(args.out), args.names or None):
        print(page)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
