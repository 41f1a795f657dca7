"""The recommended presets learn what they are recommended for, at reduced budgets (slow).

Each runs as the preset has it (model, optimiser, schedule, decoding); only the budget
(updates, evaluations) and what the small data cannot hold (a subword vocabulary of 8,000) are
set. The full-budget figures are in docs/your-data.md.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from helpers import ROOT
from learning import at_least, learns

import attnseq
from attnseq.data.corpora.dates import ALL_LOCALES
from attnseq.data.corpus import read_tsv
from attnseq.data.splits import make_date_splits, write_split_dir

CONFIGS = ROOT / "configs"
BUDGET = ["train.progress=false", "train.log_every=0", "train.threads=1"]

# German number words -> English ones: compounds on the source side ("dreihunderteinundzwanzig"),
# which subwords split into the pieces they are made of; several words on the target side.
ONES = "null ein zwei drei vier fünf sechs sieben acht neun".split()
TEENS = "zehn elf zwölf dreizehn vierzehn fünfzehn sechzehn siebzehn achtzehn neunzehn".split()
TENS = ["", ""] + "zwanzig dreißig vierzig fünfzig sechzig siebzig achtzig neunzig".split()
EN_ONES = "zero one two three four five six seven eight nine".split()
EN_TEENS = "ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
EN_TENS = ["", ""] + "twenty thirty forty fifty sixty seventy eighty ninety".split()


def german(n: int) -> str:
    """1 <= n < 1,000,000 in German number words (one word: 321 -> dreihunderteinundzwanzig)."""

    def below_100(k: int) -> str:
        if k < 10:
            return ONES[k] if k else ""
        if k < 20:
            return TEENS[k - 10]
        return (ONES[k % 10] + "und" if k % 10 else "") + TENS[k // 10]

    def below_1000(k: int) -> str:
        return (ONES[k // 100] + "hundert" if k >= 100 else "") + below_100(k % 100)

    words = (below_1000(n // 1000) + "tausend" if n >= 1000 else "") + below_1000(n % 1000)
    return words + "s" if n % 100 == 1 else words  # a final one is "eins"


def english(n: int) -> str:
    """1 <= n < 1,000,000 in English number words (321 -> three hundred twenty-one)."""

    def below_1000(k: int) -> list[str]:
        words = [EN_ONES[k // 100], "hundred"] if k >= 100 else []
        k %= 100
        if k >= 20:
            words.append(EN_TENS[k // 10] + ("-" + EN_ONES[k % 10] if k % 10 else ""))
        elif k >= 10:
            words.append(EN_TEENS[k - 10])
        elif k:
            words.append(EN_ONES[k])
        return words

    return " ".join((below_1000(n // 1000) + ["thousand"] if n >= 1000 else []) + below_1000(n % 1000))


def test_number_words():
    assert german(321) == "dreihunderteinundzwanzig" and english(321) == "three hundred twenty-one"
    assert german(101) == "einhunderteins" and german(17_000) == "siebzehntausend"
    assert english(40_013) == "forty thousand thirteen"


@pytest.fixture(scope="module")
def numbers(tmp_path_factory) -> Path:
    numbers = random.Random(0).sample(range(1, 1_000_000), 7_000)
    pairs = [(german(n), english(n)) for n in numbers]
    folder = tmp_path_factory.mktemp("numbers")
    write_split_dir(folder, pairs[:6_400], pairs[6_400:6_700], pairs[6_700:])
    return folder


@pytest.mark.slow
@learns
def test_recommended_char_learns_dates_of_every_locale(tmp_path):
    folder = tmp_path / "dates"
    write_split_dir(folder, *make_date_splits(8_000, 300, 300, seed=0, locales=ALL_LOCALES))
    summary = attnseq.fit(
        CONFIGS / "recommended-char.yaml",
        tmp_path / "run",
        [f"data.dir={folder}", "train.max_steps=500", "train.eval_every=250", *BUDGET],
    )
    at_least("dev exact match", summary["dev_exact_match"], 0.9)
    test = attnseq.load(tmp_path / "run").evaluate(read_tsv(folder / "test.tsv"))
    at_least("test exact match", test["exact_match"], 0.9)


@pytest.mark.slow
@pytest.mark.minutes
@learns
def test_recommended_subword_learns_number_words(numbers, tmp_path):
    summary = attnseq.fit(
        CONFIGS / "recommended-subword.yaml",
        tmp_path / "run",
        [
            f"data.dir={numbers}",
            "data.tokenizer.vocab_size=120",
            "train.max_steps=600",
            "train.eval_every=100",
            "train.target_exact_match=0.95",
            *BUDGET,
        ],
    )
    # (stops once 95% of dev is exact: update 400 here, 64 s alone, where 600 updates took 85-100 s)
    at_least("dev BLEU", summary["dev_bleu"], 90)
    test = attnseq.load(tmp_path / "run").evaluate(read_tsv(numbers / "test.tsv"))
    at_least("test BLEU", test["bleu"], 90)
    at_least("test exact match", test["exact_match"], 0.9)
