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
UNDECIDED = "undecided (no finding decided by its test)"
VERDICTS = (REPRODUCED, PARTLY, NOT_REPRODUCED, UNDECIDED)


def verdict_of(findings: Sequence[Finding]) -> str:
    """REPRODUCED only when every finding is decided (True or False) and every one matched;
    PARTLY when some matched and others did not or are undecided; NOT_REPRODUCED when none
    matched and at least one did not; UNDECIDED when no finding is decided."""
    decided = [f.matched for f in findings if f.matched is not None]
    if not decided:
        return UNDECIDED
    if all(decided) and len(decided) == len(findings):
        return REPRODUCED
    return PARTLY if any(decided) else NOT_REPRODUCED


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
    1, 2, ...); ``threads`` torch (and BLAS) threads of every run. With ``resume`` the runs
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
        return list(range(1, self.seeds + 1))

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


@dataclass
class Finding:
    """One point of the claim checked: ``matched`` True (it did), False (it did not), or None
    (its test cannot tell); ``text`` says it, every figure a slot filled from the result's data
    (wording.Phrase)."""

    matched: bool | None
    text: Phrase


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
    trained, the cap it had, whether the plateau rule stopped it (``converged``) or the cap did,
    and why, measured from its log (``training.how_it_ended``; "" when it has none)."""

    label: str
    seed: int
    trained: float
    cap: float
    converged: bool
    unit: str = "updates"
    why: str = ""
    by_loss: bool = False  # the last renewal of its patience was the dev loss's alone


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
        return verdict_of(self.findings)


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
