"""attnseq reproduce: every reproduction runs on a tiny budget and writes its page (with the
expected table columns), its PNG figures, its JSON numbers and a line of the index; options,
budgets, buckets and seed spreads behave as the pages say."""
from __future__ import annotations

import contextlib
import io
import json
import random
from pathlib import Path

import pytest

from attnseq.cli import main
from attnseq.errors import ConfigError, UserError
from attnseq.reproduce import REPRODUCTIONS, listing, reproduce
from attnseq.reproduce.base import VERDICTS, scale_budget
from attnseq.reproduce.runner import options_of
from attnseq.reproduce.scoring import length_buckets, paired_bleu
from attnseq.reproduce.spread import Spread, alike, separated

from conftest import book_file

NAMES = ["bahdanau-length", "book-ch8", "formulas", "luong-scorers", "nadaraya-watson", "placement", "reversal",
         "transformer-vs-rnn"]

# the columns of each page's (first) table, and its figures (OUT/NAME-WHAT.png)
COLUMNS = {
    "book-ch8": ["model", "engine", "epoch 1", "book (epochs 1, 2, 3)", "training s/epoch"],
    "bahdanau-length": ["source subwords", "test sentences", "cho2014 BLEU", "bahdanau2014 BLEU", "difference",
                        "p (paired bootstrap)"],
    "luong-scorers": ["design", "score", "input feeding", "parameters", "tokens/s", "dev exact match",
                      "test exact match", "steps to 90% dev"],
    "placement": ["design", "context goes into", "attending state", "parameters", "tokens/s", "test exact match",
                  "steps to 90% dev"],
    "reversal": ["model", "source", "parameters", "tokens/s", "dev perplexity", "test exact match"],
    "nadaraya-watson": ["method", "bandwidth w", "held-out MSE", "weight entropy (nats per query)"],
    "transformer-vs-rnn": ["model", "parameters", "updates", "training minutes", "tokens/s", "best dev BLEU (greedy)",
                           "test BLEU (beam 5)"],
    "formulas": ["seed", "parameters", "updates", "wall-clock minutes", "target tokens/s", "test exact match",
                 "test token accuracy", "read left to right", "every token counted"],
}
FIGURES = {
    "book-ch8": ["accuracy", "attention-numpy", "attention-torch"],
    "bahdanau-length": ["bleu-by-length", "alignment"],
    "luong-scorers": ["curves", "attention-dot", "attention-general", "attention-concat", "attention-local-m",
                      "attention-local-p"],
    "placement": ["curves"],
    "reversal": ["curves"],
    "nadaraya-watson": ["fit", "weights"],
    "transformer-vs-rnn": ["bleu-by-minute"],
    "formulas": ["curve", "strip-1"],
}

WORDS = {"open": "öffnen", "file": "Datei", "the": "die", "close": "schließen", "window": "Fenster",
         "save": "speichern", "new": "neue", "folder": "Ordner", "cannot": "kann nicht", "read": "lesen",
         "print": "drucken", "page": "Seite", "delete": "löschen", "all": "alle", "copy": "kopieren", "text": "Text"}


def write_catalog(folder: Path, n: int = 260) -> Path:
    """``folder/de.po``: ``n`` English messages of 1-14 words with word-by-word German."""
    import polib

    rng, catalog, seen = random.Random(0), polib.POFile(), set()
    catalog.metadata = {"Content-Type": "text/plain; charset=UTF-8"}
    while len(catalog) < n:
        words = [rng.choice(list(WORDS)) for _ in range(rng.randint(1, 14))]
        msgid = " ".join(words).capitalize()
        if msgid not in seen:
            seen.add(msgid)
            catalog.append(polib.POEntry(msgid=msgid, msgstr=" ".join(WORDS[w] for w in words)))
    folder.mkdir(parents=True, exist_ok=True)
    catalog.save(str(folder / "de.po"))
    return folder


