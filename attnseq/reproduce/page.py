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

ROOT = Path(__file__).resolve().parents[2]
INDEX_TITLE = "# Reproductions of the literature"  # the first line of OUT/README.md, the index
log = logging.getLogger(__name__)
MARKS = {True: "✅ matched", False: "❌ did not match", None: "➖ cannot tell"}


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
    return f"{seconds / 60:.1f} minutes" if seconds >= 60 else f"{seconds:.0f} seconds"


def took(seconds: float, resumed: float) -> str:
    """The page's "took": this run's ``seconds`` and the ``resumed`` seconds its runs had trained
    before (``--resume``) together."""
    if not resumed:
        return f"{minutes(seconds)} here, training and evaluation"
    return (
        f"{minutes(seconds + resumed)} here, training and evaluation ({minutes(resumed)} of it the runs' "
        f"training before they were resumed, {minutes(seconds)} the session that resumed them)"
    )


def quoted(reproduction: Reproduction) -> list[str]:
    """The claim's quotations as Markdown block quotes, each with where it is and its English."""
    lines = []
    for q in reproduction.quotes:
        lines += [f"> {q.words}", ">", f"> — {q.where}" + (f'; in English: "{q.english}"' if q.english else ""), ""]
    return lines


def runs_table(result: Result) -> list[str]:
    """How each run ended: converged (the plateau rule stopped it) or at its cap."""
    if not result.runs:
        return []
    done = sum(r.converged for r in result.runs)
    capped = [r for r in result.runs if not r.converged]
    by_loss = sum(r.by_loss for r in capped)
    loss = (
        f" {by_loss} of the {len(capped)} at the cap had their patience last renewed by the dev loss alone, the "
        "dev metric no longer rising past the rule's margin."
        if by_loss
        else ""
    )
    lines = [
        f"How the runs ended: {done} of {len(result.runs)} reached their plateau before the cap.{loss}",
        "",
        "| run | seed | trained | cap | ended |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.label} | {r.seed} | {r.trained:,g} {r.unit} | {r.cap:,g} | "
        f"{'plateau (converged)' if r.converged else 'cap'}{': ' + r.why if r.why else ''} |"
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
    return (
        f"`attnseq reproduce {ctx.name} --budget-minutes {cls.nominal_minutes * factor:g}` scales the budget by "
        f"{factor:g} ({fields}); runs that reached their plateau stop as early as before."
    )


def page_markdown(reproduction: Reproduction, result: Result, started: datetime, seconds: float, host: dict) -> str:
    """The page of ``result`` as Markdown (figures linked by file name, beside the page)."""
    r, ctx = reproduction, reproduction.context
    lines = [
        f"# {ctx.name}: {r.title}",
        "",
        f"**Claim.** {r.claim}",
        "",
        *quoted(r),
        f"**Source.** {r.source}",
        "",
        f"**Verdict: {result.verdict}.** {result.summary}",
        "",
        "| | |",
        "|---|---|",
        f"| command | `{ctx.command}` |",
        f"| date | {started:%Y-%m-%d %H:%M} |",
        f"| machine | {host['cpu']}, {host['cores']} cores; {host['threads']} "
        f"thread{'s' if host['threads'] > 1 else ''}; Python {host['python']}, "
        f"torch {host['torch']}, NumPy {host['numpy']}; attnseq {host['attnseq']} |",
        f"| budget | {result.budget} |",
        f"| seeds | {ctx.seeds} ({', '.join(map(str, ctx.seed_list))}) |",
        f"| took | {took(seconds, ctx.resumed_seconds)} |",
        "",
        "## Results",
        "",
    ]
    for table in result.tables:
        if table.caption:
            lines += [table.caption, ""]
        lines += [table.markdown()]
    lines += runs_table(result)
    for path, caption in result.figures:
        lines += [f"![{caption}]({Path(path).name})", "", f"*{caption}*", ""]
    lines += ["## What matched and what did not", ""]
    lines += [f"- {MARKS[f.matched]}: {f.text}" for f in result.findings] + [""]
    lines += [
        'The verdict is "reproduced" only when every finding is decided and matched; an undecided finding '
        'makes it "partly" at best.',
        "",
    ]
    if result.observations:
        lines += ["Also observed:", ""] + [f"- {item}" for item in result.observations] + [""]
    lines += ["## Setup", ""] + [f"- {item}" for item in result.setup] + [""]
    lines += ["## With more time", "", longer(r), ""]
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
            rows.append(f"| {name} | {cls.title} | {path.name} does not read ({why}): `attnseq reproduce {name}` | | |")
            continue
        if record is not None:
            runs = record["runs"]
            seconds[name] = record["seconds"]
            ended = f"; {sum(r['converged'] for r in runs)} of {len(runs)} runs reached their plateau" if runs else ""
            rows.append(
                f"| [{name}]({name}.md) | {cls.title} | **{record['verdict']}**: {record['summary']} | "
                f"{record['budget']}{ended} | {record['date'][:10]}, {minutes(record['seconds'])} |"
            )
        else:
            rows.append(f"| {name} | {cls.title} | not run yet: `attnseq reproduce {name}` | | |")
    text = "\n".join(
        [
            INDEX_TITLE,
            "",
            "Each page checks one claim of the documents attnseq implements by training attnseq's presets on "
            "this machine's CPU, and says what matched, what did not, and why. Every page is regenerated by "
            "the command on it (`attnseq reproduce NAME`; `attnseq reproduce --list` lists them with the minutes "
            "each one's default budget takes).",
            "",
            "| reproduction | claim | verdict and numbers | budget | run |",
            "|---|---|---|---|---|",
            *rows,
            "",
            *(
                [
                    f"The {len(seconds)} pages run took {minutes(sum(seconds.values()))} together here; two at a time, "
                    "longest first, as `attnseq reproduce --all --jobs 2` runs them (a core each), these runs would take "
                    f"about {makespan([seconds[n] for n in longest_first(seconds)], 2) / 3600:.1f} hours."
                ]
                if seconds
                else []
            ),
            "",
            *(
                [
                    "The attention-as-memory models (memory networks, the NTM, hierarchical attention): "
                    "[memory.md](memory.md).",
                    "",
                ]
                if (out_dir / "memory.md").exists()
                else []
            ),
        ]
    )
    path = out_dir / "README.md"
    return write_output(path, text, overwrite=True)  # an index is regenerated (check_page: never another file)
