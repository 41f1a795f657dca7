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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..registry import Registry

REPRODUCTIONS: Registry[type["Reproduction"]] = Registry("reproduction")

# the verdicts a page can give, best first
REPRODUCED = "reproduced"
PARTLY = "partly reproduced"
WITHIN_SPREAD = "not distinguishable (within the seed-to-seed spread)"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive (one seed: no spread to judge by)"
VERDICTS = (REPRODUCED, PARTLY, WITHIN_SPREAD, NOT_REPRODUCED, INCONCLUSIVE)


def verdict_of(findings: Sequence["Finding"], seeds: int = 1) -> str:
    """REPRODUCED when every finding that can tell matched, NOT_REPRODUCED when none did,
    PARTLY between; when none can tell, WITHIN_SPREAD with several seeds, else INCONCLUSIVE."""
    matched = [f.matched for f in findings if f.matched is not None]
    if not matched:
        return WITHIN_SPREAD if seeds > 1 else INCONCLUSIVE
    return REPRODUCED if all(matched) else PARTLY if any(matched) else NOT_REPRODUCED


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
    1, 2, ...); ``threads`` torch (and BLAS) threads of every run."""

    name: str
    out_dir: Path
    runs_dir: Path
    seeds: int
    threads: int
    command: str

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
    (the runs cannot tell: within the seed spread); ``text`` says it with the numbers and why."""

    matched: bool | None
    text: str


@dataclass
class Result:
    """What a reproduction found, for its page: a verdict (one of VERDICTS) and a one-line
    summary with the numbers, tables, figures (path, caption), findings (the claim's points),
    observations (what else the runs showed), the setup (what was trained on what, bullet
    points), the budget in words, and raw numbers for the JSON file."""

    verdict: str
    summary: str
    tables: list[Table]
    figures: list[tuple[Path, str]]
    findings: list[Finding]
    setup: list[str]
    budget: str
    longer: str = ""  # what a longer budget would show, and the flag
    observations: list[str] = field(default_factory=list)
    data: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")


class Reproduction:
    """One claim of the literature checked by training attnseq's presets.

    Class attributes: ``title`` (the page's heading), ``claim`` (what the source says, with its
    numbers), ``source`` (paper or chapter, figure or table), ``default_seeds``, and
    ``nominal_minutes`` (what the default budget takes on the project's 2-core machine)."""

    title = ""
    claim = ""
    source = ""
    default_seeds = 1
    nominal_minutes = 25.0

    def __init__(self, options: Any, context: Context):
        self.options, self.context = options, context

    def run(self) -> Result:
        raise NotImplementedError
