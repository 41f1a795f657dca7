"""Which int8 route decodes fastest: attnseq's int8 layers against torch.ao's quantize_dynamic and
torchao, each against fp32, on a trained run, in one process, in turn.

    python bench/int8_kernels.py RUN_DIR [--data test.tsv] [--sentences 256] [--repeat 3]
    python bench/int8_kernels.py RUN_DIR --routes fp32 attnseq ao ao+output torchao+output

Routes (each a copy of the run's fp32 model):
- ``attnseq``: ``attnseq.nn.int8.quantize_int8`` (what ``decode.precision: int8`` runs), with the
  weights packed for FBGEMM; ``attnseq-onednn`` the same packed for oneDNN's kernels;
- ``ao``: ``torch.ao.quantization.quantize_dynamic(model, {nn.Linear})``: its module swap leaves
  the output layer (attnseq's ``OutputLayer``, a subclass) float, and the recurrent layers too
  (swapping the ``nn.LSTM`` inside them breaks their fused and single-step paths);
  ``ao+output``: the output layer made a plain ``nn.Linear`` first, so that it is swapped too;
- ``torchao+output``: torchao's ``quantize_(model, Int8DynamicActivationInt8WeightConfig())``
  (``pip install torchao``), the output layer made a plain ``nn.Linear`` first (torchao's int8
  weight has no transpose, which ``OutputLayer`` takes).
Each route's line gives its sentences/s (the best of ``--repeat``, process CPU time on one
thread), its ratio to fp32, the share of outputs equal to fp32's, the seconds quantising took
(imports included) and the warnings and lines it printed.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import io
import sys
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import decode_speed as speed  # noqa: E402

ROUTES = ("fp32", "attnseq", "attnseq-onednn", "ao", "ao+output", "torchao+output")


def as_plain_linear(model: torch.nn.Module) -> None:
    """Every OutputLayer of ``model`` made the nn.Linear it extends (same parameters)."""
    from attnseq.nn.output import OutputLayer

    for module in model.modules():
        if type(module) is OutputLayer:
            module.__class__ = torch.nn.Linear


def quantised(route: str, model: torch.nn.Module) -> torch.nn.Module:
    """``model`` (a copy) converted by ``route``."""
    if route.endswith("+output"):
        as_plain_linear(model)
    if route.startswith("attnseq"):
        from attnseq.nn import int8

        before, int8.ENGINE = int8.ENGINE, "onednn" if route.endswith("onednn") else "fbgemm"
        try:
            return int8.quantize_int8(model)
        finally:
            int8.ENGINE = before
    if route.startswith("ao"):
        import torch.ao.quantization as ao

        return ao.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    if route.startswith("torchao"):
        from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_

        quantize_(model, Int8DynamicActivationInt8WeightConfig())
        return model
    return model


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", help="a trained run folder")
    parser.add_argument("--data", help="source<TAB>target file (default: the run's test set)")
    parser.add_argument("--sentences", type=int, default=256)
    parser.add_argument("--beams", type=int, nargs="+", default=[1, 5])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--routes", nargs="+", choices=ROUTES, default=list(ROUTES))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    speed.CLOCK = time.process_time

    from attnseq.api import load

    translator = load(args.run)
    sources = speed.source_ids(translator, speed.run_pairs(translator, args.data, args.sentences, split="test"))
    models = {}
    for route in args.routes:
        printed = io.StringIO()
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stderr(printed):
            warnings.simplefilter("always")
            started = time.perf_counter()
            try:
                models[route] = quantised(route, copy.deepcopy(translator.model))
            except Exception as err:  # noqa: BLE001  (a route this model cannot take: say why)
                print(f"{route}: cannot convert: {err!r}"[:300])
                continue
            seconds = time.perf_counter() - started
        lines = [line for line in printed.getvalue().splitlines() if line.strip()]
        print(
            f"{route}: converted in {seconds:.1f} s; {len(caught)} warning(s)"
            + "".join(f"\n    warning: {str(w.message).splitlines()[0][:100]}" for w in caught[:2])
            + "".join(f"\n    printed: {line[:100]}" for line in lines[:2]),
            flush=True,
        )
    for beam in args.beams:
        settings = dataclasses.replace(translator.config.decode, beam_size=beam, n_best=1, batch_size=64)
        for route, model in list(models.items()):
            try:
                speed.decode_all(model, sources[:64], settings)  # warm-up, and does it decode at all
            except Exception as err:  # noqa: BLE001
                print(f"{route}: cannot decode: {err!r}"[:300])
                del models[route]
        speeds, outputs = speed.in_turn(models, sources, settings, args.repeat)
        reference = outputs.get("fp32")
        for route in models:
            same = (
                ""
                if reference is None
                else f", {100 * sum(a == b for a, b in zip(outputs[route], reference)) / len(sources):.0f}% of outputs as fp32"
            )
            ratio = f" ({speeds[route] / speeds['fp32']:.2f}x)" if "fp32" in speeds else ""
            print(
                f"{'greedy' if beam == 1 else f'beam {beam}':>8} {route:>15}: {speeds[route]:8.1f} sentences/s"
                f"{ratio}{same}",
                flush=True,
            )


if __name__ == "__main__":
    main()
