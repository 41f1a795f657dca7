"""What every reproduction shares: the registry, its options with a budget, the context it runs
in, and the result a page is written from.

A reproduction is a registered class with its own options dataclass::

    @REPRODUCTIONS.register("placement", options=PlacementOptions)
    class Placement(Reproduction):
        title = "..."; claim = "..."; source = "..."
        def run(self) -> Result: ...

The fields of the options made with ``budget(...)`` (steps, epochs, minutes) are what
``--budget-minutes N`` scales: by N / ``nominal_minutes``, the minutes the default budget takes
on the project's 2-core machine. The budget stays a count of steps or epochs wherever the
result must not depend on how busy the machine is (a busy machine takes longer; it does not
train less); only a claim about time itself (transformer-vs-rnn) has a budget in minutes.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..registry import Registry
from ..runs import CONFIG_FILE, read_metrics
from .wording import Phrase

REPRODUCTIONS: Registry[type[Reproduction]] = Registry("reproduction")

# the verdicts a page can give, best first
REPRODUCED = "reproduced"
PARTLY = "partly reproduced"
NOT_REPRODUCED = "not reproduced"
UNDECIDED = "undecided (no core finding decided by its test)"
NOT_CONVERGED = "undecided: not converged"
VERDICTS = (REPRODUCED, PARTLY, NOT_REPRODUCED, UNDECIDED, NOT_CONVERGED)


def verdict_of(findings: Sequence[Finding], runs: Sequence[RunRecord] = ()) -> str:
    """The verdict of a page from its core findings (what the paper says, not a proxy) and how its
    runs ended: NOT_CONVERGED when any run stopped at its cap before its plateau (a run whose loss
    diverged has ended), whatever the numbers; else NOT_REPRODUCED when a core finding is decided
    against the paper; REPRODUCED when every core finding is decided the paper's way; PARTLY when
    some are and the others undecided; UNDECIDED when no core finding is decided (or there is
    none). Findings that are not core are reported and never decide; so are runs that feed none
    (``RunRecord.core`` false): one of them at its cap leaves the verdict as it is, and the page
    says so beside its observations."""
    if unconverged(runs):
        return NOT_CONVERGED
    core = [f.matched for f in findings if f.core]
    if any(m is False for m in core):
        return NOT_REPRODUCED
    if core and all(m is True for m in core):
        return REPRODUCED
    return PARTLY if any(m is True for m in core) else UNDECIDED


def unconverged(runs: Sequence[RunRecord], core: bool = True) -> list[RunRecord]:
    """The runs that stopped at their cap before their plateau (not those that diverged): those
    that feed a core finding, or with ``core`` false those that feed none."""
    return [r for r in runs if not r.converged and r.diverged is None and r.core == core]


def longest_first(names: Sequence[str]) -> list[str]:
    """The order ``attnseq reproduce --all --jobs J`` starts reproductions in: the longest default
    budgets (``nominal_minutes``) first, so the last to start are the shortest."""
    return sorted(names, key=lambda name: -REPRODUCTIONS.get(name).nominal_minutes)


def makespan(durations: Sequence[float], jobs: int) -> float:
    """The wall clock of running ``durations`` in their order, ``jobs`` at a time, each starting
    as soon as one before it ends (how ``--all --jobs J`` runs them)."""
    ends = [0.0] * max(jobs, 1)
    for duration in durations:
        first = ends.index(min(ends))
        ends[first] += duration
    return max(ends)


def budget(default: float) -> Any:
    """An options field that ``--budget-minutes`` scales (steps, epochs or minutes)."""
    return field(default=default, metadata={"budget": True})


def budget_fields(options: Any) -> list[str]:
    """The names of the fields of ``options`` made with ``budget``."""
    return [f.name for f in dataclasses.fields(options) if f.metadata.get("budget")]


def scale_budget(options: Any, factor: float) -> Any:
    """``options`` with every budget field multiplied by ``factor`` (whole numbers stay whole,
    at least 1)."""
    changes = {}
    for name in budget_fields(options):
        value = getattr(options, name) * factor
        changes[name] = max(1, round(value)) if isinstance(getattr(options, name), int) else value
    return dataclasses.replace(options, **changes)


@dataclass
class Context:
    """Where a reproduction writes and how it trains: ``out_dir`` holds the page and figures,
    ``runs_dir`` the run folders and data; ``seeds`` runs of each configuration (train.seed
    ``first_seed``, ``first_seed`` + 1, ...: 1, 2, ... unless a page's runs are split over
    processes or sessions); ``threads`` torch (and BLAS) threads of every run. With ``resume`` the runs
    already in ``runs_dir`` are continued from their last checkpoints (a finished one is read,
    not trained again), and ``resumed_seconds`` adds up the wall-clock seconds they had run."""

    name: str
    out_dir: Path
    runs_dir: Path
    seeds: int
    threads: int
    command: str
    resume: bool = False
    resumed_seconds: float = 0.0
    first_seed: int = 1
    part: bool = False  # the seeds are a range given for a part of the page's runs (--seeds FIRST-LAST)

    def continues(self, run_dir: Path) -> bool:
        """Whether the run in ``run_dir`` is continued (with ``resume``, where a run was started):
        its seconds so far are then added to ``resumed_seconds``."""
        if not (self.resume and (Path(run_dir) / CONFIG_FILE).exists()):
            return False
        seconds = [r["wall_seconds"] for r in read_metrics(run_dir) if r.get("wall_seconds") is not None]
        self.resumed_seconds += seconds[-1] if seconds else 0.0
        return True

    @property
    def seed_list(self) -> list[int]:
        return list(range(self.first_seed, self.first_seed + self.seeds))

    def figure(self, what: str) -> Path:
        """The path of one of the page's figures: ``OUT/NAME-what.png``."""
        return self.out_dir / f"{self.name}-{what}.png"

    def run_dir(self, *parts: str) -> Path:
        return self.runs_dir.joinpath(*parts)


