"""Time to a good model: ``attnseq train --data D`` (no config: the recommended preset for the
data) for a wall-clock budget, one thread a run, two runs side by side, each scored on its test
split by ``attnseq evaluate``. Prints a Markdown table naming the CPU and its flags; ``--write
FILE`` also puts it in FILE between the lines ``<!-- time-to-quality -->`` and
``<!-- /time-to-quality -->`` (the table in docs/benchmarks.md is made so).

    python bench/time_to_quality.py [--minutes 1 2] [--tasks dates numbers addition]
                                    [--variant NAME[:KEY=VALUE,...]] ... [--seeds 1 2]
                                    [--keep DIR] [--write docs/benchmarks.md]

The tasks are made here, none of them seen when the presets were chosen:
  dates      generated dates in eight CLDR locales and many formats -> ISO (attnseq data dates)
  numbers    English number words up to 9,999,999 -> digits ("four thousand and twelve" -> 4012)
  numbers3   the same in English, German or French, one drawn for each ("viertausendzwölf" -> 4012)
  addition   the book's addition.txt with the book's split (attnseq data book)
  gettext-L  English -> language L, this machine's gettext catalogs (attnseq data gettext --lang L):
             text, scored by test BLEU and chrF (sacrebleu, raw references) instead of exact match
Each ``--variant`` is a set of --set overrides (``fp32:train.precision=fp32``); without any, the
defaults alone. Runs start two at a time, in the order task, budget, seed, variant, so the runs
compared with each other run side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from attnseq.hardware import cpu_flags, cpu_model  # noqa: E402
from attnseq.reproduce.datasets import BOOK_DIR  # noqa: E402
from attnseq.reproduce.page import code_version  # noqa: E402

ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen \
seventeen eighteen nineteen".split()
TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
SHOWN_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16")


def below_thousand(n: int) -> str:
    """English words of 0 < n < 1000, British style ("three hundred and five")."""
    hundreds, rest = divmod(n, 100)
    words = [f"{ONES[hundreds]} hundred"] if hundreds else []
    if rest:
        tens, ones = divmod(rest, 10)
        said = ONES[rest] if rest < 20 else TENS[tens] + (f"-{ONES[ones]}" if ones else "")
        words.append(("and " if hundreds else "") + said)
    return " ".join(words)


def number_words(n: int) -> str:
    """English words of 0 <= n < 10**9: "two million, forty thousand and seven"."""
    if n == 0:
        return "zero"
    groups = []
    for scale, name in ((10**6, " million"), (10**3, " thousand"), (1, "")):
        group, n = divmod(n, scale)
        if group:
            groups.append(below_thousand(group) + name)
    if len(groups) > 1 and group and group < 100:  # the last group, below a hundred: "... and seven"
        return ", ".join(groups[:-1]) + " and " + groups[-1]
    return ", ".join(groups)


DE_ONES = "null eins zwei drei vier fünf sechs sieben acht neun zehn elf zwölf dreizehn vierzehn fünfzehn \
sechzehn siebzehn achtzehn neunzehn".split()
DE_TENS = "_ _ zwanzig dreißig vierzig fünfzig sechzig siebzig achtzig neunzig".split()


def german_below_thousand(n: int, final: bool = True) -> str:
    """German words of 0 < n < 1000 as one word ("dreihundertfünfundvierzig"); a final 1 is
    "eins" (hunderteins), "ein" inside a compound (einhundert, eintausend)."""
    hundreds, rest = divmod(n, 100)
    word = (("ein" if hundreds == 1 else DE_ONES[hundreds]) + "hundert") if hundreds else ""
    if rest == 1:
        return word + ("eins" if final else "ein")
    if rest < 20:
        return word + (DE_ONES[rest] if rest else "")
    tens, ones = divmod(rest, 10)
    return word + ((("ein" if ones == 1 else DE_ONES[ones]) + "und") if ones else "") + DE_TENS[tens]


def german_words(n: int) -> str:
    """German words of 0 <= n < 10**9: "zwei Millionen vierzigtausendsieben"."""
    if n == 0:
        return "null"
    millions, n = divmod(n, 10**6)
    thousands, rest = divmod(n, 1000)
    words = []
    if millions:
        words.append("eine Million" if millions == 1 else german_below_thousand(millions) + " Millionen")
    compound = (german_below_thousand(thousands, final=False) + "tausend" if thousands else "") + (
        german_below_thousand(rest) if rest else ""
    )
    return " ".join(words + ([compound] if compound else []))


FR_ONES = "zéro un deux trois quatre cinq six sept huit neuf dix onze douze treize quatorze quinze seize \
dix-sept dix-huit dix-neuf".split()
FR_TENS = "_ _ vingt trente quarante cinquante soixante".split()


def french_below_hundred(n: int) -> str:
    if n < 20:
        return FR_ONES[n]
    if n < 70:
        tens, ones = divmod(n, 10)
        return FR_TENS[tens] + ("" if not ones else " et un" if ones == 1 else "-" + FR_ONES[ones])
    if n < 80:  # soixante-dix, soixante et onze, soixante-douze ...
        return "soixante" + (" et onze" if n == 71 else "-" + FR_ONES[n - 60])
    return "quatre-vingts" if n == 80 else "quatre-vingt-" + FR_ONES[n - 80]


def french_below_thousand(n: int, before: bool = False) -> str:
    """French words of 0 < n < 1000 ("trois cent quarante-cinq"); ``before``: a multiplier of
    mille (quatre-vingt mille, deux cent mille: no plural s)."""
    hundreds, rest = divmod(n, 100)
    words = []
    if hundreds:
        words.append(
            "cent" if hundreds == 1 else FR_ONES[hundreds] + (" cents" if not rest and not before else " cent")
        )
    if rest:
        said = french_below_hundred(rest)
        words.append(said[:-1] if before and said.endswith("quatre-vingts") else said)
    return " ".join(words)


def french_words(n: int) -> str:
    """French words of 0 <= n < 10**9: "deux millions quarante mille sept"."""
    if n == 0:
        return "zéro"
    millions, n = divmod(n, 10**6)
    thousands, rest = divmod(n, 1000)
    words = []
    if millions:
        words.append("un million" if millions == 1 else french_below_thousand(millions) + " millions")
    if thousands:
        words.append("mille" if thousands == 1 else french_below_thousand(thousands, before=True) + " mille")
    if rest:
        words.append(french_below_thousand(rest))
    return " ".join(words)


LANGUAGES = {"en": number_words, "de": german_words, "fr": french_words}


def write_numbers(folder: Path, seed: int, sizes=(40_000, 1_000, 2_000), languages=("en",)) -> None:
    """train/dev/test.tsv of number words -> digits, distinct numbers in every split; with several
    ``languages``, each number is written in one of them, drawn."""
    rng = random.Random(seed)
    drawn: set[int] = set()
    while len(drawn) < sum(sizes):
        digits = rng.randint(1, 7)
        drawn.add(rng.randint(10 ** (digits - 1) if digits > 1 else 0, 10**digits - 1))
    numbers = sorted(drawn)
    rng.shuffle(numbers)
    folder.mkdir(parents=True, exist_ok=True)
    start = 0
    for name, size in zip(("train", "dev", "test"), sizes):
        rows = numbers[start : start + size]
        start += size
        lines = [f"{LANGUAGES[rng.choice(languages)](n)}\t{n}\n" for n in rows]
        (folder / f"{name}.tsv").write_text("".join(lines), encoding="utf-8")


def attnseq(*args: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "attnseq.cli", "-q", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


def make_task(name: str, folder: Path, seed: int) -> Path:
    data = folder / name
    if data.exists():
        return data
    if name == "numbers":
        write_numbers(data, seed)
        return data
    if name == "numbers3":
        write_numbers(data, seed, languages=("en", "de", "fr"))
        return data
    if name.startswith("gettext-"):
        process = attnseq("data", "gettext", "--lang", name.split("-", 1)[1], "--out", str(data))
        _, err = process.communicate()
        if process.returncode:
            raise SystemExit(f"{name}: {err.strip()}")
        return data
    args = {
        "dates": ["data", "dates", "--locales", "all", "--train", "40000", "--dev", "1000", "--test", "2000"],
        "addition": ["data", "book", "--file", str(BOOK_DIR / "addition.txt")],
    }[name]
    extra = ["--seed", str(seed)] if name == "dates" else []
    process = attnseq(*args, *extra, "--out", str(data))
    _, err = process.communicate()
    if process.returncode:
        raise SystemExit(f"{name}: {err.strip()}")
    return data


def parse_variant(text: str) -> tuple[str, list[str]]:
    name, _, settings = text.partition(":")
    return name, [s for s in settings.split(",") if s]


def train_and_score(data: Path, run: Path, minutes: float, settings: list[str], seed: int) -> subprocess.Popen:
    sets = [
        x for s in [*settings, f"train.seed={seed}", "train.threads=1", "train.progress=false"] for x in ("--set", s)
    ]
    return attnseq("train", "--data", str(data), "--out", str(run), "--max-minutes", str(minutes), *sets)


def score(run: Path, data: Path) -> dict:
    process = attnseq(
        "evaluate", str(run), "--data", str(data / "test.tsv"), "--json", "--set", "decode.batch_size=256"
    )
    out, err = process.communicate()
    if process.returncode:
        raise SystemExit(f"evaluate {run}: {err.strip()}")
    metrics = json.loads(out)
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    evals = [r for r in records if r.get("type") == "eval"]
    start = next(r for r in records if r.get("type") == "start")
    text = start.get("select_by") == "bleu"
    if text:
        test = f"BLEU {metrics['bleu']:.2f} / chrF {metrics['chrf']:.2f}"
        dev = f"BLEU {max((r.get('dev_bleu', 0) for r in evals), default=0.0):.2f}"
    else:
        test = f"{metrics['exact_match']:.2%}"
        dev = f"{max((r.get('dev_exact_match', 0) for r in evals), default=0.0):.1%}"
    return {
        "test": test,
        "dev": dev,
        "steps": evals[-1]["step"] if evals else 0,
        "precision": start.get("precision", "fp32"),
        "minutes": (evals[-1]["wall_seconds"] / 60) if evals else 0.0,
    }


MARKS = ("<!-- time-to-quality -->", "<!-- /time-to-quality -->")


def write_into(path: Path, lines: list[str]) -> None:
    """Replace what stands between the two MARKS lines of ``path`` with ``lines``."""
    text = path.read_text(encoding="utf-8")
    if MARKS[0] not in text or MARKS[1] not in text:
        raise SystemExit(f"{path}: no {MARKS[0]} ... {MARKS[1]} lines to write the table between")
    head, rest = text.split(MARKS[0], 1)
    _, tail = rest.split(MARKS[1], 1)
    path.write_text(head + MARKS[0] + "\n" + "\n".join(lines) + "\n" + MARKS[1] + tail, encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, nargs="+", default=[1.0, 2.0])
    parser.add_argument("--tasks", nargs="+", default=["dates", "numbers", "addition"])
    parser.add_argument("--variant", action="append", default=[], help="NAME[:KEY=VALUE,...]")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1], help="training seeds (the data's: 1)")
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="the folder of data and runs (default: a temporary one)")
    parser.add_argument("--write", type=Path, help="a Markdown file to put the table in (between its marks)")
    args = parser.parse_args()
    variants = [parse_variant(v) for v in args.variant] or [("defaults", [])]
    work = args.keep or Path(tempfile.mkdtemp(prefix="time-to-quality-"))
    work.mkdir(parents=True, exist_ok=True)
    flags = [f for f in SHOWN_FLAGS if f in cpu_flags()]
    out = [
        f"Measured on {time.strftime('%Y-%m-%d')} at {code_version()}: "
        f"{cpu_model()}, {os.cpu_count()} cores; flags: {', '.join(flags) or 'none of ' + ', '.join(SHOWN_FLAGS)}"
    ]
    held = {
        k: os.environ[k]
        for k in ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS")
        if k in os.environ
    }
    if held:
        out[0] += "; held to " + ", ".join(f"{k}={v}" for k, v in held.items())
    out[0] += f"; one thread a run, {args.parallel} side by side (`python bench/time_to_quality.py"
    out[0] += "".join(
        f" {flag} {' '.join(map(str, values))}"
        for flag, values in (
            ("--tasks", args.tasks),
            ("--minutes", [f"{m:g}" for m in args.minutes]),
            ("--seeds", args.seeds),
        )
    )
    out[0] += "".join(f" --variant {v}" for v in args.variant) + "`)."
    out += [
        "",
        "| task | budget | variant | seed | precision | steps | minutes trained | peak RSS GB | best dev | test |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(out), flush=True)
    print(f"(work: {work})", file=sys.stderr)
    jobs = [
        (task, minutes, seed, name, settings)
        for task in args.tasks
        for minutes in args.minutes
        for seed in args.seeds
        for name, settings in variants
    ]
    for start in range(0, len(jobs), args.parallel):
        batch = jobs[start : start + args.parallel]
        running = []
        for task, minutes, seed, name, settings in batch:
            data = make_task(task, work / "data", 1)
            run = work / "runs" / f"{task}-{minutes:g}-{name}-{seed}"
            running.append((task, minutes, seed, name, data, run, train_and_score(data, run, minutes, settings, seed)))
        for task, minutes, seed, name, data, run, process in running:
            err = process.stderr.read()  # (training prints nothing on stdout under -q)
            _, status, usage = os.wait4(process.pid, 0)
            process.returncode = os.waitstatus_to_exitcode(status)
            if process.returncode:
                reason = (err.strip().splitlines() or ["no message"])[-1]
                line = f"| {task} | {minutes:g} min | {name} | {seed} | failed: {reason} ||||||"
            else:
                found = score(run, data)
                line = (
                    f"| {task} | {minutes:g} min | {name} | {seed} | {found['precision']} | {found['steps']:,} | "
                    f"{found['minutes']:.2f} | {usage.ru_maxrss / 1024**2:.2f} | {found['dev']} | {found['test']} |"
                )
            out.append(line)
            print(line, flush=True)
    if args.write:
        write_into(args.write, out)
    return 0


if __name__ == "__main__":
    started = time.perf_counter()
    code = main()
    print(f"\n{time.perf_counter() - started:.0f} s")
    raise SystemExit(code)
