"""The reliability drill: bad inputs and faults, each tried against the command line, the Python
API (in a child process) or the server (``attnseq serve`` on loopback) as a user would, and the
kill drill: training killed (SIGKILL) at random moments and resumed.

    python bench/reliability.py [--kills 30] [--only CLASS|WORDS] [--keep DIR]

The cases come in classes (CLASSES; each name starts with its class, ``os: ...``), and
``--only CLASS`` runs one class (any other WORDS: the cases whose name holds them). The classes
stopped, streams, budget, ranges and loop are generated, not listed: over the commands and path
arguments attnseq.cli's parser has (a tiny command line of each in Drill.recipes), the number
fields of every settings registry, and sizes, names and depths drawn with a seeded random.Random.
Every case prints one line: its name and what happened, one of
  clear error  the command exited non-zero with one line naming the problem (no traceback); of
               the API a TypeError or ValueError naming the argument; of the server a 4xx naming
               the field;
  handled      the command did the right thing, and said so where it should (a warning);
  traceback    a Python traceback reached the user (of the API: any other exception; of the
               server: a 5xx, a reset or a hang);
  silent       the command exited 0 but did something wrong, refused nothing, or its message
               misled (a flag the command lacks, a field it does not name);
  lost         a run or a file that existed was damaged.
and a summary: a line per class and ``N tried, N clear errors, N handled, 0 tracebacks, 0 silent,
0 lost``. The kill drill ends with whether the killed run equals the uninterrupted one bit for bit.
Exit status 1 when any case is a traceback, silent or lost.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import random
import re
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from attnseq.hardware import bf16_pays
from attnseq.runs import LOCK, TIMING_FIELDS

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
BOOK = ROOT / "configs" / "book-attention.yaml"
LUONG = ROOT / "configs" / "luong2015-general.yaml"
TRANSFORMER = ROOT / "configs" / "transformer-tiny.yaml"
BOOK_DATES = Path("/work/shared/data/book/date.txt")  # the book's file; its first 2,000 lines train a book-format run
TINY = [
    "model.embed_size=16",
    "model.hidden_size=32",
    "train.batch_size=32",
    "train.progress=false",
    "train.eval_max_sentences=20",
]
TINY_T = [
    "model.hidden_size=32",
    "model.ff_size=64",
    "train.batch_size=32",
    "train.progress=false",
    "train.eval_max_sentences=20",
]
# the interrupted trainings: 100 updates (an epoch is 47), logged each, evaluated only at the end
INTERRUPTED = ("train.max_steps=100", "train.eval_every=1000", "train.log_every=1", "model.dropout=0.2")
TWINS = ("train.epochs=100000", "train.eval_every=50", "train.log_every=1")  # bounded by --max-minutes
TIMING = TIMING_FIELDS  # (attnseq.runs)
SNOW = "\u2603"  # a character no drill run has seen
NFC, NFD = (unicodedata.normalize(form, "abcé") for form in ("NFC", "NFD"))  # one text, two spellings (é unseen)

CLASSES = {
    "os": "operating-system errors at the edges: paths that are files, folders, missing, unwritable, full",
    "overwrite": "the user's files: inputs, runs and data folders are never written over unasked",
    "interrupt": "Ctrl-C and SIGTERM to a training, a translation and the server; two trainings into one folder",
    "unseen": "inputs the model never saw: unknown characters, blank lines, Unicode forms, the book's padding",
    "data": "data and settings that look wrong: headers, keys twice, ignored flags, tabs, line ends, marks, NULs",
    "settings": "values out of range and options that do not apply",
    "runs": "run folders: resuming, damaged checkpoints and logs",
    "training": "training that diverges, precision, progress, compare",
    "api": "the Python API called with wrong arguments (in a child process)",
    "serve": "requests to attnseq serve, well-formed or not",
    "words": "messages that mislead: a flag the command lacks, 'no checkpoint' where one exists",
    "kill": "SIGKILL at random moments of a training, and resume",
    "stopped": "every writing command stopped by SIGINT, SIGTERM or SIGKILL at random moments, then rerun",
    "streams": "every path argument given as -, a FIFO, a symlink, a dangling symlink, a line of 3 MB",
    "budget": "server requests over sizes: WAV and image headers, beams, texts, Host headers, keys twice",
    "ranges": "every number of every config registry below, above, of the wrong type, via --set",
    "loop": "resumed and ended trainings say so; n-best lists hold no empty hypothesis but the first",
}
KINDS = ("clear error", "handled", "traceback", "silent", "lost")


def sets(*settings: str) -> list[str]:
    return [x for s in settings for x in ("--set", s)]


def attnseq(
    *args,
    stdin: bytes | None = None,
    timeout: float = 600,
    env: dict | None = None,
    stdout: Path | None = None,
    max_file_bytes: int | None = None,
):
    """Run ``attnseq ARGS`` as a user would: (exit status, stdout, stderr, seconds). ``stdout``: a
    file the output goes to instead (a shell's ``> FILE``); ``max_file_bytes``: the largest file
    the command may write (``ulimit -f``: a disk that fills up)."""

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))

    started = time.perf_counter()
    sink = open(stdout, "wb") if stdout else None
    try:
        result = subprocess.run(
            [PYTHON, "-m", "attnseq.cli", *map(str, args)],
            input=stdin,
            stdout=sink or subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=timeout,
            cwd=ROOT,
            env={**os.environ, **(env or {})},
            preexec_fn=limit if max_file_bytes else None,
        )
    finally:
        if sink:
            sink.close()
    return (
        result.returncode,
        (result.stdout or b"").decode(errors="replace"),
        result.stderr.decode(errors="replace"),
        time.perf_counter() - started,
    )


def digest(folder: Path) -> dict[str, str]:
    """sha1 of each file of ``folder``: a run's files (runs.RUN_FILES, and any other file but the
    trainer's lock, which names whoever last took it and is no part of the run)."""
    return {
        p.name: hashlib.sha1(p.read_bytes()).hexdigest()
        for p in sorted(Path(folder).iterdir())
        if p.is_file() and p.name != LOCK
    }


def weights_digest(path: Path) -> str:
    """sha256 of a checkpoint's weights (names and arrays; not the training state, whose
    progress holds timings)."""
    from attnseq.runs import read_checkpoint

    weights, h = read_checkpoint(path)[0], hashlib.sha256()
    for name in sorted(weights):
        h.update(name.encode() + weights[name].tobytes())
    return h.hexdigest()


@functools.cache
def command_flags(command: tuple[str, ...]) -> str:
    """The help of ``attnseq COMMAND``: the flags it has."""
    return attnseq(*command, "--help")[1]


def command_of(args: list) -> tuple[str, ...]:
    """The command words of ``attnseq ARGS`` (``train``, ``data dates``)."""
    words = [str(a) for a in args if str(a) not in ("-q", "--quiet")]
    return tuple(words[:2]) if words and words[0] == "data" else tuple(words[:1])


def lacking_flags(args: list, message: str) -> list[str]:
    """The ``--flags`` an error message names that its command lacks: neither the command's
    own nor the top level's (``--quiet``); a flag the user gave, and one of another command the
    message names in full (``attnseq data split --input``), are not counted."""
    own = message.split("attnseq ", 1)[0]
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", own)) - {str(a) for a in args}  # not the user's own flags
    if not named or not command_of(args):
        return []
    help_text = command_flags(command_of(args)) + command_flags(())  # the command's and the top level's
    return sorted(flag for flag in named if not re.search(re.escape(flag) + r"(?![\w-])", help_text))


@dataclass
class Outcome:
    kind: str  # one of KINDS
    detail: str


@dataclass
class Case:
    """A command and what a user should get: an error naming ``words`` (``expect="error"``),
    success that ``check`` confirms (``"handled"``: it returns '' when right, else what is wrong;
    a reason starting 'lost' is a loss), or either (``"either"``: a refusal or a success that
    says ``words``). ``action`` runs something else than ``attnseq ARGS`` (signals, several
    processes) and returns what the command did; ``codes``: the exit statuses of a success."""

    name: str
    args: Callable[[], list] = lambda: []
    expect: str = "error"  # or "handled", "either"
    words: tuple[str, ...] = ()
    stdin: bytes | None = None
    check: Callable[[int, str, str, float], str] | None = None
    setup: Callable[[], None] | None = None
    env: dict = field(default_factory=dict)
    action: Callable[[], tuple[int, str, str, float]] | None = None
    codes: tuple[int, ...] = (0,)
    stdout: Path | None = None
    max_file_bytes: int | None = None
    timeout: float = 600

    def run(self) -> Outcome:
        if self.setup:
            self.setup()
        args = [] if self.action else self.args()
        try:
            if self.action:
                code, out, err, seconds = self.action()
            else:
                code, out, err, seconds = attnseq(
                    *args,
                    stdin=self.stdin,
                    env=self.env,
                    stdout=self.stdout,
                    max_file_bytes=self.max_file_bytes,
                    timeout=self.timeout,
                )
        except subprocess.TimeoutExpired as hang:
            return Outcome("silent", f"still running after {hang.timeout:.0f} s (killed)")
        if "Traceback (most recent call last)" in err:
            return Outcome("traceback", err.strip().splitlines()[-1][:160])
        problem = self.check(code, out, err, seconds) if self.check else ""
        if problem.startswith("lost"):
            return Outcome("lost", problem)
        lines = [line for line in err.strip().splitlines() if line.startswith("attnseq: error:")]
        if self.expect == "error" or (self.expect == "either" and code not in self.codes):
            if code in self.codes:
                return Outcome("silent", "exit 0 where an error was due" + (f"; {problem}" if problem else ""))
            missing = [w for w in self.words if w not in err]
            said = err.strip().splitlines()
            # one error line, the last; before it only a command's progress lines, and none under -q
            extra = len(said) != 1 if "-q" in map(str, args) else not said or said[-1] not in lines
            if extra or len(lines) != 1 or missing:
                return Outcome("silent", f"exit {code}, not one clear line (missing {missing}): {err.strip()[-200:]!r}")
            lacking = lacking_flags(args, lines[0])
            if lacking:
                return Outcome(
                    "silent",
                    f"names {', '.join(lacking)}, which 'attnseq {' '.join(command_of(args))}' lacks: {lines[0][:120]}",
                )
            if problem:
                return Outcome("silent", problem)
            return Outcome("clear error", lines[0][len("attnseq: error: ") :][:110])
        if code not in self.codes:
            return Outcome("silent", f"exit {code}: {err.strip()[-160:]}")
        missing = [w for w in self.words if w not in err + out]
        if missing or problem:
            return Outcome("silent", problem or f"no word of {missing} in the output")
        return Outcome("handled", (err.strip().splitlines() or out.strip().splitlines() or ["ok"])[-1][:110])


def on_output(check: Callable[[str], str]) -> Callable[[int, str, str, float], str]:
    """A Case check reading only the output."""
    return lambda code, out, err, seconds: check(out)


def same_blocks(out: str, n: int = 2) -> str:
    """'' when the n-best blocks of two inputs (``translate --beam 2 --n-best 2``) are the same
    hypotheses with the same scores: the model read the same source."""
    lines = out.splitlines()
    first, second = lines[:n], lines[n : 2 * n]
    return "" if first and first == second else f"silent: the two spellings are read differently: {first} vs {second}"


def warns(err: str, *needles: str) -> bool:
    """True when one line of ``err`` holds every needle (case-insensitively)."""
    return any(all(n.lower() in line.lower() for n in needles) for line in err.splitlines())


def names_piece(text: str, piece: str) -> bool:
    """True when ``text`` names ``piece`` as itself, its escape (``\\x00``) or its code point (U+0000)."""
    forms = (piece, repr(piece)[1:-1], f"U+{ord(piece):04X}", "NUL" if piece == "\x00" else piece)
    return any(form in text for form in forms)


def lines_are(pattern: list[str | None]) -> Callable[[str], str]:
    """A check of translate's output: its lines, a None being any line."""

    def check(out: str) -> str:
        lines = out.split("\n")
        if lines[-1:] == [""]:
            lines.pop()
        if len(lines) == len(pattern) and all(p is None or p == line for p, line in zip(pattern, lines)):
            return ""
        return f"silent: {out!r} where lines {pattern} were due ('' blank)"

    return check


def unknown_said(err: str, piece: str, count: str | None = None) -> str:
    """'' when a warning names ``piece`` as outside the vocabulary (and ``count`` inputs)."""
    lines = [
        line for line in err.splitlines() if names_piece(line, piece) and re.search("unknown|vocabulary", line, re.I)
    ]
    if not lines:
        return f"silent: no warning names {piece!r} as unknown"
    if count is not None and not any(re.search(rf"\b{count}\b", line) for line in lines):
        return f"silent: the warning does not count {count} inputs: {lines[0][:120]}"
    return ""


class Drill:
    """The cases, sharing a workspace with small data sets and trained runs."""

    def __init__(self, work: Path):
        self.work = work
        self.data = work / "data"
        self.run = work / "run"  # a small trained torch run, kept intact
        self.numpy_run = work / "numpy-run"
        self.transformer_run = work / "transformer-run"
        self.whole_runs: dict[Path, float] = {}  # the stopped cases' command lines run whole: their seconds

    # -- the workspace ---------------------------------------------------------------------------
    def prepare(self) -> None:
        rng = random.Random(0)
        self.data.mkdir(parents=True)
        for split, n in (("train", 1500), ("dev", 60), ("test", 40)):
            words = ["".join(rng.choice("abcdef") for _ in range(rng.randint(3, 6))) for _ in range(n)]
            (self.data / f"{split}.tsv").write_text("".join(f"{w}\t{w[::-1]}\n" for w in words), encoding="utf-8")
        for run, preset, extra in (
            (self.run, LUONG, TINY),
            (self.numpy_run, BOOK, [*TINY, "engine=numpy", "data.strip=true"]),
            (self.transformer_run, TRANSFORMER, TINY_T),
        ):
            code, _, err, _ = attnseq(
                "-q", "train", preset, "--data", self.data, "--out", run, *sets(*extra, "train.max_steps=30")
            )
            if code:
                sys.exit(f"reliability: cannot train the drill's {run.name}: {err}")

    @functools.cached_property
    def book_run(self) -> Path:
        """A book-format run (its sources padded to 29 characters) of the first 2,000 lines of the
        book's date.txt: 20 updates, enough for the padding to matter, not to be right."""
        lines = BOOK_DATES.read_bytes().splitlines(keepends=True)[:2000]
        data, run = self.path("book-data"), self.path("book-run")
        for args in (
            [
                "data",
                "book",
                "--file",
                self.write("date-2000.txt", b"".join(lines)),
                "--out",
                data,
                "--dev-size",
                "100",
            ],
            ["-q", "train", BOOK, "--data", data, "--out", run, *sets(*TINY, "train.max_steps=20")],
        ):
            code, _, err, _ = attnseq(*args)
            if code:
                sys.exit(f"reliability: cannot make the drill's book run: {err}")
        return run

    @functools.cached_property
    def straight(self) -> Path:
        """The uninterrupted training the interrupted ones must equal (INTERRUPTED settings)."""
        code, _, err, _ = attnseq(*self.train("straight", *INTERRUPTED))
        if code:
            sys.exit(f"reliability: cannot train the drill's uninterrupted run: {err}")
        return self.path("straight")

    def path(self, name: str) -> Path:
        return self.work / name

    def write(self, name: str, data: bytes | str) -> Path:
        path = self.path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        return path

    def data_dir(self, name: str, train: bytes) -> Path:
        """A copy of the drill's data with another train.tsv."""
        folder = self.path(name)
        folder.mkdir(parents=True, exist_ok=True)
        for split in ("dev", "test"):
            (folder / f"{split}.tsv").write_bytes((self.data / f"{split}.tsv").read_bytes())
        (folder / "train.tsv").write_bytes(train)
        return folder

    def copy_run(self, name: str, without: tuple[str, ...] = (), source: Path | None = None) -> Path:
        """A copy of the drill's run (or ``source``) but for the files ``without``."""
        copy = self.path(name)
        if not copy.exists():
            shutil.copytree(source or self.run, copy, ignore=lambda *_: without)
        return copy

    def train(self, out: str, *settings: str, preset: Path = LUONG, flags: tuple = ()) -> list:
        return [
            "-q",
            "train",
            preset,
            "--data",
            self.data,
            "--out",
            self.path(out),
            *flags,
            *sets(*(TINY if preset != TRANSFORMER else TINY_T), *settings),
        ]

    # -- the cases -------------------------------------------------------------------------------
    def cases(self) -> list[Case]:
        """Every command-line case, its name prefixed by its class."""
        cases = []
        for group in CLASSES:
            make = getattr(self, f"{group}_cases", None)
            for case in make() if make else ():
                case.name = f"{group}: {case.name}"
                cases.append(case)
        return cases

    def translate_case(self, *args, name: str, **kw) -> Case:
        """A case of ``attnseq translate RUN ARGS`` with the drill's run."""
        return Case(name, lambda: ["translate", self.run, *args], **kw)

    def no_temporary_files(self, folder: Path) -> str:
        """'' when no write left a temporary file in ``folder``."""
        left = [p.name for p in folder.glob(".*.tmp")]
        return f"lost: temporary files left: {', '.join(left)}" if left else ""

    def intact(self, path: Path) -> Callable:
        """A check that ``path`` (a file or a folder) is as it was when the case was made."""
        before = digest(path) if path.is_dir() else path.read_bytes()
        now = lambda: digest(path) if path.is_dir() else path.read_bytes()  # noqa: E731
        return lambda *_: "" if now() == before else f"lost: {path.name} changed"

    def os_cases(self) -> list[Case]:
        """Paths a user gets wrong, and a system that refuses to write."""
        run, data, text = self.run, self.data, self.write("os/in.txt", "abc\nbad\n")
        afile = self.write("os/a-file", "x\n")
        deep = lambda name: self.path(f"os/{name}/a/b/c")  # noqa: E731
        full = self.path("os/full")  # a device like /dev/full, of the drill's own: writing to it is ENOSPC
        if not full.exists():
            os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # as root; elsewhere the case fails to be made
        self.path("os/dangling").symlink_to(self.path("os/nowhere"))
        small = self.copy_run("os-small-disk")
        small_last = self.intact(small / "last.safetensors")

        def is_device(*_) -> str:
            return "" if stat.S_ISCHR(full.lstat().st_mode) else "lost: the device is a file now"

        translate = self.translate_case
        return [
            Case(
                "train --out an existing file",
                lambda: self.train("os/a-file", "train.max_steps=2"),
                words=("a-file", "not a folder"),
            ),
            Case(
                "train --out under a file",
                lambda: self.train("os/a-file/run", "train.max_steps=2"),
                words=("a-file", "not a folder"),
            ),
            Case(
                "train --out a missing deep folder is made",
                lambda: self.train("os/deep/a/b/run", "train.max_steps=2"),
                expect="handled",
                check=lambda *_: (
                    "" if self.path("os/deep/a/b/run/best.safetensors").exists() else "silent: no run in the folder"
                ),
            ),
            Case(
                "data dates --out an existing file",
                lambda: ["data", "dates", "--out", afile, "--train", "20"],
                words=("a-file",),
                check=self.intact(afile),
            ),
            Case(
                "data dates --out under a file",
                lambda: ["data", "dates", "--out", afile / "d", "--train", "20"],
                words=("a-file", "not a folder"),
            ),
            Case(
                "data dates --out a missing deep folder is made",
                lambda: ["data", "dates", "--out", deep("dates"), "--train", "20", "--dev", "5", "--test", "5"],
                expect="handled",
                check=lambda *_: (
                    ""
                    if len((deep("dates") / "train.tsv").read_text().splitlines()) == 20
                    else "silent: train.tsv is not 20 pairs"
                ),
            ),
            Case(
                "data dates --out a folder the system refuses (/sys)",
                lambda: ["data", "dates", "--out", "/sys/attnseq-data", "--train", "20"],
                words=("/sys/attnseq-data",),
            ),
            Case(
                "data dates --out a folder /proc cannot hold",
                lambda: ["data", "dates", "--out", "/proc/attnseq-data", "--train", "20"],
                words=("/proc/attnseq-data",),
            ),
            translate("--output", self.path("os"), name="translate --output a folder", words=("os", "folder")),
            translate(
                "--input",
                text,
                "--output",
                deep("out") / "out.txt",
                name="translate --output in a missing deep folder is made",
                expect="handled",
                check=lambda *_: (
                    ""
                    if len((deep("out") / "out.txt").read_text().splitlines()) == 2
                    else "silent: not one output line per input"
                ),
            ),
            translate(
                "--input",
                text,
                "--output",
                "/sys/attnseq.txt",
                name="translate --output where the system refuses (/sys)",
                words=("/sys/attnseq.txt",),
            ),
            translate(
                "--input",
                text,
                "--output",
                full,
                "--overwrite",
                name="translate --output a full device (ENOSPC)",
                words=("space",),
                check=is_device,
            ),
            Case(
                "translate to a full standard output (> /dev/full)",
                lambda: ["translate", run, "--input", text],
                words=("space",),
                stdout=Path("/dev/full"),
            ),
            translate(
                "--input",
                text,
                "--output",
                self.path("os/limited.txt"),
                name="translate --output over the file-size limit (EFBIG)",
                words=("limited.txt",),
                max_file_bytes=1,
                check=lambda *_: "" if not self.path("os/limited.txt").exists() else "lost: a partial file",
            ),
            Case(
                "a save the system refuses (file-size limit) keeps the previous checkpoint",
                lambda: [
                    "-q",
                    "train",
                    LUONG,
                    "--data",
                    data,
                    "--out",
                    small,
                    "--resume",
                    *sets(*TINY, "train.max_steps=32"),
                ],
                words=(str(small),),
                max_file_bytes=30_000,
                check=lambda *a: small_last(*a) or self.no_temporary_files(small),
            ),
            translate("--input", self.path("os"), name="translate --input a folder", words=("folder",)),
            translate("--input", afile / "x", name="translate --input under a file", words=("a-file",)),
            translate(
                "--input", self.path("os/dangling"), name="translate --input a dangling symlink", words=("dangling",)
            ),
            translate(
                "--input",
                self.write("os/empty.txt", ""),
                name="translate an empty --input",
                expect="handled",
                check=on_output(lambda out: "" if out == "" else f"silent: {out!r} from no input"),
            ),
            Case(
                "output files get the user's umask",
                lambda: ["translate", run, "--input", text, "--output", self.path("os/umask.txt")],
                expect="handled",
                check=self.mode_check,
            ),
        ]

    def overwrite_cases(self) -> list[Case]:
        """Outputs that would land on the user's inputs, runs or data."""
        run, data = self.run, self.data
        intact = self.intact(run)
        source = self.write("ow/source.txt", "abc\nbca\n")
        keep = self.intact(source)
        link = self.path("ow/link.txt")
        link.symlink_to(source)
        hard = self.path("ow/hard.txt")
        os.link(source, hard)
        existing = self.write("ow/existing.txt", "mine\n")
        catalog = self.po_file()
        folder = self.data_dir("ow/data", (data / "train.tsv").read_bytes())
        folder_kept = self.intact(folder)
        self.path("ow/data-link").symlink_to(folder)
        book = self.path("ow/book")
        book.mkdir(parents=True, exist_ok=True)
        (book / "train.tsv").write_bytes(b"".join(BOOK_DATES.read_bytes().splitlines(keepends=True)[:300]))
        book_kept = self.intact(book / "train.tsv")
        translate = self.translate_case
        return [
            Case(
                "train into an existing run without --resume",
                lambda: ["-q", "train", LUONG, "--data", data, "--out", run, *sets(*TINY, "train.max_steps=2")],
                words=("--resume", "--overwrite"),
                check=intact,
            ),
            Case(
                "train --resume and --overwrite together",
                lambda: ["-q", "train", LUONG, "--data", data, "--out", run, "--resume", "--overwrite"],
                words=("choose one",),
                check=intact,
            ),
            translate(
                "--input",
                source,
                "--output",
                source,
                name="translate --output its --input",
                words=("source.txt", "input"),
                check=keep,
            ),
            translate(
                "--input",
                source,
                "--output",
                source,
                "--overwrite",
                name="translate --output its --input with --overwrite",
                words=("source.txt", "input"),
                check=keep,
            ),
            translate(
                "--input",
                source,
                "--output",
                link,
                "--overwrite",
                name="translate --output a symlink to its --input",
                words=("link.txt", "input"),
                check=keep,
            ),
            translate(
                "--input",
                source,
                "--output",
                hard,
                "--overwrite",
                name="translate --output a hard link of its --input",
                words=("hard.txt", "input"),
                check=keep,
            ),
            translate(
                "--input",
                source,
                "--output",
                existing,
                name="translate --output an existing file",
                words=("existing.txt", "--overwrite"),
                check=self.intact(existing),
            ),
            translate(
                "--input",
                source,
                "--output",
                self.write("ow/replaced.txt", "old\n"),
                "--overwrite",
                name="translate --output an existing file with --overwrite replaces it",
                expect="handled",
                check=lambda *_: (
                    ""
                    if len(self.path("ow/replaced.txt").read_text().splitlines()) == 2
                    else "silent: not replaced by the translations"
                ),
            ),
            translate(
                "--input",
                source,
                "--output",
                run / "config.yaml",
                "--overwrite",
                name="translate --output a file of the run",
                words=("config.yaml",),
                check=intact,
            ),
            translate(
                "--po",
                catalog,
                "--output",
                catalog,
                "--overwrite",
                name="translate --po F --output F",
                words=("in.po",),
                check=self.intact(catalog),
            ),
            Case(
                "data dates --out a folder holding data",
                lambda: ["data", "dates", "--out", folder, "--train", "20"],
                words=("--overwrite", "holds files"),
                check=folder_kept,
            ),
            Case(
                "data dates --out a symlink to a folder holding data",
                lambda: ["data", "dates", "--out", self.path("ow/data-link"), "--train", "20"],
                words=("--overwrite",),
                check=folder_kept,
            ),
            Case(
                "data split --input D/train.tsv --out D --overwrite",
                lambda: ["data", "split", "--input", folder / "train.tsv", "--out", folder, "--overwrite"],
                words=("train.tsv", "input"),
                check=folder_kept,
            ),
            Case(
                "data book --file D/train.tsv --out D --overwrite",
                lambda: [
                    "data",
                    "book",
                    "--file",
                    book / "train.tsv",
                    "--out",
                    book,
                    "--overwrite",
                    "--dev-size",
                    "20",
                ],
                words=("train.tsv", "input"),
                check=book_kept,
            ),
            Case(
                "data gettext --out a folder holding data",
                lambda: ["data", "gettext", "--lang", "de", "--from", self.catalogs(), "--out", folder],
                words=("--overwrite",),
                check=folder_kept,
            ),
            Case(
                "plot curve --out its metrics.jsonl --overwrite",
                lambda: ["plot", "curve", run, "--out", run / "metrics.jsonl", "--overwrite"],
                words=("metrics.jsonl", "input"),
                check=intact,
            ),
            Case(
                "plot attention --html its --input --overwrite",
                lambda: ["plot", "attention", run, "--input", source, "--html", source, "--overwrite"],
                words=("source.txt", "input"),
                check=keep,
            ),
        ]

    def interrupt_cases(self) -> list[Case]:
        """Ctrl-C (SIGINT) and SIGTERM: a training finishes its step, saves and says where to
        resume; a second training into the same folder is refused; a translation and the server
        stop with one line or none."""
        saved = ("saved at step", "--resume")
        return [
            Case(
                "SIGINT after the first step",
                action=lambda: self.interrupted("int", signal.SIGINT),
                expect="handled",
                codes=(130, -signal.SIGINT),
                words=saved,
                check=lambda *_: self.resumes_equal("int"),
            ),
            Case(
                "SIGTERM after the first step",
                action=lambda: self.interrupted("term", signal.SIGTERM),
                expect="handled",
                codes=(143, -signal.SIGTERM),
                words=saved,
                check=lambda *_: self.resumes_equal("term"),
            ),
            Case(
                "a second SIGINT during the save",
                action=lambda: self.interrupted("int2", signal.SIGINT, signal.SIGINT),
                expect="handled",
                codes=(130, -signal.SIGINT),
                check=lambda code, out, err, seconds: self.resumes_equal("int2", said=err),
            ),
            Case(
                "a second training --resume into a folder being trained",
                action=lambda: self.twins("twin-resume", "--resume"),
                words=("twin-resume",),
                check=lambda *_: self.twin_finished("twin-resume"),
            ),
            Case(
                "a second training --overwrite into a folder being trained",
                action=lambda: self.twins("twin-overwrite", "--overwrite"),
                words=("twin-overwrite",),
                check=lambda *_: self.twin_finished("twin-overwrite"),
            ),
            Case(
                "two trainings started at once into one new folder",
                action=lambda: self.twins("twin-new", together=True),
                words=("twin-new",),
                check=lambda *_: self.twin_finished("twin-new"),
            ),
            Case(
                "Ctrl-C to translate waiting on its input",
                action=lambda: self.translate_interrupted(),
                expect="handled",
                codes=(130, -signal.SIGINT),
            ),
            Case(
                "Ctrl-C to the server",
                action=lambda: self.serve_signal(signal.SIGINT),
                expect="handled",
                codes=(0, 130, -signal.SIGINT),
            ),
            Case(
                "SIGTERM to the server",
                action=lambda: self.serve_signal(signal.SIGTERM),
                expect="handled",
                codes=(0, 143, -signal.SIGTERM),
            ),
            Case(
                "--max-minutes 0.1 stops training near 6 s of its clock",
                lambda: self.train(
                    "minutes", "train.epochs=100000", "train.eval_every=20", flags=("--max-minutes", "0.1")
                ),
                expect="handled",
                check=self.minutes_check,
            ),
        ]

    def unseen_cases(self) -> list[Case]:
        """Inputs unlike the training text: read as the model read its data, and what it cannot
        read said (the server's answers are the server drill's)."""
        run = self.run
        nbest = ["--beam", "2", "--n-best", "2"]
        return [
            Case(
                "an unknown character on stdin is said",
                lambda: ["translate", run],
                stdin=f"abc{SNOW}\n".encode(),
                expect="handled",
                check=lambda c, o, err, s: unknown_said(err, SNOW),
            ),
            Case(
                "unknown characters in 2 lines of 5 are counted",
                lambda: [
                    "translate",
                    run,
                    "--input",
                    self.write("unseen/five.txt", f"abc\nab{SNOW}\ncab\nba{SNOW}{SNOW}\nbbb\n"),
                ],
                expect="handled",
                check=lambda c, o, err, s: unknown_said(err, SNOW, "2"),
            ),
            Case(
                "unknown characters in evaluate's sources are said",
                lambda: [
                    "evaluate",
                    run,
                    "--data",
                    self.write("unseen/unknown.tsv", f"ab{SNOW}\t{SNOW}ba\nabc\tcba\n"),
                ],
                expect="handled",
                check=lambda c, o, err, s: unknown_said(err, SNOW),
            ),
            Case(
                "a blank line gets a blank output line",
                lambda: ["translate", run],
                stdin=b"abc\n\nbca\n",
                expect="handled",
                check=on_output(lines_are([None, "", None])),
            ),
            Case(
                "a whitespace-only line gets a blank output line",
                lambda: ["translate", run],
                stdin=b"abc\n \t  \n",
                expect="handled",
                check=on_output(lines_are([None, ""])),
            ),
            Case(
                "NFD and NFC spellings of one text get one answer",
                lambda: ["translate", run, *nbest],
                stdin=f"{NFC}\n{NFD}\n".encode(),
                expect="handled",
                check=on_output(same_blocks),
            ),
            Case(
                "the book's padding: 'september 27, 1994' typed without it",
                lambda: ["translate", self.book_run, *nbest],
                stdin=f"september 27, 1994\n{'september 27, 1994':<29}\n".encode(),
                expect="handled",
                check=on_output(same_blocks),
            ),
            Case(
                "the book's padding: '3/4/21' typed without it",
                lambda: ["translate", self.book_run, *nbest],
                stdin=f"3/4/21\n{'3/4/21':<29}\n".encode(),
                expect="handled",
                check=on_output(same_blocks),
            ),
            Case(
                "evaluate prints sacrebleu's signature",
                lambda: ["evaluate", run, "--data", self.data / "test.tsv"],
                expect="handled",
                check=lambda c, out, err, s: (
                    "" if "nrefs:1" in out + err else "silent: no sacrebleu signature (nrefs:1|...)"
                ),
            ),
            Case(
                "evaluate --json holds the signatures",
                lambda: ["-q", "evaluate", run, "--data", self.data, "--json"],
                expect="handled",
                check=on_output(
                    lambda out: (
                        ""
                        if "chrf_signature" in json.loads(out)
                        else f"silent: no chrf_signature in {sorted(json.loads(out))}"
                    )
                ),
            ),
            Case(
                "evaluate scores the references as given",
                action=self.raw_reference,
                expect="handled",
                check=on_output(
                    lambda out: (
                        ""
                        if json.loads(out)["exact_match"] == 0
                        else f"silent: a reference with {SNOW} matched an output without it (exact_match "
                        f"{json.loads(out)['exact_match']})"
                    )
                ),
            ),
            Case(
                "a 100,000-character input to a Transformer",
                lambda: ["translate", self.transformer_run],
                stdin=("abc" * 33334 + "\n").encode(),
                expect="handled",
                words=("decode.max_source_len",),
                check=lambda code, out, err, s: "" if s < 60 else f"silent: took {s:.0f} s",
            ),
        ]

    def data_cases(self) -> list[Case]:
        """Data files and configs that look wrong: said (a warning naming file and line) or refused."""
        run, data = self.run, self.data
        train = (data / "train.tsv").read_bytes()
        body = "data:\n  tokenizer: char\nmodel:\n  hidden_size: 32\n"
        plot = lambda what, *a: ["plot", what, *a]  # noqa: E731
        return [
            Case(
                "a TSV header row in train.tsv",
                lambda: self.train_on("header", b"source\ttarget\n" + train, quiet=False),
                expect="handled",
                words=("train.tsv:1", "header"),
            ),
            Case(
                "a YAML key twice",
                lambda: ["train", self.write("wrong/twice.yaml", body + "  hidden_size: 64\n"), "--data", data],
                words=("twice.yaml", "model.hidden_size"),
            ),
            Case(
                "an empty config",
                lambda: ["train", self.write("wrong/empty.yaml", ""), "--data", data],
                words=("empty.yaml",),
            ),
            Case(
                "a binary config file",
                lambda: ["train", self.write("x.yaml", b"\x89PNG\r\n\x1a\n\x00\xff"), "--data", data],
                words=("x.yaml",),
            ),
            Case(
                "a config that is not a mapping",
                lambda: ["train", self.write("list.yaml", "- a\n- b\n"), "--data", data],
                words=("list.yaml", "mapping"),
            ),
            Case(
                "plot curve --text (a flag curve ignores)",
                lambda: plot("curve", run, "--text", "abc"),
                words=("--text",),
            ),
            Case(
                "plot positional --hyp 2 (a flag positional ignores)",
                lambda: plot("positional", "--hyp", "2"),
                words=("--hyp",),
            ),
            Case(
                "translate --po with --n-best (a flag --po ignores)",
                lambda: [
                    "translate",
                    run,
                    "--po",
                    self.po_file(),
                    "--output",
                    self.path("wrong/n.po"),
                    "--n-best",
                    "2",
                ],
                words=("--n-best",),
            ),
            Case(
                "--resume onto data with characters the run never saw",
                lambda: [
                    "train",
                    LUONG,
                    "--data",
                    self.data_dir("wrong/new-chars", train + b"xyz\tzyx\nzyxw\twxyz\nwxy\tyxw\n"),
                    "--out",
                    self.copy_run("wrong/resumed"),
                    "--resume",
                    *sets(*TINY, "train.max_steps=32"),
                ],
                expect="handled",
                check=lambda c, o, err, s: (
                    ""
                    if re.search(r"\d.*(unknown|vocabulary)|(unknown|vocabulary).*\d", err, re.I)
                    else "silent: no warning counting unknown pieces"
                ),
            ),
            Case(
                "a line with two tabs in train.tsv",
                lambda: self.train_on("tabs2", train + b"ab\tc\td\n"),
                words=("train.tsv:1501", "tabs"),
            ),
            Case(
                "a line with two tabs in evaluate's file",
                lambda: ["evaluate", run, "--data", self.write("wrong/tabs.tsv", "abc\tcba\nab\tc\td\n")],
                words=("tabs.tsv:2", "tabs"),
            ),
            Case(
                "CRLF line ends in train.tsv",
                lambda: self.train_on("crlf", train.replace(b"\n", b"\r\n")),
                expect="handled",
                check=lambda *_: (
                    ""
                    if "\r" not in (self.path("crlf-run") / "vocab.source.json").read_text(encoding="utf-8")
                    else "silent: the carriage return became a token"
                ),
            ),
            Case(
                "CRLF line ends on translate's stdin",
                lambda: ["translate", run, "--beam", "2", "--n-best", "2"],
                stdin=b"abd\r\nabd\n",
                expect="handled",
                check=on_output(same_blocks),
            ),
            Case(
                "a UTF-8 byte-order mark in train.tsv",
                lambda: self.train_on("bom", "\ufeffabc\tcba\n".encode()),
                expect="handled",
                check=lambda *_: (
                    ""
                    if "\ufeff" not in (self.path("bom-run") / "vocab.source.json").read_text(encoding="utf-8")
                    else "silent: the mark became a token"
                ),
            ),
            Case(
                "a byte-order mark in translate --input",
                lambda: [
                    "translate",
                    run,
                    "--beam",
                    "2",
                    "--n-best",
                    "2",
                    "--input",
                    self.write("wrong/bom.txt", "\ufeffabd\nabd\n"),
                ],
                expect="handled",
                check=on_output(same_blocks),
            ),
            Case(
                "a NUL byte in train.tsv",
                lambda: self.train_on("nul", train + b"ab\x00c\tc\x00ba\n", quiet=False),
                expect="either",
                words=("train.tsv:1501",),
            ),
            Case(
                "a NUL byte on translate's stdin",
                lambda: ["translate", run],
                stdin=b"ab\x00c\nabc\n",
                expect="handled",
                check=lambda c, out, err, s: lines_are([None, None])(out) or unknown_said(err, "\x00"),
            ),
            Case(
                "invalid UTF-8 on translate's stdin",
                lambda: ["translate", run],
                stdin=b"abc\n\xff\xfe\n",
                words=("stdin:2", "UTF-8"),
            ),
            Case(
                "invalid UTF-8 in translate --input",
                lambda: ["translate", run, "--input", self.write("bad.txt", b"ok\n\xff\n")],
                words=("bad.txt:2", "UTF-8"),
            ),
            Case(
                "evaluate an empty file",
                lambda: ["evaluate", run, "--data", self.write("wrong/empty.tsv", "")],
                words=("empty.tsv",),
            ),
            Case(
                "data split of an empty file",
                lambda: ["data", "split", "--input", self.write("empty.tsv", ""), "--out", self.path("split")],
                words=("no pairs",),
            ),
            Case(
                "data split of two pairs",
                lambda: [
                    "data",
                    "split",
                    "--input",
                    self.write("two.tsv", "a\tb\nc\td\n"),
                    "--out",
                    self.path("split2"),
                ],
                words=("empty",),
            ),
            Case(
                "blank lines in train.tsv are skipped and located",
                lambda: self.train_on("blank", b"abc\tcba\n\nbca\tacb\n\t\nccc\tccc\n", quiet=False),
                expect="handled",
                words=("lines 2, 4",),
            ),
            Case(
                "a 10,000-character training line",
                lambda: self.train_on("long", ("a" * 10000 + "\tb\n").encode() + train, quiet=False),
                expect="handled",
                words=("dropped 1 pair(s) longer than data.max_source_len",),
            ),
            Case(
                "a TSV file given as --data",
                lambda: ["train", LUONG, "--data", data / "train.tsv"],
                words=("attnseq data split",),
            ),
            Case(
                "data gettext on two catalogs of one's own",
                lambda: ["data", "gettext", "--lang", "de", "--from", self.catalogs(), "--out", self.path("gt")],
                expect="handled",
                check=self.gettext_check,
            ),
            Case(
                "translate --po: markup placeholders and plural entries",
                lambda: ["-q", "translate", run, "--po", self.po_file(), "--output", self.path("filled.po")],
                expect="handled",
                check=self.po_check,
            ),
        ]

    def settings_cases(self) -> list[Case]:
        """Values out of range and options that do not apply: refused naming the key."""
        run = self.run
        cases = []
        for setting, key in (
            ("train.batch_size=-4", "train.batch_size"),
            ("model.hidden_size=0", "model.hidden_size"),
            ("train.lr=-0.1", "train.lr"),
            ("train.lr=.nan", "train.lr"),
            ("model.encoder_layers=-1", "model.encoder_layers"),
            ("model.dropout=-0.5", "model.dropout"),
            ("train.accumulate=0", "train.accumulate"),
            ("train.epochs=0", "train.epochs"),
            ("decode.beam_size=0", "decode.beam_size"),
            ("train.lr=1e999", "train.lr"),
            ("train.lr=1e40", "train.lr"),
        ):
            cases.append(
                Case(
                    f"train --set {setting}",
                    lambda s=setting: self.train("bad", s),
                    words=(key,),
                    check=lambda *_: "" if not self.path("bad").exists() else "silent: wrote a run folder",
                )
            )
        for args, key in (
            (["--set", "decode.max_len=-5"], "decode.max_len"),
            (["--beam", "0"], "decode.beam_size"),
            (["--beam", "2", "--n-best", "3"], "decode.n_best"),
            (["--set", "data.tokenizer=word"], "data.tokenizer"),
            (["--set", "model.hidden_size=8"], "model.hidden_size"),
            (["--set", "decode.beam_size=1e999"], "decode.beam_size"),
        ):
            cases.append(
                Case(f"translate {' '.join(args)}", lambda a=args: ["translate", run, *a], stdin=b"abc\n", words=(key,))
            )
        for settings, key in (
            (["model.decoder=none", "model.attention=multihead"], "model.attention"),
            (["model.arch=transformer", "model.cell=gru"], "model.cell"),
            (["model.decoder=peeky", "model.attention=local_p"], "model.attention"),
            (["model.attention=general", "model.attention.window=3"], "model.attention.window"),
            (["model.encoder=gnmt", "model.encoder.bidirectional=false"], "model.encoder.bidirectional"),
            (["train.schedule.warmup_steps=100"], "train.schedule.warmup_steps"),
        ):
            cases.append(
                Case(
                    f"an option that does not apply: {' '.join(settings)}",
                    lambda s=settings: self.train("bad", *s),
                    words=(key,),
                )
            )
        return cases + [
            Case(
                "engine numpy with --beam 3",
                lambda: ["translate", self.numpy_run, "--beam", "3"],
                stdin=b"abc\n",
                words=("decode.beam_size", "torch-only"),
            ),
            Case(
                "serve --port 99999", lambda: ["serve", run, "--port", "99999"], words=("--port", "65535"), timeout=120
            ),
        ]

    def runs_cases(self) -> list[Case]:
        """Run folders: resumed as they were trained, damaged files named."""
        run, data = self.run, self.data
        intact = self.intact(run)
        return [
            Case(
                "--resume --set train.lr (a key fixed by training)",
                lambda: [
                    "-q",
                    "train",
                    LUONG,
                    "--data",
                    data,
                    "--out",
                    run,
                    "--resume",
                    *sets(*TINY, "train.max_steps=40", "train.lr=0.5"),
                ],
                words=("train.lr", "the run was trained with"),
                check=intact,
            ),
            Case(
                "--resume with another model size",
                lambda: [
                    "-q",
                    "train",
                    LUONG,
                    "--data",
                    data,
                    "--out",
                    run,
                    "--resume",
                    *sets(*TINY, "model.hidden_size=64"),
                ],
                words=("model.hidden_size",),
                check=intact,
            ),
            Case(
                "--resume where there is no run",
                lambda: ["-q", "train", LUONG, "--data", data, "--out", self.path("nothing"), "--resume"],
                words=("nothing to resume in",),
            ),
            Case(
                "a truncated best.safetensors",
                lambda: ["evaluate", self.damaged_copy(), "--data", data / "test.tsv"],
                words=("damaged or incomplete", "--checkpoint last"),
            ),
            Case(
                "a truncated best.safetensors, served",
                lambda: ["serve", self.damaged_copy(), "--port", "0"],
                words=("damaged or incomplete", "--checkpoint last"),
                timeout=120,
            ),
            Case(
                "a half-written line in metrics.jsonl, then plot curve",
                lambda: ["-q", "plot", "curve", self.torn_log_copy(), "--out", self.path("curve.png")],
                expect="handled",
                check=lambda *_: "" if self.path("curve.png").exists() else "silent: no curve",
            ),
            Case(
                "evaluate a folder that is no run",
                lambda: ["evaluate", self.work, "--data", data],
                words=("not a run folder",),
            ),
            Case(
                "serve a folder that is no run",
                lambda: ["serve", self.work, "--port", "0"],
                words=("not a run folder",),
                timeout=120,
            ),
            Case(
                "evaluate --data DIR scores its test.tsv",
                lambda: ["-q", "evaluate", run, "--data", data, "--json"],
                expect="handled",
                check=lambda code, out, *_: "" if json.loads(out)["sentences"] == 40 else "silent",
            ),
            Case(
                "a run with only last.safetensors loads it (no best yet)",
                lambda: ["translate", self.copy_run("only-last", without=("best.safetensors",))],
                stdin=b"abc\n",
                expect="handled",
                check=on_output(lambda out: "" if len(out.splitlines()) == 1 else f"silent: {out!r}"),
            ),
        ]

    def training_cases(self) -> list[Case]:
        """Training that goes wrong, or looks as if it might."""
        return [
            Case(
                "train.lr=1e6 on the book preset",
                lambda: self.train("diverged", "train.lr=1e6", "train.clip_norm=0", "data.strip=true", preset=BOOK),
                words=("training diverged",),
            ),
            Case(
                "a Transformer that diverges at step 1 keeps no NaN checkpoint",
                lambda: self.train(
                    "nan", "train.lr=1e6", "train.eval_every=1", "train.clip_norm=0", preset=TRANSFORMER
                ),
                words=("training diverged",),
                check=lambda *_: self.finite_checkpoints("nan"),
            ),
            Case(
                "train.precision=bf16 "
                + (
                    "where this CPU's bf16 beats fp32"
                    if bf16_pays("cpu")[0]
                    else "where the CPU's bf16 is missing or slower (a warning, fp32)"
                ),
                lambda: self.train("bf16", "train.precision=bf16", "train.max_steps=2", flags=()),
                expect="handled",
                env={},
                words=(),
                check=self.bf16_check,
            ),
            Case(
                "compare labels its checkpoint rule",
                lambda: [
                    "-q",
                    "compare",
                    LUONG,
                    "--data",
                    self.data,
                    "--out",
                    self.path("cmp"),
                    "--budget-minutes",
                    "1",
                    *sets(*TINY, "train.max_steps=3"),
                ],
                expect="handled",
                check=lambda *_: (
                    ""
                    if all(w in self.path("cmp/comparison.md").read_text() for w in ("best_step", "ties broken"))
                    else "silent: no checkpoint rule"
                ),
            ),
            Case(
                "compare --out a folder holding a comparison",
                lambda: [
                    "-q",
                    "compare",
                    LUONG,
                    "--data",
                    self.data,
                    "--out",
                    self.write("cmp-held/comparison.md", "mine\n").parent,
                    "--budget-minutes",
                    "1",
                    *sets(*TINY, "train.max_steps=3"),
                ],
                words=("cmp-held", "--overwrite"),
                check=lambda *_: (
                    ""
                    if self.path("cmp-held/comparison.md").read_text() == "mine\n"
                    else "lost: comparison.md replaced"
                ),
            ),
            Case(
                "-q hides progress; a piped log has no bar fragments",
                lambda: self.train("quiet", "train.max_steps=3", "train.progress=true"),
                expect="handled",
                check=lambda code, out, err, s: "" if "%|" not in err and "\r" not in err else "silent: bar in log",
            ),
        ]

    def words_cases(self) -> list[Case]:
        """Messages that would send the user the wrong way."""
        run, data = self.run, self.data
        only_best = lambda name="only-best": self.copy_run(name, without=("last.safetensors",))  # noqa: E731

        def not_no_checkpoint(c, o, err, s):
            return "silent: 'no checkpoint' where best.safetensors is" if "no checkpoint" in err else ""

        return [
            Case(
                "translate --checkpoint last where only best.safetensors is",
                lambda: ["translate", only_best(), "--checkpoint", "last"],
                stdin=b"abc\n",
                words=("last.safetensors", "--checkpoint best"),
                check=not_no_checkpoint,
            ),
            Case(
                "evaluate --checkpoint last where only best.safetensors is",
                lambda: ["evaluate", only_best(), "--data", data, "--checkpoint", "last"],
                words=("last.safetensors", "--checkpoint best"),
                check=not_no_checkpoint,
            ),
            Case(
                "--resume where last.safetensors was deleted",
                lambda: [
                    "-q",
                    "train",
                    LUONG,
                    "--data",
                    data,
                    "--out",
                    only_best("only-best-resumed"),
                    "--resume",
                    *sets(*TINY, "train.max_steps=32"),
                ],
                expect="either",
                words=("last.safetensors",),
            ),
            Case(
                "--resume on a run whose config.yaml is invalid YAML",
                lambda: [
                    "-q",
                    "train",
                    LUONG,
                    "--data",
                    data,
                    "--out",
                    self.bad_config("bad-yaml"),
                    "--resume",
                    *sets(*TINY, "train.max_steps=32"),
                ],
                words=("bad-yaml", "config.yaml"),
            ),
            Case(
                "translate a run whose config.yaml is invalid YAML",
                lambda: ["translate", self.bad_config("bad-yaml2")],
                stdin=b"abc\n",
                words=("bad-yaml2", "config.yaml"),
            ),
            Case("a top-level flag after the command", lambda: ["translate", run, "-q"], stdin=b"abc\n", words=("-q",)),
            Case("a misspelt flag", lambda: ["translate", run, "--beams", "3"], stdin=b"abc\n", words=("--beams",)),
            Case(
                "data stories --out a folder holding data names a flag it has",
                lambda: ["data", "stories", "--out", self.data],
                words=("--overwrite",),
            ),
            Case(
                "translate --po without --output",
                lambda: ["translate", run, "--po", self.po_file()],
                words=("--output",),
            ),
        ]

    # -- helpers of the cases --------------------------------------------------------------------
    def train_on(self, name: str, train: bytes, quiet: bool = True) -> list:
        folder = self.data_dir(name, train)
        return [
            *(["-q"] if quiet else []),
            "train",
            LUONG,
            "--data",
            folder,
            "--out",
            self.path(f"{name}-run"),
            *sets(*TINY, "train.max_steps=2"),
        ]

    def bad_config(self, name: str) -> Path:
        """A copy of the drill's run whose config.yaml was edited by hand into invalid YAML."""
        copy = self.copy_run(name)
        (copy / "config.yaml").write_text("model:\n  hidden_size: [32\n")
        return copy

    def finite_checkpoints(self, name: str) -> str:
        import numpy as np

        from attnseq.runs import read_checkpoint

        for path in self.path(name).glob("*.safetensors"):
            if not all(np.isfinite(v).all() for v in read_checkpoint(path)[0].values()):
                return f"silent: {path.name} holds NaN weights"
        return ""

    def damaged_copy(self) -> Path:
        copy = self.path("damaged")
        copy.mkdir(exist_ok=True)
        for p in self.run.iterdir():
            (copy / p.name).write_bytes(p.read_bytes())
        (copy / "best.safetensors").write_bytes((self.run / "best.safetensors").read_bytes()[:1000])
        return copy

    def torn_log_copy(self) -> Path:
        copy = self.path("torn")
        copy.mkdir(exist_ok=True)
        (copy / "metrics.jsonl").write_bytes((self.run / "metrics.jsonl").read_bytes() + b'{"type": "tra')
        return copy

    def bf16_check(self, code, out, err, seconds) -> str:
        if bf16_pays("cpu")[0]:
            return "" if "training in fp32" not in err else "silent: fell back to fp32 where bf16 is faster"
        return "" if "training in fp32" in err else "silent: no word of the fallback"

    def catalogs(self) -> Path:
        folder = self.path("catalogs")
        folder.mkdir(exist_ok=True)
        header = 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
        for part in range(2):
            entries = "".join(f'msgid "Open file {part}-{i}"\nmsgstr "Datei {part}-{i} öffnen"\n\n' for i in range(20))
            (folder / f"app{part}.po").write_text(header + entries, encoding="utf-8")
        return folder

    def gettext_check(self, *_) -> str:
        counts = {s: len((self.path("gt") / f"{s}.tsv").read_text().splitlines()) for s in ("train", "dev", "test")}
        return "" if all(counts.values()) else f"silent: empty split {counts}"

    def po_file(self) -> Path:
        header = (
            'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n'
            '"Plural-Forms: nplurals=2; plural=(n != 1);\\n"\n\n'
        )
        return self.write(
            "in.po",
            header + 'msgid "<b>abc</b>"\nmsgstr ""\n\nmsgid "abc"\nmsgid_plural "abcd"\nmsgstr[0] ""\nmsgstr[1] ""\n',
        )

    def po_check(self, code, out, err, seconds) -> str:
        import polib

        summary = json.loads(out)
        catalog = polib.pofile(str(self.path("filled.po")))
        plural = catalog.find("abc")
        if summary.get("plurals") != 1 or not all(plural.msgstr_plural.values()):
            return f"silent: the plural entry was not filled ({summary})"
        markup = catalog.find("<b>abc</b>")  # translated with its tags, flagged, or left for a person
        if markup.msgstr and "</b>" not in markup.msgstr and "placeholders differ" not in markup.tcomment:
            return "silent: markup lost without a flag"
        if not markup.msgstr and not summary["skipped"]:
            return "silent: an entry left out but not counted"
        return ""

    def mode_check(self, *_) -> str:
        mask = os.umask(0)
        os.umask(mask)
        mode = stat.S_IMODE(self.path("os/umask.txt").stat().st_mode)
        return "" if mode == 0o666 & ~mask else f"silent: mode {oct(mode)}"

    def raw_reference(self) -> tuple[int, str, str, float]:
        """evaluate --json of one pair whose reference is the model's own output and an unknown
        character: scored as given, it is no exact match."""
        output = attnseq("-q", "translate", self.run, stdin=b"abc\n")[1].splitlines()
        path = self.write("unseen/raw.tsv", f"abc\t{(output or [''])[0]}{SNOW}\n")
        return attnseq("-q", "evaluate", self.run, "--data", path, "--json")

    # -- interrupting ------------------------------------------------------------------------------
    def start_training(self, out: str, settings: tuple = INTERRUPTED, flags: tuple = ()) -> subprocess.Popen:
        """A training of ``settings`` into ``out`` (its log not quieted), started."""
        args = self.train(out, *settings, flags=flags)[1:]  # without -q: the 'saved at step' line is info
        return subprocess.Popen(
            [PYTHON, "-m", "attnseq.cli", *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT
        )

    def first_step(self, out: str, process: subprocess.Popen) -> bool:
        """Wait until the training into ``out`` has logged its first update (True), or ended (False)."""
        log = self.path(out) / "metrics.jsonl"
        while process.poll() is None:
            if log.exists() and '"type": "train"' in log.read_text(errors="replace"):
                return True
            time.sleep(0.01)
        return False

    def interrupted(self, out: str, *signals: int) -> tuple[int, str, str, float]:
        """A training into ``out`` sent ``signals`` (20 ms apart) after its first update and long
        before its first evaluation (at update 100): what it did."""
        self.straight  # noqa: B018 (trained first, not while the clock of this one runs)
        started = time.perf_counter()
        process = self.start_training(out)
        if self.first_step(out, process):
            for i, sig in enumerate(signals):
                time.sleep(0.02 if i else 0)
                process.send_signal(sig)
        else:
            signals = ()
        return ended(process, started, "" if signals else "the training ended before the signal")

    def resumes_equal(self, out: str, said: str = "") -> str:
        """'' when ``out``, interrupted, loads and ``--resume`` finishes it to the very weights of the
        uninterrupted run; else what is lost. A second signal that came before the save stops at
        once: then no checkpoint is right when the training ``said`` so."""
        if not (self.path(out) / "last.safetensors").exists():
            if "stopped at once, without saving; no checkpoint was saved before" in said:
                return ""
            return f"silent: {out}/last.safetensors was not saved"
        if self.fails_to_load(out):
            return f"lost: the interrupted run does not load: {self.fails_to_load(out)}"
        code, _, err, _ = attnseq(*self.train(out, *INTERRUPTED, flags=("--resume",)))
        if code:
            return f"lost: --resume failed: {err.strip()[-160:]}"
        ours, theirs = (weights_digest(p / "last.safetensors") for p in (self.path(out), self.straight))
        return "" if ours == theirs else f"lost: resumed weights {ours[:12]} differ from uninterrupted {theirs[:12]}"

    def twins(self, out: str, *flags: str, together: bool = False) -> tuple[int, str, str, float]:
        """Two trainings into ``out``, of 30 s (--max-minutes 0.5: still training when the second
        comes, on a loaded machine too) and 12 s: the second (with ``flags``) started once the first
        trains, or both at once; what the one that did not finish (else the second) did."""
        started, bound = time.perf_counter(), ("--max-minutes", "0.2")
        first = self.start_training(out, TWINS, ("--max-minutes", "0.5"))
        if together:
            second = self.start_training(out, TWINS, (*bound, *flags))
        elif not self.first_step(out, first):
            self.twin_codes = {out: [first.wait()]}
            return ended(first, started, "the first training ended before the second began")
        else:
            second = self.start_training(out, TWINS, (*bound, *flags))
        results = [ended(p, started) for p in (first, second)]
        self.twin_codes = {out: [r[0] for r in results]}
        return ([r for r in results if r[0] != 0] or [results[1]])[0]

    def twin_finished(self, out: str) -> str:
        """'' when one of the twin trainings into ``out`` finished, alone: its metrics log is one
        training's (one start, steps rising) and its last checkpoint loads."""
        from attnseq.runs import read_metrics

        codes = getattr(self, "twin_codes", {}).get(out, [])
        if codes.count(0) != 1:
            return f"lost: exit statuses {codes}: {'both trained' if codes.count(0) == 2 else 'neither finished'}"
        records = read_metrics(self.path(out))
        starts = sum(r["type"] == "start" for r in records)
        steps = [r["step"] for r in records if r["type"] == "train"]
        if starts != 1 or steps != sorted(set(steps)):
            return f"lost: the metrics log holds {starts} starts and {len(steps) - len(set(steps))} repeated steps"
        return f"lost: the run does not load: {self.fails_to_load(out)}" if self.fails_to_load(out) else ""

    def fails_to_load(self, out: str) -> str:
        """'' when the last checkpoint of the run ``out`` loads and evaluates; else the error."""
        code, _, err, _ = attnseq(
            "-q", "evaluate", self.path(out), "--data", self.data / "test.tsv", "--checkpoint", "last"
        )
        return err.strip()[-160:] if code else ""

    def translate_interrupted(self) -> tuple[int, str, str, float]:
        """Ctrl-C to ``attnseq translate RUN`` once it waits for its input on a pipe."""
        started = time.perf_counter()
        process = subprocess.Popen(
            [PYTHON, "-m", "attnseq.cli", "translate", str(self.run)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
        )
        deadline = time.perf_counter() + 120
        while process.poll() is None and time.perf_counter() < deadline and not waits_on_stdin(process.pid):
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        return ended(process, started)

    def serve_signal(self, sig: int) -> tuple[int, str, str, float]:
        """``sig`` to ``attnseq serve RUN`` once it listens: it must end within 30 s."""
        sys.path.insert(0, str(ROOT / "bench"))
        from serve_load import start_server

        server, _ = start_server(self.run, log=False, capture=True)
        started = time.perf_counter()
        server.send_signal(sig)
        try:
            out, err = server.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            out, err = server.communicate()
            err += "\n[drill: the server did not stop within 30 s]"
            return 1, out, err, time.perf_counter() - started
        return server.returncode, out, err, time.perf_counter() - started

    def minutes_check(self, code, out, err, seconds) -> str:
        """'' when a run bounded by --max-minutes 0.1 stopped by it: its clock (evaluations
        included) past 6 s by no more than two updates, an evaluation and 2 s, and not
        short of it by half."""
        from attnseq.runs import read_metrics

        evals = [r for r in read_metrics(self.path("minutes")) if r["type"] == "eval"]
        if not evals:
            return "silent: no evaluation logged"
        last = evals[-1]
        step_seconds = last["train_seconds"] / max(last["step"], 1)
        allowed = 6 + max(r.get("eval_seconds", 0) for r in evals) + 2 * step_seconds + 2
        if not 3 <= last["wall_seconds"] <= allowed:
            return f"silent: stopped at {last['wall_seconds']:.1f} s of its clock, outside 3 to {allowed:.1f} s"
        return ""

    # -- generated cases: tiny command lines of every command that reads or writes files ----------
    def recipes(self, where: Path) -> dict[tuple[str, ...], list[list]]:
        """Tiny command lines of each command that reads or writes files, their outputs under
        ``where``: the generated cases start from the first that gives the argument they try.
        The inputs they name under the workspace are made (``ready``) before a command runs."""
        out, data, gen = where / "out", self.data, self.path("gen")
        sizes = ["--train", "20000", "--dev", "200", "--test", "200"]
        small = ["--train", "40", "--dev", "5", "--test", "5"]
        return {
            ("data", "dates"): [["data", "dates", "--out", out, *sizes]],
            ("data", "book"): [["data", "book", "--file", gen / "date-2000.txt", "--out", out, "--dev-size", "50"]],
            ("data", "split"): [
                ["data", "split", "--input", data / "train.tsv", "--out", out],
                ["data", "split", "--src", gen / "src.txt", "--tgt", gen / "tgt.txt", "--out", out],
            ],
            ("data", "gettext"): [["data", "gettext", "--lang", "de", "--from", self.path("catalogs"), "--out", out]],
            ("data", "passages"): [
                ["data", "passages", "--lang", "de", "--from", self.path("catalogs"), "--out", out, *small]
            ],
            ("data", "stories"): [["data", "stories", "--out", out, "--train", "1000", "--dev", "5", "--test", "5"]],
            ("data", "copy"): [["data", "copy", "--out", out, *sizes, "--test-lengths", "12"]],
            ("data", "repeat-copy"): [["data", "repeat-copy", "--out", out, *sizes, "--test-lengths", "12"]],
            ("data", "sort"): [["data", "sort", "--out", out, *sizes, "--test-lengths", "12"]],
            ("data", "names"): [["data", "names", "--out", out, *sizes]],
            ("data", "formulas"): [["data", "formulas", "--out", out, *small]],
            ("data", "documents"): [
                ["data", "documents", "--out", out, "--train", "3000", "--dev", "10", "--test", "10"]
            ],
            ("data", "speech"): [["data", "speech", "--out", out, "--train", "4", "--dev", "2", "--test", "2"]],
            ("train",): [["train", LUONG, "--data", data, "--out", out, *sets(*TINY, "train.max_steps=8")]],
            ("evaluate",): [["evaluate", self.run, "--data", data / "test.tsv"]],
            ("translate",): [
                ["translate", self.run, "--input", gen / "lines.txt", "--output", where / "out.txt"],
                ["translate", self.run, "--po", self.path("in.po"), "--output", where / "out.po"],
                ["translate", gen / "image-run", "--files", gen / "bar.png", "--output", where / "out.txt"],
            ],
            ("average",): [["average", gen / "kept-run", "--last", "2", "--out", out]],
            ("export",): [["export", self.transformer_run, "--to", "ctranslate2", "--out", out]],
            ("compare",): [["compare", LUONG, "--data", data, "--out", out, "--budget-minutes", "0.01", *sets(*TINY)]],
            ("reproduce",): [
                ["reproduce", "nadaraya-watson", "--out", out, "--runs", where / "runs", "--seeds", "1"]
                + ["--budget-minutes", "0.01"]
            ],
            ("demo",): [["demo", "--out", out, "--minutes", "0.01"]],
            ("plot",): [
                ["plot", "attention", self.run, "--text", "abc", "--out", where / "out.png"],
                ["plot", "attention", self.run, "--input", gen / "few.txt", "--html", where / "out.html"],
                ["plot", "attention", gen / "image-run", "--file", gen / "bar.png", "--out", where / "out.png"],
            ],
        }

    def ready(self, tokens: list) -> None:
        """Make the inputs of the workspace that ``tokens`` name, where they are not yet."""
        gen, rows = self.path("gen"), (self.data / "train.tsv").read_text(encoding="utf-8").splitlines()
        makers = {
            gen / "date-2000.txt": lambda: b"".join(BOOK_DATES.read_bytes().splitlines(keepends=True)[:2000]),
            gen / "src.txt": lambda: "".join(row.split("\t")[0] + "\n" for row in rows),
            gen / "tgt.txt": lambda: "".join(row.split("\t")[1] + "\n" for row in rows),
            gen / "lines.txt": lambda: "".join(row.split("\t")[0] + "\n" for row in rows),
            gen / "few.txt": lambda: "".join(row.split("\t")[0] + "\n" for row in rows[:8]),
            gen / "bar.png": lambda: (self.image_data / "img/test0.png").read_bytes(),
        }
        for token in tokens:
            if not isinstance(token, Path) or token.exists():
                continue
            if token in makers:
                self.write(str(token.relative_to(self.work)), makers[token]())
            elif token == self.path("catalogs"):
                self.catalogs()
            elif token == self.path("in.po"):
                self.po_file()
            elif token == gen / "kept-run":
                self.kept_run  # noqa: B018 (trained here)
            elif token == gen / "image-run":
                self.image_run  # noqa: B018

    @functools.cached_property
    def kept_run(self) -> Path:
        """A run that kept the weights of its last two evaluations, to average."""
        run = self.path("gen/kept-run")
        if (run / "best.safetensors").exists():
            return run
        settings = ("train.max_steps=4", "train.eval_every=2", "train.keep_checkpoints=2")
        code, _, err, _ = attnseq("-q", "train", LUONG, "--data", self.data, "--out", run, *sets(*TINY, *settings))
        if code:
            sys.exit(f"reliability: cannot train the drill's run of kept checkpoints: {err}")
        return run

    @functools.cached_property
    def image_data(self) -> Path:
        """train/dev/test.tsv (48 / 8 / 8) of images of one to four bars, tall (B) or short (s)."""
        import io

        import numpy as np
        from PIL import Image

        folder, rng = self.path("gen/image-data"), random.Random(5)
        (folder / "img").mkdir(parents=True, exist_ok=True)
        for split, n in (("train", 48), ("dev", 8), ("test", 8)):
            rows = []
            for i in range(n):
                tokens = [rng.choice("Bs") for _ in range(rng.randint(1, 4))]
                pixels = np.full((16, 10 * len(tokens) + 4), 255, np.uint8)
                for k, token in enumerate(tokens):
                    top, bottom = (3, 13) if token == "B" else (7, 9)
                    pixels[top:bottom, 4 + 10 * k : 10 + 10 * k] = 0
                buffer = io.BytesIO()
                Image.fromarray(pixels).save(buffer, format="PNG")
                (folder / f"img/{split}{i}.png").write_bytes(buffer.getvalue())
                rows.append(f"img/{split}{i}.png\t{' '.join(tokens)}\n")
            (folder / f"{split}.tsv").write_text("".join(rows), encoding="utf-8")
        return folder

    @functools.cached_property
    def audio_data(self) -> Path:
        """train/dev/test.tsv (48 / 8 / 8) of WAV files of one to four tones, low (l) or high (h)."""
        import numpy as np

        from attnseq.data.audio import wav_bytes

        folder, rng = self.path("gen/audio-data"), np.random.default_rng(6)
        (folder / "wav").mkdir(parents=True, exist_ok=True)
        gap, beep = np.zeros(960, np.float32), np.arange(1920) / 16000
        for split, n in (("train", 48), ("dev", 8), ("test", 8)):
            rows = []
            for i in range(n):
                tokens = list(rng.choice(["l", "h"], size=rng.integers(1, 5)))
                parts = [p for t in tokens for p in (gap, 0.4 * np.sin(2 * np.pi * (300 if t == "l" else 2500) * beep))]
                samples = np.concatenate([*parts, gap]).astype(np.float32)
                samples += 0.01 * rng.standard_normal(len(samples)).astype(np.float32)
                (folder / f"wav/{split}{i}.wav").write_bytes(wav_bytes(samples))
                rows.append(f"wav/{split}{i}.wav\t{' '.join(tokens)}\n")
            (folder / f"{split}.tsv").write_text("".join(rows), encoding="utf-8")
        return folder

    def file_run(self, name: str, preset: str, data: Path, *settings: str) -> Path:
        """A run of ``preset`` on ``data`` whose sources are files, trained 2 steps: it decodes, not well."""
        run = self.path(f"gen/{name}")
        if (run / "best.safetensors").exists():  # trained by an earlier drill in this workspace (--keep)
            return run
        tiny = ("train.max_steps=2", "train.progress=false", "train.log_every=0", "train.eval_max_sentences=8")
        code, _, err, _ = attnseq(
            "-q", "train", ROOT / "configs" / preset, "--data", data, "--out", run, *sets(*settings, *tiny)
        )
        if code:
            sys.exit(f"reliability: cannot train the drill's {name}: {err}")
        return run

    @functools.cached_property
    def image_run(self) -> Path:
        frontend = "model.frontend={name: conv, channels: 4, blocks: 2, positions: rows}"
        sizes = ("data.input.height=16", "model.hidden_size=16", "model.embed_size=8")
        return self.file_run("image-run", "formulas.yaml", self.image_data, *sizes, frontend)

    @functools.cached_property
    def audio_run(self) -> Path:
        frontend = "model.frontend={name: pyramidal, layers: 1, reduction: 2, stack: 2}"
        sizes = ("data.input.n_mels=16", "model.hidden_size=16", "model.embed_size=8")
        return self.file_run("audio-run", "chan2016-las.yaml", self.audio_data, *sizes, frontend)

    # -- stopped: every writing command stopped at random moments, and run again ---------------------
    def stopped_cases(self) -> list[Case]:
        """For each writing command (each command of the CLI with an output path), its tiny command
        line stopped by SIGINT, SIGTERM or SIGKILL (in turn) at random moments of its run."""
        rng, cases, turn = random.Random(43), [], 0
        for command in cli_commands():
            outputs = [a for a in path_arguments(command) if a.output]
            if command in NOT_DRILLED or not outputs:
                continue
            lines, chosen = self.recipes(self.path("stopped/x")).get(command, []), []
            for argument in outputs:
                index = next((i for i, tokens in enumerate(lines) if given(tokens, argument)), None)
                if index is None:
                    cases.append(no_recipe(argument))
                elif index not in chosen:
                    chosen.append(index)
            for index in chosen:
                flags = " ".join(a.flag for a in outputs if given(lines[index], a))
                for _ in range(1 if command in ONE_MOMENT else 2):
                    sig, fraction = STOP_SIGNALS[turn % 3], round(rng.uniform(0.1, 1.0), 2)
                    turn += 1
                    cases.append(
                        Probe(
                            f"{' '.join(command)} {flags}: {sig.name} at {fraction:.0%} of its run",
                            probe=functools.partial(self.stop_and_rerun, command, index, sig, fraction),
                        )
                    )
        return cases

    def stop_and_rerun(self, command: tuple[str, ...], index: int, sig: int, fraction: float) -> Outcome:
        """Run the command line once whole (its outputs and the seconds it takes), put the user's
        file beside its outputs, start it again with --overwrite, send ``sig`` at ``fraction``
        of its run, and check what the stop left; then the same command again."""
        where = self.path(f"stopped/{'-'.join(command)}-{index}")
        where.mkdir(parents=True, exist_ok=True)
        tokens = with_overwrite(self.recipes(where)[command][index])
        self.ready(tokens)
        limit = 600.0
        if where not in self.whole_runs:
            started = time.perf_counter()
            code, _, err = finish(spawn(tokens, where), limit)
            if code:
                kind = "traceback" if traceback_of(err) else "silent"
                return Outcome(kind, f"the command failed before any signal: {err.strip()[-200:]!r}")
            self.whole_runs[where] = time.perf_counter() - started
        seconds = self.whole_runs[where]
        limit = max(120.0, 10 * seconds)
        outputs = [Path(given(tokens, a)) for a in path_arguments(command) if a.output and given(tokens, a)]
        notes = [(out if out.is_dir() else out.parent) / "notes.txt" for out in outputs]
        for note in notes:
            note.write_text(USERS, encoding="utf-8")
        before = {out: output_files(out) for out in outputs}
        earlier = {p.name for p in temporaries(where)}  # an earlier case's, which its rerun left to ours
        process = spawn(tokens, where)
        time.sleep(fraction * seconds)
        landed = process.poll() is None
        pids = session_pids(process.pid) if landed else set()
        if landed:  # Ctrl-C reaches the terminal's whole process group, kill -9 here every process of it
            os.killpg(process.pid, sig) if sig != signal.SIGTERM else process.send_signal(sig)
        code, _, err = finish(process, limit)
        said = stop_said(sig, landed, code, err) or self.stop_left(where, sig, pids | earlier, notes, before)
        started = time.perf_counter()
        again, _, again_err = finish(
            spawn(tokens, where), limit
        )  # (after a wrong stop too: the next case starts clean)
        if said:
            return Outcome(said.split(":", 1)[0], said.split(":", 1)[1].strip())
        if traceback_of(again_err):
            return Outcome("traceback", f"the rerun: {traceback_of(again_err)}")
        if again:
            return Outcome("silent", f"the rerun failed (exit {again}): {again_err.strip()[-200:]!r}")
        left = temporaries(where)
        if left:
            return Outcome("lost", f"the rerun left temporaries: {', '.join(p.name for p in left)}")
        for note in notes:
            if not note.exists() or note.read_text(encoding="utf-8") != USERS:
                return Outcome("lost", f"the rerun removed or changed the user's {note.relative_to(where)}")
        missing = [str(out.relative_to(where)) for out in outputs if not out.exists()]
        if missing:
            return Outcome("silent", f"the rerun exited 0 without writing {', '.join(missing)}")
        line = (err.strip().splitlines() or [f"exit {code}"])[-1][:70] if landed else "ended before the signal"
        return Outcome("handled", f"exit {code}: {line}; the rerun in {time.perf_counter() - started:.1f} s")

    def stop_left(self, where: Path, sig: int, allowed: set, notes: list[Path], before: dict) -> str:
        """'' when a stopped command left no temporary (but its own, killed outright: ``allowed``
        holds its processes, and the names of those there before it), the user's files as they
        were and its earlier outputs whole; else what is wrong ('lost: ...')."""
        left = [
            p.name
            for p in temporaries(where)
            if p.name not in allowed
            and not (
                sig == signal.SIGKILL and TEMPORARY.match(p.name) and int(TEMPORARY.match(p.name)["pid"]) in allowed
            )
        ]
        if left:
            return f"lost: temporaries left by the stopped command: {', '.join(left)}"
        for note in notes:
            if not note.exists() or note.read_text(encoding="utf-8") != USERS:
                return f"lost: the user's {note.relative_to(where)} was removed or changed"
        for out, files in before.items():
            manifest = out / ".attnseq-output" if out.is_dir() else None
            if manifest is not None and manifest.exists():  # a folder output: whole, all of it
                files = set(manifest.read_text(encoding="utf-8").split())
            elif any(Path(name).name == "metrics.jsonl" for name in files):
                continue  # runs --overwrite retrains: what it removed first is no loss
            gone = sorted(name for name in files if not (out / name if out.is_dir() else out).exists())
            if gone:
                return f"lost: {out.name} is not whole: {', '.join(gone[:3])} gone"
        return ""

    # -- streams: -, FIFOs, symbolic links and long lines for every path argument ---------------------
    def streams_cases(self) -> list[Case]:
        """For every path argument of every command that reads or writes files (the CLI's parser
        says which): ``-``, a FIFO, a symbolic link, a dangling one (outputs) and a line of 3 MB
        (inputs of lines), each in the command's first tiny command line that gives it."""
        cases = []
        for command in cli_commands():
            if command in NOT_DRILLED:
                continue
            lines = self.recipes(self.path("streams/x")).get(command, [])
            for argument in path_arguments(command):
                if not lines:
                    cases.append(no_recipe(argument))
                    continue
                index = next((i for i, tokens in enumerate(lines) if given(tokens, argument)), 0)
                old = given(lines[index], argument)
                variants = ["-", "a FIFO", "a symlink"]
                if argument.output:
                    variants.append("a dangling symlink")
                elif old and Path(old).suffix in (".txt", ".tsv"):
                    variants.append("a line of 3 MB")
                for variant in variants:
                    where = self.path(f"streams/{len(cases)}")
                    probe = functools.partial(self.stream_case, command, index, argument, variant, where)
                    cases.append(Probe(f"{argument} {variant}", probe=probe))
        return cases

    def stream_case(
        self, command: tuple[str, ...], index: int, argument: PathArgument, variant: str, where: Path
    ) -> Outcome:
        """``argument`` of the command line given as ``variant``: a clear error, or the right thing."""
        where.mkdir(parents=True, exist_ok=True)
        tokens = self.recipes(where)[command][index]
        self.ready(tokens)
        old = given(tokens, argument)
        original = Path(old) if old else self.path("gen/lines.txt")
        self.ready([original])
        folder = original.is_dir() if not argument.output else not original.suffix
        content = original.read_bytes() if original.is_file() else b""
        link, target = where / f"link{original.suffix}", where / f"target{original.suffix}"
        stdin, fifo, value = None, None, str(link)
        if variant == "-":
            value, stdin = "-", (None if argument.output else content)
        elif variant == "a FIFO":  # named with the suffix a command may read the format from
            value = str(where / f"fifo{original.suffix}")
            fifo = Fifo(Path(value), None if argument.output else content)
        elif variant == "a symlink" and not argument.output:
            link.symlink_to(original.absolute())
        elif variant == "a symlink":
            target.mkdir() if folder else target.write_text("old\n")
            link.symlink_to(target)
        elif variant == "a dangling symlink":
            link.symlink_to(target)
        else:  # a line of 3 MB
            value = str(where / f"long{original.suffix}")
            long = b"a" * 3_000_000 + (b"\tb\n" if original.suffix == ".tsv" else b"\n")
            Path(value).write_bytes(content + long)
        tokens = with_overwrite(swapped(tokens, argument, value))
        try:
            code, out, err = finish(spawn(tokens, where, stdin), 240 if variant == "a line of 3 MB" else 120, stdin)
        finally:
            if fifo is not None:
                fifo.close()
        if traceback_of(err):
            return Outcome("traceback", traceback_of(err))
        dashes = sorted(p.name for p in where.glob("-*"))  # -, or -.png: a file where standard output was meant
        if dashes:
            kind = "folder" if (where / dashes[0]).is_dir() else "file"
            return Outcome("silent", f"made a {kind} named {dashes[0]!r} in the current folder (exit {code})")
        if variant in ("a symlink", "a dangling symlink") and argument.output and not link.is_symlink():
            return Outcome("silent", f"exit {code}, and the link is a {'folder' if link.is_dir() else 'file'} now")
        if code:
            problem = one_error_line(code, err) or names_given(variant, value, err)
            if problem:
                return Outcome("silent", problem)
            if variant == "a symlink" and argument.output and not folder and target.read_text() != "old\n":
                return Outcome("lost", "refused, but the link's target was changed")
            return Outcome("clear error", err.strip().splitlines()[-1].removeprefix("attnseq: error: ")[:110])
        if argument.output:
            problem = written_through(variant, folder, out, fifo, target)
            if problem:
                return Outcome("silent", problem)
        last = (err.strip().splitlines() or out.decode(errors="replace").strip().splitlines() or ["ok"])[-1]
        return Outcome("handled", f"exit 0: {last[:100]}")

    # -- loop: what a training says of where it resumed and why it ended; n-best lists ---------------
    def loop_cases(self) -> list[Case]:
        """Trainings stopped by each of their limits (generated steps, epochs, minutes, patience),
        each saying why it ended at which step, and resumed, saying where; n-best lists of every
        kind of run, beam and n generated (seeded), none holding an empty hypothesis but the first."""
        rng, cases = random.Random(7), []
        limits = [
            *((f"train.max_steps={n}",) for n in sorted(rng.sample(range(2, 14), 3))),
            ("train.epochs=1",),
            ("train.epochs=1000", "--max-minutes", "0.05"),
            ("train.patience=1", "train.eval_every=2", "train.max_steps=12"),
        ]
        for n, limit in enumerate(limits):
            cases.append(
                Probe(
                    f"a training of {' '.join(limit)} says why it ended, and resumes",
                    probe=functools.partial(self.ended_and_resumed, n, limit),
                )
            )
        runs = {"torch": self.run, "transformer": self.transformer_run, "numpy": self.numpy_run}
        for kind in runs:
            for beam in range(1, 5 if kind != "numpy" else 3):  # (the NumPy engine's beam is 1: 2 is refused)
                n_best, blank = rng.randint(min(2, beam), beam), rng.random() < 0.5
                inputs = ["".join(rng.choice("abcdef") for _ in range(rng.randint(1, 12))) for _ in range(6)]
                inputs += [f"ab{SNOW}c", "f" * rng.randint(20, 60)] + ([""] if blank else [])
                rng.shuffle(inputs)
                name = f"translate a {kind} run --beam {beam} --n-best {n_best}{' (a blank line in)' if blank else ''}"
                cases.append(Probe(name, probe=functools.partial(self.n_best_lists, runs[kind], beam, n_best, inputs)))
        cases.append(Probe("attnseq.fit(a Config, run, overrides) applies the overrides", probe=self.fit_overrides))
        return cases

    @functools.cached_property
    def loop_data(self) -> Path:
        """The drill's data but 320 training pairs: an epoch of 10 updates."""
        rows = (self.data / "train.tsv").read_bytes().splitlines(keepends=True)
        return self.data_dir("loop/data", b"".join(rows[:320]))

    def ended_and_resumed(self, n: int, limit: tuple[str, ...]) -> Outcome:
        """Train under ``limit`` (settings, and flags from the first ``--``): the last line says
        'training ended at step N: ... (train.KEY)' for a KEY it set, N the last step logged; then
        --resume with two more updates says 'resuming at step N ... from RUN/last.safetensors'."""
        from attnseq.runs import read_metrics

        settings = [s for s in limit if "=" in s]
        flags = list(limit[len(settings) :])
        run, data = self.path(f"loop/run-{n}"), self.loop_data
        base = ["train", LUONG, "--data", data, "--out", run]  # not quiet: the lines said are info
        code, _, err, _ = attnseq(*base, *flags, *sets(*TINY, *settings))
        if code:
            return Outcome(
                "traceback" if traceback_of(err) else "silent", f"the training failed: {err.strip()[-160:]!r}"
            )
        ended = re.findall(r"training ended at step (\d+): (.+)", err)
        steps = [r["step"] for r in read_metrics(run) if "step" in r]  # updates and evaluations
        keys = {s.split("=")[0] for s in settings} | ({"train.max_minutes"} if "--max-minutes" in flags else set())
        if len(ended) != 1:
            return Outcome("silent", f"{len(ended)} 'training ended at step N' lines: {err.strip()[-160:]!r}")
        step, why = int(ended[0][0]), ended[0][1]
        if not steps or step != steps[-1]:
            return Outcome("silent", f"says step {step}, its log's last update is {steps[-1:] or 'none'}")
        named = re.findall(r"\((train\.\w+)\)", why)
        if not named or named[-1] not in keys | {"train.epochs"}:
            return Outcome("silent", f"the reason names {named or 'no setting'}, not one of {sorted(keys)}: {why!r}")
        more = (*[s for s in settings if not s.startswith(("train.max_steps", "train.epochs"))],)
        more += (f"train.max_steps={step + 2}", "train.epochs=1000")
        code, _, err, _ = attnseq(*base, "--resume", *sets(*TINY, *more))
        if code:
            return Outcome("silent", f"--resume failed: {err.strip()[-160:]!r}")
        said = re.findall(r"resuming at step (\d+)\b.* from (\S+)", err)
        where = str(run / "last.safetensors")
        if not said or int(said[0][0]) != step or said[0][1] != where:
            return Outcome("silent", f"no 'resuming at step {step} ... from {where}': {err.strip()[:200]!r}")
        again = re.findall(r"training ended at step (\d+): (.+)", err)
        due = step if re.search(r"train\.(patience|target_exact_match)", why) else step + 2  # (stopped early: at once)
        if not again or int(again[-1][0]) != due:
            return Outcome("silent", f"the resumed run does not say it ended at step {due}: {again}")
        return Outcome("handled", f"ended at step {step}: {why[:60]}; resumed at step {step}, ended at {due}")

    def n_best_lists(self, run: Path, beam: int, n_best: int, inputs: list[str]) -> Outcome:
        """``translate RUN --beam B --n-best N`` of ``inputs``: N 'score<TAB>hypothesis' lines per
        input (as its help says), none with an empty hypothesis but the first of its list."""
        text = "".join(line + "\n" for line in inputs).encode()
        code, out, err, _ = attnseq("-q", "translate", run, "--beam", beam, "--n-best", n_best, stdin=text, timeout=300)
        if traceback_of(err):
            return Outcome("traceback", traceback_of(err))
        if code:
            problem = one_error_line(code, err)
            line = err.strip().splitlines()[-1].removeprefix("attnseq: error: ")
            return Outcome("silent", problem) if problem else Outcome("clear error", line[:110])
        lines = out.split("\n")[:-1] if out.endswith("\n") else out.split("\n")
        if n_best == 1:  # the best translation of each input, a line each (no score)
            if len(lines) != len(inputs):
                return Outcome("silent", f"{len(lines)} lines for {len(inputs)} inputs")
            return Outcome("handled", f"{len(inputs)} lines; {(err.strip().splitlines() or ['no warning'])[-1][:70]}")
        if len(lines) != n_best * len(inputs):
            blank = [i + 1 for i, line in enumerate(inputs) if not line.strip()]
            return Outcome(
                "silent",
                f"{len(lines)} lines for {len(inputs)} inputs x {n_best}"
                + (
                    f" (the blank input {blank[0]} gets {n_best - (n_best * len(inputs) - len(lines))} line(s))"
                    if blank
                    else ""
                ),
            )
        for i in range(len(inputs)):
            block = [line.split("\t", 1) for line in lines[i * n_best : (i + 1) * n_best]]
            # an input with fewer hypotheses than --n-best is padded with '-inf<TAB>' lines (scored,
            # never a hypothesis): the block keeps its N lines
            if any(
                len(parts) != 2
                or not (re.fullmatch(r"-?\d+(\.\d+)?", parts[0]) or (parts[0] == "-inf" and not parts[1] and k))
                for k, parts in enumerate(block)
            ):
                return Outcome("silent", f"input {i + 1}: not 'score<TAB>hypothesis' lines: {block}")
            empty = [k + 1 for k, parts in enumerate(block) if not parts[1].strip() and parts[0] != "-inf"]
            if any(k > 1 for k in empty):
                return Outcome(
                    "silent", f"input {i + 1} ({inputs[i]!r}): empty hypotheses at {empty} of its list: {block}"
                )
        return Outcome(
            "handled", f"{len(inputs)} lists of {n_best}; {(err.strip().splitlines() or ['no warning'])[-1][:70]}"
        )

    def fit_overrides(self) -> Outcome:
        """attnseq.fit(a Config object, a run folder, overrides): the run trained with the overrides."""
        run = self.path("loop/fit-run")
        overrides = [f"data.dir={self.data}", *TINY, "train.max_steps=3"]
        code = (
            "import attnseq\n"
            "from attnseq.config import load_config\n"
            f"attnseq.fit(load_config({str(LUONG)!r}), {str(run)!r}, {overrides!r})\n"
        )
        result = subprocess.run([PYTHON, "-c", code], capture_output=True, cwd=ROOT, timeout=600)
        err = result.stderr.decode(errors="replace")
        if result.returncode:
            return Outcome("traceback", (err.strip().splitlines() or ["?"])[-1][:160])
        from attnseq.runs import read_metrics

        steps = [r["step"] for r in read_metrics(run) if "step" in r]
        size = read_setting(run, "model", "hidden_size")
        if steps[-1:] != [3] or size != 32:
            return Outcome("silent", f"the overrides were not applied: last step {steps[-1:]}, hidden_size {size}")
        return Outcome("handled", "trained 3 steps with hidden_size 32, as overridden")


def ended(process: subprocess.Popen, started: float, note: str = "") -> tuple[int, str, str, float]:
    """What ``process`` (its output piped) did once it ends, as attnseq() says it: (exit status,
    stdout, stderr with the drill's ``note``, seconds since ``started``)."""
    out, err = process.communicate(timeout=600)
    err = err.decode(errors="replace") + (f"\n[drill: {note}]" if note else "")
    return process.returncode, out.decode(errors="replace"), err, time.perf_counter() - started


def waits_on_stdin(pid: int) -> bool:
    """True when process ``pid`` is blocked reading its standard input: the read system call (0)
    on file descriptor 0, as /proc/PID/syscall says; where that file cannot be read, its kernel
    wait channel in a pipe read. (Any pipe is not enough: while the command starts, it may read
    a child process's output, where a Ctrl-C is not yet the command's to answer.)"""
    try:
        return Path(f"/proc/{pid}/syscall").read_text().startswith("0 0x0 ")
    except OSError:
        pass
    try:
        return "pipe_read" in Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return False


# -- generated cases: the commands, their path arguments, processes stopped and streams ----------
NOT_DRILLED = {("serve",)}  # a command that does not end (the server drills' own)
ONE_MOMENT = {("demo",)}  # a writing command of tens of seconds: stopped at one moment, not two
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
TEMPORARY = re.compile(r"^\..+\.(?P<pid>\d+)-[^.]+\.(tmp|old)$")  # what a writer leaves while it writes
USERS = "the user's own file\n"


@functools.cache
def cli_commands() -> dict[tuple[str, ...], argparse.ArgumentParser]:
    """Every command of ``attnseq`` (``("data", "dates")``, ``("train",)``) and its parser, read from
    the parser attnseq.cli builds: a command or flag added there is drilled without a word here."""
    from attnseq.cli import build_parser

    found: dict[tuple[str, ...], argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> None:
        subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subparsers:
            found[words] = parser
        for name, sub in (subparsers[0].choices if subparsers else {}).items():
            walk(sub, (*words, name))

    walk(build_parser(), ())
    return found


@dataclass(frozen=True)
class PathArgument:
    """An argument of a command that names a file or a folder: ``flag`` is its option string
    (``--out``), or the name of a positional one (``run``); ``output``: the command writes it."""

    command: tuple[str, ...]
    flag: str
    dest: str
    output: bool

    @property
    def positional(self) -> bool:
        return not self.flag.startswith("-")

    def __str__(self) -> str:
        return f"{' '.join(self.command)} {self.flag if not self.positional else self.flag.upper()}"


def path_arguments(command: tuple[str, ...]) -> list[PathArgument]:
    """The arguments of ``command`` that name files or folders, read from its parser: an argument
    that takes a string (no type, no choices) whose help or metavar speaks of a file, a folder,
    a run, a config, a catalog or a page; an output when its help says it is written."""
    found = []
    for action in cli_commands()[command]._actions:
        if action.nargs == 0 or action.choices or action.type is not None or action.dest in ("help", "set"):
            continue
        words, metavar = (action.help or "").lower(), str(action.metavar or "")
        if not (
            re.search(r"\b(files?|folders?|yaml|configs?|catalog|image|page)\b|\.txt\b", words)
            and "written as" not in words
            or metavar in ("PATH", "RUN_DIR")
            or metavar.endswith(".html")
        ):
            continue
        output = action.dest in ("out", "output", "html") or bool(re.search(r"\bwrite\b|\bfolder (for|of) the", words))
        flag = action.option_strings[-1] if action.option_strings else action.dest
        found.append(PathArgument(command, flag, action.dest, output))
    return found


def parsed(tokens: list) -> argparse.Namespace:
    """``attnseq TOKENS`` as attnseq's parser reads them."""
    from attnseq.cli import build_parser

    return build_parser().parse_args([str(t) for t in tokens])


def given(tokens: list, argument: PathArgument) -> str | None:
    """The value ``tokens`` give ``argument`` (the first, of several), or None."""
    value = getattr(parsed(tokens), argument.dest, None)
    if isinstance(value, list):
        value = value[0] if value else None
    return None if value is None else str(value)


def swapped(tokens: list, argument: PathArgument, value: str | Path) -> list:
    """``tokens`` with ``argument``'s value replaced by ``value`` (added when they give none)."""
    old = given(tokens, argument)
    if old is None:
        return [*tokens, value] if argument.positional else [*tokens, argument.flag, value]
    words = [str(t) for t in tokens]
    at = words.index(old, len(argument.command))
    return [*tokens[:at], value, *tokens[at + 1 :]]


def with_overwrite(tokens: list) -> list:
    """``tokens`` with ``--overwrite`` where the command has the flag: a rerun replaces its own output."""
    command = command_of(tokens)
    has = any("--overwrite" in a.option_strings for a in cli_commands()[command]._actions)
    return [*tokens, "--overwrite"] if has and "--overwrite" not in tokens else list(tokens)


def session_pids(session: int) -> set[int]:
    """The processes of ``session`` (a command started in a session of its own, and its workers)."""
    pids = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[3]) == session:
                pids.add(int(entry.name))
    return pids


def temporaries(folder: Path) -> list[Path]:
    """The temporary files and folders under ``folder`` (``.NAME.PID-XXXX.tmp``, ``.old``, any ``.tmp``)."""
    return sorted(p for p in folder.rglob("*") if p.name.endswith((".tmp", ".old"))) if folder.exists() else []


def traceback_of(err: str) -> str:
    """The last line of a Python traceback in ``err``, or ''."""
    if "Traceback (most recent call last)" not in err:
        return ""
    return err.strip().splitlines()[-1][:160]


def one_error_line(code: int, err: str) -> str:
    """'' when a command that refused (``code``) said so in one ``attnseq: error:`` line; else what it did."""
    lines = err.strip().splitlines()
    errors = [line for line in lines if line.startswith("attnseq: error:")]
    if code != 2 or len(errors) != 1 or not lines or lines[-1] != errors[0]:
        return f"exit {code}, not one clear line: {err.strip()[-200:]!r}"
    return ""


class Fifo:
    """A FIFO at ``path`` and a thread at its other end: writing ``data`` into it, or (``data``
    None) reading what a command writes into it (``got``)."""

    def __init__(self, path: Path, data: bytes | None):
        import threading

        os.mkfifo(path)
        self.path, self.data, self.got = path, data, b""
        self.thread = threading.Thread(target=self.feed if data is not None else self.drain, daemon=True)
        self.thread.start()

    def feed(self) -> None:
        try:
            with open(self.path, "wb") as fifo:
                fifo.write(self.data or b"")
        except OSError:  # the command stopped reading
            pass

    def drain(self) -> None:
        try:
            with open(self.path, "rb") as fifo:
                self.got = fifo.read()
        except OSError:
            pass

    def close(self) -> None:
        """End the thread when the command never opened the FIFO, or stopped reading it: this end
        opened here too (a reader takes what the feeder still writes; a writer closed at once
        gives the drainer its end of file)."""
        if not self.thread.is_alive():
            return
        try:
            if not stat.S_ISFIFO(os.lstat(self.path).st_mode):
                return
            fd = os.open(self.path, (os.O_RDONLY if self.data is not None else os.O_WRONLY) | os.O_NONBLOCK)
        except OSError:
            return
        try:
            deadline = time.perf_counter() + 10
            while self.data is not None and self.thread.is_alive() and time.perf_counter() < deadline:
                try:
                    os.read(fd, 1 << 16)
                except BlockingIOError:
                    self.thread.join(0.01)
        finally:
            os.close(fd)
        self.thread.join(5)


def spawn(tokens: list, cwd: Path, stdin: bytes | None = None) -> subprocess.Popen:
    """``attnseq -q TOKENS`` started in a session of its own (its workers with it), in ``cwd``."""
    return subprocess.Popen(
        [PYTHON, "-m", "attnseq.cli", "-q", *map(str, tokens)],
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        start_new_session=True,
    )


def finish(process: subprocess.Popen, timeout: float, stdin: bytes | None = None) -> tuple[int, bytes, str]:
    """(exit status, stdout, stderr) of ``process`` once it ends; after ``timeout`` seconds its
    session is killed and subprocess.TimeoutExpired raised (a hang)."""
    try:
        out, err = process.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            pass
        process.communicate()
        raise
    finally:
        try:  # a worker left behind by a killed command
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            pass
    return process.returncode, out, err.decode(errors="replace")


@dataclass
class Probe(Case):
    """A generated case: ``probe`` runs it and says what happened (an Outcome)."""

    probe: Callable[[], Outcome] | None = None

    def run(self) -> Outcome:
        try:
            return self.probe()
        except subprocess.TimeoutExpired as hang:
            return Outcome("silent", f"still running after {hang.timeout:.0f} s (a hang; killed)")


def no_recipe(argument: PathArgument) -> Probe:
    """The case of an argument no tiny command line of the drill gives: a command or flag new to
    the CLI, to add to Drill.recipes."""
    return Probe(
        f"{argument}: no tiny command line",
        probe=lambda: Outcome("silent", f"the drill has no command line of {argument} (add one to Drill.recipes)"),
    )


def output_files(out: Path) -> set[str]:
    """The files of an output: its own name, or those under it (a folder; not the user's notes)."""
    if out.is_dir():
        return {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and p.name != "notes.txt"}
    return {out.name} if out.exists() else set()


def stop_said(sig: int, landed: bool, code: int, err: str) -> str:
    """'' when a command sent ``sig`` ended as it should: SIGINT 130 and SIGTERM 143 with one line
    and no traceback (or killed by the signal before Python ran attnseq), SIGKILL killed; 0 when
    it ended before the signal. Else 'KIND: what it did'."""
    if traceback_of(err):
        return f"traceback: {traceback_of(err)}"
    if not landed or code == 0:
        return "" if code == 0 else f"silent: exit {code} where no signal came: {err.strip()[-160:]!r}"
    if sig == signal.SIGKILL:
        return "" if code == -signal.SIGKILL else f"silent: exit {code} after SIGKILL"
    if code == -sig and not err.strip():  # before attnseq set its handler (the interpreter starting)
        return ""
    if code != 128 + sig:
        return f"silent: exit {code} after {signal.Signals(sig).name}, not {128 + sig}: {err.strip()[-160:]!r}"
    lines = err.strip().splitlines()
    ours = [line for line in lines if line.startswith("attnseq:")]
    if len(ours) != 1 or lines[-1] != ours[0] or not re.search(r"interrupted|stopped", ours[0]):
        return f"silent: not one line saying it stopped: {err.strip()[-200:]!r}"
    return ""


def names_given(variant: str, value: str, err: str) -> str:
    """'' when a refusal of ``value`` (given as ``variant``) names it as the user gave it (``-`` as
    itself or as standard input or output), and calls no path that exists missing."""
    line = err.strip().splitlines()[-1]
    if variant == "-":
        named = re.search(r"(^|[\s'\"(])-($|[\s:'\")])|standard (input|output)|stdin|stdout", line)
    else:
        named = value in line or Path(value).name in line
    if not named:
        return f"the refusal does not name {value!r} as given: {line[:140]!r}"
    if os.path.exists(value) and re.search(r"no such file", line, re.I):
        return f"calls {Path(value).name}, which exists ({variant}), missing: {line[:140]!r}"
    return ""


def written_through(variant: str, folder: bool, out: bytes, fifo: Fifo | None, target: Path) -> str:
    """'' when an output given as ``variant`` that the command wrote (exit 0) holds the output:
    standard output for ``-``, the FIFO's reader, a symbolic link's target; else what is wrong."""
    if folder and variant in ("-", "a FIFO"):
        return f"exit 0 with a folder output given as {variant}: where did it go?"
    if variant == "-":
        return "" if out.strip() else "exit 0, but nothing on standard output"
    if variant == "a FIFO":
        if not stat.S_ISFIFO(os.lstat(fifo.path).st_mode):
            return "exit 0, and the FIFO was replaced by a file"
        return "" if fifo.got else "exit 0, but nothing was written into the FIFO"
    if folder:
        return "" if target.is_dir() and any(target.iterdir()) else "exit 0, but the link's folder holds nothing"
    if not target.exists() or target.read_bytes() in (b"", b"old\n"):
        return "exit 0, but the link's target does not hold the output"
    return ""


# -- the Python API ------------------------------------------------------------------------------
@dataclass
class ApiCase:
    """A call of the Python API (an expression of ``attnseq``, ``model`` = attnseq.load(RUN), ``run``
    and ``work``) and what it should do: raise one of ``raises`` naming ``words``, or, with
    ``check`` (of the result: ``value``, JSON-ready, and ``warnings`` of the attnseq logger),
    return; with ``either``, both are right."""

    name: str
    call: str
    words: tuple[str, ...] = ()
    raises: tuple[str, ...] = ("TypeError", "ValueError")
    check: Callable[[dict], str] | None = None
    either: bool = False

    def outcome(self, result: dict | None) -> Outcome:
        if result is None:
            return Outcome("traceback", "the API's child process gave no result")
        if "raised" in result:
            kind, message = result["raised"][0], result["message"]
            if self.check is not None and not self.either:
                return Outcome("traceback", f"{kind}: {message[:140]}")
            if not set(result["raised"]) & set(self.raises):
                return Outcome("traceback", f"{kind}: {message[:140]}")
            missing = [w for w in self.words if w not in message]
            if missing or "\n" in message.strip():
                return Outcome("silent", f"{kind} not naming {missing}: {message[:140]!r}")
            return Outcome("clear error", f"{kind}: {message[:120]}")
        if self.check is None:
            return Outcome("silent", f"returned {json.dumps(result['value'])[:120]} where an error was due")
        problem = self.check(result)
        return Outcome("silent", problem) if problem else Outcome("handled", json.dumps(result["value"])[:110])


API_RUNNER = r"""
import json, logging, sys
import attnseq
cases, run, work = json.loads(sys.stdin.read())
class Catch(logging.Handler):
    def emit(self, record):
        self.lines.append(record.getMessage())
catch = Catch()
logging.getLogger("attnseq").addHandler(catch)
logging.getLogger("attnseq").setLevel(logging.INFO)
model = attnseq.load(run)
results = {}
for name, call in cases:
    catch.lines = []
    try:
        value = eval(call, {"attnseq": attnseq, "model": model, "run": run, "work": work})
        results[name] = {"value": json.loads(json.dumps(value, default=repr)), "warnings": catch.lines}
    except Exception as err:
        results[name] = {"raised": [c.__name__ for c in type(err).__mro__], "message": str(err),
                         "warnings": catch.lines}
print(json.dumps(results))
"""


def warned(piece: str) -> Callable[[dict], str]:
    """An ApiCase check: a warning on the attnseq logger names ``piece`` (see names_piece)."""
    return lambda r: (
        ""
        if any(names_piece(w, piece) for w in r["warnings"])
        else f"silent: no warning naming {piece!r}: {r['warnings'][:2]}"
    )


def api_cases(drill: Drill) -> list[ApiCase]:
    one = '[("abc", "cba")]'
    return [
        ApiCase("translate([None])", "model.translate([None])", ("texts",)),
        ApiCase(
            "translate('a string') translates one text",
            "model.translate('abc')",
            check=lambda r: "" if isinstance(r["value"], str) else f"silent: {r['value']!r} for one string",
        ),
        ApiCase("translate(..., beam_size='3')", "model.translate(['abc'], beam_size='3')", ("beam_size",)),
        ApiCase("translate(..., beam_size=True)", "model.translate(['abc'], beam_size=True)", ("beam_size",)),
        ApiCase("translate(..., beam_size=2.5)", "model.translate(['abc'], beam_size=2.5)", ("beam_size",)),
        ApiCase("translate(..., beam_size=0)", "model.translate(['abc'], beam_size=0)", ("beam_size",)),
        ApiCase(
            "translate(..., return_attention='yes')",
            "model.translate(['abc'], return_attention='yes')",
            ("return_attention",),
        ),
        ApiCase("search(..., beam_size=2, n_best=3)", "model.search(['abc'], beam_size=2, n_best=3)", ("n_best",)),
        ApiCase("evaluate([])", "model.evaluate([])", ("pairs",)),
        ApiCase("evaluate([('a',)])", "model.evaluate([('a',)])", ("pairs",)),
        ApiCase("evaluate([('abc', None)])", "model.evaluate([('abc', None)])", ("pairs",)),
        ApiCase(
            "evaluate reports signatures",
            f"model.evaluate({one})",
            check=lambda r: (
                "" if "chrf_signature" in r["value"] else f"silent: no chrf_signature in {sorted(r['value'])}"
            ),
        ),
        ApiCase("load(run, checkpoint='worst')", "attnseq.load(run, checkpoint='worst')", ("checkpoint",)),
        ApiCase(
            "load(a folder that is no run)",
            "attnseq.load(work)",
            raises=("ValueError", "FileNotFoundError", "UserError"),
        ),
        ApiCase(
            "fit into an existing run",
            f"attnseq.fit({str(LUONG)!r}, {str(drill.copy_run('api-fit'))!r}, "
            f"['data.dir={drill.data}', 'train.max_steps=1'])",
            ("resume",),
            raises=("ValueError", "UserError"),
        ),
        ApiCase(
            "translate(['   ']) is a blank output",
            "model.translate(['   '])",
            check=lambda r: "" if r["value"] == [""] else f"silent: {r['value']!r} for a blank text",
        ),
        ApiCase("translate of an unknown character warns", f"model.translate(['abc{SNOW}'])", check=warned(SNOW)),
        ApiCase("translate of a NUL warns", "model.translate(['ab\\x00c'])", check=warned("\x00")),
        ApiCase(
            "NFD and NFC spellings search alike",
            f"[model.search([t], beam_size=2, n_best=2)[0].scores for t in ({NFC!r}, {NFD!r})]",
            check=lambda r: "" if r["value"][0] == r["value"][1] else f"silent: scores {r['value']}",
        ),
        ApiCase(
            "translate of a lone surrogate",
            "model.translate(['ab\\ud800'])",
            ("texts",),
            check=warned("\ud800"),
            either=True,
        ),
    ]


def api_drill(drill: Drill, chosen: Callable[[str], bool]) -> list[tuple[str, Outcome]]:
    """The API cases, run in one child process (``python -c``) with the drill's run loaded."""
    cases = [c for c in api_cases(drill) if chosen(f"api: {c.name}")]
    if not cases:
        return []
    request = json.dumps([[[c.name, c.call] for c in cases], str(drill.run), str(drill.work)])
    result = subprocess.run(
        [PYTHON, "-c", API_RUNNER], input=request.encode(), capture_output=True, cwd=ROOT, timeout=600
    )
    try:
        results = json.loads(result.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        failed = Outcome("traceback", f"the API's child process failed: {result.stderr.decode()[-160:]}")
        return [(f"api: {c.name}", failed) for c in cases]
    return [(f"api: {c.name}", c.outcome(results.get(c.name))) for c in cases]


# -- the server ------------------------------------------------------------------------------------
def raw_request(port: int, data: bytes, timeout: float = 30.0) -> bytes:
    """The server's answer to ``data`` written as it is (b'' when the connection is reset or no
    answer comes within ``timeout`` seconds). An answer the server gives before reading all of
    ``data`` (413) is read all the same."""
    import socket

    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            try:
                s.sendall(data)  # no half-close after it: the server would take it for a client gone
            except OSError:  # the server answered and closed before reading everything
                pass
            answer = b""
            while chunk := s.recv(65536):
                answer += chunk
            return answer
    except OSError:  # reset, refused or timed out
        return b""


def http_post(body: bytes, length: bytes | None = None, content_type: bytes = b"application/json") -> bytes:
    """A POST /translate of ``body`` as ``content_type``, with its Content-Length (or ``length`` as written)."""
    declared = str(len(body)).encode() if length is None else length
    return (
        b"POST /translate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: " + content_type + b"\r\n"
        b"Content-Length: " + declared + b"\r\nConnection: close\r\n\r\n" + body
    )


def http_answer(answer: bytes) -> tuple[int, str]:
    """(status, body) of a raw answer (status 0 when there is none)."""
    status_line, _, rest = answer.partition(b"\r\n")
    parts = status_line.split()
    return (
        int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0,
        rest.partition(b"\r\n\r\n")[2].decode(errors="replace"),
    )


def http_outcome(
    answer: bytes, field: str | tuple | None, words: tuple[str, ...], check: Callable[[dict], str] | None = None
) -> Outcome:
    """A refusal is clear when it is a 4xx whose JSON names ``field`` (one of them) and ``words``,
    and holds no exception text; a 5xx, a reset or no answer is a crash; a 2xx where a refusal
    was due is silent. With ``check``, a 200 is right when ``check`` (of its JSON) finds nothing
    wrong (and with ``field`` too, either is)."""
    if not answer:
        return Outcome("traceback", "no answer: the connection was reset, refused or timed out")
    status, body = http_answer(answer)
    status_line = answer.partition(b"\r\n")[0].decode(errors="replace")
    if status >= 500 or status == 0:
        return Outcome("traceback", f"{status_line}: {body[:120]}")
    if status < 400:
        if check is not None:
            problem = check(json.loads(body))
            return Outcome("silent", problem) if problem else Outcome("handled", f"{status}: {body[:100]}")
        return Outcome("silent", f"{status} where a refusal was due: {body[:120]}")
    if field is None:  # malformed HTTP: any 4xx, at once
        return Outcome("clear error", status_line)
    try:
        message = json.loads(body)
    except ValueError:
        return Outcome("silent", f"{status} without a JSON message: {body[:120]!r}")
    fields = field if isinstance(field, tuple) else (field,)
    missing = [w for w in words if w not in message.get("error", "")]
    if message.get("field") not in fields or missing:
        return Outcome("silent", f"{status} not naming {field} {missing}: {message}")
    if re.search(r"Error\b|Exception|Traceback|File \"", message.get("error", "")):
        return Outcome("traceback", f"{status} showing exception text: {message['error'][:120]}")
    return Outcome("clear error", f"{status} {message['field']}: {message['error'][:100]}")


@dataclass
class ServerCase:
    """A request (bytes, or a function of the port returning an Outcome for probes of several
    requests) and what the server should answer (see http_outcome)."""

    name: str
    request: bytes | Callable[[int], Outcome]
    field: str | tuple | None = None
    words: tuple[str, ...] = ()
    check: Callable[[dict], str] | None = None

    def run(self, port: int) -> Outcome:
        if callable(self.request):
            return self.request(port)
        return http_outcome(raw_request(port, self.request), self.field, self.words, self.check)


def post_json(port: int, body: dict) -> dict:
    status, text = http_answer(raw_request(port, http_post(json.dumps(body).encode())))
    return json.loads(text) if status == 200 else {"status": status, "body": text[:120]}


def same_answers(*bodies: dict) -> Callable[[int], Outcome]:
    """A probe: the requests ``bodies`` get the same hypotheses with the same scores."""

    def probe(port: int) -> Outcome:
        answers = [post_json(port, body) for body in bodies]
        seen = [[(h["output"], h["score"]) for h in a.get("hypotheses", [])] for a in answers]
        if any("status" in a for a in answers):
            return Outcome(
                "traceback" if any(a.get("status", 0) >= 500 for a in answers) else "silent",
                f"not answered 200: {answers}",
            )
        if seen[0] != seen[1]:
            return Outcome("silent", f"the two spellings are read differently: {seen[0]} vs {seen[1]}")
        return Outcome("handled", f"the same {len(seen[0])} hypotheses: {seen[0][:1]}")

    return probe


def unknown_listed(piece: str) -> Callable[[dict], str]:
    return lambda answer: (
        ""
        if piece in (answer.get("unknown") or [])
        else f"silent: 200 without {piece!r} in the answer's unknown ({answer.get('unknown')!r})"
    )


def server_cases() -> list[ServerCase]:
    def body(text: str) -> bytes:
        return http_post(text.encode())

    nested = b'{"text": ' + b"[" * 4000 + b"]" * 4000 + b"}"  # deeper than Python's parser goes, within the body limit
    return [
        ServerCase("serve: a JSON list as the body", body("[1, 2]"), "body", ("JSON object",)),
        ServerCase("serve: malformed JSON", body('{"text": "abc"'), "body", ("JSON",)),
        ServerCase('serve: {"text": null}', body('{"text": null}'), "text", ("string",)),
        ServerCase("serve: text a number", body('{"text": 42}'), "text"),
        ServerCase("serve: text a list", body('{"text": ["abc"]}'), "text"),
        ServerCase("serve: beam_size 1e999", body('{"text": "abc", "beam_size": 1e999}'), "beam_size"),
        ServerCase("serve: beam_size 99", body('{"text": "abc", "beam_size": 99}'), "beam_size", ("1 to",)),
        ServerCase("serve: beam_size true", body('{"text": "abc", "beam_size": true}'), "beam_size"),
        ServerCase('serve: beam_size "3"', body('{"text": "abc", "beam_size": "3"}'), "beam_size"),
        ServerCase("serve: beam_size 1.5", body('{"text": "abc", "beam_size": 1.5}'), "beam_size"),
        ServerCase("serve: beam_size -1", body('{"text": "abc", "beam_size": -1}'), "beam_size"),
        ServerCase("serve: beam_size 10**30", body('{"text": "abc", "beam_size": 1' + "0" * 30 + "}"), "beam_size"),
        ServerCase(
            "serve: n_best above the beam", body('{"text": "abc", "beam_size": 2, "n_best": 3}'), "n_best", ("exceed",)
        ),
        ServerCase(
            'serve: return_attention "yes"', body('{"text": "abc", "return_attention": "yes"}'), "return_attention"
        ),
        ServerCase("serve: an unknown run", body('{"text": "abc", "run": "nope"}'), "run", ("torch", "numpy")),
        ServerCase("serve: an unknown field", body('{"text": "abc", "beam": 3}'), "beam", ("unknown",)),
        ServerCase("serve: an empty text", body('{"text": "  "}'), "text", ("empty",)),
        ServerCase("serve: a 5,000-character text", body('{"text": "' + "a" * 5000 + '"}'), "text", ("limit",)),
        ServerCase("serve: a 10 MB body", body('{"text": "' + "a" * 10_000_000 + '"}'), ("text", "body"), ("limit",)),
        ServerCase("serve: a lone surrogate \\ud800", body('{"text": "ab\\ud800"}'), "text"),
        ServerCase(
            "serve: a surrogate's bytes (not UTF-8)", http_post(b'{"text": "ab\xed\xa0\x80"}'), ("body", "text")
        ),
        ServerCase("serve: a body that is not UTF-8", http_post(b'{"text": "ab\xff"}'), ("body", "text")),
        ServerCase("serve: a NUL in the text", body('{"text": "ab\\u0000c"}'), "text", check=unknown_listed("\x00")),
        ServerCase("serve: deep nesting", http_post(nested), ("body", "text")),
        ServerCase(
            "serve: Content-Type text/plain",
            http_post(b'{"text": "abc"}', content_type=b"text/plain"),
            "body",
            ("application/json",),
        ),
        ServerCase(
            "serve: a NumPy-engine run with beam 3",
            body('{"text": "abc", "run": "numpy", "beam_size": 3}'),
            "beam_size",
            ("torch-only",),
        ),
        ServerCase("serve: Content-Length: -1", http_post(b'{"text": "abc"}', b"-1"), None),
        ServerCase("serve: Content-Length: abc", http_post(b'{"text": "abc"}', b"abc"), None),
        ServerCase("serve: Content-Length: 100000000", http_post(b"", b"100000000"), None),
        ServerCase(
            f"unseen: an unknown character, served ({SNOW} in the answer's unknown)",
            body(json.dumps({"text": f"abc{SNOW}"})),
            check=unknown_listed(SNOW),
        ),
        ServerCase(
            "unseen: NFD and NFC spellings, served",
            same_answers(
                {"text": NFC, "beam_size": 2, "return_attention": False},
                {"text": NFD, "beam_size": 2, "return_attention": False},
            ),
        ),
        ServerCase(
            "unseen: the book's padding, served",
            same_answers(
                {"text": "september 27, 1994", "run": "book", "beam_size": 2, "return_attention": False},
                {"text": f"{'september 27, 1994':<29}", "run": "book", "beam_size": 2, "return_attention": False},
            ),
        ),
    ]


def server_drill(drill: Drill, chosen: Callable[[str], bool]) -> list[tuple[str, Outcome]]:
    """Bad requests and a load of 200 concurrent ones against ``attnseq serve`` on loopback, with a
    torch run, a NumPy-engine run and a book-format run: each refusal a 4xx naming the field,
    never a 5xx, exception text or a hang."""
    sys.path.insert(0, str(ROOT / "bench"))
    from serve_load import date_requests, load_check, start_server

    cases = [case for case in server_cases() if chosen(case.name)]
    load = chosen("serve: 200 concurrent requests")
    if not cases and not load:
        return []
    outcomes = []
    server, port = start_server(f"torch={drill.run}", f"numpy={drill.numpy_run}", f"book={drill.book_run}", log=False)
    try:
        for case in cases:
            started = time.perf_counter()
            outcome = case.run(port)
            if time.perf_counter() - started > 20:
                outcome = Outcome("silent", f"answered after {time.perf_counter() - started:.0f} s: {outcome.detail}")
            outcomes.append((case.name, outcome))
        if load:
            ok, lines = load_check(port, drill.run, date_requests(200, [1, 3]))
            outcome = Outcome("handled" if ok else "silent", "; ".join(lines))
            outcomes.append(("serve: 200 concurrent requests", outcome))
    finally:
        server.terminate()
        server.wait(30)
    return outcomes


# -- the server's budget: requests generated over sizes ---------------------------------------------
BUDGET_LIMITS = {"max_chars": 200, "max_beam": 4}  # the budget drill's server: attnseq serve --max-chars ...
ANSWER_SECONDS = 10.0  # the longest a budget request may wait for its answer (a shared machine's seconds)
ALLOWED_HOST = "drill.example"


def wav_header(rate: int, channels: int, bits: int, frames: int, declared: int | None = None) -> bytes:
    """A PCM WAV of ``frames`` frames of noise whose header declares ``declared`` frames (default:
    as many), at ``rate`` Hz, ``channels`` channels of ``bits``-bit samples."""
    block = channels * bits // 8
    size = min((frames if declared is None else declared) * block, 0xFFFFFFFF - 36)
    rng = random.Random(rate * 31 + channels * 7 + bits)
    data = bytes(rng.getrandbits(8) for _ in range(min(frames * block, 4096))) * (frames * block // 4096 + 1)
    return (
        b"RIFF"
        + (36 + size).to_bytes(4, "little")
        + b"WAVEfmt "
        + (16).to_bytes(4, "little")
        + (1).to_bytes(2, "little")
        + channels.to_bytes(2, "little")
        + rate.to_bytes(4, "little")
        + (rate * block).to_bytes(4, "little")
        + block.to_bytes(2, "little")
        + bits.to_bytes(2, "little")
        + b"data"
        + size.to_bytes(4, "little")
        + data[: frames * block]
    )


def png_header(width: int, height: int) -> bytes:
    """The bytes of a PNG whose header (IHDR) declares ``width`` x ``height`` grey pixels, followed by
    one small compressed row and the end: a file of a few dozen bytes claiming any size."""
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")

    ihdr = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 0, 0, 0, 0])
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b"")
    )


def png_image(width: int, height: int) -> bytes:
    """A real grey PNG of ``width`` x ``height`` pixels: bars on white."""
    import io

    from PIL import Image

    image = Image.new("L", (width, height), 255)
    for x in range(4, width, 10):
        image.paste(0, (x, height // 5, min(x + 6, width), height - height // 5))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def http_file(data: bytes, query: str, host: bytes = b"127.0.0.1") -> bytes:
    """A POST /translate/file of the file ``data`` with the settings ``query``."""
    return (
        b"POST /translate/file?" + query.encode() + b" HTTP/1.1\r\nHost: " + host + b"\r\n"
        b"Content-Type: application/octet-stream\r\nContent-Length: " + str(len(data)).encode() + b"\r\n"
        b"Connection: close\r\n\r\n" + data
    )


def with_host(host: bytes | None, body: bytes) -> bytes:
    """A POST /translate of ``body`` whose Host header is ``host`` (None: no Host header)."""
    header = b"" if host is None else b"Host: " + host + b"\r\n"
    return (
        b"POST /translate HTTP/1.1\r\n" + header + b"Content-Type: application/json\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body
    )


def judged(
    answer: bytes,
    due: str,
    field: str | tuple | None = None,
    words: tuple[str, ...] = (),
    check: Callable[[dict], str] | None = None,
    status: int | None = None,
) -> Outcome:
    """A budget request's answer judged: ``due`` is "ok" (200, and ``check`` of its JSON finds
    nothing wrong), "refused" (a 4xx naming ``field`` and ``words``, of ``status`` where given;
    see http_outcome) or "either"; a 5xx, a reset or no answer is a crash."""
    code, body = http_answer(answer)
    if code == 200 and due in ("ok", "either"):
        problem = check(json.loads(body)) if check else ""
        return Outcome("silent", problem) if problem else Outcome("handled", f"200: {body[:90]}")
    if due == "ok" and 400 <= code < 500:
        return Outcome("silent", f"{code} where an answer was due: {body[:140]}")
    outcome = http_outcome(answer, field, words)
    if outcome.kind == "clear error" and status is not None and code != status:
        return Outcome("silent", f"{code}, not {status}: {body[:140]}")
    return outcome


def cut_check(due: bool | None) -> Callable[[dict], str]:
    """A check of a file's answer: hypotheses, and ``cut`` true where the file was longer than the
    model's positions (``due``; None: either)."""

    def check(answer: dict) -> str:
        if not answer.get("hypotheses"):
            return f"silent: no hypotheses in {str(answer)[:100]}"
        if due is not None and bool(answer.get("cut")) != due:
            return f"cut is {answer.get('cut')!r} where {due} was due"
        return ""

    return check


def nbest_check(count: int | None) -> Callable[[dict], str]:
    """A check of a text's answer: ``count`` hypotheses (None: any), none empty but the first."""

    def check(answer: dict) -> str:
        outputs = [h["output"] for h in answer.get("hypotheses", [])]
        if count is not None and len(outputs) != count:
            return f"{len(outputs)} hypotheses where {count} were due"
        if any(not output for output in outputs[1:]):
            return f"an empty hypothesis below the first: {outputs}"
        return "" if outputs else "no hypotheses"

    return check


def budget_cases(drill: Drill) -> list[ServerCase]:
    """The server's budget, generated over sizes (seeded): WAV headers, images, beams and n-best,
    texts at and over --max-chars, Host headers, JSON keys given twice at several depths."""
    rng, cases = random.Random(3), []
    audio_seconds = (read_setting(drill.audio_run, "decode", "max_source_len") + 2) / 100
    positions = read_setting(drill.image_run, "decode", "max_source_len")
    pixels = positions * read_setting(drill.image_run, "data", "input", "height") * 256

    def case(name: str, request: bytes, due: str, *args, **kw) -> ServerCase:
        return ServerCase(
            f"budget: {name}", lambda port: judged(raw_request(port, request, ANSWER_SECONDS), due, *args, **kw)
        )

    # WAV files: rates, channels, sample widths; as long as they say, or headers that claim far more
    rates = [1, 2, 7, 100, 1000, 8000, 11025, 16000, 22050, 44100, 48000]
    for _ in range(36):
        rate, channels, bits = rng.choice(rates), rng.randint(1, 8), rng.choice([8, 16, 24, 32])
        seconds = rng.choice([0, 0.05, 1, 4, 15]) if rate >= 100 else rng.choice([0, 3, 30])
        frames = int(seconds * rate)
        body_bytes = frames * channels * bits // 8 + 44
        claim = rng.choice([None, None, 10 * frames + 1, 2**31])
        said = "" if claim is None else f", header claims {claim:,} frames"
        name = f"a WAV of {seconds} s at {rate} Hz, {channels} ch, {bits} bit{said}"
        query = "run=audio&beam_size=1&return_attention=false"
        if body_bytes > 4_000_000:  # over --max-file-bytes
            cases.append(
                case(name, http_file(wav_header(rate, channels, bits, frames, claim), query), "refused", "body")
            )
        elif frames == 0:
            cases.append(
                case(name, http_file(wav_header(rate, channels, bits, 0, claim), query), "refused", ("body", None))
            )
        else:
            long = True if seconds > audio_seconds + 0.5 else None if seconds > audio_seconds - 0.5 else False
            due_cut = None if claim is not None and long is False else long  # a claim may count as cut
            request = http_file(wav_header(rate, channels, bits, frames, claim), query)
            cases.append(case(name, request, "ok", check=cut_check(due_cut)))
    # images: headers claiming tiny to huge sizes, and real images narrow to wider than the model reads
    sizes = [1, 16, 100, 1000, 10**4, 10**5, 2**31 - 1]
    for _ in range(16):
        width, height = rng.choice(sizes), rng.choice(sizes)
        request = http_file(png_header(width, height), "run=image&beam_size=1&return_attention=false")
        name = f"a PNG header claiming {width:,} x {height:,} pixels"
        if width * height > pixels:
            cases.append(case(name, request, "refused", ("body", None), ("pixels",)))
        else:
            cases.append(case(name, request, "either", ("body", None), check=cut_check(None)))
    for width, height in [(1, 1), (40, 16), (400, 32), (16 * (positions + 200), 16), (3000, 300), (4000, 2000)]:
        request = http_file(png_image(width, height), "run=image&beam_size=1&return_attention=false")
        name = f"a real {width:,} x {height:,} image"
        if width * height > pixels:
            cases.append(case(name, request, "refused", ("body", None), ("pixels",)))
        else:
            columns = round(width * 16 / height)
            cases.append(
                case(
                    name, request, "ok", check=cut_check(columns > positions + 1 if columns != positions + 1 else None)
                )
            )
    # beams and n-best lists
    most = BUDGET_LIMITS["max_beam"]
    for beam in (None, -1, 0, 1, 2, most, most + 1, 10**6):
        for n_best in (None, 0, 1, 2, most, most + 1):
            request = {"text": "abcde", "return_attention": False}
            request.update({k: v for k, v in (("beam_size", beam), ("n_best", n_best)) if v is not None})
            body, name = http_post(json.dumps(request).encode()), f"beam_size {beam}, n_best {n_best}"
            if beam is not None and not 1 <= beam <= most:
                cases.append(case(name, body, "refused", "beam_size"))
            elif n_best is not None and not 1 <= n_best <= min(most, beam or most):  # no beam: n_best widens it
                cases.append(case(name, body, "refused", "n_best"))
            else:
                cases.append(case(name, body, "ok", check=nbest_check(n_best or beam)))
    # texts at and over --max-chars, in characters of one to four UTF-8 bytes, raw or escaped
    limit = BUDGET_LIMITS["max_chars"]
    for length in (1, limit - 1, limit, limit + 1, 2 * limit):
        for char in ("a", "é", "\u20ac", "\U0001f600"):
            ascii_ = rng.random() < 0.5
            body = json.dumps({"text": char * length, "return_attention": False}, ensure_ascii=ascii_).encode()
            name = f"a text of {length} x U+{ord(char):04X}{' (escaped)' if ascii_ else ''}"
            due = "ok" if length <= limit else "refused"
            cases.append(case(name, http_post(body), due, "text", ("limit",) if due == "refused" else ()))
    # Host headers: the names the server answers to, with ports, and any other name
    body = json.dumps({"text": "abc", "return_attention": False}).encode()
    hosts = [b"127.0.0.1", b"localhost", b"LOCALHOST", b"[::1]", ALLOWED_HOST.encode(), ALLOWED_HOST.upper().encode()]
    for host in hosts:
        port = b":" + str(rng.randint(1, 65535)).encode()
        for given in (host, host + port):
            cases.append(case(f"Host: {given.decode()}", with_host(given, body), "ok"))
    for _ in range(10):
        name = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789-") for _ in range(rng.randint(1, 20)))
        name = f"{name.strip('-') or 'x'}.{rng.choice(['com', 'test', 'example', 'local'])}"
        given = (name + (f":{rng.randint(1, 65535)}" if rng.random() < 0.5 else "")).encode()
        cases.append(case(f"Host: {given.decode()}", with_host(given, body), "refused", "Host", status=421))
    for given in (b"127.0.0.2", b"[::2]:8000", b"[::ffff:7f00:1]", b"localhost.drill.example", b"127.0.0.1.nip.io:80"):
        cases.append(case(f"Host: {given.decode()}", with_host(given, body), "refused", "Host", status=421))
    for given in (b"", None, b"[::1", b"localhost:", b"localhost:port"):
        shown = "no Host header" if given is None else f"Host: {given.decode()!r}"
        cases.append(case(shown, with_host(given, body), "either", None))
    # JSON whose keys come twice, at depths 0 to 3, spelled alike or escaped
    for depth in range(4):
        for key in ("text", "beam_size", "k", "t\\u0065xt"):
            twice = f'"{key}": 1, "{key}": 2'
            inner = "{" + twice + "}"
            for _ in range(depth - 1):
                inner = '{"a": ' + inner + "}" if rng.random() < 0.5 else '[{"b": 0}, ' + inner + "]"
            text = '{"text": "abc", ' + twice + "}" if depth == 0 else '{"text": "abc", "x": ' + inner + "}"
            if depth == 0 and key in ("text", "t\\u0065xt"):
                text = '{"text": "abc", "' + key + '": "abd"}'
            named = key.replace("\\u0065", "e")
            cases.append(
                case(
                    f"a key given twice at depth {depth}: {text[:60]}",
                    http_post(text.encode()),
                    "refused",
                    named,
                    ("twice",),
                )
            )
    return cases


def read_setting(run: Path, *keys: str):
    """A setting of a run's config.yaml (``read_setting(run, "decode", "beam_size")``)."""
    import yaml

    value = yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8"))
    for key in keys:
        value = value[key]
    return value


def budget_drill(drill: Drill, chosen: Callable[[str], bool]) -> list[tuple[str, Outcome]]:
    """The budget cases against ``attnseq serve`` of a text, an image and an audio run (--max-chars
    200, --max-beam 4, --allowed-host): each answered within ANSWER_SECONDS, a 4xx naming the
    field or the limit, never a 5xx, a reset or a hang."""
    if not might_choose(chosen, "budget"):
        return []
    cases = [case for case in budget_cases(drill) if chosen(case.name)]
    if not cases:
        return []
    runs = [f"text={drill.run}", f"image={drill.image_run}", f"audio={drill.audio_run}"]
    flags = ["--max-chars", BUDGET_LIMITS["max_chars"], "--max-beam", BUDGET_LIMITS["max_beam"]]
    server = subprocess.Popen(
        [PYTHON, "-m", "attnseq.cli", "-q", "serve", *runs, *map(str, flags), "--allowed-host", ALLOWED_HOST]
        + ["--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
    )
    line = server.stdout.readline()
    if "http://" not in line:
        server.kill()
        return [(case.name, Outcome("traceback", f"the server did not start: {line!r}")) for case in cases]
    port, outcomes = int(line.split("http://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1]), []
    try:
        for case in cases:
            started = time.perf_counter()
            outcome = case.run(port)
            took = time.perf_counter() - started
            if took > ANSWER_SECONDS and outcome.kind != "traceback":
                outcome = Outcome("silent", f"answered after {took:.1f} s: {outcome.detail}")
            outcomes.append((case.name, outcome))
    finally:
        server.terminate()
        server.wait(30)
    return outcomes


# -- ranges: every number of every settings registry, out of range or of the wrong type ---------------
@dataclass(frozen=True)
class NumberSetting:
    """A number field a user sets: ``key`` as an error names it, its type and range (schema.number),
    the settings that choose its section (``model.arch=transformer``, a variant's name), and the
    reproduction it belongs to (set with ``attnseq reproduce NAME --set``), if any."""

    key: str
    hint: type
    range: tuple
    fixed: tuple[str, ...] = ()
    reproduction: str | None = None


def number_settings() -> list[NumberSetting]:
    """Every int and float field of the config's sections, of the options of every variant of
    every registry the config's variant fields name (two levels down: a multihead scorer's head),
    and of every reproduction's options, read from their dataclasses."""
    import dataclasses
    import types
    import typing

    import attnseq.engines.torch_engine.trainer  # noqa: F401  (the registries the torch engine fills)
    import attnseq.reproduce  # noqa: F401
    from attnseq.config import Config
    from attnseq.registry import Registry
    from attnseq.schema import COUNT, Variant

    by_key = {registry.key: registry for registry in Registry.every if registry.key}
    found: dict[tuple, NumberSetting] = {}

    def plain_hint(hint):
        if typing.get_origin(hint) in (typing.Union, types.UnionType):
            hint = next(a for a in typing.get_args(hint) if a is not type(None))
        return hint

    def walk(cls, path: tuple, fixed: tuple, tag: str | None = None, depth: int = 0, reproduction=None):
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            key, hint, meta = (*path, f.name), plain_hint(hints[f.name]), dict(f.metadata)
            if f.name == tag:
                continue
            if "tag" in meta:
                for name, section in meta["classes"].items():
                    walk(section, key, (*fixed, f"{'.'.join(key)}.{meta['tag']}={name}"), meta["tag"], depth)
            elif hint is Variant:
                registry = meta.get("variant") or by_key.get(".".join(key))
                for name in registry.names() if registry is not None and depth < 2 else ():
                    reads = getattr(registry.get(name), "reads", None)  # a frontend needs its input kind
                    chosen = (
                        *fixed,
                        f"{'.'.join(key)}.name={name}",
                        *([f"data.input={reads}"] if isinstance(reads, str) else []),
                    )
                    walk(registry.options_class(name), key, chosen, None, depth + 1)
            elif dataclasses.is_dataclass(hint):
                walk(hint, key, fixed, None, depth, reproduction)
            elif hint in (int, float):
                setting = NumberSetting(".".join(key), hint, meta.get("range", COUNT), fixed, reproduction)
                found.setdefault((setting.key, setting.reproduction, fixed[:1]), setting)

    walk(Config, (), ())
    reproductions = next(r for r in Registry.every if r.kind == "reproduction")
    for name in reproductions.names():
        walk(reproductions.options_class(name), (), (), reproduction=name)
    return list(found.values())


def wrong_values(setting: NumberSetting) -> list[tuple[str, str]]:
    """(what, value as --set reads it) a setting refuses: below its range, above it, a fraction for
    a whole number, a word."""
    low, high, low_open, high_open = setting.range
    whole = setting.hint is int
    values = []
    if low is not None:
        values.append(("below", str(low if low_open else (low - 1 if whole else low - 0.5))))
    if high is not None:
        values.append(("above", str(high if high_open else (high + 1 if whole else high + 0.5))))
    if whole:
        values.append(("a fraction", str((low if low is not None and low > 0 else 0) + 1.5)))
    values.append(("a word", "lots"))
    return values


RANGES_RUNNER = r"""
import contextlib, io, json, signal, sys, traceback
from attnseq.cli import main
class Late(BaseException):
    pass
def late(*_):
    raise Late
signal.signal(signal.SIGALRM, late)
results = {}
for name, argv in json.loads(sys.stdin.read()):
    err = io.StringIO()
    signal.alarm(90)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(argv)
    except Late:
        code = "late"
    except BaseException:
        code = "raised"
        err.write(traceback.format_exc())
    finally:
        signal.alarm(0)
    results[name] = [code, err.getvalue()]
print(json.dumps(results))
"""


def might_choose(chosen: Callable[[str], bool], group: str) -> bool:
    """Whether ``--only`` may choose cases of ``group``: the group, no class (words), or no --only."""
    return chosen(f"{group}: ") or not any(chosen(f"{other}: ") for other in CLASSES)


def ranges_drill(drill: Drill, chosen: Callable[[str], bool]) -> list[tuple[str, Outcome]]:
    """Every number setting given out of range, a fraction where a whole number is due, or a word,
    with ``attnseq train CONFIG --set KEY=VALUE`` (a reproduction's with ``attnseq reproduce NAME
    --set``), and every number flag of the commands (-1, 1.5, a word): each refused with exit 2
    and one line naming the key or the flag, before any training. Run by attnseq.cli.main in one
    child process (each call bounded to 90 s), as the API drill runs its calls."""
    if not might_choose(chosen, "ranges"):
        return []
    config = drill.write("ranges/config.yaml", "train:\n  max_steps: 1\n  progress: false\n  eval_max_sentences: 5\n")
    calls, words = [], {}
    for n, setting in enumerate(number_settings()):
        for what, value in wrong_values(setting):
            out = drill.path(f"ranges/{n}-{what.replace(' ', '-')}")
            if setting.reproduction:
                name = f"ranges: {setting.reproduction}.{setting.key} {what} ({value})"
                argv = ["-q", "reproduce", setting.reproduction, "--out", out, "--runs", out / "runs"]
                argv += ["--seeds", "1", "--budget-minutes", "0.01", *sets(f"{setting.key}={value}")]
                words[name] = f"{setting.reproduction}.{setting.key}"
            else:
                chose = f" with {', '.join(setting.fixed)}" if setting.fixed else ""
                name = f"ranges: {setting.key} {what} ({value}){chose}"
                argv = ["-q", "train", config, "--data", drill.data, "--out", out]
                argv += sets(*setting.fixed, f"{setting.key}={value}")
                words[name] = setting.key
            calls.append((name, argv))
    for command, parser in cli_commands().items():
        if command in NOT_DRILLED or command not in drill.recipes(drill.work):
            continue
        for action in parser._actions:
            if action.option_strings and action.type not in (None, str) and not action.choices:
                flag = action.option_strings[-1]
                for what, value in (("-1", "-1"), ("a fraction", "1.5"), ("a word", "lots")):
                    if what == "a fraction" and takes(action.type, value):  # a number flag, not a count
                        continue
                    name = f"ranges: {' '.join(command)} {flag} {what}"
                    lines = drill.recipes(drill.path(f"ranges/flag-{len(calls)}"))[command]
                    tokens = next((t for t in lines if flag in map(str, t)), lines[0])
                    at = [str(t) for t in tokens].index(flag) + 1 if flag in map(str, tokens) else None
                    tokens = [*tokens[:at], value, *tokens[at + 1 :]] if at else [*tokens, flag, value]
                    words[name] = flag
                    calls.append((name, ["-q", *tokens]))
    calls = [(name, [str(a) for a in argv]) for name, argv in calls if chosen(name)]
    if not calls:
        return []
    drill.ready(sorted({Path(a) for _, argv in calls for a in argv if a.startswith(str(drill.work))}))
    result = subprocess.run(
        [PYTHON, "-c", RANGES_RUNNER], input=json.dumps(calls).encode(), capture_output=True, cwd=drill.work
    )
    try:
        results = json.loads(result.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        failed = Outcome("traceback", f"the child process failed: {result.stderr.decode()[-160:]}")
        return [(name, failed) for name, _ in calls]
    return [(name, range_outcome(*results[name], words[name], name)) for name, _ in calls]


def takes(kind: Callable, value: str) -> bool:
    """Whether an argument's type takes ``value``."""
    try:
        kind(value)
    except (ValueError, TypeError, argparse.ArgumentTypeError):
        return False
    return True


def names_key(line: str, key: str) -> bool:
    """Whether an error ``line`` names ``key``; a flag may be named by the config key it sets
    (``--beam``: ``decode.beam_size``, ``--max-minutes``: ``train.max_minutes``)."""
    if re.search(rf"(?<![\w.-]){re.escape(key)}(?![\w-])", line):
        return True
    words = key.lstrip("-").replace("-", "_")
    return key.startswith("--") and any(words in k.split(".")[-1] for k in re.findall(r"\b[a-z]+\.[a-z_.]+\b", line))


def range_outcome(code, err: str, key: str, name: str) -> Outcome:
    """A refusal is right when it is exit 2 and one line naming ``key``; a flag given -1 may also be
    taken (exit 0)."""
    if code == "late":
        return Outcome("silent", "still running after 90 s: the value was taken")
    if code == "raised" or traceback_of(err):
        return Outcome("traceback", (err.strip().splitlines() or ["?"])[-1][:160])
    if code == 0:
        if name.endswith(" -1"):
            return Outcome("handled", "-1 taken")
        return Outcome("silent", "exit 0: the value was taken")
    problem = one_error_line(code, err)
    line = err.strip().splitlines()[-1] if err.strip() else ""
    if problem or not names_key(line, key):
        return Outcome("silent", problem or f"the refusal does not name {key}: {line[:140]!r}")
    return Outcome("clear error", line.removeprefix("attnseq: error: ")[:110])


# -- the kill drill ----------------------------------------------------------------------------------
def kill_drill(work: Path, data: Path, kills: int, seed: int = 0) -> tuple[bool, str]:
    """Train a run that saves every 2 updates, killing it with SIGKILL ``kills`` times at random
    moments (start-up, updates and saves alike) and resuming; after each kill the run must load
    (evaluate) and resume, and the finished run must equal an uninterrupted one bit for bit
    (weights, and the metrics log but for timings). Every one of the ``kills`` must land on a
    process that is still running, or the drill fails."""
    import numpy as np

    from attnseq.runs import read_checkpoint, read_metrics

    args = sets(*TINY, "train.epochs=3", "train.eval_every=2", "train.log_every=1", "model.dropout=0.2")
    straight, killed = work / "kill-straight", work / "kill-run"
    command = [PYTHON, "-m", "attnseq.cli", "-q", "train", LUONG, "--data", str(data), "--out", str(straight), *args]
    started, startup = time.perf_counter(), None
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    while process.poll() is None:  # the start-up: until the run's metrics log is written
        if startup is None and (straight / "metrics.jsonl").exists():
            startup = time.perf_counter() - started
        time.sleep(0.02)
    if process.returncode:
        return False, f"the uninterrupted run failed: {process.stderr.read().decode()[-300:]}"
    training = max(r.get("wall_seconds", 0.0) for r in read_metrics(straight))
    # A kill comes between most of the start-up and the start-up plus 1/kills of the training:
    # each start trains about half of 1/kills of the run on average, so the run is still training
    # when the last kill comes even where the restarts run twice as fast as the run timed here (a
    # machine that was busier then: 1.5/kills left no such margin, and the full drill once saw
    # the run end after 6 of 30 kills), and kills fall on the start-up, updates and saves alike.
    window = (0.7 * (startup or 1.0), (startup or 1.0) + training / kills)
    rng, landed, loads, attempts = random.Random(seed), 0, 0, 0
    command[command.index(str(straight))] = str(killed)
    while True:
        attempts += 1
        resume = ["--resume"] if (killed / "config.yaml").exists() else []
        process = subprocess.Popen(command + resume, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
        if landed < kills:
            time.sleep(rng.uniform(*window))
            if process.poll() is None:
                os.kill(process.pid, signal.SIGKILL)
                landed += 1
        _, err = process.communicate(timeout=600)
        if process.returncode not in (0, -signal.SIGKILL):
            return False, f"attempt {attempts} failed (exit {process.returncode}): {err.decode()[-300:]}"
        if (killed / "last.safetensors").exists():
            code, _, err, _ = attnseq("-q", "evaluate", killed, "--data", data / "test.tsv", "--checkpoint", "last")
            if code:
                return False, f"after attempt {attempts} the run does not load: {err.strip()[-200:]}"
            loads += 1
        if process.returncode == 0:
            break
    if landed < kills:
        return False, f"the run finished after {landed} of {kills} kills: the kill window {window} is too late"
    a, b = read_checkpoint(straight / "last.safetensors")[0], read_checkpoint(killed / "last.safetensors")[0]
    same_weights = a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)

    def records(path):
        return [{k: v for k, v in r.items() if k not in TIMING} for r in read_metrics(path) if r["type"] != "start"]

    same_log = records(straight) == records(killed)
    leftovers = list(killed.glob(".*.tmp"))
    ok = same_weights and same_log and not leftovers
    return ok, (
        f"{landed} kills landed, each on a running training ({attempts} starts, kills "
        f"{window[0]:.1f}-{window[1]:.1f} s after a start), the run loaded after {loads}; final weights "
        f"{'equal' if same_weights else 'DIFFER'}, metrics log {'equal' if same_log else 'DIFFERS'} "
        f"(but for timings), {len(leftovers)} temporary files left"
    )


def summary(counts: dict[str, dict[str, int]], seconds: dict[str, float]) -> list[str]:
    """A line per class (its cases by outcome, and the seconds they took) and the total line."""
    lines, total = [], {kind: 0 for kind in KINDS}
    for group, kinds in counts.items():
        shown = ", ".join(f"{n} {kind}" for kind, n in kinds.items() if n)
        lines.append(f"  {group:<10} {sum(kinds.values()):>3} tried in {seconds[group]:4.0f} s: {shown}")
        for kind, n in kinds.items():
            total[kind] += n
    lines.append(
        f"{sum(total.values())} tried, {total['clear error']} clear errors, {total['handled']} handled, "
        f"{total['traceback']} tracebacks, {total['silent']} silent, {total['lost']} lost"
    )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=30, help="SIGKILLs of the kill drill (0: skip it)")
    parser.add_argument("--only", help=f"run only one class ({', '.join(CLASSES)}) or the cases whose name holds this")
    parser.add_argument("--keep", help="work in this folder and keep it (default: a temporary one)")
    args = parser.parse_args()

    def chosen(name: str) -> bool:
        if not args.only:
            return True
        return name.split(":", 1)[0] == args.only if args.only in CLASSES else args.only in name

    # a drill started in the background by a shell without job control (`nohup ... &`) has SIGINT
    # ignored, and its commands would inherit that and rightly ignore the Ctrl-Cs it sends them
    # (a background job is meant not to get the terminal's Ctrl-C): give them the default
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    work = Path(args.keep or tempfile.mkdtemp(prefix="attnseq-drill-"))
    drill = Drill(work)
    print(f"reliability drill in {work}: training the drill's small runs ...", flush=True)
    started = time.perf_counter()
    drill.prepare()
    print(f"  trained in {time.perf_counter() - started:.0f} s", flush=True)
    counts: dict[str, dict[str, int]] = {}
    seconds: dict[str, float] = {}
    last = time.perf_counter()

    def report(name: str, outcome: Outcome) -> None:
        """Count and print one case's outcome; the time since the last is its class's."""
        nonlocal last
        group, now = name.split(":", 1)[0], time.perf_counter()
        counts.setdefault(group, {kind: 0 for kind in KINDS})[outcome.kind] += 1
        seconds[group] = seconds.get(group, 0.0) + now - last
        last = now
        print(f"{outcome.kind:>11}  {name}: {outcome.detail}", flush=True)

    for case in drill.cases():
        if chosen(case.name):
            report(case.name, case.run())
    for drill_of in (
        api_drill,
        server_drill,
        budget_drill,
        ranges_drill,
    ):  # each runs its cases at once, then they are reported
        for name, outcome in drill_of(drill, chosen):
            report(name, outcome)
    if args.kills and chosen("kill: the kill drill"):
        ok, detail = kill_drill(work, drill.data, args.kills)
        report("kill: the kill drill", Outcome("handled" if ok else "lost", detail))
    print("\n".join(summary(counts, seconds)))
    bad = sum(kinds[k] for kinds in counts.values() for k in ("traceback", "silent", "lost"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