@dataclass
class Table:
    """One table of a page: column names and rows of formatted cells, and a caption."""

    columns: Sequence[str]
    rows: list[Sequence[str]]
    caption: str = ""

    def markdown(self) -> str:
        lines = ["| " + " | ".join(self.columns) + " |", "|" + "|".join("---" for _ in self.columns) + "|"]
        lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in self.rows]
        return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Cell:
    """A number a finding compares, where the page's tables show it: in the row whose first cells
    are ``row`` (a design, a task and its test set...), the column headed ``column``; ``value`` is
    the number as the finding used it, in the cell's units (the cell's first number: the mean over
    the seeds where it has a spread)."""

    row: tuple[str, ...]
    column: str
    value: float


RELATIONS = {
    "above": "the first above the second (or above the bound)",
    "below": "the first below the second (or below the bound)",
    "alike": "within the bound of each other",
    "apart": "apart by more than the bound",
}


@dataclass(frozen=True)
class Evidence:
    """The table cells a finding compares (one against a ``bound``, or two) and what its test
    decided of them (``relation``, a key of RELATIONS; "" while undecided); ``bound`` is the bar a
    single cell is held to or the margin of "alike" and "apart". table_disagreements checks a page's
    tables against it."""

    cells: tuple[Cell, ...]
    relation: str = ""
    bound: float | None = None

    def __post_init__(self):
        if self.relation and self.relation not in RELATIONS:
            raise ValueError(f"evidence: no relation {self.relation!r} ({', '.join(RELATIONS)})")
        if not 1 <= len(self.cells) <= 2 or (len(self.cells) == 1 and self.bound is None):
            raise ValueError("evidence: two cells, or one and a bound")

    def record(self) -> dict:
        """The evidence as the page's JSON holds it."""
        return {
            "cells": [{"row": list(c.row), "column": c.column, "value": c.value} for c in self.cells],
            "relation": self.relation,
            "bound": self.bound,
        }


@dataclass
class Finding:
    """One point of the claim checked: ``matched`` True (it did), False (it did not), or None
    (its test cannot tell); ``text`` says it, every figure a slot filled from the result's data
    (wording.Phrase). ``core``: a point the paper makes (the verdict is theirs alone), not a proxy
    or a check of the setup, which are reported and never decide. ``reason``: why an undecided
    finding is undecided, in a few words ("needs 5 seeds"). ``evidence``: the table cells it
    compares, where the page's tables show them."""

    matched: bool | None
    text: Phrase
    core: bool = True
    reason: Phrase = field(default_factory=Phrase)
    evidence: Evidence | None = None

    def record(self) -> dict:
        """The finding as the page's JSON holds it."""
        return {
            "matched": self.matched,
            "core": self.core,
            "text": str(self.text),
            "reason": str(self.reason),
            "evidence": self.evidence.record() if self.evidence else None,
        }


NUMBER = re.compile(r"[-+−]?\d[\d,]*(?:\.\d+)?")


def cell_number(text: str) -> tuple[float, float] | None:
    """(the first number of a table cell, half a unit of its last digit): "33.2% ± 12.9 (18.5–42.7)"
    -> (33.2, 0.05), "**98.2%**" -> (98.2, 0.05), "3,400" -> (3400, 0.5); None without one."""
    found = NUMBER.search(text)
    if not found:
        return None
    digits = found[0].replace(",", "").replace("−", "-")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    return float(digits), 0.5 * 10.0**-decimals


def find_cell(tables: Sequence, cell: Cell) -> str | None:
    """The text of ``cell`` in ``tables`` (Tables, or the JSON's tables: mappings with columns
    and rows): the first row whose first cells are cell.row, in a table with the column; None
    where there is none."""
    for table in tables:
        columns = list(table["columns"] if isinstance(table, dict) else table.columns)
        rows = table["rows"] if isinstance(table, dict) else table.rows
        if cell.column not in columns:
            continue
        at = columns.index(cell.column)
        for row in rows:
            if tuple(str(c).strip() for c in row[: len(cell.row)]) == tuple(cell.row):
                return str(row[at])
    return None


