"""The GPU table: training, decoding and CTranslate2 on one GPU, in one call of under 8 minutes.

    python bench/gpu.py [--out gpu.md]                # a machine with a CUDA GPU (gpu.json beside)
    python bench/gpu.py --device cpu                  # the same pipeline, tiny, on 1 thread: its smoke test

Every row is measured in this one process, in turn, through attnseq's public API (attnseq.fit,
attnseq.load, the command line's ``attnseq export``):

- ``train PRESET`` (fp32, bf16): target tokens/s of recommended-subword and
  transformer-gettext-de, in fp32 and with ``train.precision: bf16`` (autocast where bf16 pays:
  attnseq.hardware.bf16_pays; a row trained in fp32 instead says so), a fixed number of updates
  (``train.max_steps``). The rate is read from the run's metrics.jsonl: the median of its
  ``train`` records (windows of ``train.log_every`` updates, each the seconds of its updates, as
  attnseq counts them: reading batches between updates is not in it) without the first window,
  which holds the warm-up (kernels chosen, memory allocated).
- ``recommended-char to 99% dev exact``: the preset trained on generated dates (every locale)
  until 99% of dev is exact (``train.target_exact_match``), evaluated every ``--eval-every``
  updates: the run's clock at the first evaluation that reached it (metrics.jsonl's
  ``wall_seconds``: set-up, data and evaluations included) and its update.
- ``decode recommended-char`` (greedy, beam 5): sentences/s of that model on the device, then
  on this process's CPU (fewer sentences), each GPU row with how many of its outputs equal the
  CPU's.
- ``decode transformer-gettext-de`` and ``CTranslate2 transformer-gettext-de`` (greedy, beam 5):
  the fp32 Transformer run decoded by the torch engine on the device, then exported (``attnseq
  export RUN --to ctranslate2``) and decoded by CTranslate2 on the device in int8_float16 (int8
  on a CPU) on the same sentences, with how many outputs equal the torch engine's; skipped,
  saying why, where CTranslate2 is not installed or has no CUDA.
- each row: the peak GPU memory torch allocated during it (torch.cuda.max_memory_allocated;
  CTranslate2 allocates outside torch: not counted) and the seconds the row took.

The data is generated here, nothing read from outside the repository: dates
(attnseq.data.splits.make_date_splits) and, for the two subword presets, a made-up language pair
(``made_up_pairs``: invented words translated word for word, a modifier after its noun in the
target, words drawn by Zipf's law) with words enough for the presets' 8,000 pieces.
``--text-data DIR`` trains those two on a data folder instead (e.g. ``attnseq data gettext
--lang de --out DIR`` where the machine has the catalogs).

Time: the whole run is held to ``--minutes``: each row gets at most its cap
(``--minutes-per-row`` for a training row, twice that for the dates, ``--decode-seconds`` for a
decoding row) and at most its share of what is left; a training row stops there
(``train.max_minutes``), a decoding row decodes the sentences it got through; a row with no time
left is skipped, saying so. The table (and its JSON) is written again after every row, so a run
cut short keeps what it measured. A row that fails is listed with its error and the exit status
is 1.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import gc
import json
import logging
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

import attnseq  # noqa: E402
from attnseq.data.corpora.dates import ALL_LOCALES  # noqa: E402
from attnseq.data.splits import make_date_splits, write_split_dir  # noqa: E402
from attnseq.runs import read_metrics  # noqa: E402

CONFIGS = ROOT / "configs"
TEXT_PRESETS = ("recommended-subword", "transformer-gettext-de")
Pair = tuple[str, str]


@dataclasses.dataclass(frozen=True)
class Sizes:
    """How much each row does: on a GPU enough to time, on a CPU (``--device cpu``) enough to
    run the whole pipeline in seconds."""

    text: tuple[int, int, int]  # made-up language pairs: train, dev, test
    lexicon: int  # invented words a side
    vocab_size: int | None  # sentencepiece pieces; None: the preset's (8,000)
    dates: tuple[int, int, int]  # date pairs: train, dev, test
    steps: int  # updates of each training row
    log_every: int  # updates a metrics window holds
    eval_sentences: int  # dev sentences of the training rows' one evaluation
    eval_every: int  # the dates row's evaluations
    date_steps: int  # the dates row's update limit; 0: none (its time cap alone)
    date_eval_sentences: int  # 0: the preset's
    decode: int  # sentences decoded on the device
    cpu_decode: int  # sentences decoded on this process's CPU
    chunk: int  # sentences per translate call (its batches of decode.batch_size sorted by length)
    warm_up: int  # sentences decoded before timing


GPU = Sizes(
    text=(20_000, 500, 1_000),
    lexicon=5_000,
    vocab_size=None,
    dates=(40_000, 2_000, 2_000),
    steps=300,
    log_every=50,
    eval_sentences=100,
    eval_every=100,
    date_steps=0,
    date_eval_sentences=0,
    decode=2_000,
    cpu_decode=256,
    chunk=512,
    warm_up=16,
)
TINY = Sizes(
    text=(1_500, 40, 48),
    lexicon=400,
    vocab_size=300,
    dates=(1_500, 100, 100),
    steps=6,
    log_every=2,
    eval_sentences=8,
    eval_every=10,
    date_steps=20,
    date_eval_sentences=50,
    decode=48,
    cpu_decode=16,
    chunk=16,
    warm_up=4,
)


@dataclasses.dataclass
class Row:
    """One line of the table; ``value`` None when the row was not measured (``notes`` say why)."""

    measure: str
    setting: str
    device: str
    value: float | None = None
    unit: str = ""
    notes: str = ""
    peak_mib: float | None = None
    seconds: float | None = None
    failed: bool = False
    extra: dict = dataclasses.field(default_factory=dict)  # the JSON's further figures


# -- data --------------------------------------------------------------------------------------------
def invented_words(count: int, consonants: str, vowels: str, rng: random.Random) -> list[str]:
    """``count`` distinct invented words of one language, the first (the frequent ones, under
    Zipf's law) shortest: 1-2 syllables, then up to 4."""
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < count:
        rank = len(words)
        syllables = min(4, 1 + int(math.log10(rank + 1)) + rng.randint(0, 1))
        word = "".join(
            rng.choice(consonants) + rng.choice(vowels) + (rng.choice(consonants) if rng.random() < 0.3 else "")
            for _ in range(syllables)
        )
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def made_up_pairs(n: int, lexicon: int, seed: int) -> list[Pair]:
    """``n`` pairs of a made-up language pair: sentences of 4-30 words (median 10) drawn by Zipf's
    law from ``lexicon`` invented source words, each translated by its own target word, and every
    modifier (one word in four) that precedes a noun placed after it in the target."""
    rng = random.Random(0)  # one lexicon for every split
    source = invented_words(lexicon, "bdfgklmnprstvz", "aeiou", rng)
    target = invented_words(lexicon, "bcdfghjklmnprstvwz", "aeiouyäöü", rng)
    cumulative = list(1.0 / (rank + 1) for rank in range(lexicon))
    for i in range(1, lexicon):
        cumulative[i] += cumulative[i - 1]
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        length = max(4, min(30, round(rng.lognormvariate(math.log(10), 0.5))))
        ids = rng.choices(range(lexicon), cum_weights=cumulative, k=length)
        out, i = [], 0
        while i < length:
            if ids[i] % 4 == 1 and i + 1 < length and ids[i + 1] % 4 != 1:  # modifier, noun -> noun, modifier
                out += [target[ids[i + 1]], target[ids[i]]]
                i += 2
            else:
                out.append(target[ids[i]])
                i += 1
        pairs.append((" ".join(source[k] for k in ids), " ".join(out)))
    return pairs


def write_data(work: Path, sizes: Sizes) -> tuple[Path, Path]:
    """(the made-up text folder, the dates folder), each train/dev/test.tsv under ``work``."""
    text, dates = work / "text", work / "dates"
    n_train, n_dev, n_test = sizes.text
    write_split_dir(
        text,
        made_up_pairs(n_train, sizes.lexicon, 1),
        made_up_pairs(n_dev, sizes.lexicon, 2),
        made_up_pairs(n_test, sizes.lexicon, 3),
    )
    write_split_dir(dates, *make_date_splits(*sizes.dates, seed=0, locales=ALL_LOCALES))
    return text, dates


def sources(folder: Path, split: str = "test") -> list[str]:
    """The source column of ``folder``/SPLIT.tsv."""
    return [line.split("\t")[0] for line in (folder / f"{split}.tsv").read_text(encoding="utf-8").splitlines()]


# -- time ---------------------------------------------------------------------------------------------
class Budget:
    """The run's seconds: each row gets at most its cap and at most its weight's share of what is
    left before the deadline (the weights of the rows still to come)."""

    def __init__(self, minutes: float, weights: dict[str, float]):
        self.deadline = time.perf_counter() + 60 * minutes
        self.weights = dict(weights)  # row key -> weight, removed as each row is given its time

    def left(self) -> float:
        return self.deadline - time.perf_counter()

    def give(self, key: str, cap: float) -> float:
        """Seconds for the row ``key`` (0 when none are left)."""
        total = sum(self.weights.values()) or 1.0
        share = self.left() * self.weights.pop(key, 0.0) / total
        return max(0.0, min(cap, share))


# -- measuring --------------------------------------------------------------------------------------
class Table:
    """The rows so far, printed and written after each one."""

    def __init__(self, header: list[str], out: Path | None, say: Callable[[str], None]):
        self.header, self.out, self.say, self.rows = header, out, say, []

    def add(self, row: Row) -> Row:
        self.rows.append(row)
        value = "-" if row.value is None else f"{fmt(row.value)} {row.unit}"
        self.say(f"  {row.measure}, {row.setting}, {row.device}: {value}; {row.notes}")
        self.write()
        return row

    def markdown(self) -> str:
        lines = [
            *self.header,
            "",
            "| measure | setting | device | value | unit | peak GPU MiB | row seconds | notes |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in self.rows:
            lines.append(
                f"| {r.measure} | {r.setting} | {r.device} | {'-' if r.value is None else fmt(r.value)} | "
                f"{r.unit} | {'-' if r.peak_mib is None else f'{r.peak_mib:,.0f}'} | "
                f"{'-' if r.seconds is None else f'{r.seconds:.1f}'} | {r.notes} |"
            )
        return "\n".join(lines)

    def write(self) -> None:
        if self.out is None:
            return
        self.out.write_text(self.markdown() + "\n", encoding="utf-8")
        record = {"header": self.header, "rows": [dataclasses.asdict(r) for r in self.rows]}
        self.out.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def fmt(value: float) -> str:
    """``value`` to about three figures, with thousands separated."""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"


class Peak:
    """The peak GPU memory torch allocates within ``with`` (None on a CPU): ``mib`` after it."""

    def __init__(self, device: str):
        self.cuda, self.mib = device.startswith("cuda"), None

    def __enter__(self) -> Peak:
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        return self

    def __exit__(self, *exc) -> None:
        if self.cuda:
            torch.cuda.synchronize()
            self.mib = torch.cuda.max_memory_allocated() / 2**20


def release(device: str) -> None:
    """Free what the rows before left behind (their trainers and translators)."""
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()


def fit(preset: str, run: Path, settings: list[str]) -> dict:
    """attnseq.fit of configs/PRESET.yaml into ``run`` with ``settings``: its summary."""
    return attnseq.fit(CONFIGS / f"{preset}.yaml", run, ["train.progress=false", *settings])


def common_settings(args, work: Path) -> list[str]:
    """The settings of every training row: device, cache, threads."""
    settings = [f"train.device={args.device}", f"data.cache={work / 'cache'}"]
    if args.threads:
        settings += [f"train.threads={args.threads}", f"data.processes={min(args.threads, os.cpu_count() or 1)}"]
    return settings


def bf16_note(device: str) -> str | None:
    """Why bf16 training runs in fp32 on ``device`` (attnseq's own verdict), None where it pays."""
    from attnseq.hardware import bf16_pays

    pays, why_not = bf16_pays(device)
    return None if pays else f"trained in fp32: bf16 {why_not}"


def train_row(preset: str, precision: str, data: Path, args, sizes: Sizes, work: Path, seconds: float) -> Row:
    """Target tokens/s of ``preset`` trained in ``precision`` for ``sizes.steps`` updates (or
    ``seconds``), the median of its metrics windows after the first."""
    row = Row(f"train {preset}", precision, args.device, unit="target tokens/s")
    run = work / f"{preset}-{precision}"
    settings = [
        f"data.dir={data}",
        *common_settings(args, work),
        f"train.precision={precision}",
        f"train.max_steps={sizes.steps}",
        f"train.max_minutes={seconds / 60:.4f}",
        f"train.log_every={sizes.log_every}",
        f"train.eval_every={sizes.steps}",
        f"train.eval_max_sentences={sizes.eval_sentences}",
    ]
    if sizes.vocab_size and not args.text_data:
        settings.append(f"data.tokenizer.vocab_size={sizes.vocab_size}")
    summary = fit(preset, run, settings)
    windows = [r for r in read_metrics(run) if r["type"] == "train"]
    if not windows:
        row.notes = f"no metrics window in {summary['step']} updates (stopped by {summary['stopped_by']})"
        return row
    timed = windows[1:] or windows
    row.value = statistics.median(r["tokens_per_second"] for r in timed)
    notes = [
        f"{summary['step']} updates, median of {len(timed)} windows of {sizes.log_every} updates"
        + ("" if len(windows) > 1 else " (the warm-up's alone)"),
        f"loss {windows[-1]['loss']:.3f} at the end",
        f"{summary['parameters']:,} parameters",
    ]
    if summary["step"] < sizes.steps:
        notes.append(f"stopped by {summary['stopped_by']}")
    if precision == "bf16" and (why := bf16_note(args.device)):
        notes.append(why)
    row.notes = "; ".join(notes)
    row.extra = {
        "updates": summary["step"],
        "windows": [r["tokens_per_second"] for r in windows],
        "loss": windows[-1]["loss"],
        "dev_loss": summary.get("dev_loss"),
        "overall_tokens_per_second": summary["tokens_per_second"],
    }
    return row


def dates_row(data: Path, args, sizes: Sizes, work: Path, seconds: float) -> Row:
    """The recommended-char preset trained on ``data`` until ``args.target`` of dev is exact:
    the run clock and update of the first evaluation that reached it."""
    row = Row(f"recommended-char to {args.target:.0%} dev exact", "fp32", args.device, unit="wall seconds")
    run = work / "recommended-char"
    settings = [
        f"data.dir={data}",
        *common_settings(args, work),
        f"train.target_exact_match={args.target}",
        f"train.eval_every={args.eval_every or sizes.eval_every}",
        f"train.max_minutes={seconds / 60:.4f}",
        "train.log_every=0",
    ]
    if sizes.date_steps:
        settings.append(f"train.max_steps={sizes.date_steps}")
    if sizes.date_eval_sentences:
        settings.append(f"train.eval_max_sentences={sizes.date_eval_sentences}")
    summary = fit("recommended-char", run, settings)
    evaluations = [r for r in read_metrics(run) if r["type"] == "eval"]
    reached = next((r for r in evaluations if r.get("dev_exact_match", 0) >= args.target), None)
    best = max(evaluations, key=lambda r: r.get("dev_exact_match", 0))
    last = evaluations[-1]
    if reached is not None:
        row.value = reached["wall_seconds"]
        row.notes = (
            f"update {reached['step']:,} (dev exact {reached['dev_exact_match']:.1%}); run clock: set-up, "
            f"data and evaluations included"
        )
    else:
        row.notes = (
            f"not reached in {last['step']:,} updates, {last['wall_seconds']:.1f} s (best dev exact "
            f"{best.get('dev_exact_match', 0):.1%} at update {best['step']:,}; stopped by "
            f"{summary['stopped_by']})"
        )
    hit = reached or last
    row.extra = {
        "reached": reached is not None,
        "updates": hit["step"],
        "seconds": hit["wall_seconds"],
        "best_dev_exact_match": best.get("dev_exact_match"),
        "curve": [(r["step"], r["wall_seconds"], r.get("dev_exact_match")) for r in evaluations],
    }
    return row


def decode(
    translator, texts: list[str], beam: int, sizes: Sizes, seconds: float
) -> tuple[float, list[str], float, float]:
    """(sentences/s, outputs, mean output tokens, seconds) of ``translator`` searching ``texts``
    (beam 1: greedy) in calls of ``sizes.chunk`` sentences, after a warm-up, until they are done
    or ``seconds`` have passed."""
    translator.search(texts[: sizes.warm_up], beam_size=beam)
    outputs, tokens = [], 0
    started = time.perf_counter()
    for start in range(0, len(texts), sizes.chunk):
        for result in translator.search(texts[start : start + sizes.chunk], beam_size=beam):
            outputs.append(result.outputs[0])
            tokens += len(result.output_tokens[0])
        if time.perf_counter() - started > seconds:
            break
    took = time.perf_counter() - started
    return len(outputs) / took, outputs, tokens / max(1, len(outputs)), took


def equal(outputs: list[str], others: list[str]) -> str:
    """How many of ``outputs`` equal ``others``, as "k/n" (n: as many as both hold)."""
    n = min(len(outputs), len(others))
    return f"{sum(a == b for a, b in zip(outputs, others))}/{n}"


def setting(beam: int) -> str:
    return "greedy" if beam == 1 else f"beam {beam}"


def ctranslate2_translator(run: Path, export: Path, device: str, threads: int, say: Callable[[str], None]):
    """(the CTranslate2 Translator of the Transformer ``run`` exported into ``export``, None), in
    int8_float16 on a GPU (int8 on a CPU, as ``attnseq.load(..., precision="int8")`` gives), or
    (None, why not) where CTranslate2 is not installed or cannot decode on the GPU. A failed export
    raises RuntimeError."""
    from attnseq.cli import main as attnseq_main
    from attnseq.ctranslate2_library import import_ctranslate2

    try:
        ctranslate2 = import_ctranslate2()
    except ImportError:
        return None, "ctranslate2 is not installed (pip install 'attnseq[ctranslate2]')"
    index = torch.cuda.current_device() if device == "cuda" else 0
    if device == "cuda":
        if ctranslate2.get_cuda_device_count() == 0:
            return None, (
                f"ctranslate2 {ctranslate2.__version__} sees no CUDA device (a build without CUDA, or its "
                "CUDA libraries not found)"
            )
        supported = ctranslate2.get_supported_compute_types("cuda", index)
        if "int8_float16" not in supported:
            return None, (
                f"ctranslate2 {ctranslate2.__version__} has no int8_float16 on this GPU (it has "
                f"{', '.join(sorted(supported))})"
            )
    say("exporting the Transformer run to CTranslate2")
    with contextlib.redirect_stdout(sys.stderr):  # its one line, "wrote ...", is progress here
        code = attnseq_main(["-q", "export", str(run), "--to", "ctranslate2", "--out", str(export)])
    if code != 0:
        raise RuntimeError(f"attnseq export exited {code}")
    if device == "cpu":
        return attnseq.load(export, device="cpu", precision="int8"), None
    # attnseq.load's precision int8 computes in CTranslate2's "int8" (float32 activations); a GPU
    # runs int8 weights best with float16 activations
    from attnseq.data.pipeline import TextPipeline
    from attnseq.engines.ctranslate2_engine.translator import CTranslate2Translator
    from attnseq.runs import read_run_config

    config = read_run_config(export)
    translator = CTranslate2Translator(
        export, TextPipeline.load(config.data, export), config, f"cuda:{index}", threads, compute_type="int8_float16"
    )
    translator.precision = "int8"
    return translator, None


# -- the run ------------------------------------------------------------------------------------------
ROW_KEYS = [
    *(f"train {p} {q}" for p in TEXT_PRESETS for q in ("fp32", "bf16")),
    "dates",
    *(f"decode {w} {b}" for w in ("device", "cpu", "transformer", "ctranslate2") for b in (1, 5)),
]


def measure(args, sizes: Sizes, work: Path, table: Table, say: Callable[[str], None]) -> None:
    """Every row of the table, measured in turn into ``table``."""
    weights = {key: (1.0 if key.startswith("train") else 1.5 if key == "dates" else 0.25) for key in ROW_KEYS}
    budget = Budget(args.minutes, weights)
    row_cap, decode_cap = 60 * args.minutes_per_row, args.decode_seconds
    device = args.device

    def run_row(key: str, cap: float, measure_: str, setting_: str, where: str, work_: Callable[[float], Row]):
        seconds = budget.give(key, cap)
        if seconds < min(cap, 5.0):
            return table.add(
                Row(measure_, setting_, where, notes=f"skipped: the run's --minutes {args.minutes:g} are spent")
            )
        say(f"{measure_}, {setting_} on {where} (at most {seconds:.0f} s)")
        started = time.perf_counter()
        try:
            with Peak(where) as peak:
                row = work_(seconds)
            row.peak_mib = row.peak_mib if row.peak_mib is not None else peak.mib
        except Exception as err:  # noqa: BLE001  (one row's failure is reported; the rest still run)
            traceback.print_exc()
            row = Row(
                measure_,
                setting_,
                where,
                failed=True,
                notes=f"failed: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}",
            )
        row.seconds = time.perf_counter() - started
        release(device)
        return table.add(row)

    say("writing the data")
    text, dates = write_data(work, sizes)
    text_data = Path(args.text_data) if args.text_data else text
    for preset in TEXT_PRESETS:
        for precision in ("fp32", "bf16"):
            run_row(
                f"train {preset} {precision}",
                row_cap,
                f"train {preset}",
                precision,
                device,
                lambda s, p=preset, q=precision: train_row(p, q, text_data, args, sizes, work, s),
            )
    run_row(
        "dates",
        2 * row_cap,
        f"recommended-char to {args.target:.0%} dev exact",
        "fp32",
        device,
        lambda s: dates_row(dates, args, sizes, work, s),
    )

    # decoding the dates model: on the device, then on this process's CPU
    char_run, outputs = work / "recommended-char", {}
    date_sources = sources(dates)

    def decode_row(key, measure_, run_dir, where, texts, beam, against=None, engine_load=None):
        def work_(seconds: float) -> Row:
            translator = engine_load() if engine_load else attnseq.load(run_dir, device=where)
            rate, found, tokens, took = decode(translator, texts, beam, sizes, seconds)
            outputs[(key, beam)] = found
            threads = torch.get_num_threads()
            threads = f", {threads} thread{'s' if threads > 1 else ''}" if where == "cpu" else ""
            notes = [f"{len(found):,} sentences in {took:.1f} s{threads}", f"{tokens:.1f} output tokens each"]
            if against is not None and (key, beam) != against and against in outputs:
                notes.append(f"outputs equal to the torch engine's: {equal(found, outputs[against])}")
            return Row(
                measure_,
                setting(beam),
                where,
                rate,
                "sentences/s",
                "; ".join(notes),
                extra={"sentences": len(found), "mean_output_tokens": tokens},
            )

        if engine_load is None and not (run_dir / "config.yaml").exists():
            return table.add(Row(measure_, setting(beam), where, notes=f"skipped: no run {run_dir.name} was trained"))
        return run_row(f"decode {key} {beam}", decode_cap, measure_, setting(beam), where, work_)

    for beam in (1, 5):
        decode_row("device", "decode recommended-char", char_run, device, date_sources[: sizes.decode], beam)
    for beam in (1, 5):
        decode_row("cpu", "decode recommended-char", char_run, "cpu", date_sources[: sizes.cpu_decode], beam)
    for beam in (1, 5):  # the GPU's outputs against the CPU's, and how much faster
        gpu, cpu = (
            next(
                (
                    r
                    for r in table.rows
                    if r.measure == "decode recommended-char"
                    and r.setting == setting(beam)
                    and r.device == where
                    and r.value
                ),
                None,
            )
            for where in (device, "cpu")
        )
        if gpu is not None and cpu is not None and gpu is not cpu:
            gpu.notes += (
                f"; outputs equal to the CPU's: {equal(outputs[('device', beam)], outputs[('cpu', beam)])}; "
                f"{gpu.value / cpu.value:.1f}x the CPU's rate"
            )
    table.write()

    # the Transformer: the torch engine on the device, then CTranslate2 on the same sentences
    transformer = work / "transformer-gettext-de-fp32"
    text_sources = sources(text_data)[: sizes.decode]
    for beam in (1, 5):
        decode_row("transformer", "decode transformer-gettext-de", transformer, device, text_sources, beam)
    translator, why_not, failed = None, "no Transformer run was trained", False
    if (transformer / "config.yaml").exists():
        try:
            translator, why_not = ctranslate2_translator(
                transformer, work / "transformer-ctranslate2", device, args.threads, say
            )
        except Exception as err:  # noqa: BLE001  (CTranslate2 loads its CUDA libraries here: one missing is a reason)
            traceback.print_exc()
            why_not = f"CTranslate2 could not export or load the run on {device} ({type(err).__name__}: {err})"
            failed = device == "cpu"  # nothing is missing on the smoke run's CPU: a bug
    for beam in (1, 5):
        if translator is None:
            table.add(
                Row(
                    "CTranslate2 transformer-gettext-de",
                    setting(beam),
                    device,
                    failed=failed,
                    notes=f"{'failed' if failed else 'skipped'}: {why_not}",
                )
            )
            continue
        row = decode_row(
            "ctranslate2",
            "CTranslate2 transformer-gettext-de",
            None,
            device,
            text_sources,
            beam,
            against=("transformer", beam),
            engine_load=lambda: translator,
        )
        if row.value is not None:
            row.setting += f", {translator.model.compute_type}"
            if device.startswith("cuda"):  # torch's peak is not CTranslate2's memory
                row.peak_mib, row.notes = None, row.notes + "; GPU memory: CTranslate2's own, not counted"
            torch_row = next(
                (
                    r
                    for r in table.rows
                    if r.measure == "decode transformer-gettext-de" and r.setting == setting(beam) and r.value
                ),
                None,
            )
            if torch_row is not None:
                row.notes += f"; {row.value / torch_row.value:.1f}x the torch engine's rate"
            table.write()


def revision() -> str:
    """This checkout's commit (and whether files differ from it), or "no git" where there is none."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True
        )
    except OSError:  # no git on this machine
        return "no git"
    if commit.returncode != 0:
        return "no git"
    return commit.stdout.strip() + (" with changes" if dirty.stdout.strip() else "")


def header(args, sizes: Sizes) -> list[str]:
    """What the table was measured on and with."""
    from attnseq.hardware import cpu_model

    if args.device == "cuda":
        index = torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        device = (
            f"{torch.cuda.get_device_name(index)} ({props.total_memory / 2**30:.0f} GiB, compute capability "
            f"{props.major}.{props.minor}), CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}"
        )
    else:
        device = "no GPU: the smoke run on the CPU"
    try:
        from attnseq.ctranslate2_library import import_ctranslate2

        ct2 = f"ctranslate2 {import_ctranslate2().__version__}"
    except ImportError:
        ct2 = "no ctranslate2"
    text = (
        f"--text-data {args.text_data}"
        if args.text_data
        else (
            f"a made-up language pair ({sizes.text[0]:,} / {sizes.text[1]:,} / {sizes.text[2]:,}, {sizes.lexicon:,} "
            "words a side)"
        )
    )
    return [
        f"bench/gpu.py --device {args.device}: {device}",
        f"torch {torch.__version__}, {ct2}; CPU {cpu_model()}, torch threads {torch.get_num_threads()}; "
        f"{datetime.date.today()}, attnseq at {revision()}",
        f"Data: {text}; dates in every locale ({sizes.dates[0]:,} / {sizes.dates[1]:,} / {sizes.dates[2]:,}). "
        f"Training rows: {sizes.steps} updates each"
        + (f", {sizes.vocab_size} sentencepiece pieces" if sizes.vocab_size and not args.text_data else "")
        + f"; tokens/s the median of the metrics windows of {sizes.log_every} updates after the first.",
    ]


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--device",
        default="cuda",
        choices=("cuda", "cpu"),
        help="cuda (the default: the current "
        "GPU; CUDA_VISIBLE_DEVICES picks another), or cpu: the same pipeline at tiny sizes, a smoke "
        "test",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="write the table here (Markdown) and its JSON beside (FILE.json), again after every row",
    )
    parser.add_argument(
        "--minutes", type=float, help="the whole run's budget in minutes (default: 6.5 on a GPU, 3 on a CPU)"
    )
    parser.add_argument(
        "--minutes-per-row",
        type=float,
        default=1.0,
        help="a training row's cap (the dates row: twice it) (default: 1.0)",
    )
    parser.add_argument("--decode-seconds", type=float, default=12.0, help="a decoding row's cap (default: 12)")
    parser.add_argument("--target", type=float, default=0.99, help="the dates row's dev exact match (default: 0.99)")
    parser.add_argument(
        "--eval-every",
        type=int,
        default=0,
        help="the dates row's updates between evaluations "
        f"(default: {GPU.eval_every} on a GPU, {TINY.eval_every} on a CPU)",
    )
    parser.add_argument(
        "--text-data",
        help="a data folder (train/dev/test.tsv) for the two subword presets instead of the made-up language pair",
    )
    parser.add_argument(
        "--threads",
        type=int,
        help="torch's CPU threads (train.threads, CTranslate2's on a CPU); 0: "
        "torch's default (default: 0 on a GPU, 1 on a CPU, whose smoke run needs no more)",
    )
    parser.add_argument(
        "--work",
        type=Path,
        help="keep the data and runs in this folder, new or empty (default: a temporary one, removed)",
    )
    parser.add_argument("--tiny", action="store_true", help="the CPU's tiny sizes on any device (a quick check)")
    args = parser.parse_args(argv)
    if args.minutes is None:
        args.minutes = 6.5 if args.device != "cpu" else 3.0
    for name in ("minutes", "minutes_per_row", "decode_seconds"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')}: a number above 0")
    if not 0 < args.target <= 1:
        parser.error("--target: a share of dev above 0, at most 1")
    if args.threads is None:
        args.threads = 1 if args.device == "cpu" else 0
    if args.threads < 0 or args.eval_every < 0:
        parser.error("--threads, --eval-every: 0 or more")
    if args.work is not None and args.work.exists() and (not args.work.is_dir() or any(args.work.iterdir())):
        parser.error(f"--work {args.work}: not an empty folder (the runs go there anew)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print(
            "gpu: no CUDA device here (torch sees none); --device cpu runs the same pipeline as a smoke test",
            file=sys.stderr,
        )
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    logging.basicConfig(level=logging.WARNING, format="  %(name)s: %(message)s", stream=sys.stderr)
    sizes = TINY if args.device == "cpu" or args.tiny else GPU
    started = time.perf_counter()

    def say(what: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f} s] {what}", file=sys.stderr, flush=True)

    table = Table(header(args, sizes), args.out, say)
    say(table.header[0])
    if args.work:
        args.work.mkdir(parents=True, exist_ok=True)
        measure(args, sizes, args.work, table, say)
    else:
        with tempfile.TemporaryDirectory(prefix="attnseq-gpu-") as tmp:
            measure(args, sizes, Path(tmp), table, say)
    say("done")
    print(table.markdown(), flush=True)
    return 1 if any(r.failed for r in table.rows) else 0


if __name__ == "__main__":
    sys.exit(main())
