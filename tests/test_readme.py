"""The commands of README.md and of the documentation's pages in docs/ (DOCS, "the docs" below), run
as a reader runs them. The test reads the pages themselves: every command of their fenced
``sh``/``bash``/``console`` blocks and every ``python`` block, so a command added to a page later
runs here too. They run in order, page after page as DOCS lists them, in one folder laid out like
a checkout (``configs/``, ``bench/``, ``examples/`` of this tree, ``../shared/data/book/`` beside
it), with small settings (SMALL: two training steps, small models and data), and each must exit 0
without a traceback. What the docs assume the reader has (their own data, a demo run, a
Transformer) is made by the test (OWN_FILES, OWN_RUNS, PLACEHOLDERS); what is not run says why
(SKIPPED, a path that is not on this machine, slow_reason: those run in the slow test). The other
slow tests train what the docs' stated answers need to an accuracy and check them: the dates
echoed into ``attnseq translate`` (``1994-09-27``) and the Python API's comments."""

from __future__ import annotations

import ast
import contextlib
import datetime
import glob
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tokenize
import traceback
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from helpers import ROOT, LiveServer, book_file, sets

# The pages whose commands run, in the order a reader follows them (a page uses what the pages
# before it made): the README, then the site's pages in docs/ (test_every_page_with_commands_is_read
# checks that none is left out). docs/results/ holds what `attnseq reproduce` writes, not a page to follow.
DOCS = [
    "README.md",
    "docs/index.md",
    "docs/command-line.md",
    "docs/your-data.md",
    "docs/api.md",
    "docs/configuration.md",
    "docs/presets.md",
    "docs/engines.md",
    "docs/copy-and-coverage.md",
    "docs/images-and-speech.md",
    "docs/memory.md",
    "docs/seeing-it.md",
    "docs/reproductions.md",
    "docs/scale.md",
    "docs/benchmarks.md",
    "docs/layout.md",
    "docs/testing.md",
]
SHELL = ("sh", "bash", "console", "shell")


# -- the docs' commands ------------------------------------------------------------------------


@dataclass(frozen=True)
class Snippet:
    """One command of a shell block (continued lines joined), or one whole python block."""

    page: str  # the page it is on, as DOCS names it
    line: int  # where it starts on the page, from 1
    lang: str  # "sh" or "python"
    text: str

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.text.splitlines()[0]}"


def page_snippets(page: str, text: str) -> list[Snippet]:
    """The commands of ``text`` (the page ``page``)'s fenced shell blocks and its python blocks, in
    order; a shell line that is only a comment (or blank) is no command."""
    snippets, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        fence = re.match(r"^```\s*(\w*)\s*$", lines[i])
        i += 1
        if not fence:
            continue
        lang, start, body = fence.group(1).lower(), i + 1, []
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence
        if lang == "python":
            snippets.append(Snippet(page, start, "python", "\n".join(body)))
        elif lang in SHELL:
            command, first = "", None
            for n, line in enumerate(body, start):
                line = line.removeprefix("$ ") if lang == "console" else line
                first = first or n
                if line.rstrip().endswith("\\"):  # continued on the next line
                    command += line.rstrip()[:-1] + " "
                    continue
                if shell_words(command + line):
                    snippets.append(Snippet(page, first, "sh", (command + line).strip()))
                command, first = "", None
    return snippets


