"""The benchmark table: the matmul ceiling, training and decoding speed, peak memory, in one run.

    python bench/run.py [--against REV] [--threads 1 2] [--quick] [--clock wall|cpu] [--out FILE]
    python bench/run.py --int8 [--int8-run RUN ...]   # the int8 table alone
    make bench                      # the same, against nothing
    make bench AGAINST=42e501b      # and against a commit, ratios measured in the same run
    python bench/run.py --corpus    # only the table of generating and splitting corpora (bench/corpus_speed.py)
    python bench/run.py --scale [--sizes 50000 500000 5000000] [--torchrun 5000000]
                                    # only the scale table (bench/scale.py); --quick: 20,000 and 100,000 pairs
    python bench/run.py --engines [--engines-run RUN]   # only the CTranslate2 section
    python bench/run.py --formulas  # only the table of reading images (configs/formulas.yaml)

Every figure is measured in its own process (bench/measure.py), pinned to the stated threads,
``--repeat`` times (the best is kept: the machine is shared and noisy):
- the fp32 matmul ceiling (best of square products, GFLOP/s): measured again in every process
  right after its timing, since a shared machine's speed drifts; the table gives the highest
  and the lowest seen, and each fraction is taken against its own process's;
- training: target tokens/s, sentences/s, the fraction of the ceiling its matmul FLOPs reach,
  and peak RSS, for the reference Luong step and, on generated dates (characters, all locales),
  the bahdanau2014 and recommended-char presets, and on generated gettext messages (English to
  German) recommended-subword; the last two in float32 and, where bfloat16 pays on this CPU
  (AMX; what train.precision auto needs first), in bfloat16 too, each against its own dtype's
  ceiling; "its matmuls alone" is the fraction the step
  would reach if it did nothing but its matrix products (and fused recurrent kernels), each
  replayed at its own shapes: the bound this model's shapes put on the step on this CPU;
- decoding: greedy and beam-5 sentences/s of the RNN (luong2015-gettext-de) and Transformer
  (transformer-gettext-de) presets, untrained, on random sources, the fraction of the ceiling
  their matmul FLOPs reach, and whether the outputs equal the other commit's.
The engines section decodes a trained Transformer (transformer-gettext-de) run's test set with
the torch engine (fp32, eager) and with CTranslate2 (the run exported to float32 and int8),
greedy and beam 5, on the same threads (CTranslate2 decodes as many batches at once, a thread each): the
sentences/s of each, its ratio to the torch engine's, its BLEU and the difference, and how many
outputs equal the torch engine's; each thread count and search is one process, in which the
engines take turns ``--repeat`` times (the best time of each kept). Without ``--engines-run`` it
trains the preset on ``attnseq data gettext --lang de`` for ``--engines-minutes`` first (kept in
the temporary folder and reused).
With ``--against REV`` the commit is checked out in a git worktree and every figure is measured
for it too, alternating with this tree's, and printed as a ratio (this / REV). A preset the
other commit does not have is left out. Machines here change from day to day: the table says
which CPU, which torch, and compare only figures of one run.

The formulas table (``--formulas``, alone) times configs/formulas.yaml on formulas drawn by this
tree (``attnseq data formulas``, 2,000 training images): a training step's images/s and target
tokens/s, and greedy and beam-5 images/s of the untrained model on the test images, read from
their files as translate reads them, at each ``--threads``, the best of ``--repeat``.

A second table compares int8 decoding (``decode.precision: int8``) with fp32, this tree only:
each row measures both in one process, in turn (bench/measure.py ``decode-int8``), greedy and
beam 5, with the quality beside the speed: for the untrained RNN and Transformer gettext
presets the share of outputs int8 keeps equal to fp32's, for recommended-char trained for 1,500
updates on the dates (once, kept in the temporary folder) and for each ``--int8-run RUN`` (a
trained run) the exact match and BLEU of each on the whole test set and their difference (the
speed on its first 300 sentences). On a CPU
without int8 dot products (VNNI, AMX) int8 decodes in fp32, and the table says so.

The scale table follows (bench/scale.py): corpora of 50,000 to 5,000,000 pairs prepared into the
token store by 1 and 2 processes, and trained from it: prep rate, peak RSS and RssAnon, the time
to the first update cold and warm, torchrun's processes.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import scale  # bench/scale.py, beside this file

ROOT = Path(__file__).resolve().parents[1]
MEASURE = ROOT / "bench" / "measure.py"


def run_measure(tree: Path, args: list[str], threads: int, clock: str) -> tuple[dict | None, float]:
    """(the JSON of ``measure.py ARGS`` run against the attnseq of ``tree``, its peak RSS in MB)."""
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "OPENBLAS_NUM_THREADS": str(threads),
    }
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(
            [sys.executable, str(MEASURE), *args, "--threads", str(threads), "--clock", clock],
            stdout=out,
            stderr=err,
            env=env,
            cwd=tree,
        )
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if process.returncode != 0:
            last = err.read().decode(errors="replace").strip().splitlines()[-1:]
            print(f"  ({tree.name}: {' '.join(args[:2])} failed: {last})", file=sys.stderr)
            return None, 0.0
        result = json.loads(out.read().decode().strip().splitlines()[-1])
        return result, result.get("peak_rss_mb", usage.ru_maxrss / 1024)


def worktree(rev: str) -> Path:
    """A checkout of ``rev`` in a temporary git worktree (made once, reused)."""
    sha = subprocess.run(
        ["git", "rev-parse", "--short", rev], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    path = Path(tempfile.gettempdir()) / f"attnseq-bench-{sha}"
    if not path.exists():
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(path), sha], cwd=ROOT, check=True, capture_output=True
        )
    return path


def dates(folder: Path) -> Path:
    """Generated dates in all locales (the character task), made with this tree."""
    if not (folder / "train.tsv").exists():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "attnseq.cli",
                "-q",
                "data",
                "dates",
                "--locales",
                "all",
                "--train",
                "12000",
                "--dev",
                "200",
                "--test",
                "200",
                "--out",
                str(folder),
            ],
            check=True,
            cwd=ROOT,
        )
    return folder


CHAR_STEPS = 1500  # recommended-char's dev exact match is over 99% after these updates on the dates


def char_run(data: Path, folder: Path) -> Path:
    """recommended-char trained for CHAR_STEPS updates on the bench's dates (the first time only;
    a count of updates, so a busy machine takes longer instead of training less)."""
    if not (folder / "best.safetensors").exists():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "attnseq.cli",
                "-q",
                "train",
                str(ROOT / "configs" / "recommended-char.yaml"),
                "--data",
                str(data),
                "--out",
                str(folder),
                "--overwrite",
                "--set",
                f"train.max_steps={CHAR_STEPS}",
                "--set",
                "train.eval_every=500",
                "--set",
                "train.threads=1",
                "--set",
                "train.progress=false",
            ],
            check=True,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
        )
    return folder


def formulas(folder: Path) -> Path:
    """Formulas drawn by this tree (2,000 / 100 / 300 images), made once."""
    if not (folder / "train.tsv").exists():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "attnseq.cli",
                "-q",
                "data",
                "formulas",
                "--train",
                "2000",
                "--dev",
                "100",
                "--test",
                "300",
                "--out",
                str(folder),
            ],
            check=True,
            cwd=ROOT,
        )
    return folder


def formulas_table(threads: list[int], steps: int, sentences: int, clock: str, repeat: int) -> str:
    """The table of configs/formulas.yaml: training images/s and tokens/s, greedy and beam-5
    decoding images/s, at each of ``threads``, the best of ``repeat`` processes each."""
    data = formulas(Path(tempfile.gettempdir()) / "attnseq-bench-formulas")
    preset = str(ROOT / "configs" / "formulas.yaml")
    jobs = [
        ("train step", ["train", preset, f"--steps={steps}", f"--data={data}"]),
        ("decode greedy", ["decode-files", preset, "--beam=1", f"--sentences={sentences}", f"--data={data}"]),
        ("decode beam 5", ["decode-files", preset, "--beam=5", f"--sentences={sentences}", f"--data={data}"]),
    ]
    lines = ["| configs/formulas.yaml | threads | images/s | target tokens/s | peak RSS MB |", "|---|---|---|---|---|"]
    for name, args in jobs:
        for n in threads:
            found = [run_measure(ROOT, args, n, clock) for _ in range(repeat)]
            found = [(r, rss) for r, rss in found if r is not None]
            if not found:
                continue
            best, rss = max(found, key=lambda x: x[0]["sentences_per_second"])
            tokens = f"{best['tokens_per_second']:,.0f}" if "tokens_per_second" in best else ""
            lines.append(f"| {name} | {n} | {best['sentences_per_second']:,.1f} | {tokens} | {rss:,.0f} |")
            print(
                f"  formulas {name}, {n} thread(s): {best['sentences_per_second']:,.1f} images/s",
                file=sys.stderr,
                flush=True,
            )
    return "\n".join(lines) + "\n"


def int8_table(targets: list[tuple[str, str]], threads: list[int], sentences: int, clock: str, repeat: int) -> str:
    """The int8 table: a row per target (name, preset or run), thread count and search."""
    lines = [
        "| int8 decoding | threads | fp32 sent/s | int8 sent/s | int8 / fp32 | fp32 score | int8 score | "
        "int8 - fp32 | outputs as fp32 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, target in targets:
        for threads_ in threads:
            for beam in (1, 5):
                result, _ = run_measure(
                    ROOT,
                    ["decode-int8", target, f"--beam={beam}", f"--sentences={sentences}", f"--repeat={repeat}"],
                    threads_,
                    clock,
                )
                if result is None:
                    continue
                search = "greedy" if beam == 1 else f"beam {beam}"
                ratio = result["int8"] / result["fp32"]
                as_fp32 = "" if result["int8_ran_as"] == "int8" else " (no int8 here: ran fp32)"
                scores = ["", "", ""]
                if "quality" in result:
                    fp32, int8 = result["quality"]["fp32"], result["quality"]["int8"]
                    metric = "bleu" if "bleu" in fp32 else "exact_match"
                    label = "BLEU" if metric == "bleu" else "exact match %"
                    scores = [
                        f"{label} {fp32[metric]:.2f}",
                        f"{int8[metric]:.2f}",
                        f"{int8[metric] - fp32[metric]:+.2f}",
                    ]
                lines.append(
                    f"| {name}, {search}{as_fp32} | {threads_} | {result['fp32']:,.1f} | {result['int8']:,.1f} | "
                    f"{ratio:.2f}x | {' | '.join(scores)} | {100 * result['same_outputs']:.1f}% |"
                )
                print(
                    f"  int8 {name} {search}, {threads_} thread(s): x{ratio:.2f}"
                    + (f", {scores[0]} -> {scores[1]}" if scores[0] else ""),
                    file=sys.stderr,
                    flush=True,
                )
    return "\n".join(lines) + "\n"


def gettext_de(data: Path) -> Path:
    """Generated English->German gettext messages (``attnseq data gettext --lang de``), made with
    this tree once and reused."""
    if not (data / "test.tsv").exists():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "attnseq.cli",
                "-q",
                "data",
                "gettext",
                "--lang",
                "de",
                "--out",
                str(data),
                "--overwrite",
            ],
            check=True,
            cwd=ROOT,
        )
    return data


def trained_transformer(folder: Path, minutes: float) -> Path:
    """A transformer-gettext-de run trained for ``minutes`` on generated English->German gettext
    messages, made with this tree once and reused."""
    data = gettext_de(folder.parent / "attnseq-bench-gettext-de")
    if not (folder / "best.safetensors").exists():
        print(f"  training transformer-gettext-de for {minutes:g} minutes into {folder} (once)", file=sys.stderr)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "attnseq.cli",
                "-q",
                "train",
                "configs/transformer-gettext-de.yaml",
                "--data",
                str(data),
                "--out",
                str(folder),
                "--overwrite",
                "--set",
                f"train.max_minutes={minutes}",
                "--set",
                "train.progress=false",
            ],
            check=True,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
        )
    return folder


def engines_table(args) -> str:
    """The engines section (see the module's docstring) as a Markdown table with its header."""
    from attnseq.runs import read_run_config

    run = (
        Path(args.engines_run)
        if args.engines_run
        else trained_transformer(
            Path(tempfile.gettempdir()) / "attnseq-bench-transformer-gettext-de", args.engines_minutes
        )
    )
    config = read_run_config(run)
    data = args.engines_data or config.data.test or config.data.dir
    rows, sentences, compute, isa = [], 0, {}, None
    for beam in (1, 5):
        for threads in args.threads:
            result, rss = run_measure(
                ROOT,
                ["engines", str(run), f"--data={data}", f"--beam={beam}", f"--repeat={args.repeat}"],
                threads,
                args.clock,
            )
            if result is None:
                continue
            compute, isa = result["compute_types"], result.get("cpu_isa")
            base = result["engines"]["torch"]
            for name, found in result["engines"].items():
                sentences = found["sentences"]
                engine = "torch fp32 eager" if name == "torch" else name
                ratio = found["sentences_per_second"] / base["sentences_per_second"]
                delta = "" if name == "torch" or found["bleu"] is None else f"{found['bleu'] - base['bleu']:+.2f}"
                rows.append(
                    f"| {engine}, {'greedy' if beam == 1 else f'beam {beam}'} | {threads} | "
                    f"{found['sentences_per_second']:,.1f} | {ratio:.2f}x | "
                    f"{'' if found['bleu'] is None else format(found['bleu'], '.2f')} | {delta} | "
                    f"{found['same_outputs']}/{sentences} | {rss:,.0f} |"
                )
                print(f"  engines: {rows[-1]}", file=sys.stderr, flush=True)
    kinds = ", ".join(f"{name} computes in {kind}" for name, kind in compute.items())
    return (
        "\n".join(
            [
                f"CTranslate2 against the torch engine on {run}'s test set ({data}, {sentences} sentences); "
                f"{kinds}, its kernels in {isa or 'the instruction set it chose'}; best of {args.repeat} "
                f"turns, the engines alternating in one process; {args.clock} clock",
                "",
                "| decode | threads | sent/s | x torch fp32 | test BLEU | BLEU delta | outputs equal to torch "
                "| peak RSS MB |",
                "|---|---|---|---|---|---|---|---|",
                *rows,
            ]
        )
        + "\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", help="a commit to measure too (ratios: this tree / it)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--quick", action="store_true", help="fewer steps and sentences (a smoke run)")
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall-clock, or process CPU time (1 thread; steadier on a shared machine)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="measure each figure this many times (alternating trees) and keep the best",
    )
    parser.add_argument("--out", help="also write the table (Markdown) here")
    parser.add_argument(
        "--corpus",
        action="store_true",
        help="only the corpora's table: generating and splitting 5,000,000 pairs (200,000 with --quick)",
    )
    parser.add_argument("--int8", action="store_true", help="only the int8 table")
    parser.add_argument(
        "--speech",
        action="store_true",
        help="only the speech table: data speech, log-mel features (against librosa where installed), "
        "the LAS training step",
    )
    parser.add_argument("--formulas", action="store_true", help="only the table of reading images (formulas)")
    parser.add_argument(
        "--int8-run",
        action="append",
        default=[],
        metavar="RUN",
        help="a trained run to compare int8 with fp32 on (its test set); repeatable",
    )
    parser.add_argument("--scale", action="store_true", help="only the scale table (bench/scale.py)")
    scale.add_arguments(parser.add_argument_group("the scale table"))
    parser.add_argument(
        "--engines", action="store_true", help="only the engines section: CTranslate2 against torch on a trained run"
    )
    parser.add_argument(
        "--engines-run",
        help="engines: a trained transformer-gettext-de run (default: one trained "
        "here for --engines-minutes, then reused)",
    )
    parser.add_argument("--engines-data", help="engines: the test set (default: the run's data.test or data.dir)")
    parser.add_argument(
        "--engines-minutes", type=float, default=10, help="engines: training minutes of the default run"
    )
    args = parser.parse_args()
    if args.corpus:
        import corpus_speed

        return corpus_speed.main(
            ["--pairs", str(200_000 if args.quick else 5_000_000)] + (["--out", args.out] if args.out else [])
        )
    if args.quick and "--sizes" not in sys.argv:
        args.sizes, args.torchrun = [20_000, 100_000], [100_000]
    if args.scale:
        from corpus_speed import show

        return show(scale.run(args), args.out)
    if args.engines:
        from corpus_speed import show

        return show(engines_table(args), args.out)
    if args.speech:
        import speech_speed

        return speech_speed.main(
            ["--utterances", str(40 if args.quick else 200)] + (["--out", args.out] if args.out else [])
        )
    if args.formulas:
        from corpus_speed import show

        from attnseq.hardware import cpu_model

        steps, sentences = (6, 64) if args.quick else (30, 300)
        header = f"Formulas of {datetime.date.today()}: {cpu_model()}, {args.clock} clock\n\n"
        return show(header + formulas_table(args.threads, steps, sentences, args.clock, args.repeat), args.out)
    trees = {"this": ROOT}
    if args.against:
        trees[args.against] = worktree(args.against)
    data = dates(Path(tempfile.gettempdir()) / "attnseq-bench-dates")
    gettext = gettext_de(Path(tempfile.gettempdir()) / "attnseq-bench-gettext-de")
    steps, sentences = (6, 64) if args.quick else (30, 300)
    import torch

    from attnseq.hardware import bf16_pays, cpu_flags, cpu_model, int8_in_hardware

    precisions = ("fp32", "bf16") if bf16_pays()[0] else ("fp32",)  # bf16 rows where auto would pick it

    header = [
        f"Benchmark of {datetime.date.today()}: {cpu_model()} ({os.cpu_count()} CPUs, "
        f"{'AVX-512' if 'avx512f' in cpu_flags() else 'AVX2' if 'avx2' in cpu_flags() else 'no AVX2'}, "
        f"{'int8 dot products' if int8_in_hardware()[0] else 'no int8 dot products'}), "
        f"torch {torch.__version__}, {args.clock} clock" + (f", against {args.against}" if args.against else "")
    ]
    targets = [(f"{Path(run).name} (run)", str(Path(run).resolve())) for run in args.int8_run]
    targets = [
        ("luong2015-gettext-de, untrained", str(ROOT / "configs" / "luong2015-gettext-de.yaml")),
        ("transformer-gettext-de, untrained", str(ROOT / "configs" / "transformer-gettext-de.yaml")),
        (
            f"recommended-char, dates, {CHAR_STEPS:,} updates",
            str(char_run(data, Path(tempfile.gettempdir()) / "attnseq-bench-char")),
        ),
    ] + targets
    if args.int8:
        table = "\n".join(header) + "\n\n" + int8_table(targets, args.threads, sentences, args.clock, args.repeat)
        print(table)
        if args.out:
            Path(args.out).write_text(table, encoding="utf-8")
        return 0
    rows = []
    seen: dict[int, list[float]] = {
        threads: [run_measure(ROOT, ["ceiling"], threads, "wall")[0]["gflops"]] for threads in args.threads
    }
    jobs = [
        ("train", "reference step", "reference", [f"--steps={steps}"], "tokens_per_second"),
        (
            "train",
            "bahdanau2014, dates",
            "configs/bahdanau2014.yaml",
            [f"--steps={steps}", f"--data={data}"],
            "sentences_per_second",
        ),
        *(
            (
                "train",
                f"{name}, {precision}",
                preset,
                [f"--steps={steps}", f"--data={folder}", f"--set=train.precision={precision}"],
                figure,
            )
            for name, preset, folder, figure in (
                ("recommended-char, dates", "configs/recommended-char.yaml", data, "sentences_per_second"),
                ("recommended-subword, gettext-de", "configs/recommended-subword.yaml", gettext, "tokens_per_second"),
            )
            for precision in precisions
        ),
        (
            "decode",
            "greedy, luong2015-gettext-de",
            "configs/luong2015-gettext-de.yaml",
            ["--beam=1", f"--sentences={sentences}"],
            "sentences_per_second",
        ),
        (
            "decode",
            "beam 5, luong2015-gettext-de",
            "configs/luong2015-gettext-de.yaml",
            ["--beam=5", f"--sentences={sentences}"],
            "sentences_per_second",
        ),
        (
            "decode",
            "greedy, transformer-gettext-de",
            "configs/transformer-gettext-de.yaml",
            ["--beam=1", f"--sentences={sentences}"],
            "sentences_per_second",
        ),
        (
            "decode",
            "beam 5, transformer-gettext-de",
            "configs/transformer-gettext-de.yaml",
            ["--beam=5", f"--sentences={sentences}"],
            "sentences_per_second",
        ),
    ]
    for kind, name, preset, extra, figure in jobs:
        for threads in args.threads:
            found = {}
            for _ in range(args.repeat):  # alternating: this tree, then the other; the best of each
                for label, tree in trees.items():
                    if preset != "reference" and not (tree / preset).exists():
                        continue
                    result, rss = run_measure(
                        tree,
                        [kind, preset if preset == "reference" else str(tree / preset), *extra],
                        threads,
                        args.clock,
                    )
                    if result is not None and (label not in found or result[figure] > found[label][0][figure]):
                        found[label] = (result, rss)
            if "this" not in found:
                continue
            this, rss = found["this"]
            value = this[figure]
            fraction = bound = None
            if "ceiling_gflops" in this:  # against the ceiling measured in the same process (its dtype's)
                if this.get("precision", "fp32") == "fp32":
                    seen[threads].append(this["ceiling_gflops"])
                flops = (
                    this["tokens_per_second"] * this["gflop_per_token"]
                    if kind == "train"
                    else this["sentences_per_second"] * this["gflop_per_sentence"]
                )
                fraction = flops / this["ceiling_gflops"]
                if "matmul_ms_per_step" in this:  # the step's products alone, at their own shapes
                    bound = fraction * this["ms_per_step"] / this["matmul_ms_per_step"]
            other = found.get(args.against) if args.against else None
            ratio = value / other[0][figure] if other else None
            same = None
            if other and kind == "decode":
                same = "same outputs" if this["outputs"] == other[0]["outputs"] else "OUTPUTS DIFFER"
            unit = "tok/s" if figure == "tokens_per_second" else "sent/s"
            rows.append((f"{kind} {name} ({unit})", threads, value, fraction, bound, rss, ratio, same))
            print(
                f"  {kind} {name}, {threads} thread(s): {value:,.0f} {unit}"
                + (f", {fraction:.2f} of the ceiling" if fraction is not None else "")
                + (f" (its matmuls alone {bound:.2f})" if bound is not None else "")
                + (f", x{ratio:.2f} against {args.against}" if ratio else "")
                + (f" ({same})" if same else ""),
                file=sys.stderr,
                flush=True,
            )
    for i, threads in enumerate(args.threads):  # the ceiling as it drifted during the run
        low, high = min(seen[threads]), max(seen[threads])
        rows.insert(i, (f"matmul ceiling, GFLOP/s (lowest {low:,.0f})", threads, high, None, None, None, None, None))
    lines = header + [
        "",
        "| measure | threads | value | of ceiling | its matmuls alone | peak RSS MB | "
        + (f"ratio to {args.against} |" if args.against else "|"),
        "|---|---|---|---|---|---|" + ("---|" if args.against else ""),
    ]
    for name, threads, value, fraction, bound, rss, ratio, same in rows:
        cells = [
            name,
            str(threads),
            f"{value:,.1f}" if value < 100 else f"{value:,.0f}",
            "" if fraction is None else f"{fraction:.2f}",
            "" if bound is None else f"{bound:.2f}",
            "" if rss is None else f"{rss:,.0f}",
        ]
        if args.against:
            cells.append("" if ratio is None else f"{ratio:.2f}x" + (f" ({same})" if same else ""))
        lines.append("| " + " | ".join(cells) + " |")
    from corpus_speed import show

    tables = "\n".join(lines) + "\n\n" + int8_table(targets, args.threads, sentences, args.clock, args.repeat)
    return show(tables + "\n\n" + engines_table(args) + "\n\n" + scale.run(args), args.out)
    return show(
        "\n".join(lines)
        + "\n\n"
        + int8_table(targets, args.threads, sentences, args.clock, args.repeat)
        + "\n"
        + formulas_table(args.threads, steps, sentences, args.clock, args.repeat),
        args.out,
    )


if __name__ == "__main__":
    sys.exit(main())
