"""The result page of a reproduction (``OUT/NAME.md``), its numbers (``OUT/NAME.json``), and the
index of every page in OUT (``OUT/README.md``).

A page says what the claim is and where it comes from, the command that regenerates it, when
and on what machine it ran (CPU model, threads, torch and NumPy versions, the code's commit),
the budget and how long it took, the tables and figures, and per point of the claim whether
it matched and why.
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
from .base import Reproduction, Result, budget_fields, longest_first, makespan
from .texts import texts

ROOT = Path(__file__).resolve().parents[2]
INDEX_TITLE = "# Reproductions of the literature"  # the first line of OUT/README.md, the index
log = logging.getLogger(__name__)
TEXT = texts("page")  # the sentences every page shares, and the index's
MARKS = {
    True: TEXT.format("marks.matched"),
    False: TEXT.format("marks.unmatched"),
    None: TEXT.format("marks.undecided"),
}


def code_version() -> str:
    """The checkout's commit (``abc1234``, ``+changes`` when the package or configs differ from
    it), or "unknown" outside a git checkout."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--", "attnseq", "configs"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
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


def quoted(reproduction: Reproduction) -> list[str]:
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


def runs_table(result: Result) -> list[str]:
    """How each run ended: converged (the plateau rule stopped it) or at its cap."""
    if not result.runs:
        return []
    done = sum(r.converged for r in result.runs)
    capped = [r for r in result.runs if not r.converged]
    by_loss = sum(r.by_loss for r in capped)
    loss = TEXT.format("runs.loss", by_loss=by_loss, capped=len(capped)) if by_loss else ""
    lines = [
        TEXT.format("runs.ended", done=done, runs=len(result.runs), loss=loss),
        "",
        "| run | seed | trained | cap | ended |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.label} | {r.seed} | {r.trained:,g} {r.unit} | {r.cap:,g} | "
        f"{TEXT.format('runs.plateau') if r.converged else TEXT.format('runs.cap')}{': ' + r.why if r.why else ''} |"
        for r in result.runs
    ]
    return lines + [""]


def longer(reproduction: Reproduction, factor: float = 2.0) -> str:
    """What ``--budget-minutes`` at ``factor`` times the nominal minutes would give each budget field."""
    from .base import scale_budget

    cls, ctx = type(reproduction), reproduction.context
    bigger = scale_budget(reproduction.options, factor)
    fields = ", ".join(
        f"{name} {getattr(reproduction.options, name):,g} -> {getattr(bigger, name):,g}"
        for name in budget_fields(reproduction.options)
    )
    return TEXT.format("longer", name=ctx.name, minutes=cls.nominal_minutes * factor, factor=factor, fields=fields)


def on_machine(host: dict) -> str:
    """The page's "machine": what ``host`` (machine()) says, in words."""
    fields = ("cpu", "cores", "threads", "python", "torch", "numpy", "attnseq")
    return TEXT.format("machine", plural="s" if host["threads"] > 1 else "", **{k: host[k] for k in fields})


def page_markdown(reproduction: Reproduction, result: Result, started: datetime, seconds: float, host: dict) -> str:
    """The page of ``result`` as Markdown (figures linked by file name, beside the page)."""
    r, ctx = reproduction, reproduction.context
    lines = [
        f"# {ctx.name}: {r.title}",
        "",
        TEXT.format("claim", claim=r.claim),
        "",
        *quoted(r),
        TEXT.format("source", source=r.source),
        "",
        TEXT.format("verdict", verdict=result.verdict, summary=result.summary),
        "",
        "| | |",
        "|---|---|",
        f"| command | `{ctx.command}` |",
        f"| date | {started:%Y-%m-%d %H:%M} |",
        f"| machine | {on_machine(host)} |",
        f"| budget | {result.budget} |",
        f"| seeds | {ctx.seeds} ({', '.join(map(str, ctx.seed_list))}) |",
        f"| took | {took(seconds, ctx.resumed_seconds)} |",
        "",
        TEXT.format("results"),
        "",
    ]
    for table in result.tables:
        if table.caption:
            lines += [table.caption, ""]
        lines += [table.markdown()]
    lines += runs_table(result)
    for path, caption in result.figures:
        lines += [f"![{caption}]({Path(path).name})", "", f"*{caption}*", ""]
    lines += [TEXT.format("findings"), ""]
    lines += [f"- {MARKS[f.matched]}: {f.text}" for f in result.findings] + [""]
    lines += [TEXT.format("rule"), ""]
    if result.observations:
        lines += [TEXT.format("observed"), ""] + [f"- {item}" for item in result.observations] + [""]
    lines += [TEXT.format("setup"), ""] + [f"- {item}" for item in result.setup] + [""]
    lines += [TEXT.format("more_time"), "", longer(r), ""]
    return "\n".join(lines)


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
    """Write ``OUT/NAME.md`` and ``OUT/NAME.json`` (the page's numbers and verdict), then the
    index ``OUT/README.md``; the page's path. They replace the files there: check_page refused
    them before the reproduction ran, unless ``--overwrite``."""
    ctx = reproduction.context
    host = machine(ctx.threads)
    page = ctx.out_dir / f"{ctx.name}.md"
    write_output(page, page_markdown(reproduction, result, started, seconds, host), overwrite=True)
    record = {
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
        "tables": [
            {"caption": t.caption, "columns": list(t.columns), "rows": [list(map(str, row)) for row in t.rows]}
            for t in result.tables
        ],
        "figures": [Path(p).name for p, _ in result.figures],
        "findings": [{"matched": f.matched, "text": str(f.text)} for f in result.findings],
        "observations": [str(o) for o in result.observations],
        "runs": [dataclasses.asdict(r) for r in result.runs],
        "data": result.data,
    }
    write_output(
        ctx.out_dir / f"{ctx.name}.json", json.dumps(record, indent=1, ensure_ascii=False) + "\n", overwrite=True
    )
    write_index(ctx.out_dir)
    return page


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
            rows.append(f"| {name} | {cls.title} | {cell} | | |")
            continue
        if record is not None:
            runs = record["runs"]
            seconds[name] = record["seconds"]
            converged = sum(r["converged"] for r in runs)
            ended = TEXT.format("index.plateaus", converged=converged, runs=len(runs)) if runs else ""
            rows.append(
                f"| [{name}]({name}.md) | {cls.title} | **{record['verdict']}**: {record['summary']} | "
                f"{record['budget']}{ended} | {record['date'][:10]}, {minutes(record['seconds'])} |"
            )
        else:
            rows.append(f"| {name} | {cls.title} | {TEXT.format('index.not_run', name=name)} | | |")
    text = "\n".join(
        [
            INDEX_TITLE,
            "",
            TEXT.format("index.intro"),
            "",
            "| reproduction | claim | verdict and numbers | budget | run |",
            "|---|---|---|---|---|",
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