def shell_words(command: str) -> list[str]:
    """``command``'s words as a POSIX shell splits them, its comment dropped, ``|`` ``<`` ``>``
    words of their own."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars="|<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    return list(lexer)


# -- what the reader has that the docs do not make ------------------------------------------


def date_pairs(n: int, start: datetime.date = datetime.date(1990, 1, 1)) -> list[tuple[str, str]]:
    """``n`` (date in words, ISO date) pairs, a week apart."""
    days = [start + datetime.timedelta(days=7 * i) for i in range(n)]
    return [(f"{d:%B} {d.day}, {d.year}".lower(), d.isoformat()) for d in days]


def untranslated_po() -> str:
    """A gettext catalog of four English messages, none translated, one with a placeholder."""
    messages = ["Open the file", "Save all", "Cannot read %s", "Close the window"]
    head = 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
    return head + "".join(f'msgid "{m}"\nmsgstr ""\n\n' for m in messages)


# The docs' "your own data": files they assume the reader has, each made before the first
# command that names it.
OWN_FILES = {
    "my-corpus.tsv": lambda: "".join(f"{s}\t{t}\n" for s, t in date_pairs(60)),
    "my-pairs.tsv": lambda: "".join(f"{s}\t{t}\n" for s, t in date_pairs(60, datetime.date(2001, 5, 3))),
    "corpus.en": lambda: "".join(f"{s}\n" for s, _ in date_pairs(60)),
    "corpus.de": lambda: "".join(f"{t}\n" for _, t in date_pairs(60)),
    "dates.txt": lambda: "september 27, 1994\n3/4/21\n",
    "sentences.txt": lambda: "Open the file\nSave all\n",
    "untranslated.po": untranslated_po,
}
# Runs the docs use that none of their commands trains: the demo's (`make demo` is not run here),
# a Transformer, and a second translator of text to compare by BLEU; made by these commands before
# the first command that names them, with the settings of the docs' (small or trained).
OWN_RUNS = {
    "runs/demo/run": (  # with its data where the demo writes it (the README's tour reads both)
        "attnseq data dates --out runs/demo/data",
        "attnseq train configs/recommended-char.yaml --data runs/demo/data --out runs/demo/run",
    ),
    "runs/transformer": ("attnseq train configs/transformer-tiny.yaml --data data/dates --out runs/transformer",),
    "runs/de-transformer": (
        "attnseq train configs/transformer-gettext-de.yaml --data data/gettext-de --out runs/de-transformer",
    ),
}
# Trained: what make demo runs, until every dev date is right (its data in runs/demo/data too).
TRAINED_RUNS = {"runs/demo/run": ("attnseq demo --out runs/demo",)}
# The docs' placeholders and what stands for each: a Transformer has every view `plot
# attention` names (layers, heads, the encoder's self-attention); runs compared by BLEU translate text.
PLACEHOLDERS = {"RUN": "runs/transformer", "RUN1": "runs/de", "RUN2": "runs/de-transformer"}
# The docs' input arrays as their comment describes them: xs (N, S), ts (N, T + 1).
OWN_NAMES = {
    "xs": lambda np: np.random.default_rng(0).integers(0, 59, (4, 29)),
    "ts": lambda np: np.random.default_rng(1).integers(0, 59, (4, 11)),
}
TYPED = "september 27, 1994"  # what the reader types where a command reads the terminal

# -- the settings commands run with -------------------------------------------------------------

# Small: every `attnseq train` (attnseq.fit, compare, torchrun) trains two steps without a
# progress bar, on a small model (and subword vocabulary) where its preset's is larger (SMALL_SIZES);
# data sources write small splits (--train/--dev/--test where the source takes them, and every
# split a data command writes is cut to SPLIT_SIZES, 20 lines for its other files); the book's
# files are their first BOOK_LINES lines, and a benchmark reads those (SMALL_SCRIPTS). A train that
# keeps N checkpoints trains N steps, each evaluated (keeping).
SMALL = ["train.max_steps=2", "train.progress=false", "train.log_every=0", "train.eval_max_sentences=20"]
SMALL_SIZES = {
    "model.hidden_size": 16,
    "model.embed_size": 8,
    "model.ff_size": 32,
    "model.attention_size": 16,
    "model.memory_locations": 16,
    "model.memory_width": 8,
    "data.tokenizer.vocab_size": 100,
    "data.tokenizer.max_sentences": 1000,
}
SPLIT_SIZES = {"train": 200, "dev": 20, "test": 20}
SOURCE_SPLIT_SIZES = {"speech": {"train": 24, "dev": 4, "test": 4}}  # sources slower than that a line: espeak-ng
BOOK_LINES = 1000
SMALL_SCRIPTS = {
    "bench/scratch_speed.py": ["--data", "../shared/data/book/date.txt"],
    "bench/scale.py": ["--sizes", "2000", "4000", "--torchrun", "--steps", "2", "--unique", "2000"],
}
# Trained (the slow tests of stated answers): the docs' commands with their presets' own settings,
# stopped once 99% of dev is right, bounded by a count of updates on one thread (not minutes: a
# busy machine takes longer instead of training less; the book's preset is there after ~1,100)
TRAINED = [
    "train.max_steps=2500",
    "train.threads=1",
    "train.progress=false",
    "train.target_exact_match=0.99",
    "train.eval_every=100",
    "train.eval_max_sentences=500",
]  # (stops within 100 updates of 99%)

# Commands not run, by their first word.
SKIPPED = {"make": "make is the CI itself (it installs .venv and runs this suite)"}
# Commands that need a program of the system besides attnseq: where it is not installed they, and
# the commands that read what they write, are skipped with the reason, as their own tests are.
NEEDS = {("attnseq", "data", "speech"): "espeak-ng", ("attnseq", "reproduce", "speech"): "espeak-ng"}


def slow_reason(words: list[str], home: Path | None = None) -> str | None:
    """Why a command takes more than seconds even with small settings (the slow test runs it);
    ``home``: the reader's checkout, where a run named may be a CTranslate2 export."""
    if "ctranslate2" in words or (home is not None and any((home / w / "export.json").is_file() for w in words)):
        return "slow: CTranslate2 exports a model or loads one"
    if words[:3] == ["attnseq", "plot", "attention"] and "--file" in words:
        return "slow: draws the attention of every output token over an image or a spectrogram"
    if words[0] == "torchrun":
        return "slow: starts two processes of a distributed run"
    if words[:2] == ["attnseq", "reproduce"] and "--list" not in words:
        return "slow: a reproduction trains several models"
    if words[0] == "python" and words[1].startswith("bench/"):
        return "slow: a benchmark"
    return None


