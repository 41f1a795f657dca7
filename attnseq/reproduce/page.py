"""The result page of a reproduction (``OUT/NAME.md``), its numbers (``OUT/NAME.json``), and the
index of every page in OUT (``OUT/README.md``).

A page says what the claim is and where it comes from, the command that regenerates it, when
and on what machine it ran (CPU model, threads, torch and NumPy versions, the code's commit),
the budget and how long it took, the tables and figures, the verdict and why, and per point of
the claim (the core ones first) whether it matched, and why not where undecided.

The JSON holds everything the page shows: the page is ``render(record)``, so a page is written
again from its numbers alone, judged by the current code (``rejudge``, ``python -m
attnseq.reproduce.rejudge``), and a test checks every published page against its JSON. The
index says which commit of attnseq made each page.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import platform
import subprocess
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from ..files import check_output, write_output
from ..hardware import cpu_model
from ..utils import shown
from .base import (
    Cell,
    Evidence,
    Finding,
    Reproduction,
    Result,
    RunRecord,
    Table,
    budget_fields,
    longest_first,
    makespan,
    unconverged,
    verdict_of,
)
from .texts import texts
from .training import PlateauOptions
from .wording import Phrase

ROOT = Path(__file__).resolve().parents[2]
INDEX_TITLE = "# Reproductions of the literature"  # the first line of OUT/README.md, the index
log = logging.getLogger(__name__)
TEXT = texts("page")  # the sentences every page shares, and the index's
MARKS = {
    True: TEXT.format("marks.matched"),
    False: TEXT.format("marks.unmatched"),
    None: TEXT.format("marks.undecided"),
}


def git_output(folder: Path, *args: str) -> str:
    """What ``git -C folder ARGS`` prints, stripped; OSError or a SubprocessError where it fails."""
    return subprocess.run(
        ["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=10, check=True
    ).stdout.strip()


def code_version() -> str:
    """The checkout's commit (``abc1234``, ``+changes`` when the package or configs differ from
    it), or "unknown" outside a git checkout."""
    try:
        commit = git_output(ROOT, "rev-parse", "--short", "HEAD")
        changed = git_output(ROOT, "status", "--porcelain", "--", "attnseq", "configs")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return commit + ("+changes" if changed else "")


def machine(threads: int) -> dict:
    """What the run ran on: CPU model, cores, threads, Python, torch and NumPy versions, commit."""
    import numpy

    try:
        import torch

        torch_version = torch.__version__
    except ImportError:
        torch_version = "not installed"
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "threads": threads,
        "python": platform.python_version(),
        "torch": torch_version,
        "numpy": numpy.__version__,
        "attnseq": code_version(),
    }


def minutes(seconds: float) -> str:
    if seconds >= 60:
        return TEXT.format("duration.minutes", minutes=seconds / 60)
    return TEXT.format("duration.seconds", seconds=seconds)


def took(seconds: float, resumed: float) -> str:
    """The page's "took": this run's ``seconds`` and the ``resumed`` seconds its runs had trained
    before (``--resume``) together."""
    if not resumed:
        return TEXT.format("took.fresh", took=minutes(seconds))
    return TEXT.format(
        "took.resumed", took=minutes(seconds + resumed), resumed=minutes(resumed), session=minutes(seconds)
    )


def quoted(reproduction: Reproduction | type[Reproduction]) -> list[str]:
    """The claim's quotations as Markdown block quotes, each with where it is and its English."""
    lines = []
    for q in reproduction.quotes:
        lines += [
            f"> {q.words}",
            ">",
            f"> — {q.where}" + (TEXT.format("english", english=q.english) if q.english else ""),
            "",
        ]
    return lines


