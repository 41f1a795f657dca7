"""Decoding speed: sentences per second, greedy and beam search, on one pinned thread.

    python bench/decode_speed.py RUN_DIR [--data dev.tsv] [--sentences 500] [--beams 1 5]
    python bench/decode_speed.py            # an untrained model of the benchmark size

With a run folder, the sources come from ``--data`` (a TSV), else from the run's dev set; without
one, an untrained model shaped like configs/luong2015-gettext-de.yaml decodes random sources of
5 to 30 tokens. Prints one line per setting.
"""
from __future__ import annotations

import argparse
import dataclasses
import random
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from attnseq.config import load_config  # noqa: E402
from attnseq.data.batching import pad  # noqa: E402
from attnseq.decoding.search import search  # noqa: E402

PRESET = ROOT / "configs" / "luong2015-gettext-de.yaml"


def untrained(vocab: int, overrides: list[str]):
    """(model, config) of the preset's size with random weights and ``vocab`` words a side."""
    from attnseq.nn.model import build_model

    config = load_config(PRESET, overrides)
    torch.manual_seed(0)
    return build_model(config.model, vocab, vocab).eval(), config


def random_sources(n: int, vocab: int, seed: int = 0) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(4, vocab) for _ in range(rng.randint(5, 30))] for _ in range(n)]


def run_sources(translator, data: str | None, n: int) -> list[list[int]]:
    """Source ids of the first ``n`` sentences of ``data`` (default: the run's dev set)."""
    from attnseq.data.corpus import read_tsv

    config = translator.config.data
    path = data or config.dev or (Path(config.dir) / "dev.tsv" if config.dir else None)
    if not path or not Path(path).exists():
        sys.exit(f"decode_speed: give --data FILE.tsv (the run's dev set {path} is not there)")
    pairs = read_tsv(path, strip=config.strip)[:n]
    return [translator.pipeline.encode_source(s) or [translator.pipeline.src_vocab.unk_id] for s, _ in pairs]


def sentences_per_second(model, sources: list[list[int]], decode) -> float:
    """Decode ``sources`` in batches of decode.batch_size, sorted by length; sentences/s."""
    order = sorted(sources, key=len)
    started = time.perf_counter()
    with torch.no_grad():
        for start in range(0, len(order), decode.batch_size):
            src, mask = pad(order[start : start + decode.batch_size])
            search(model, src, mask, decode)
    return len(sources) / (time.perf_counter() - started)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", nargs="?", help="run folder (default: an untrained model)")
    parser.add_argument("--data", help="source<TAB>target file to decode (with a run)")
    parser.add_argument("--sentences", type=int, default=500)
    parser.add_argument("--beams", type=int, nargs="+", default=[1, 5])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=8000, help="vocabulary size of the untrained model")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="config override for the untrained model")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    if args.run:
        from attnseq.api import load

        translator = load(args.run)
        model, config = translator.model, translator.config
        sources, what = run_sources(translator, args.data, args.sentences), args.run
    else:
        model, config = untrained(args.vocab, args.set)
        sources, what = random_sources(args.sentences, args.vocab), "untrained preset-size model"

    for beam in args.beams:
        decode = dataclasses.replace(config.decode, beam_size=beam, n_best=1, batch_size=args.batch_size)
        speed = sentences_per_second(model, sources, decode)
        name = "greedy" if beam <= 1 else f"beam {beam}"
        print(f"{name:>8}: {speed:8.1f} sentences/s  ({len(sources)} sentences, batch "
              f"{args.batch_size}, {args.threads} thread{'s' * (args.threads > 1)}, {what})", flush=True)


if __name__ == "__main__":
    main()