def written(words: list[str]) -> list[str]:
    """The paths a command writes: what follows its --out and --output."""
    return [words[i + 1] for i, w in enumerate(words[:-1]) if w in ("--out", "--output")]


def read_among(words: list[str], paths) -> list[str]:
    """Those of ``paths`` that a command reads: a word (or a NAME=PATH's path) that is one of
    them or lies under one."""
    reads = {w.rpartition("=")[2] for w in words}
    return [p for p in paths if any(r == p or r.startswith(p + "/") for r in reads)]


def missing_path(words: list[str]) -> str | None:
    """A path outside the checkout that a command names and this machine lacks."""
    for word in words:
        if word.startswith("~") and not Path(word).expanduser().exists():
            return f"{word} is not on this machine"
    return None


# -- a reader following the docs ----------------------------------------------------------------


@dataclass
class Outcome:
    snippet: Snippet
    status: str  # ran, skipped, slow, failed
    why: str = ""


@dataclass
class Reader:
    """Someone following the docs in ``home``, a checkout: with small settings, or (``small``
    false) with the presets' own bounded by TRAINED; slow commands only with ``run_slow``."""

    home: Path
    small: bool = True
    run_slow: bool = False
    server: LiveServer | None = None
    trained: Path | None = None  # where the runs TRAINED_RUNS makes are kept for the other readers
    stdout: str = ""  # what the last command printed
    checked: int = 0  # values stated in python comments that were checked
    not_made: set = field(default_factory=set)  # what the slow commands left out would have written (--out)
    unmade: dict = field(default_factory=dict)  # what commands skipped for a missing program would have written

    @classmethod
    def checkout(cls, tmp_path: Path, monkeypatch, **kwargs) -> Reader:
        """A reader in ``tmp_path/attnseq`` (its working folder): this tree's configs, bench and
        examples, and the book's data at ../shared/data/book/ as beside a real checkout."""
        reader = cls(tmp_path / "attnseq", **kwargs)
        reader.home.mkdir()
        for name in ("configs", "bench", "examples"):
            (reader.home / name).symlink_to(ROOT / name)
        book = tmp_path / "shared" / "data" / "book"
        book.parent.mkdir(parents=True)
        if reader.small:
            book.mkdir()
            for name in ("date.txt", "addition.txt"):
                with open(book_file(name), encoding="utf-8") as whole:
                    (book / name).write_text("".join(next(whole) for _ in range(BOOK_LINES)), encoding="utf-8")
        else:
            book.symlink_to(book_file("date.txt").parent)
        monkeypatch.chdir(reader.home)
        monkeypatch.setattr("attnseq.serve.server.serve", reader.serve)  # serve returns, its server runs on
        return reader

    def follow(self, snippets: list[Snippet]) -> list[Outcome]:
        """Each of ``snippets`` done in order; the server a serve command started is stopped."""
        try:
            return [self.do(snippet) for snippet in snippets]
        finally:
            self.stop_server()

    def do(self, snippet: Snippet) -> Outcome:
        if snippet.lang == "python":
            return self.python_block(snippet)
        words = [PLACEHOLDERS.get(w, w) for w in shell_words(snippet.text)]
        if words[0] in SKIPPED:
            return Outcome(snippet, "skipped", SKIPPED[words[0]])
        if words[:2] == ["attnseq", "reproduce"] and "--all" in words:  # takes no smaller budget
            return Outcome(
                snippet,
                "skipped",
                "every reproduction at its default budget takes hours; test_reproduce "
                "runs them in processes at once on small budgets",
            )
        if missing := missing_path(words):
            return Outcome(snippet, "skipped", missing)
        unmade = read_among(words, self.unmade)
        if unmade or ((program := NEEDS.get(tuple(words[:3]))) and not shutil.which(program)):
            program = self.unmade[unmade[0]] if unmade else program
            self.unmade |= dict.fromkeys(written(words), program)
            return Outcome(
                snippet, "skipped", f"needs {program}, which is not installed (apt-get install {program}; .ci/run does)"
            )
        if not self.run_slow and (made := read_among(words, self.not_made)):
            return Outcome(snippet, "slow", f"slow: reads {made[0]}, which a slow command writes")
        if (slow := slow_reason(words, self.home)) and not self.run_slow:
            self.not_made |= set(written(words))
            return Outcome(snippet, "slow", slow)
        try:
            self.make_own([w.rpartition("=")[2] for w in words])  # NAME=RUN_DIR names a run
            failure = self.pipeline(words)
        except Exception:
            failure = traceback.format_exc()
        return Outcome(snippet, "failed" if failure else "ran", failure or "")

    def make_own(self, names: list) -> None:
        """The reader's own files and runs among ``names`` that the folder lacks."""
        runs = {**OWN_RUNS, **({} if self.small else TRAINED_RUNS)}
        for name in names:
            if not isinstance(name, str) or (self.home / name).exists():
                continue
            if name in OWN_FILES:
                (self.home / name).write_text(OWN_FILES[name](), encoding="utf-8")
            if name in TRAINED_RUNS and not self.small and self.trained is not None:
                self.make_trained(name, TRAINED_RUNS[name])
            else:
                self.run_commands(name, runs.get(name, ()))

    def run_commands(self, name: str, commands: tuple[str, ...]) -> None:
        """``commands``, which make the reader's own ``name``, each of which must succeed."""
        for command in commands:
            failure = self.pipeline(shell_words(command))
            assert failure is None, f"{command} (the docs' {name}): {failure}"

    def make_trained(self, name: str, commands: tuple[str, ...]) -> None:
        """The trained run ``name`` (TRAINED_RUNS) made once in a pytest run: the first reader
        that needs it runs ``commands`` and keeps the folders they write (--out) in ``trained``;
        the others copy them from there (two tests read the trained demo; each trained it)."""
        from filelock import FileLock

        outs = [words[words.index("--out") + 1] for words in map(shell_words, commands)]
        kept = self.trained / name.replace("/", "_")
        with FileLock(f"{kept}.lock"):
            if not kept.is_dir():
                self.run_commands(name, commands)
                partial = kept.with_name(kept.name + ".partial")
                shutil.rmtree(partial, ignore_errors=True)
                for out in outs:
                    shutil.copytree(self.home / out, partial / out)
                partial.rename(kept)
                return
        for out in outs:
            shutil.copytree(kept / out, self.home / out, dirs_exist_ok=True)

    # -- a shell command line -------------------------------------------------------------------
    def pipeline(self, words: list[str]) -> str | None:
        """``a | b < file``: the stages before the last through bash, the last as its own;
        what went wrong, or None."""
        stages: list[list[str]] = [[]]
        for word in words:
            if word == "|":
                stages.append([])
            else:
                stages[-1].append(word)
        stdin = None
        for before in stages[:-1]:
            done = subprocess.run(["bash", "-c", shlex.join(before)], cwd=self.home, capture_output=True, timeout=60)
            if done.returncode:
                return f"{shlex.join(before)}: exit status {done.returncode}\n{done.stderr.decode()}"
            stdin = done.stdout
        last = self.expand(stages[-1])
        if "<" in last:
            at = last.index("<")
            stdin = (self.home / last[at + 1]).read_bytes()
            last = last[:at] + last[at + 2 :]
        if last[0] == "attnseq":
            return self.attnseq(last[1:], stdin)
        if last[0] == "python":
            return self.script(last[1:])
        if last[0] == "torchrun":
            command = last[last.index("train") :]
            small = sets(*SMALL, *small_model(command[1:])) if self.small else []
            return self.process([sys.executable, "-m", "torch.distributed.run", *last[1:], *small])
        if last[0] == "curl":
            return self.curl(last)
        return self.process(last, stdin)

    def expand(self, words: list[str]) -> list[str]:
        """Words as the shell gives them: ``$(...)`` substituted, ``~`` and globs expanded."""
        out = []
        for word in words:
            if "$(" in word:
                word = subprocess.run(
                    ["bash", "-c", f'printf %s "{word}"'], cwd=self.home, capture_output=True, text=True, check=True
                ).stdout
            word = os.path.expanduser(word)
            matches = sorted(glob.glob(word, root_dir=self.home)) if any(c in word for c in "*?[") else []
            out += matches or [word]
        return out

    def process(self, args: list[str], stdin: bytes | None = None) -> str | None:
        """``args`` in a process of its own (with this tree's attnseq)."""
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        done = subprocess.run(args, cwd=self.home, input=stdin or b"", capture_output=True, env=env, timeout=900)
        self.stdout = done.stdout.decode(errors="replace")
        return problem(done.returncode, self.stdout, done.stderr.decode(errors="replace"))

    def in_process(self, run, stdin: io.TextIOBase | None = None) -> str | None:
        """``run()`` (an exit status, or a SystemExit) with its output captured and ``stdin`` for
        standard input; what went wrong, or None."""
        out, err = io.StringIO(), io.StringIO()
        saved = sys.stdin
        sys.stdin = stdin or sys.stdin
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    status = run()
                except SystemExit as exit:
                    status = exit.code or 0
        except Exception:
            return f"{err.getvalue()}{traceback.format_exc()}"
        finally:
            sys.stdin = saved
            self.stdout = out.getvalue()
        return problem(status, out.getvalue(), err.getvalue())

    # -- attnseq, in this process ---------------------------------------------------------------
    def attnseq(self, args: list[str], stdin: bytes | None) -> str | None:
        """``attnseq ARGS`` through attnseq.cli.main with its settings; standard input is ``stdin``,
        or else a terminal on which the reader types TYPED."""
        from attnseq.cli import main

        args = args + (self.small_args(args) if self.small else self.trained_args(args))
        terminal = io.TextIOWrapper(Terminal(f"{TYPED}\n".encode()) if stdin is None else io.BytesIO(stdin))
        failure = self.in_process(lambda: main(args), terminal)
        if failure is None and args[0] == "data" and self.small:
            cut_splits(self.home / args[args.index("--out") + 1])
        if failure is None and args[0] == "serve":
            return self.check_server()
        return failure

    def small_args(self, args: list[str]) -> list[str]:
        """The words that give ``attnseq ARGS`` the small settings its command takes."""
        if args[0] == "data":
            return small_splits(args[1])
        if args[0] == "train":
            return sets(*SMALL, *small_model(args[1:]), *keeping(args[1:]))
        if args[0] == "compare":
            return sets(*SMALL, "model.hidden_size=16", "model.embed_size=8")
        if args[0] == "reproduce" and "--list" not in args:
            return small_reproduction(args[1], self.home.parent / "reproduce-data")
        if args[0] == "serve":
            return ["--port", "0"]
        return []

    def trained_args(self, args: list[str]) -> list[str]:
        """The words that bound ``attnseq ARGS`` trained (TRAINED), or serve it on a free port."""
        if args[0] == "train":
            return sets(*TRAINED)
        return ["--port", "0"] if args[0] == "serve" else []

    # -- serve and curl ---------------------------------------------------------------------------
    def serve(self, app, sock, *args, **kwargs) -> None:
        """In place of ``attnseq serve``'s blocking server: the app served from a thread, one at a
        time (the docs' serve commands share a port)."""
        sock.close()
        self.stop_server()
        self.server = LiveServer(app).__enter__()

    def check_server(self) -> str | None:
        """Whether the page is served (GET / answers 200)."""
        with urllib.request.urlopen(self.server.url, timeout=30) as answer:
            return None if answer.status == 200 else f"GET / answered {answer.status}"

    def stop_server(self) -> None:
        if self.server is not None:
            self.server.__exit__(None, None, None)
            self.server = None

    def curl(self, words: list[str]) -> str | None:
        """``curl`` to the running server (the docs' localhost:8000 is where it listens here);
        its answer must not be a refusal."""
        if self.server is None:
            return "curl: no server is running (no `attnseq serve` before it)"
        failure = self.process([w.replace("localhost:8000", f"127.0.0.1:{self.server.port}") for w in words])
        if failure is None and "error" in json.loads(self.stdout):
            return f"the server refused the request: {self.stdout}"
        return failure

    # -- python -----------------------------------------------------------------------------------
    def script(self, args: list[str]) -> str | None:
        """``python SCRIPT ARGS``: a benchmark in a process of its own (it sets its BLAS threads
        before NumPy loads), any other script in this one as python runs it (its argv, its folder
        first on sys.path, as __main__)."""
        if self.small:
            args = args + SMALL_SCRIPTS.get(args[0], [])
        if args[0].startswith("bench/"):
            return self.process([sys.executable, *args])
        import runpy

        def run() -> int:
            runpy.run_path(args[0], run_name="__main__")
            return 0

        saved = sys.argv, sys.path[:]
        sys.argv, sys.path[0:0] = list(args), [str((self.home / args[0]).parent)]
        try:
            return self.in_process(run)
        finally:
            sys.argv, sys.path[:] = saved

    def python_block(self, snippet: Snippet) -> Outcome:
        """A python block run statement by statement in the folder (``attnseq.fit`` with the small
        settings); trained, a statement whose comment is a Python literal must equal it."""
        import numpy as np

        import attnseq

        names = {name: make(np) for name, make in OWN_NAMES.items()}
        module = ast.parse(snippet.text)
        self.make_own([node.value for node in ast.walk(module) if isinstance(node, ast.Constant)])
        comments = stated_values(snippet.text)
        fit = attnseq.fit
        if self.small:
            attnseq.fit = lambda config, out, overrides=(), **kw: fit(
                config, out, [*overrides, *SMALL, *small_model([config], overrides)], **kw
            )
        try:
            for statement in module.body:
                code = snippet.text.splitlines()[statement.lineno - 1].strip()
                where = f"{snippet.page}:{snippet.line + statement.lineno - 1}"
                if isinstance(statement, ast.Expr):
                    value = eval(compile(ast.Expression(statement.value), where, "eval"), names)
                    if not self.small and statement.end_lineno in comments:
                        stated = comments[statement.end_lineno]
                        if value != stated:
                            return Outcome(snippet, "failed", f"{where}: {code} gave {value!r}, the page: {stated!r}")
                        self.checked += 1
                else:
                    exec(compile(ast.Module([statement], []), where, "exec"), names)
        except Exception:
            return Outcome(snippet, "failed", traceback.format_exc())
        finally:
            attnseq.fit = fit
        return Outcome(snippet, "ran")