def runs_table(runs: list[RunRecord]) -> list[str]:
    """How each run ended: converged (the plateau rule stopped it), its loss diverged, or at its cap."""
    if not runs:
        return []
    done = sum(r.converged for r in runs)
    diverged = [r for r in runs if r.diverged is not None]
    capped = [r for r in runs if not r.converged and r.diverged is None]
    by_loss = sum(r.by_loss for r in capped)
    loss = TEXT.format("runs.loss", by_loss=by_loss, capped=len(capped)) if by_loss else ""
    if diverged:
        loss = TEXT.format("runs.diverged_count", diverged=len(diverged)) + loss
    lines = [
        TEXT.format("runs.ended", done=done, runs=len(runs), loss=loss),
        "",
        "| run | seed | trained | cap | ended |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.label}{'' if r.core else TEXT.format('runs.observed')} | {r.seed} | {r.trained:,g} {r.unit} | {r.cap:,g} | "
        f"{ending(r)}{': ' + r.why if r.why else ''} |"
        for r in runs
    ]
    return lines + [""]


def ending(run: RunRecord) -> str:
    """A runs table's word for how ``run`` ended."""
    if run.diverged is not None:
        return TEXT.format("runs.diverged", step=run.diverged, kept=run.trained)
    return TEXT.format("runs.plateau") if run.converged else TEXT.format("runs.cap")


def longer(reproduction: Reproduction, factor: float = 2.0) -> str:
    """What ``--budget-minutes`` at ``factor`` times the nominal minutes would give each budget field."""
    from .base import scale_budget

    cls, ctx = type(reproduction), reproduction.context
    bigger = scale_budget(reproduction.options, factor)
    fields = ", ".join(
        f"{name} {getattr(reproduction.options, name):,g} -> {getattr(bigger, name):,g}"
        for name in budget_fields(reproduction.options)
    )
    words = TEXT.format("longer", name=ctx.name, minutes=cls.nominal_minutes * factor, factor=factor, fields=fields)
    return words + (TEXT.format("longer_plateau") if isinstance(reproduction.options, PlateauOptions) else "")


def on_machine(host: dict) -> str:
    """The page's "machine": what ``host`` (machine()) says, in words."""
    fields = ("cpu", "cores", "threads", "python", "torch", "numpy", "attnseq")
    return TEXT.format("machine", plural="s" if host["threads"] > 1 else "", **{k: host[k] for k in fields})


def finding_of(record: dict) -> Finding:
    """A finding as the page's JSON holds it (Finding.record), its text and reason as plain
    Phrases: what the page shows and table_disagreements checks."""
    evidence = record.get("evidence")
    return Finding(
        record["matched"],
        Phrase.of([record["text"]]),
        record.get("core", True),
        Phrase.of([record["reason"]] if record.get("reason") else []),
        Evidence(
            tuple(Cell(tuple(c["row"]), c["column"], c["value"]) for c in evidence["cells"]),
            evidence["relation"],
            evidence["bound"],
        )
        if evidence
        else None,
    )


def seed_numbers(record: dict) -> range:
    """The train.seed values of a page's runs (1 .. seeds unless its runs were a range of them)."""
    first = record.get("first_seed", 1)
    return range(first, first + record["seeds"])


def runs_of(record: dict) -> list[RunRecord]:
    """The runs of a page's JSON as RunRecords."""
    return [RunRecord(**r) for r in record["runs"]]


def verdict_why(findings: list[Finding], runs: list[RunRecord]) -> list[str]:
    """The sentences under the verdict that say why it is not "reproduced" or "not reproduced"
    outright: the runs that stopped at their cap, the core findings left undecided and why, or
    that no finding is core."""
    lines = []
    capped = unconverged(runs)
    if capped:
        lines.append(
            TEXT.format(
                "why.not_converged", capped=len(capped), runs=sum(r.core for r in runs), verdict=verdict_of(findings)
            )
        )
    observed = unconverged(runs, core=False)
    if observed:
        lines.append(
            TEXT.format(
                "why.observed_capped", capped=len(observed), labels=", ".join(sorted({r.label for r in observed}))
            )
        )
    core = [(i, f) for i, f in enumerate(findings, 1) if f.core]
    if not core:
        lines.append(TEXT.format("why.no_core"))
    undecided = [TEXT.format("why.reason", number=i, reason=str(f.reason) or "-") for i, f in core if f.matched is None]
    if undecided:
        lines.append(TEXT.format("why.undecided", reasons="; ".join(undecided)))
    return lines