def table_disagreements(findings: Sequence[Finding], tables: Sequence) -> list[str]:
    """What a page's ``tables`` say against its findings, one sentence each: a cell a finding
    names that is not there, or that shows another number than the finding used; and a decided
    finding whose relation (its evidence's) the cells' numbers contradict, such as a finding that
    A scores above B where the table's A is below B (equal as shown is no contradiction: the
    cells are rounded)."""
    problems = []
    for i, finding in enumerate(findings, 1):
        evidence = finding.evidence
        if evidence is None:
            continue
        shown = []
        for cell in evidence.cells:
            text = find_cell(tables, cell)
            number = cell_number(text) if text is not None else None
            if number is None:
                problems.append(f"finding {i}: no cell {' / '.join(cell.row)}, {cell.column!r} with a number")
                continue
            value, half = number
            if abs(value - cell.value) > half + 1e-9 * max(1.0, abs(value)):
                problems.append(
                    f"finding {i}: the cell {' / '.join(cell.row)}, {cell.column!r} shows {text!r}, "
                    f"the finding used {cell.value:g}"
                )
            shown.append(number)
        if finding.matched is None or not evidence.relation or len(shown) != len(evidence.cells):
            continue
        (x, hx), (y, hy) = shown[0], shown[1] if len(shown) == 2 else (evidence.bound, 0.0)
        slack = hx + hy
        holds = {
            "above": x >= y - slack,
            "below": x <= y + slack,
            "alike": evidence.bound is not None and abs(x - y) <= evidence.bound + slack,
            "apart": evidence.bound is not None and abs(x - y) >= evidence.bound - slack,
        }[evidence.relation]
        if not holds:
            problems.append(
                f"finding {i} decides {RELATIONS[evidence.relation]!r} of "
                + " and ".join(f"{' / '.join(c.row)}, {c.column!r}" for c in evidence.cells)
                + f"; the table shows {x:g} and {y:g}"
            )
    return problems


@dataclass(frozen=True)
class Quote:
    """The claim as a source states it: the words (in the source's language), an English
    rendering when they are in another, and where they are (document and section)."""

    words: str
    where: str
    english: str = ""


@dataclass
class RunRecord:
    """How one training run of a reproduction ended: its label and seed, the updates (or epochs)
    trained, the cap it had, whether the plateau rule stopped it (``converged``), its loss
    diverging (``diverged``: an end a longer cap would not change) or the cap, and why, measured
    from its log (``training.how_it_ended``; "" when it has none)."""

    label: str
    seed: int
    trained: float
    cap: float
    converged: bool
    unit: str = "updates"
    why: str = ""
    by_loss: bool = False  # the last renewal of its patience was the dev loss's alone
    core: bool = True  # its numbers feed a core finding (false: observations only)
    diverged: float | None = None  # the update its loss diverged at (None: it did not), scored from before


@dataclass
class Result:
    """What a reproduction measured, for its page: a one-line summary with the numbers, tables,
    figures (path, caption), the setup (what was trained on what, bullet points), the budget in
    words, how each run ended (``runs``), and the measured numbers (``data``, the JSON file's)
    from which ``Reproduction.judge`` makes the findings (the claim's points) and observations,
    and verdict_of the verdict."""

    summary: str
    tables: list[Table]
    figures: list[tuple[Path, str]]
    setup: list[str]
    budget: str
    data: dict = field(default_factory=dict)
    runs: list[RunRecord] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    observations: list[Phrase] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return verdict_of(self.findings, self.runs)


class Reproduction:
    """One claim of the literature checked by training attnseq's presets.

    Class attributes: ``title`` (the page's heading), ``claim`` (the claim checked, in a line),
    ``quotes`` (the claim as its sources state it), ``source`` (documents, papers, presets),
    ``default_seeds``, and ``nominal_minutes`` (what the default budget takes on the project's
    2-core machine, at most: runs stop earlier on a plateau).

    ``run`` trains and measures (a Result with its ``data``); ``judge`` makes the findings and
    observations from that data alone (what the page's JSON holds), so the page's sentences can
    be regenerated, and checked, from its numbers."""

    title = ""
    claim = ""
    quotes: tuple[Quote, ...] = ()
    source = ""
    default_seeds = 1
    nominal_minutes = 25.0

    def __init__(self, options: Any, context: Context):
        self.options, self.context = options, context

    def run(self) -> Result:
        raise NotImplementedError

    @staticmethod
    def judge(data: dict) -> tuple[list[Finding], list[Phrase]]:
        """(findings, observations) of a result's ``data``."""
        raise NotImplementedError

    def result(self) -> Result:
        """``run()``, judged: its findings and observations from its data."""
        result = self.run()
        result.findings, result.observations = self.judge(result.data)
        return result