class Terminal(io.BytesIO):
    """Standard input that is a terminal: what the reader types, then Ctrl-D."""

    def isatty(self) -> bool:
        return True


def problem(status: int, out: str, err: str) -> str | None:
    """What is wrong with a command that ended with ``status`` and printed ``out`` and ``err``."""
    if status != 0:
        return f"exit status {status}\n{err[-3000:]}"
    if "Traceback (most recent call last)" in out + err:
        return f"a traceback:\n{(out + err)[-3000:]}"
    return None


def stated_values(source: str) -> dict[int, object]:
    """The comments of ``source`` that are Python literals (``# ['1994-09-27']``), by line."""
    values = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            with contextlib.suppress(ValueError, SyntaxError):
                values[token.start[0]] = ast.literal_eval(token.string[1:].strip())
    return values


def small_splits(source: str) -> list[str]:
    """--train, --dev and --test of SPLIT_SIZES, those that ``attnseq data SOURCE`` takes."""
    from test_cli import parsers

    from attnseq.cli import build_parser

    parser = dict(parsers(build_parser())).get(f"attnseq data {source}")
    takes = parser._option_string_actions if parser else {}
    sizes = SOURCE_SPLIT_SIZES.get(source, SPLIT_SIZES)
    return [w for name, n in sizes.items() if f"--{name}" in takes for w in (f"--{name}", str(n))]