def findings_list(findings: list[Finding]) -> list[str]:
    """The findings as Markdown items, numbered as verdict_why names them, the core ones first
    under their heading, then the others (proxies, checks of the setup) under theirs."""
    lines = []
    numbered = list(enumerate(findings, 1))
    for core, heading in ((True, "findings_core"), (False, "findings_other")):
        items = [
            f"- ({i}) {MARKS[f.matched]}{f' ({f.reason})' if f.matched is None and str(f.reason) else ''}: {f.text}"
            for i, f in numbered
            if f.core == core
        ]
        if items:
            lines += [TEXT.format(heading), "", *items, ""]
    return lines


def render(record: dict) -> str:
    """The page (``OUT/NAME.md``) of a page's numbers (``OUT/NAME.json``, as write_page records
    them) as Markdown, figures linked by file name beside it: the claim, quotes and source of the
    reproduction's texts, the verdict and why, the run's command, date, machine, budget, seeds and
    time, the tables, how the runs ended, the figures, the findings, observations and setup."""
    from .base import REPRODUCTIONS

    name = record["reproduction"]
    cls = REPRODUCTIONS.get(name)
    findings = [finding_of(f) for f in record["findings"]]
    runs = runs_of(record)
    seconds, resumed = record["seconds"], record["resumed_seconds"]
    why = verdict_why(findings, runs)
    lines = [
        f"# {name}: {cls.title}",
        "",
        TEXT.format("claim", claim=cls.claim),
        "",
        *quoted(cls),
        TEXT.format("source", source=cls.source),
        "",
        TEXT.format("verdict", verdict=record["verdict"], summary=record["summary"]),
        "",
        *([" ".join(why), ""] if why else []),
        "| | |",
        "|---|---|",
        f"| command | `{record['command']}` |",
        f"| date | {datetime.fromisoformat(record['date']):%Y-%m-%d %H:%M} |",
        f"| machine | {on_machine(record['machine'])} |",
        f"| budget | {record['budget']} |",
        f"| seeds | {record['seeds']} ({', '.join(str(s) for s in seed_numbers(record))}) |",
        f"| took | {took(seconds - resumed, resumed)} |",
        "",
        TEXT.format("results"),
        "",
    ]
    for t in record["tables"]:
        table = Table(t["columns"], t["rows"], t["caption"])
        if table.caption:
            lines += [table.caption, ""]
        lines += [table.markdown()]
    lines += runs_table(runs)
    for figure in record["figures"]:
        lines += [f"![{figure['caption']}]({figure['file']})", "", f"*{figure['caption']}*", ""]
    lines += [TEXT.format("findings"), ""]
    lines += findings_list(findings)
    lines += [TEXT.format("rule"), ""]
    if record["observations"]:
        lines += [TEXT.format("observed"), ""] + [f"- {item}" for item in record["observations"]] + [""]
    lines += [TEXT.format("setup"), ""] + [f"- {item}" for item in record["setup"]] + [""]
    lines += [TEXT.format("more_time"), "", record["more_time"], ""]
    return "\n".join(lines)


def page_record(reproduction: Reproduction, result: Result, started: datetime, seconds: float, host: dict) -> dict:
    """What ``OUT/NAME.json`` holds of ``result``: everything its page shows (render), the
    measured numbers (``data``) its findings are judged from, and the verdict."""
    ctx = reproduction.context
    return {
        "reproduction": ctx.name,
        "title": reproduction.title,
        "source": reproduction.source,
        "verdict": result.verdict,
        "summary": result.summary,
        "command": ctx.command,
        "date": started.isoformat(timespec="seconds"),
        "seconds": round(seconds + ctx.resumed_seconds, 1),
        "resumed_seconds": round(ctx.resumed_seconds, 1),
        "machine": host,
        "budget": result.budget,
        "seeds": ctx.seeds,
        **({"first_seed": ctx.first_seed} if ctx.first_seed != 1 else {}),
        "tables": [
            {"caption": t.caption, "columns": list(t.columns), "rows": [list(map(str, row)) for row in t.rows]}
            for t in result.tables
        ],
        "figures": [{"file": Path(p).name, "caption": caption} for p, caption in result.figures],
        "findings": [f.record() for f in result.findings],
        "observations": [str(o) for o in result.observations],
        "setup": [str(item) for item in result.setup],
        "more_time": longer(reproduction),
        "runs": [dataclasses.asdict(r) for r in result.runs],
        "data": result.data,
    }


