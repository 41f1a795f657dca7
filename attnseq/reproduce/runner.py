"""Running one reproduction: its options (``--set``) and budget (``--budget-minutes``), its
seeds and threads, the page it writes."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

from ..config import parse_override
from ..errors import UserError
from ..files import write_output
from ..schema import Variant, plain
from .base import REPRODUCTIONS, Context, budget_fields, longest_first, scale_budget
from .page import check_page, write_page

log = logging.getLogger("attnseq")

DEFAULT_OUT = Path("docs/results")
DEFAULT_RUNS = Path("runs/reproduce")


def options_of(name: str, settings: Sequence[str] = ()):
    """The options of reproduction ``name`` with ``settings`` (``key=value``) applied, every key
    and value checked (a ConfigError names ``NAME.key``)."""
    values = {}
    for text in settings:
        path, value = parse_override(text)
        values[".".join(path)] = value
    return REPRODUCTIONS.options(Variant(name, values), name)


def reproduce(
    name: str,
    out_dir: str | Path = DEFAULT_OUT,
    runs_dir: str | Path | None = None,
    budget_minutes: float | None = None,
    seeds: int | None = None,
    threads: int = 2,
    settings: Sequence[str] = (),
    command: str | None = None,
    overwrite: bool = False,
    resume: bool = False,
    first_seed: int | None = None,
) -> Path:
    """Run the reproduction ``name`` and write its page into ``out_dir``; the page's path.

    ``budget_minutes`` scales the default budget (its steps, epochs or minutes) by
    ``budget_minutes / nominal_minutes``; ``seeds`` runs of each configuration (default: the
    reproduction's), train.seed ``first_seed`` on where given (a part of the page's runs: seed
    ranges split them over processes or sessions, each training its seeds into the same
    ``runs_dir``, and a last one with ``resume`` and every seed reads them all into the page;
    a part skips what needs the machine to itself, such as timed runs); ``settings``: ``key=value`` options of the reproduction (sizes, limits);
    the run folders go to ``runs_dir`` (default runs/reproduce/NAME). An earlier page of ``name``
    in ``out_dir`` (its figures, numbers) is replaced only with ``overwrite``, which is checked
    before anything trains (page.check_page). With ``resume`` the runs an interrupted (or
    finished) reproduction left in ``runs_dir`` are continued where they stopped, a finished one
    read, not trained again, and the page replaced: the options must be the ones they were made
    with (recorded in RUNS/reproduction.json), but for a budget that may grow."""
    cls = REPRODUCTIONS.get(name, "reproduce")
    options = options_of(name, settings)
    if budget_minutes is not None:
        if budget_minutes <= 0:
            raise UserError(f"reproduce: --budget-minutes must be positive, got {budget_minutes:g}")
        options = scale_budget(options, budget_minutes / cls.nominal_minutes)
    if seeds is not None and seeds < 1:
        raise UserError(f"reproduce: --seeds must be at least 1, got {seeds}")
    if first_seed is not None and first_seed < 1:
        raise UserError(f"reproduce: --seeds: the first seed must be at least 1, got {first_seed}")
    if threads < 1:
        raise UserError(f"reproduce: --threads must be at least 1, got {threads}")
    context = Context(
        name=name,
        out_dir=Path(out_dir),
        runs_dir=Path(runs_dir or DEFAULT_RUNS / name),
        seeds=seeds or cls.default_seeds,
        threads=threads,
        command=command or f"attnseq reproduce {name}",
        resume=resume,
        first_seed=first_seed or 1,
        part=first_seed is not None,
    )
    check_page(context.out_dir, name, overwrite or resume)
    if resume:
        check_resumed_options(context, options)
    context.out_dir.mkdir(parents=True, exist_ok=True)
    context.runs_dir.mkdir(parents=True, exist_ok=True)
    write_output(
        context.runs_dir / RECORD,
        json.dumps({"reproduction": name, "seeds": context.seed_list, "options": plain(options)}, indent=1) + "\n",
        overwrite=True,
    )  # the runs folder's own record, made again with its runs
    log.info(
        "reproduce %s: %s; %s",
        name,
        ", ".join(f"{f}={getattr(options, f)}" for f in budget_fields(options)),
        f"seed(s) {seed_words(context.seed_list)}, {threads} thread(s)",
    )
    started, clock = datetime.now(), time.perf_counter()
    reproduction = cls(options, context)
    result = reproduction.result()
    page = write_page(reproduction, result, started, time.perf_counter() - clock)
    log.info("reproduce %s: %s -> %s", name, result.verdict, page)
    return page


def seed_words(seeds: Sequence[int]) -> str:
    """``[4, 5, 6]`` as "4-6"."""
    return f"{seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else str(seeds[0])


def seed_range(text: str) -> tuple[int, int]:
    """``--seeds``: "K" (seeds 1 .. K) or "FIRST-LAST"; (first seed, how many). A UserError
    names what it got otherwise."""
    first, dash, last = text.strip().partition("-")
    try:
        a, b = (int(first), int(last)) if dash else (1, int(first))
    except ValueError:
        raise UserError(f"reproduce: --seeds takes K or FIRST-LAST (as 4-6), got {text!r}") from None
    if a < 1 or b < a:
        raise UserError(f"reproduce: --seeds {text}: seeds are whole numbers from 1, FIRST at most LAST")
    return a, b - a + 1


RECORD = "reproduction.json"  # in the runs folder: the options and seeds its runs were made with


def check_resumed_options(context: Context, options) -> None:
    """With ``--resume``: a UserError naming the first option that differs from the ones the runs
    in ``context.runs_dir`` were made with, the budget's fields aside (a larger budget trains the
    runs on); a warning where no record says what they were. The seeds may differ: a seed's runs
    are continued or read where they are, the others trained (so a page's runs can be split by
    seed over processes or sessions and read together), each run's settings checked against its
    own."""
    record = context.runs_dir / RECORD
    if not record.exists():
        log.warning(
            "reproduce %s --resume: %s has no %s saying which options its runs were made with; each run's "
            "training settings are still checked against its own",
            context.name,
            context.runs_dir,
            RECORD,
        )
        return
    try:
        before = json.loads(record.read_text(encoding="utf-8"))
        before["options"].items()
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise UserError(
            f"reproduce {context.name} --resume: {record} is not the record of a reproduction's options "
            f"({type(err).__name__}: {err}); remove it to resume with each run's own settings checked, "
            "or leave out --resume to train the runs anew"
        ) from None
    now = plain(options)
    fields = set(budget_fields(options))
    for key in sorted(set(now) | set(before.get("options", {}))):
        was, is_now = before["options"].get(key), now.get(key)
        if key in fields or is_now == was or (key in MAY_GROW and _grew(was, is_now)):
            continue
        raise UserError(
            f"reproduce {context.name} --resume: the runs in {context.runs_dir} were made with "
            f"{key}={was!r}, not {is_now!r}; resume with the same options (only the budget and the "
            "patience may grow), or leave out --resume to train them anew"
        )
    if before.get("seeds") not in (context.seeds, context.seed_list):
        log.info(
            "reproduce %s --resume: the runs in %s were made with seeds %s; now seeds %s",
            context.name,
            context.runs_dir,
            before.get("seeds"),
            seed_words(context.seed_list),
        )


# options a resumed reproduction may raise besides its budget: a larger patience only lengthens
# runs (one that a smaller patience ended continues from where it stopped, as it would have gone on)
MAY_GROW = ("patience",)


def _grew(was, now) -> bool:
    """Whether ``now`` is a number no smaller than ``was``."""
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (was, now))
    return numbers and now >= was


def reproduce_in_processes(
    names: Sequence[str], words: Sequence[str], jobs: int, runs_dir: str | Path | None = None
) -> dict[str, str]:
    """Run ``attnseq reproduce NAME WORDS`` for each of ``names``, ``jobs`` processes at a time,
    the longest default budgets first (so the last to start are the shortest); each writes its
    own page, and, with ``runs_dir``, its runs into ``runs_dir/NAME``. Returns {name: why} of
    those that failed (the last line each wrote to stderr)."""
    failed: dict[str, str] = {}
    order = longest_first(names)

    def one(name: str) -> None:
        where = ["--runs", str(Path(runs_dir) / name)] if runs_dir else []
        log.info("reproduce %s: started", name)
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "attnseq.cli", "-q", "reproduce", name, *words, *where],
            capture_output=True,
            text=True,
        )
        if done.returncode:
            lines = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
            failed[name] = lines[-1]
            log.warning(
                "reproduce %s: failed after %.1f minutes: %s", name, (time.perf_counter() - started) / 60, lines[-1]
            )
        else:
            log.info("reproduce %s: done in %.1f minutes", name, (time.perf_counter() - started) / 60)
            print(done.stdout.strip(), flush=True)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, order))
    return failed


def seed_parts(seeds: int, jobs: int) -> list[tuple[int, int]]:
    """Seeds 1 .. ``seeds`` cut into ``jobs`` contiguous ranges (FIRST, LAST), the first ones
    the longer: 5 over 2 -> (1, 3), (4, 5)."""
    size, extra = divmod(seeds, jobs)
    parts, first = [], 1
    for j in range(jobs):
        last = first + size - 1 + (j < extra)
        parts.append((first, last))
        first = last + 1
    return [p for p in parts if p[0] <= p[1]]


def train_seed_parts(
    name: str, words: Sequence[str], parts: Sequence[tuple[int, int]], runs_dir: Path, wait: float = 900.0
) -> dict[str, str]:
    """``attnseq reproduce NAME --seeds FIRST-LAST WORDS`` for each of ``parts`` at once, each in
    its own process training its seeds into ``runs_dir`` and writing its part's page into a
    folder of its own there; each one starts once the one before has made its first run folder
    (its data written: the parts share it), or after ``wait`` seconds. Returns {part: why} of
    those that failed (the last line each wrote to stderr)."""
    failed: dict[str, str] = {}
    processes = []
    runs_dir.mkdir(parents=True, exist_ok=True)
    for first, last in parts:
        part = f"{first}-{last}"
        before = {p.name for p in runs_dir.iterdir()}
        command = [sys.executable, "-m", "attnseq.cli", "-q", "reproduce", name, "--seeds", part, *words]
        command += ["--runs", str(runs_dir), "--out", str(runs_dir / f"part-{part}"), "--overwrite"]
        log.info("reproduce %s: seeds %s started", name, part)
        err = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # not a pipe: it could fill
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
        processes.append((part, process, err))
        clock = time.perf_counter()
        while process.poll() is None and time.perf_counter() - clock < wait:
            if any("seed" in p.name and p.name not in before for p in runs_dir.iterdir()):
                break
            time.sleep(1.0)
    for part, process, err in processes:
        process.wait()
        err.seek(0)
        text = err.read()
        err.close()
        if process.returncode:
            lines = text.strip().splitlines() or [f"exit status {process.returncode}"]
            failed[part] = lines[-1]
            log.warning("reproduce %s: seeds %s failed: %s", name, part, lines[-1])
        else:
            log.info("reproduce %s: seeds %s done", name, part)
    return failed


def listing() -> list[tuple[str, str, str]]:
    """(name, title, default budget) of every reproduction."""
    rows = []
    for name in REPRODUCTIONS.names():
        cls = REPRODUCTIONS.get(name)
        defaults = REPRODUCTIONS.options_class(name)()
        amounts = ", ".join(f"{f} {getattr(defaults, f):g}" for f in budget_fields(defaults))
        rows.append((name, cls.title, f"{amounts}; {cls.default_seeds} seed(s); about {cls.nominal_minutes:g} min"))
    return rows