def cut_splits(folder: Path) -> None:
    """Each split that a data command wrote into ``folder`` cut to its size in SPLIT_SIZES (any
    other file to 20 lines): what a source that takes no sizes (gettext, the book's file) writes."""
    for path in folder.glob("*.tsv"):
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        path.write_text("".join(lines[: SPLIT_SIZES.get(path.stem, 20)]), encoding="utf-8")


def small_model(train_args: list[str], overrides=()) -> list[str]:
    """SMALL_SIZES's settings that the config of ``attnseq train ARGS`` (with ``overrides``) has
    and sets larger, but for those the command sets itself."""
    from attnseq.cli import build_parser
    from attnseq.cli.train import load_config

    args = build_parser().parse_args(["train", *train_args])
    args.set = given = [*(args.set or []), *overrides]
    config = load_config(args)
    small = {
        key: value
        for key, value in SMALL_SIZES.items()
        if (setting(config, key) or 0) > value and not any(s.startswith(f"{key}=") for s in given)
    }
    if getattr(config.model, "tie_embeddings", "none") not in ("none", False) and "model.embed_size" in small:
        # a tied embedding is the output layer's matrix: as wide as the features it reads (hidden_size)
        small["model.embed_size"] = small.get("model.hidden_size", setting(config, "model.hidden_size"))
    return [f"{key}={value}" for key, value in small.items()]