def check_page(out_dir: Path, name: str, overwrite: bool = False) -> None:
    """Refuse (a UserError naming the file and ``--overwrite``) to run reproduction ``name`` when
    what it writes into ``out_dir`` exists: its page, numbers or figures (an earlier run's), or an
    ``OUT/README.md`` that is not the index of reproductions (the checkout's README, say); unless
    ``overwrite``. Called before anything trains."""
    out_dir = Path(out_dir)
    for path in [out_dir / f"{name}.md", out_dir / f"{name}.json", *sorted(out_dir.glob(f"{name}-*.png"))]:
        check_output(path, overwrite=overwrite)
    index = out_dir / "README.md"
    if not is_index(index):
        check_output(index, overwrite=overwrite)


def is_index(path: Path) -> bool:
    """True when ``path`` is an index of reproductions that write_index wrote."""
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.readline().rstrip("\n") == INDEX_TITLE
    except (OSError, UnicodeDecodeError):
        return False


def write_page(reproduction: Reproduction, result: Result, started: datetime, seconds: float) -> Path:
    """Write ``OUT/NAME.json`` (the page's numbers, verdict and words) and ``OUT/NAME.md`` (render
    of it), then the index ``OUT/README.md``; the page's path. They replace the files there:
    check_page refused them before the reproduction ran, unless ``--overwrite``."""
    ctx = reproduction.context
    record = page_record(reproduction, result, started, seconds, machine(ctx.threads))
    page = write_record(ctx.out_dir, record)
    write_index(ctx.out_dir)
    return page


def write_record(out_dir: Path, record: dict) -> Path:
    """Write a page's record as ``OUT/NAME.json`` and its page as ``OUT/NAME.md``; the page's path."""
    name = record["reproduction"]
    write_output(
        Path(out_dir) / f"{name}.json", json.dumps(record, indent=1, ensure_ascii=False) + "\n", overwrite=True
    )
    return write_output(Path(out_dir) / f"{name}.md", render(record), overwrite=True)


def judged(record: dict) -> dict:
    """``record`` (a page's JSON) judged again by the current code, nothing trained: its findings
    and observations from its ``data`` (the reproduction's judge), its verdict from them and its
    runs (verdict_of), its title and source the reproduction's."""
    from .base import REPRODUCTIONS

    cls = REPRODUCTIONS.get(record["reproduction"])
    findings, observations = cls.judge(record["data"])
    return {
        **record,
        "title": cls.title,
        "source": cls.source,
        "verdict": verdict_of(findings, runs_of(record)),
        "findings": [f.record() for f in findings],
        "observations": [str(o) for o in observations],
    }


def rejudge(out_dir: Path, names: Iterable[str] | None = None) -> list[Path]:
    """Write the pages ``names`` (default: every ``OUT/NAME.json`` of a registered reproduction)
    again from their numbers alone, judged by the current code (judged), and the index; the pages'
    paths. Nothing trains: a change of a judge's tests or of the verdict's rule reaches the
    published pages this way."""
    from .base import REPRODUCTIONS

    out_dir = Path(out_dir)
    if names is None:
        names = [n for n in REPRODUCTIONS.names() if (out_dir / f"{n}.json").exists()]
    pages = []
    for name in names:
        REPRODUCTIONS.get(name, "rejudge")
        record = json.loads((out_dir / f"{name}.json").read_text(encoding="utf-8"))
        pages.append(write_record(out_dir, judged(record)))
    write_index(out_dir)
    return pages


def last_commit(path: Path) -> str:
    """The short hash of the last commit that changed ``path`` (git log), "" outside a checkout or
    where none did."""
    try:
        return git_output(Path(path).resolve().parent, "log", "-1", "--format=%h", "--", Path(path).name)
    except (OSError, subprocess.SubprocessError):
        return ""


