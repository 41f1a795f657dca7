"""The README's screenshots of the attention page, taken in headless Chromium (Debian's
``chromium``, driven by Playwright) from trained runs, through the page's own permalinks:

    attnseq demo --out runs/demo                         # an RNN on dates (writes runs/demo/run)
    attnseq data dates --out runs/dates --train 20000 --dev 500 --test 500
    attnseq train configs/transformer-tiny.yaml --data runs/dates --out runs/transformer \\
        --set model.hidden_size=64 --set model.ff_size=128
    python docs/make_screenshots.py --rnn runs/demo/run --transformer runs/transformer

writes docs/images/rnn-beam5-second.png, transformer-heads.png and side-by-side.png; with
``--local RUN`` (a local_p run) also local-p-window.png.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "images"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TEXT = "Tuesday, 25 December 1984"


def start(runs: list[str]) -> tuple[subprocess.Popen, str]:
    server = subprocess.Popen(
        [sys.executable, "-m", "attnseq.cli", "-q", "serve", *runs, "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    line = server.stdout.readline()
    if "http://" not in line:
        server.kill()
        raise SystemExit(f"the server did not start: {line!r}")
    return server, "http://" + line.split("http://", 1)[1].split()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rnn", required=True, help="a recurrent run (e.g. runs/demo/run)")
    parser.add_argument("--transformer", required=True, help="a Transformer run")
    parser.add_argument("--local", help="a run with local attention (local_m or local_p)")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    runs = [f"rnn={args.rnn}", f"transformer={args.transformer}"] + ([f"local={args.local}"] if args.local else [])
    server, url = start(runs)
    shots = {
        "rnn-beam5-second.png": ([("text", TEXT), ("beam", 5), ("run", "rnn"), ("hyp", 2)], (1000, 800)),
        "transformer-heads.png": (
            [("text", TEXT), ("beam", 1), ("run", "transformer"), ("layer", 2), ("head", 3)],
            (1000, 800),
        ),
        "side-by-side.png": (
            [("text", "Sep 27, 1994"), ("beam", 3), ("run", "rnn"), ("run", "transformer")],
            (1400, 800),
        ),
    }
    if args.local:
        shots["local-p-window.png"] = ([("text", "september 27, 1994"), ("beam", 1), ("run", "local")], (1000, 800))
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, args=FLAGS)
            for name, (query, (width, height)) in shots.items():
                page = browser.new_page(viewport={"width": width, "height": height}, device_scale_factor=1)
                page.goto(url + "?" + urlencode(query))
                page.wait_for_selector("body[data-ready=true]")
                page.wait_for_selector("svg.heatmap")
                cell = page.locator("svg.heatmap rect.cell").nth(3 * len(TEXT) // 2)
                cell.hover()  # the read-out under the heatmap
                page.screenshot(path=str(OUT / name), full_page=True)
                print(OUT / name)
                page.close()
            browser.close()
    finally:
        server.terminate()
        server.wait(30)


if __name__ == "__main__":
    main()