def keeping(train_args: list[str]) -> list[str]:
    """For a train that keeps N checkpoints (``--set train.keep_checkpoints=N``): N updates, each
    evaluated, so that the ``attnseq average --last N`` after it finds N of them."""
    kept = [w.partition("=")[2] for w in train_args if w.startswith("train.keep_checkpoints=")]
    return [f"train.max_steps={max(2, int(kept[-1]))}", "train.eval_every=1"] if kept else []


def setting(config, key: str):
    """The number at the dotted ``key`` of ``config`` (a variant's option too), or None."""
    node = config
    for part in key.split("."):
        node = node.options.get(part) if hasattr(node, "options") else getattr(node, part, None)
    return node if isinstance(node, (int, float)) and not isinstance(node, bool) else None


def small_reproduction(name: str, folder: Path) -> list[str]:
    """``attnseq reproduce NAME``'s small settings: test_reproduce's (a few updates on a few pairs),
    on one thread."""
    from test_reproduce import tiny_settings

    from attnseq.reproduce import REPRODUCTIONS

    minutes = REPRODUCTIONS.get(name).nominal_minutes * 0.001
    folder.mkdir(exist_ok=True)
    return ["--budget-minutes", f"{minutes:g}", "--threads", "1", *sets(*tiny_settings(name, folder))]


# -- the tests ----------------------------------------------------------------------------------


def page_text(page: str) -> str:
    return (ROOT / page).read_text(encoding="utf-8")


def documented() -> list[Snippet]:
    """Every command of the docs, page after page in the order of DOCS."""
    return [snippet for page in DOCS for snippet in page_snippets(page, page_text(page))]


def report(outcomes: list[Outcome], *statuses: str) -> str:
    return "\n".join(f"{o.snippet}\n    {o.status}: {o.why.strip()}" for o in outcomes if o.status in statuses)