def write_book(folder: Path, lines: int = 400) -> Path:
    """``folder`` with the first ``lines`` lines of the book's date.txt and addition.txt."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("date.txt", "addition.txt"):
        with open(book_file(name), encoding="utf-8") as fh:
            head = [next(fh) for _ in range(lines)]
        (folder / name).write_text("".join(head), encoding="utf-8")
    return folder


def tiny_settings(name: str, tmp_path: Path) -> list[str]:
    """Settings that make reproduction ``name`` train for seconds on a few pairs."""
    book = write_book(tmp_path / "book") if name in ("book-ch8", "placement", "reversal") else None
    catalogs = write_catalog(tmp_path / "catalogs") if name in ("bahdanau-length", "transformer-vs-rnn") else None
    return {
        "book-ch8": [f"book_dir={book}", "max_steps=2", "eval_sentences=8"],
        "bahdanau-length": [f"catalogs={catalogs}", "eval_every=2", "dev_sentences=8", "vocab_size=60",
                            "min_bucket=5", "beam_size=2", "test_fraction=0.2"],
        "luong-scorers": ["eval_every=1", "train_pairs=64", "test_sentences=12", "dev_sentences=6"],
        "placement": [f"book_dir={book}", "eval_every=1", "dev_sentences=6", "test_sentences=10"],
        "reversal": [f"book_dir={book}", "eval_every=1", "dev_sentences=6", "test_sentences=10"],
        "nadaraya-watson": [],
        "formulas": ["train=40", "dev=10", "test=10", "strips=1"],
        "transformer-vs-rnn": [f"catalogs={catalogs}", "eval_every=1", "dev_sentences=6", "vocab_size=60",
                               "test_sentences=12"],
    }[name]


def run_tiny(name: str, tmp_path: Path, seeds: int) -> Path:
    cls = REPRODUCTIONS.get(name)
    # a budget of a few hundredths of the default: one to three updates (a few seconds of the time budget)
    minutes = cls.nominal_minutes * (0.003 if name == "transformer-vs-rnn" else 0.001)
    return reproduce(name, tmp_path / "out", tmp_path / "runs", budget_minutes=minutes, seeds=seeds, threads=1,
                     settings=tiny_settings(name, tmp_path))


def check_page(name: str, page: Path, seeds: int) -> None:
    """The page, its figures, its JSON and its index line, as a reader and the index need them."""
    out = page.parent
    assert page == out / f"{name}.md"
    text = page.read_text(encoding="utf-8")
    results = text.splitlines()[text.splitlines().index("## Results"):]
    header = next(line for line in results if line.startswith("| "))  # the first table's header
    cells = [c.strip() for c in header.strip("|").split("|")]
    for column in COLUMNS[name]:
        assert any(c == column or c.startswith(column) for c in cells), (name, column, cells)
    for heading in ("**Claim.**", "**Source.**", "**Verdict:", "| command | `attnseq reproduce " + name,
                    "| machine |", "torch ", "| budget |", "| took |", "## What matched and what did not", "## Setup"):
        assert heading in text, (name, heading)
    from attnseq.viz import pyplot

    for what in FIGURES[name]:
        png = out / f"{name}-{what}.png"
        assert f"]({png.name})" in text, (name, png.name)  # the page shows it
        image = pyplot().imread(png)  # a PNG matplotlib can read back, of a readable size
        assert image.shape[0] >= 200 and image.shape[1] >= 300, (png, image.shape)
    record = json.loads((out / f"{name}.json").read_text(encoding="utf-8"))
    assert record["verdict"] in VERDICTS and record["seeds"] == seeds
    assert record["tables"][0]["columns"][: len(COLUMNS[name])] == cells[: len(COLUMNS[name])]
    assert f"[{name}]({name}.md)" in (out / "README.md").read_text(encoding="utf-8")


# -- fast ----------------------------------------------------------------------------------------
def test_every_claim_of_the_issue_is_registered_and_listed(capsys):
    assert sorted(REPRODUCTIONS.names()) == NAMES
    assert [row[0] for row in listing()] == REPRODUCTIONS.names()
    assert main(["reproduce", "--list"]) == 0
    printed = capsys.readouterr().out
    for name in NAMES:
        assert name in printed
    assert "epochs 4" in printed and "minutes 11" in printed  # each one's default budget


def test_nadaraya_watson_page_figures_and_index(tmp_path):
    page = reproduce("nadaraya-watson", tmp_path / "out", tmp_path / "runs", seeds=3, threads=1, budget_minutes=0.02)
    check_page("nadaraya-watson", page, seeds=3)
    record = json.loads((tmp_path / "out" / "nadaraya-watson.json").read_text(encoding="utf-8"))
    mse = record["data"]["mse"]
    # the chapter's picture: average pooling ignores the query and fits worst in every draw
    assert all(a > f for a, f in zip(mse["average pooling"], mse["fixed kernel"]))
    assert len(mse["learned kernel"]) == 3
    index = (tmp_path / "out" / "README.md").read_text(encoding="utf-8")
    assert "not run yet: `attnseq reproduce book-ch8`" in index  # the others are listed with their command


def test_budget_minutes_scale_only_the_budget_fields():
    options = options_of("placement", ["hidden_size=64"])
    doubled = scale_budget(options, 2.0)
    assert doubled.steps == 2 * options.steps and doubled.hidden_size == 64 == options.hidden_size
    assert scale_budget(options, 1e-9).steps == 1  # never below one update
    assert scale_budget(options_of("transformer-vs-rnn"), 0.5).minutes == pytest.approx(5.5)


def test_bad_options_and_names_are_one_line_errors(tmp_path, capsys):
    with pytest.raises(ConfigError, match="placement.nope: unknown key"):
        options_of("placement", ["nope=1"])
    with pytest.raises(ConfigError, match="reversal.steps: expected a whole number"):
        options_of("reversal", ["steps=many"])
    with pytest.raises(UserError, match="unknown reproduction 'bahdanau'.*bahdanau-length"):
        reproduce("bahdanau", tmp_path / "out")
    with pytest.raises(UserError, match="--budget-minutes must be positive"):
        reproduce("nadaraya-watson", tmp_path / "out", budget_minutes=0)
    assert main(["reproduce", "placement", "--set", "nope=1", "--out", str(tmp_path / "out")]) == 2
    assert main(["reproduce"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["attnseq: error: placement.nope: unknown key; placement takes dev_sentences, train_pairs, "
                   "test_sentences, book_dir, steps, eval_every, hidden_size",
                   "attnseq: error: reproduce: give a NAME (attnseq reproduce --list shows them)"]
    assert not (tmp_path / "out" / "placement.md").exists()


def test_length_buckets_merge_until_each_holds_enough():
    lengths = [1] * 50 + [7] * 30 + [12] * 25 + [18] * 3 + [40] * 2
    assert length_buckets(lengths, (1, 6, 11, 16, 21), 20) == [(1, 5), (6, 10), (11, 40)]
    assert length_buckets(lengths, (1, 6, 11, 16, 21), 1) == [(1, 5), (6, 10), (11, 15), (16, 20), (21, 40)]
    assert length_buckets(lengths, (1, 6), 1000) == [(1, 40)]  # never fewer than one bucket


def test_paired_bleu_prefers_the_system_that_matches_the_references():
    refs = [f"das ist der satz nummer {i} hier" for i in range(60)]
    good, bad = list(refs), [r if i % 3 else "ganz anders" for i, r in enumerate(refs)]
    result = paired_bleu(bad, good, refs)
    assert result.system == pytest.approx(100.0) and result.baseline < result.system
    assert result.p_value is not None and result.p_value < 0.05
    assert paired_bleu(good, good, refs).p_value == 1.0  # no difference to test


def test_spread_and_separation():
    a, b = Spread([1.0, 2.0, 3.0]), Spread([2.5, 4.0, 5.0])
    assert a.mean == 2.0 and a.sd == pytest.approx(1.0) and (a.low, a.high) == (1.0, 3.0)
    assert separated(a, b) == 0 and separated(Spread([5, 6]), Spread([1, 2])) == 1
    assert separated(Spread([1, 2]), Spread([5, 6])) == -1 and separated(Spread([1.0]), b) is None
    assert a.format(unit="%") == "2.0% ± 1.0 (1.0–3.0)" and Spread([0.5]).format(scale=100) == "50.0"


def test_alike_needs_close_means_and_narrow_seeds():
    assert alike(Spread([97.0, 98.0, 99.0]), Spread([96.0, 98.5, 99.5]), 5.0) is True
    assert alike(Spread([97.0, 98.0, 99.0]), Spread([90.0, 91.0]), 5.0) is False  # every seed apart
    # overlapping seeds mid-climb: the means agree but the seeds spread over 90 points
    assert alike(Spread([1.0, 50.0, 97.0]), Spread([36.0, 60.0, 74.0]), 5.0) is None
    assert alike(Spread([0.3, 50.0, 83.6]), Spread([72.6, 99.7, 99.5]), 5.0) is None  # means 40 points apart
    assert alike(Spread([98.0]), Spread([98.0]), 5.0) is None  # one seed: no spread to judge by


# -- every reproduction on a tiny budget -----------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in NAMES if n != "nadaraya-watson"])
def test_each_reproduction_writes_its_page_on_a_tiny_budget(name, tmp_path):
    seeds = 2 if REPRODUCTIONS.get(name).default_seeds > 1 else 1  # a spread to draw for the multi-seed ones
    with contextlib.redirect_stdout(io.StringIO()):
        page = run_tiny(name, tmp_path, seeds)
    check_page(name, page, seeds)
    runs = tmp_path / "runs"
    assert (runs / "data" / "train.tsv").exists() or name == "book-ch8"  # data made in the runs folder
    assert not list((tmp_path / "out").glob("*.tmp"))
