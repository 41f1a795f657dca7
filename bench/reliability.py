"""The reliability drill: bad inputs and faults, each tried against the command line, the Python
API (in a child process) or the server (``attnseq serve`` on loopback) as a user would, and the
kill drill: training killed (SIGKILL) at random moments and resumed.

    python bench/reliability.py [--kills 30] [--only CLASS|WORDS] [--keep DIR]

The cases come in classes (CLASSES; each name starts with its class, ``os: ...``), and
``--only CLASS`` runs one class (any other WORDS: the cases whose name holds them).
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
from attnseq.runs import LOCK

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
TIMING = {"train_seconds", "wall_seconds", "eval_seconds", "tokens_per_second", "seconds", "sentences_per_second"}
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
            if len(err.strip().splitlines()) != 1 or len(lines) != 1 or missing:
                return Outcome("silent", f"exit {code}, not one clear line (missing {missing}): {err.strip()[:160]!r}")
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


def ended(process: subprocess.Popen, started: float, note: str = "") -> tuple[int, str, str, float]:
    """What ``process`` (its output piped) did once it ends, as attnseq() says it: (exit status,
    stdout, stderr with the drill's ``note``, seconds since ``started``)."""
    out, err = process.communicate(timeout=600)
    err = err.decode(errors="replace") + (f"\n[drill: {note}]" if note else "")
    return process.returncode, out.decode(errors="replace"), err, time.perf_counter() - started


def waits_on_stdin(pid: int) -> bool:
    """True when process ``pid`` is blocked reading a pipe (its kernel wait channel says so)."""
    try:
        return "pipe_read" in Path(f"/proc/{pid}/wchan").read_text() or Path(
            f"/proc/{pid}/syscall"
        ).read_text().startswith("0 0x0 ")
    except OSError:
        return False


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
    # A kill comes between most of the start-up and the start-up plus 1.5/kills of the training:
    # each start trains about 0.7/kills of the run on average, so the run is still training when
    # the last kill comes, and kills fall on the start-up, updates and saves alike.
    window = (0.7 * (startup or 1.0), (startup or 1.0) + 1.5 * training / kills)
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
            return False, f"attempt {attempts} failed: {err.decode()[-300:]}"
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
    for drill_of in (api_drill, server_drill):  # each runs its cases at once, then they are reported
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