def test_the_parser_finds_every_command_and_each_stand_in_stands_for_what_the_docs_name():
    text = "\n".join(page_text(page) for page in DOCS)
    snippets = documented()
    fenced = re.findall(r"^```(\w*)", text, flags=re.M)
    assert sum(s.lang == "python" for s in snippets) == fenced.count("python") >= 3
    commands = [shell_words(s.text) for s in snippets if s.lang == "sh"]
    assert ["attnseq", "data", "dates", "--out", "data/dates"] in commands
    assert any(c[:3] == ["curl", "-s", "localhost:8000/translate"] and "-d" in c for c in commands)  # joined
    assert ["attnseq", "translate", "runs/book"] in commands  # its comment dropped
    named = lambda name: re.search(rf"(?<![\w/.-]){re.escape(name)}(?![\w.-])", text)  # noqa: E731
    for name in [*OWN_FILES, *PLACEHOLDERS, *TRAINED_RUNS]:
        assert named(name), f"{name}: no page of the docs names it now; drop its stand-in"
    for name in OWN_RUNS:
        assert named(name) or name in PLACEHOLDERS.values(), name


def test_every_page_with_commands_is_read():
    """Each page of docs/ (but docs/results/, which ``attnseq reproduce`` writes) with a block the
    tests read (shell, python, yaml) is in DOCS, so its commands run; each page of DOCS exists."""
    read = {*SHELL, "python", "yaml"}
    docs = ROOT / "docs"
    pages = [f"docs/{p.relative_to(docs).as_posix()}" for p in sorted(docs.rglob("*.md"))]
    unread = [
        page
        for page in pages
        if not page.startswith("docs/results/")
        and page not in DOCS
        and read & {lang.lower() for lang in re.findall(r"^```\s*(\w+)", page_text(page), flags=re.M)}
    ]
    assert not unread, f"pages with commands that no test runs (add each to DOCS, in reading order): {unread}"
    assert all((ROOT / page).is_file() for page in DOCS), [page for page in DOCS if not (ROOT / page).is_file()]


def attnseq_commands(snippet: Snippet) -> list[list[str]]:
    """The ``attnseq`` commands of a shell snippet (each part of a pipeline or redirection that is one)."""
    parts, part = [], []
    for word in [*shell_words(snippet.text), "|"]:
        if word in ("|", "<", ">", "&&", ";"):
            parts.append(part)
            part = []
        else:
            part.append(word)
    return [p for p in parts if p[:1] == ["attnseq"]]


def test_readme_commands_parse_and_name_what_exists():
    """The edit loop's check of the docs (the test below runs their commands, in make test): each
    ``attnseq`` command parses as the CLI's parser reads it, each config it names is in configs/,
    and each ``--set`` key of a command that trains or decodes is a config key."""
    from attnseq.cli import UsageError, build_parser
    from attnseq.config import load_config
    from attnseq.errors import ConfigError

    parser, problems, checked = build_parser(), [], 0
    for snippet in (s for s in documented() if s.lang == "sh"):
        for words in attnseq_commands(snippet):
            checked += 1
            try:
                parser.parse_args(words[1:])
            except UsageError as error:
                problems.append(f"{snippet}: {error}")
            except SystemExit as stop:  # --help, --version
                if stop.code:
                    problems.append(f"{snippet}: the parser exits {stop.code}")
            problems += [
                f"{snippet}: {w} is not in the checkout"
                for w in words
                if w.startswith("configs/") and not (ROOT / w).is_file()
            ]
            if words[1] == "reproduce":  # its --set sets the reproduction's options
                continue
            for key in (words[i + 1].split("=")[0] for i, w in enumerate(words[:-1]) if w == "--set"):
                try:
                    load_config(None, [f"{key}=0"])
                except ConfigError as error:
                    if "unknown key" in str(error):
                        problems.append(f"{snippet}: {error}")
    assert checked >= 80 and not problems, "\n".join(problems)


@pytest.mark.slow
def test_readme_commands_run_with_small_settings(tmp_path, monkeypatch):
    """Every command of the docs that runs in seconds, in order, with small settings (the edit
    loop's suite checks that they parse, above: running them all takes 25 s)."""
    outcomes = Reader.checkout(tmp_path, monkeypatch).follow(documented())
    assert not any(o.status == "failed" for o in outcomes), report(outcomes, "failed")
    assert sum(o.status == "ran" for o in outcomes) >= 40, report(outcomes, "skipped", "slow")


@pytest.mark.slow
@pytest.mark.minutes
def test_readme_slow_commands_run_with_small_settings(tmp_path, monkeypatch):
    """The commands of the docs that take longer (reproduce, torchrun, benchmarks), each after the
    commands that make what it reads (the rest ran in the test above)."""
    outcomes = Reader.checkout(tmp_path, monkeypatch, run_slow=True).follow(slow_part(documented()))
    assert not any(o.status == "failed" for o in outcomes), report(outcomes, "failed")
    assert not any(o.status == "slow" for o in outcomes)