def made_by(record: dict, path: Path) -> str:
    """The commit of attnseq that made a page's numbers, as its record says (``machine.attnseq``:
    ``abc1234``, ``+changes`` when the package differed from it); for a record that does not say,
    "before" the last commit that changed its JSON file, or "unknown"."""
    commit = record.get("machine", {}).get("attnseq") if isinstance(record.get("machine"), dict) else None
    if isinstance(commit, str) and commit and commit != "unknown":
        return f"`{commit}`"
    last = last_commit(path)
    return TEXT.format("index.before", commit=last) if last else "unknown"


INDEX_FIELDS = {"verdict": str, "summary": str, "budget": str, "date": str, "seconds": (int, float), "runs": list}


def read_page_record(path: Path) -> dict:
    """The numbers of a page (``OUT/NAME.json``) with the fields the index reads checked: a
    ValueError saying what is wrong with a file that is no such record (not JSON, not an object,
    a field missing or of another type, seconds no finite number >= 0, a run without its
    ``converged`` truth), so a hand-edited or torn file is named, never a traceback."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise ValueError(f"{type(err).__name__}: {err}") from None
    if not isinstance(record, dict):
        raise ValueError(f"a JSON {type(record).__name__}, not an object")
    for key, kind in INDEX_FIELDS.items():
        if key not in record:
            raise ValueError(f"no {key!r}")
        if not isinstance(record[key], kind) or isinstance(record[key], bool):
            raise ValueError(f"{key!r} is {shown(record[key])}")
    if not math.isfinite(record["seconds"]) or record["seconds"] < 0:
        raise ValueError(f"'seconds' is {shown(record['seconds'])}")
    if not all(isinstance(r, dict) and isinstance(r.get("converged"), bool) for r in record["runs"]):
        raise ValueError("a run in 'runs' without its 'converged' true or false")
    return record


def write_index(out_dir: Path, names: Iterable[str] | None = None) -> Path:
    """``OUT/README.md``: one line per reproduction (``names``, default every registered one):
    its verdict and numbers from ``OUT/NAME.json``, or how to run it when it has not been run."""
    from .base import REPRODUCTIONS

    out_dir = Path(out_dir)
    rows, seconds = [], {}
    for name in names or REPRODUCTIONS.names():
        cls = REPRODUCTIONS.get(name)
        path = out_dir / f"{name}.json"
        try:
            record = read_page_record(path) if path.exists() else None
        except ValueError as err:
            log.warning(
                "%s is not a page's numbers (%s): the index says so; `attnseq reproduce %s` writes it again",
                path,
                err,
                name,
            )
            why = " ".join(str(err).replace("|", "/").split())  # one table cell
            cell = TEXT.format("index.unreadable", file=path.name, why=why, name=name)
            rows.append(f"| {name} | {cls.title} | {cell} | | | |")
            continue
        if record is not None:
            runs = record["runs"]
            seconds[name] = record["seconds"]
            converged = sum(r["converged"] for r in runs)
            ended = TEXT.format("index.plateaus", converged=converged, runs=len(runs)) if runs else ""
            rows.append(
                f"| [{name}]({name}.md) | {cls.title} | **{record['verdict']}**: {record['summary']} | "
                f"{record['budget']}{ended} | {record['date'][:10]}, {minutes(record['seconds'])} | "
                f"{made_by(record, path)} |"
            )
        else:
            rows.append(f"| {name} | {cls.title} | {TEXT.format('index.not_run', name=name)} | | | |")
    text = "\n".join(
        [
            INDEX_TITLE,
            "",
            TEXT.format("index.intro"),
            "",
            "| reproduction | claim | verdict and numbers | budget | run | commit |",
            "|---|---|---|---|---|---|",
            *rows,
            "",
            *(
                [
                    TEXT.format(
                        "index.total",
                        pages=len(seconds),
                        took=minutes(sum(seconds.values())),
                        hours=makespan([seconds[n] for n in longest_first(seconds)], 2) / 3600,
                    )
                ]
                if seconds
                else []
            ),
            "",
            *([TEXT.format("index.memory"), ""] if (out_dir / "memory.md").exists() else []),
        ]
    )
    path = out_dir / "README.md"
    return write_output(path, text, overwrite=True)  # an index is regenerated (check_page: never another file)
