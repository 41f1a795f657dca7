"""Decoding speed: sentences per second, greedy and beam search, on one pinned thread; fp32
against int8 in the same process.

    python bench/decode_speed.py RUN_DIR [--data test.tsv] [--sentences 500] [--beams 1 5]
    python bench/decode_speed.py RUN_DIR --precisions fp32 int8 [--repeat 3] [--clock cpu]
    python bench/decode_speed.py            # an untrained model of the benchmark size

With a run folder, the sources come from ``--data`` (a TSV), else from the run's dev set; without
one, an untrained model shaped like configs/luong2015-gettext-de.yaml decodes random sources of
5 to 30 tokens. Prints one line per setting and precision.

With several ``--precisions`` the model is loaded once in each (int8 quantised at load, as
``attnseq.load(..., precision="int8")`` does) and the precisions are timed in turn, ``--repeat``
times, the best of each kept (a shared machine is noisy: the ratio of one run is what to read).
After the first precision each line gives the share of sentences whose output equals the first
precision's, and with a run the quality of the outputs against the TSV's references (exact
match, and BLEU where the references are text). bench/measure.py's ``decode-int8`` (the int8
table of ``make bench``) runs the same comparison.
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

from attnseq.config import DECODE_PRECISIONS, load_config  # noqa: E402
from attnseq.data.batching import SourceBatch  # noqa: E402
from attnseq.decoding.search import search  # noqa: E402

PRESET = ROOT / "configs" / "luong2015-gettext-de.yaml"
CLOCK = time.perf_counter


def untrained(vocab: int, overrides: list[str], precision: str = "fp32", preset: str | Path = PRESET):
    """(model, config) of ``preset``'s size with random weights and ``vocab`` words a side,
    quantised to int8 for ``precision`` int8."""
    from attnseq.nn.model import build_model

    config = load_config(preset, overrides)
    torch.manual_seed(0)
    model = build_model(config.model, vocab, vocab, shares_vocab=config.data.shared_vocab).eval()
    if precision == "int8":
        from attnseq.nn.int8 import quantize_int8

        quantize_int8(model)
    return model, config


def random_sources(n: int, vocab: int, seed: int = 0) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(4, vocab) for _ in range(rng.randint(5, 30))] for _ in range(n)]


def run_pairs(translator, data: str | None, n: int | None, split: str = "dev") -> list[tuple[str, str]]:
    """The first ``n`` (all: None) (source, reference) pairs of ``data`` (default: the run's
    ``split``, dev or test)."""
    from attnseq.data.corpus import read_tsv

    config = translator.config.data
    path = data or getattr(config, split) or (Path(config.dir) / f"{split}.tsv" if config.dir else None)
    if not path or not Path(path).exists():
        sys.exit(f"decode_speed: give --data FILE.tsv (the run's {split} set {path} is not there)")
    return read_tsv(path, strip=config.strip)[:n]


def source_ids(translator, pairs) -> list[list[int]]:
    return [translator.pipeline.encode_source(s) or [translator.pipeline.src_vocab.unk_id] for s, _ in pairs]


def decode_all(model, sources: list[list[int]], decode) -> tuple[float, list[list[int]]]:
    """(sentences/s, each source's best output ids) of decoding ``sources`` in batches of
    decode.batch_size, sorted by length (outputs in the order of ``sources``)."""
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    outputs: list[list[int]] = [[] for _ in sources]
    started = CLOCK()
    with torch.no_grad():
        for start in range(0, len(order), decode.batch_size):
            rows = order[start : start + decode.batch_size]
            for i, found in zip(rows, search(model, SourceBatch.of([sources[i] for i in rows]), decode)):
                outputs[i] = found[0].tokens
    return len(sources) / (CLOCK() - started), outputs


def in_turn(models: dict, sources: list[list[int]], decode, repeat: int) -> tuple[dict, dict]:
    """({precision: the best sentences/s of ``repeat`` timings, taken in turn}, {precision: outputs})."""
    speeds, outputs = {p: 0.0 for p in models}, {}
    for _ in range(repeat):
        for p, model in models.items():
            speed, outputs[p] = decode_all(model, sources, decode)
            speeds[p] = max(speeds[p], speed)
    return speeds, outputs


def quality(translator, pairs, beam: int) -> dict:
    """Exact match (0..100) and, where the references are text, BLEU of ``translator``'s outputs on ``pairs``."""
    from attnseq.eval.metrics import bleu_applies, exact_match, sacrebleu_score

    outputs = [r.outputs[0] for r in translator.search([s for s, _ in pairs], beam_size=beam, n_best=1)]
    refs = [translator.pipeline.normalise(t) for _, t in pairs]
    scores = {"exact_match": 100 * exact_match(outputs, refs)}
    if bleu_applies(refs):
        scores["bleu"] = sacrebleu_score("bleu", outputs, refs)[0]
    return scores


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", nargs="?", help="run folder (default: an untrained model)")
    parser.add_argument("--data", help="source<TAB>target file to decode (with a run)")
    parser.add_argument("--sentences", type=int, default=500)
    parser.add_argument("--beams", type=int, nargs="+", default=[1, 5])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=8000, help="vocabulary size of the untrained model")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--precisions",
        nargs="+",
        choices=DECODE_PRECISIONS,
        default=["fp32"],
        help="decode.precision of each model, timed in turn (the first is the reference)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="times each precision is timed (the best kept)")
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall-clock, or process CPU time (1 thread; steadier on a shared machine)",
    )
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="config override for the untrained model"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter

    translators, pairs = {}, None
    if args.run:
        from attnseq.api import load

        translators = {p: load(args.run, precision=p) for p in args.precisions}
        first = translators[args.precisions[0]]
        pairs = run_pairs(first, args.data, args.sentences)
        sources, what, config = source_ids(first, pairs), args.run, first.config
        models = {p: t.model for p, t in translators.items()}
        got = {p: t.precision for p, t in translators.items()}  # fp32 where the CPU refused int8
    else:
        models, config = {}, None
        for p in args.precisions:
            models[p], config = untrained(args.vocab, args.set, p)
        sources, what = random_sources(args.sentences, args.vocab), "untrained preset-size model"
        got = {p: p for p in args.precisions}

    first = args.precisions[0]
    for beam in args.beams:
        decode = dataclasses.replace(config.decode, beam_size=beam, n_best=1, batch_size=args.batch_size)
        speeds, outputs = in_turn(models, sources, decode, args.repeat)
        for p in args.precisions:
            name = "greedy" if beam <= 1 else f"beam {beam}"
            line = f"{name:>8} {got[p]:>4}: {speeds[p]:8.1f} sentences/s"
            if p != first:
                same = sum(a == b for a, b in zip(outputs[p], outputs[first])) / len(sources)
                line += f" ({speeds[p] / speeds[first]:.2f}x), {100 * same:.1f}% of outputs as {first}"
            if pairs is not None:
                line += "; " + ", ".join(f"{k} {v:.2f}" for k, v in quality(translators[p], pairs, beam).items())
            print(
                line + f"  ({len(sources)} sentences, batch {args.batch_size}, {args.threads} "
                f"thread{'s' * (args.threads > 1)}, {args.clock} clock, {what})",
                flush=True,
            )


if __name__ == "__main__":
    main()