def slow_part(snippets: list[Snippet]) -> list[Snippet]:
    """The commands of ``snippets`` that only the slow test runs (slow_reason's, and those that
    read what one of them writes), each with the commands that make what it reads (makers), in
    the docs' order."""
    slow, unmade = [], set()
    for snippet in snippets:
        if snippet.lang != "sh":
            continue
        words = [PLACEHOLDERS.get(w, w) for w in shell_words(snippet.text)]
        if slow_reason(words) or read_among(words, unmade):
            unmade |= set(written(words))
            slow.append(snippet)
    needed = {*slow, *(maker for snippet in slow for maker in makers(snippets, snippet))}
    return [snippet for snippet in snippets if snippet in needed]


def iso_date(text: str) -> str | None:
    """The ISO form of a date written as the docs' examples write them, or None."""
    for form in ("%B %d, %Y", "%b %d %Y", "%m/%d/%y", "%A, %B %d, %Y"):
        with contextlib.suppress(ValueError):
            return datetime.datetime.strptime(text, form).date().isoformat()
    return None


def makers(snippets: list[Snippet], target: Snippet) -> list[Snippet]:
    """The commands before ``target`` that make what it reads, and what they read, in order: the
    first command to write a path (--out, --output) makes it."""
    made: dict[str, Snippet] = {}
    for snippet in snippets[: snippets.index(target)]:
        words = shell_words(snippet.text) if snippet.lang == "sh" else []
        for flag in ("--out", "--output"):
            if flag in words:
                made.setdefault(words[words.index(flag) + 1], snippet)
    needed: list[Snippet] = []

    def need(snippet: Snippet) -> None:
        for word in shell_words(snippet.text):
            for path, maker in made.items():
                earlier = snippets.index(maker) < snippets.index(snippet)
                if earlier and maker not in needed and (word == path or word.startswith(path + "/")):
                    need(maker)
                    needed.append(maker)

    need(target)
    return sorted(needed, key=snippets.index)


@pytest.mark.slow
@pytest.mark.minutes
def test_readme_book_example_prints_the_date_it_echoes(tmp_path, monkeypatch, run_shared_folder):
    """``echo "september 27, 1994" | attnseq translate runs/book`` prints 1994-09-27 once the
    docs' commands before it trained runs/book (the book preset's own settings, TRAINED); so does
    each date echoed into a run (the README's tour: runs/demo/run, the demo)."""
    snippets = documented()
    echoed = {
        s: iso_date(w[1])
        for s in snippets
        if s.lang == "sh" and (w := shell_words(s.text))[0] == "echo" and w[2:5] == ["|", "attnseq", "translate"]
    }
    answered = {s: iso for s, iso in echoed.items() if iso}
    assert answered, "the docs show no date echoed into attnseq translate"
    reader = Reader.checkout(tmp_path, monkeypatch, small=False, trained=run_shared_folder)
    for snippet, iso in answered.items():
        outcomes = reader.follow([*makers(snippets, snippet), snippet])
        assert all(o.status == "ran" for o in outcomes), report(outcomes, "failed", "skipped", "slow")
        assert reader.stdout == f"{iso}\n", f"{snippet}: printed {reader.stdout!r}, not {iso}"


@pytest.mark.slow
def test_readme_python_api_gives_what_its_comments_state(tmp_path, monkeypatch, run_shared_folder):
    """The python blocks whose comments state a value (``# ['1994-09-27', '2021-03-04']``), on
    the runs they name trained (runs/demo/run: the demo, until every dev date is right)."""
    stating = [s for s in documented() if s.lang == "python" and stated_values(s.text)]
    assert stating, "the docs state no value in a python comment"
    reader = Reader.checkout(tmp_path, monkeypatch, small=False, trained=run_shared_folder)
    outcomes = reader.follow(stating)
    assert all(o.status == "ran" for o in outcomes), report(outcomes, "failed")
    assert reader.checked == sum(len(stated_values(s.text)) for s in stating)


def test_readme_yaml_blocks_are_configs(tmp_path):
    """Each yaml block of the docs is a config (a fragment, the rest defaults) that attnseq reads
    and its engine accepts."""
    from attnseq.config import load_config
    from attnseq.engines import engine_for

    blocks = [
        (f"{page}:{text.count(chr(10), 0, found.start()) + 2}", found.group(1))  # page:line of its first line
        for page in DOCS
        for text in [page_text(page)]
        for found in re.finditer(r"^```yaml\n(.*?)^```", text, flags=re.M | re.S)
    ]
    assert blocks
    for i, (where, block) in enumerate(blocks):
        path = tmp_path / f"block{i}.yaml"
        path.write_text(block, encoding="utf-8")
        try:
            config = load_config(path, ["data.dir=data/dates"])  # as `attnseq train BLOCK.yaml --data data/dates`
            engine_for(config).check(config)
        except Exception as error:
            pytest.fail(f"{where}: {type(error).__name__}: {error}")
