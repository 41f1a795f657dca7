"""The GPU table: training, decoding and CTranslate2 on one GPU, in one call of under 8 minutes.

    python bench/gpu.py [--out FILE] [--minutes 1.5]   # on a machine with a CUDA GPU
    python bench/gpu.py --device cpu                   # the same pipeline, tiny, as a smoke test

Every row runs on data generated here (dates written in every locale; nothing is downloaded):
- training target tokens/s in fp32 and in bf16 (``train.precision: bf16``, autocast) for the
  recommended-subword and transformer-gettext-de presets, a fixed number of updates each;
- the recommended-char preset trained until 99% of dev is exact (``train.target_exact_match``),
  or ``--minutes``: wall seconds and updates;
- greedy and beam-5 sentences/s of that model on the device, beside the same on this machine's
  CPU (fewer sentences there);
- the Transformer run exported to CTranslate2 in int8 and decoded on the device (int8_float16 on
  a GPU), sentences/s and its compute type;
- the peak device memory of each row (torch.cuda.max_memory_allocated; RSS is not it on a CPU).
The table names the device and torch's version; ``--out`` writes it (Markdown) and a JSON beside.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

import attnseq  # noqa: E402
from attnseq.data.dates import ALL_LOCALES  # noqa: E402
from attnseq.data.splits import make_date_splits, write_split_dir  # noqa: E402

QUIET = ["train.progress=false", "train.log_every=0"]


class Sizes:
    """How much each row does: on a GPU enough to time, on a CPU enough to run the pipeline."""

    def __init__(self, device: str, minutes: float):
        gpu = device.startswith("cuda")
        self.pairs = (20_000, 500, 1_000) if gpu else (600, 40, 40)
        self.speed_steps = 300 if gpu else 3
        self.minutes = minutes if gpu else 0.2
        self.decode = 1_000 if gpu else 20  # sentences decoded on the device
        self.cpu_decode = 200 if gpu else 20


def peak_reset(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()


def peak_mb(device: str) -> float | None:
    return torch.cuda.max_memory_allocated() / 2**20 if device.startswith("cuda") else None


def train(preset: str, data: Path, run: Path, device: str, *settings: str) -> dict:
    """attnseq.fit of configs/PRESET.yaml on ``data`` into ``run``: its summary."""
    with contextlib.redirect_stdout(io.StringIO()):
        return attnseq.fit(ROOT / "configs" / f"{preset}.yaml", run,
                           [f"data.dir={data}", f"train.device={device}", *QUIET, *settings])


def sentences_per_second(translator, sources: list[str], beam: int) -> float:
    translator.search(sources[:8], beam_size=beam)  # warm-up: kernels chosen, caches made
    if str(getattr(translator, "device", "cpu")).startswith("cuda"):
        torch.cuda.synchronize()
    started = time.perf_counter()
    translator.search(sources, beam_size=beam)
    if str(getattr(translator, "device", "cpu")).startswith("cuda"):
        torch.cuda.synchronize()
    return len(sources) / (time.perf_counter() - started)


def measure(device: str, minutes: float, tmp: Path, say) -> list[dict]:
    """Every row of the table, measured in turn."""
    sizes, rows = Sizes(device, minutes), []
    data = tmp / "dates"
    write_split_dir(data, *make_date_splits(*sizes.pairs, seed=0, locales=ALL_LOCALES))
    test = [line.split("\t")[0] for line in (data / "test.tsv").read_text(encoding="utf-8").splitlines()]

    for preset in ("recommended-subword", "transformer-gettext-de"):
        for precision in ("fp32", "bf16"):
            say(f"training {preset} in {precision}")
            peak_reset(device)
            summary = train(preset, data, tmp / f"{preset}-{precision}", device, f"train.precision={precision}",
                            f"train.max_steps={sizes.speed_steps}", f"train.eval_every={sizes.speed_steps}",
                            "train.eval_max_sentences=50", "data.tokenizer.vocab_size=400",  # dates: a small text,
                            "train.select_by=loss")  # of short references
            rows.append({"row": f"train {preset}", "precision": precision,
                         "value": summary["tokens_per_second"], "unit": "target tokens/s",
                         "note": f"{summary['step']} updates, dev loss {summary.get('dev_loss', float('nan')):.3f}",
                         "peak_mb": peak_mb(device)})

    say("training recommended-char to 99% dev exact match")
    peak_reset(device)
    started = time.perf_counter()
    summary = train("recommended-char", data, tmp / "char", device, "train.target_exact_match=0.99",
                    "train.eval_every=100", f"train.max_minutes={sizes.minutes}")
    rows.append({"row": "recommended-char to 99% dev exact", "precision": "fp32",
                 "value": round(time.perf_counter() - started, 1), "unit": "wall seconds",
                 "note": f"{summary['step']} updates, dev exact {summary.get('dev_exact_match', 0):.3f}, "
                         f"stopped by {summary['stopped_by']}", "peak_mb": peak_mb(device)})

    for where, count in ((device, sizes.decode), ("cpu", sizes.cpu_decode)):
        translator = attnseq.load(tmp / "char", device=where)
        for beam in (1, 5):
            say(f"decoding on {where}, beam {beam}")
            peak_reset(where)
            rate = sentences_per_second(translator, test[:count], beam)
            rows.append({"row": f"decode recommended-char on {where}", "precision": "fp32",
                         "value": round(rate, 1), "unit": f"sentences/s, {'greedy' if beam == 1 else 'beam 5'}",
                         "note": f"{count} test sentences", "peak_mb": peak_mb(where)})
        if device == "cpu":
            break  # the device is this CPU: one pair of rows

    say("CTranslate2: exporting the Transformer run in int8")
    try:
        from attnseq.cli import main

        export = tmp / "ct2-int8"
        run = tmp / "transformer-gettext-de-fp32"
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(["-q", "export", str(run), "--to", "ctranslate2", "--quantization", "int8",
                         "--out", str(export)])
        if code != 0:
            raise RuntimeError(f"attnseq export exited {code}")
        translator = attnseq.load(export, device=device)
        rate = sentences_per_second(translator, test[:sizes.decode], 5)
        rows.append({"row": "CTranslate2 transformer-gettext-de", "precision": translator.model.compute_type,
                     "value": round(rate, 1), "unit": "sentences/s, beam 5", "note": f"{sizes.decode} sentences",
                     "peak_mb": None})
    except (ImportError, RuntimeError, ValueError) as err:  # no CTranslate2, or one without CUDA
        rows.append({"row": "CTranslate2 transformer-gettext-de", "precision": "-", "value": None,
                     "unit": "-", "note": f"not measured: {err}", "peak_mb": None})
    return rows


def table(rows: list[dict], device: str) -> str:
    name = torch.cuda.get_device_name() if device.startswith("cuda") else "CPU"
    lines = [f"{name}, torch {torch.__version__}", "",
             "| row | precision | value | unit | peak device memory | note |", "|---|---|---|---|---|---|"]
    for r in rows:
        peak = f"{r['peak_mb']:.0f} MiB" if r["peak_mb"] is not None else "-"
        value = "-" if r["value"] is None else f"{r['value']:,}"
        lines.append(f"| {r['row']} | {r['precision']} | {value} | {r['unit']} | {peak} | {r['note']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda (the default), cuda:N or cpu (a smoke run)")
    parser.add_argument("--minutes", type=float, default=1.5, help="the time-to-99%% row's budget on a GPU")
    parser.add_argument("--out", type=Path, help="write the table here (Markdown) and FILE.json beside it")
    args = parser.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("gpu: no CUDA device here (torch sees none); --device cpu runs the smoke test", file=sys.stderr)
        return 2
    started = time.perf_counter()

    def say(what: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f} s] {what}", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        rows = measure(args.device, args.minutes, Path(tmp), say)
    text = table(rows, args.device)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
        args.out.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
