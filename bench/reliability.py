"""The reliability drill: bad inputs and faults, each tried against the command line or the
server (``attnseq serve`` on loopback) as a user would, and the kill drill: training killed
(SIGKILL) at random moments and resumed.

    python bench/reliability.py [--kills 30] [--only WORDS] [--keep DIR]

Every case prints one line: its name and what happened, one of
  clear error  the command exited non-zero with one line naming the problem (no traceback);
  handled      the command did the right thing, and said so where it should (a warning);
  traceback    a Python traceback reached the user (of the server: a 5xx, a reset or a hang);
  silent       the command exited 0 but did something wrong, or refused nothing;
  lost         a run or a file that existed was damaged.
and a summary: ``N tried, N clear errors, N handled, 0 tracebacks, 0 silent, 0 lost``.
The kill drill ends with whether the killed run equals the uninterrupted one bit for bit.
Exit status 1 when any case is a traceback, silent or lost.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from attnseq.hardware import bf16_pays

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
BOOK = ROOT / "configs" / "book-attention.yaml"
LUONG = ROOT / "configs" / "luong2015-general.yaml"
TRANSFORMER = ROOT / "configs" / "transformer-tiny.yaml"
TINY = ["model.embed_size=16", "model.hidden_size=32", "train.batch_size=32", "train.progress=false",
        "train.eval_max_sentences=20"]
TINY_T = ["model.hidden_size=32", "model.ff_size=64", "train.batch_size=32", "train.progress=false",
          "train.eval_max_sentences=20"]
TIMING = {"train_seconds", "wall_seconds", "eval_seconds", "tokens_per_second", "seconds", "sentences_per_second"}


def sets(*settings: str) -> list[str]:
    return [x for s in settings for x in ("--set", s)]


def attnseq(*args, stdin: bytes | None = None, timeout: float = 600, env: dict | None = None):
    """Run ``attnseq ARGS`` as a user would: (exit status, stdout, stderr, seconds)."""
    started = time.perf_counter()
    result = subprocess.run([PYTHON, "-m", "attnseq.cli", *map(str, args)], input=stdin, capture_output=True,
                            timeout=timeout, cwd=ROOT, env={**os.environ, **(env or {})})
    return (result.returncode, result.stdout.decode(errors="replace"), result.stderr.decode(errors="replace"),
            time.perf_counter() - started)


def digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha1(p.read_bytes()).hexdigest() for p in sorted(Path(folder).iterdir()) if p.is_file()}


@dataclass
class Outcome:
    kind: str  # clear error, handled, traceback, silent, lost
    detail: str


@dataclass
class Case:
    """A command and what a user should get: an error naming ``words``, or success that ``check``
    confirms (it returns '' when right, else what is wrong; a reason starting 'lost' is a loss)."""

    name: str
    args: Callable[[], list]
    expect: str = "error"  # or "handled"
    words: tuple[str, ...] = ()
    stdin: bytes | None = None
    check: Callable[[int, str, str, float], str] | None = None
    setup: Callable[[], None] | None = None
    env: dict = field(default_factory=dict)

    def run(self) -> Outcome:
        if self.setup:
            self.setup()
        code, out, err, seconds = attnseq(*self.args(), stdin=self.stdin, env=self.env)
        if "Traceback (most recent call last)" in err:
            return Outcome("traceback", err.strip().splitlines()[-1][:160])
        problem = self.check(code, out, err, seconds) if self.check else ""
        if problem.startswith("lost"):
            return Outcome("lost", problem)
        lines = [line for line in err.strip().splitlines() if line.startswith("attnseq: error:")]
        if self.expect == "error":
            if code == 0:
                return Outcome("silent", "exit 0 where an error was due" + (f"; {problem}" if problem else ""))
            missing = [w for w in self.words if w not in err]
            if len(err.strip().splitlines()) != 1 or len(lines) != 1 or missing:
                return Outcome("silent", f"not one clear line (missing {missing}): {err.strip()[:160]!r}")
            return Outcome("clear error", lines[0][len("attnseq: error: "):][:110])
        if code != 0:
            return Outcome("silent", f"exit {code}: {err.strip()[-160:]}")
        missing = [w for w in self.words if w not in err + out]
        if missing or problem:
            return Outcome("silent", problem or f"no word of {missing} in the output")
        return Outcome("handled", (err.strip().splitlines() or out.strip().splitlines() or ["ok"])[-1][:110])


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
            (self.data / f"{split}.tsv").write_text("".join(f"{w}\t{w[::-1]}\n" for w in words))
        for run, preset, extra in ((self.run, LUONG, TINY), (self.numpy_run, BOOK, [*TINY, "engine=numpy", "data.strip=true"]),
                                   (self.transformer_run, TRANSFORMER, TINY_T)):
            code, _, err, _ = attnseq("-q", "train", preset, "--data", self.data, "--out", run,
                                      *sets(*extra, "train.max_steps=30"))
            if code:
                sys.exit(f"reliability: cannot train the drill's {run.name}: {err}")

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

    def train(self, out: str, *settings: str, preset: Path = LUONG, flags: tuple = ()) -> list:
        return ["-q", "train", preset, "--data", self.data, "--out", self.path(out), *flags,
                *sets(*(TINY if preset != TRANSFORMER else TINY_T), *settings)]

    # -- the cases -------------------------------------------------------------------------------
    def cases(self) -> list[Case]:
        run, data = self.run, self.data
        good = digest(run)
        intact = lambda *_: "" if digest(run) == good else "lost: the trained run changed"  # noqa: E731
        cases = [
            Case("train into an existing run without --resume", lambda: ["-q", "train", LUONG, "--data", data,
                 "--out", run, *sets(*TINY, "train.max_steps=2")], words=("--resume", "--overwrite"), check=intact),
            Case("train --resume and --overwrite together", lambda: ["-q", "train", LUONG, "--data", data, "--out",
                 run, "--resume", "--overwrite"], words=("choose one",), check=intact),
        ]
        for setting, key in (("train.batch_size=-4", "train.batch_size"), ("model.hidden_size=0", "model.hidden_size"),
                             ("model.embed_size=-3", "model.embed_size"), ("train.lr=-0.1", "train.lr"),
                             ("train.lr=.nan", "train.lr"), ("model.encoder_layers=-1", "model.encoder_layers"),
                             ("model.dropout=-0.5", "model.dropout"), ("train.accumulate=0", "train.accumulate"),
                             ("train.epochs=0", "train.epochs"), ("decode.beam_size=0", "decode.beam_size"),
                             ("train.lr=1e999", "train.lr")):
            cases.append(Case(f"train --set {setting}", lambda s=setting: self.train("bad", s), words=(key,),
                              check=lambda *_: "" if not self.path("bad").exists() else "silent: wrote a run folder"))
        for args, key in ((["--set", "decode.max_len=-5"], "decode.max_len"), (["--beam", "0"], "decode.beam_size"),
                          (["--beam", "-3"], "decode.beam_size"), (["--beam", "2", "--n-best", "3"], "decode.n_best"),
                          (["--set", "data.tokenizer=word"], "data.tokenizer"), (["--set", "model.hidden_size=8"],
                                                                                  "model.hidden_size"),
                          (["--set", "decode.beam_size=1e999"], "decode.beam_size")):
            cases.append(Case(f"translate {' '.join(args)}", lambda a=args: ["translate", run, *a], stdin=b"abc\n",
                              words=(key,)))
        for settings, key in ((["model.decoder=none", "model.attention=multihead"], "model.attention"),
                              (["model.arch=transformer", "model.cell=gru"], "model.cell"),
                              (["model.decoder=peeky", "model.attention=local_p"], "model.attention"),
                              (["model.attention=general", "model.attention.window=3"], "model.attention.window"),
                              (["model.encoder=gnmt", "model.encoder.bidirectional=false"], "model.encoder.bidirectional"),
                              (["train.schedule.warmup_steps=100"], "train.schedule.warmup_steps")):
            cases.append(Case(f"an option that does not apply: {' '.join(settings)}",
                              lambda s=settings: self.train("bad", *s), words=(key,)))
        cases += [
            Case("--resume --set train.lr (a key fixed by training)", lambda: ["-q", "train", LUONG, "--data", data,
                 "--out", run, "--resume", *sets(*TINY, "train.max_steps=40", "train.lr=0.5")],
                 words=("train.lr", "the run was trained with"), check=intact),
            Case("--resume with another model size", lambda: ["-q", "train", LUONG, "--data", data, "--out", run,
                 "--resume", *sets(*TINY, "model.hidden_size=64")], words=("model.hidden_size",), check=intact),
            Case("--resume where there is no run", lambda: ["-q", "train", LUONG, "--data", data, "--out",
                 self.path("nothing"), "--resume"], words=("nothing to resume in",)),
            Case("a UTF-8 byte-order mark in train.tsv", lambda: self.train_on("bom", "\ufeffabc\tcba\n".encode()),
                 expect="handled", check=lambda *_: "" if "\ufeff" not in (self.path("bom-run") / "vocab.source.json")
                 .read_text(encoding="utf-8") else "silent: the mark became a token"),
            Case("invalid UTF-8 on translate's stdin", lambda: ["translate", run], stdin=b"abc\n\xff\xfe\n",
                 words=("stdin:2", "UTF-8")),
            Case("invalid UTF-8 in translate --input", lambda: ["translate", run, "--input",
                 self.write("bad.txt", b"ok\n\xff\n")], words=("bad.txt:2", "UTF-8")),
            Case("data split of an empty file", lambda: ["data", "split", "--input", self.write("empty.tsv", ""),
                 "--out", self.path("split")], words=("no pairs",)),
            Case("data split of two pairs", lambda: ["data", "split", "--input", self.write("two.tsv", "a\tb\nc\td\n"),
                 "--out", self.path("split2")], words=("empty",)),
            Case("blank lines in train.tsv are skipped and located", lambda: self.train_on("blank",
                 b"abc\tcba\n\nbca\tacb\n\t\nccc\tccc\n", quiet=False), expect="handled", words=("lines 2, 4",)),
            Case("a 10,000-character training line", lambda: self.train_on("long", ("a" * 10000 + "\tb\n").encode()
                 + (data / "train.tsv").read_bytes(), quiet=False), expect="handled",
                 words=("dropped 1 pair(s) longer than data.max_source_len",)),
            Case("a 100,000-character input to a Transformer", lambda: ["translate", self.transformer_run],
                 stdin=("abc" * 33334 + "\n").encode(), expect="handled", words=("decode.max_source_len",),
                 check=lambda code, out, err, s: "" if s < 60 else f"silent: took {s:.0f} s"),
            Case("train.lr=1e6 on the book preset", lambda: self.train("diverged", "train.lr=1e6",
                 "train.clip_norm=0", "data.strip=true", preset=BOOK), words=("training diverged",)),
            Case("train.lr=1e40", lambda: self.train("diverged40", "train.lr=1e40"), words=("train.lr",)),
            Case("a Transformer that diverges at step 1 keeps no NaN checkpoint", lambda: self.train("nan",
                 "train.lr=1e6", "train.eval_every=1", "train.clip_norm=0", preset=TRANSFORMER),
                 words=("training diverged",), check=lambda *_: self.finite_checkpoints("nan")),
            Case("a truncated best.safetensors", lambda: ["evaluate", self.damaged_copy(), "--data", data / "test.tsv"],
                 words=("damaged or incomplete", "--checkpoint last")),
            Case("a half-written line in metrics.jsonl, then plot curve", lambda: ["-q", "plot", "curve",
                 self.torn_log_copy(), "--out", self.path("curve.png")], expect="handled",
                 check=lambda *_: "" if self.path("curve.png").exists() else "silent: no curve"),
            Case("a binary config file", lambda: ["train", self.write("x.yaml", b"\x89PNG\r\n\x1a\n\x00\xff"),
                 "--data", data], words=("x.yaml",)),
            Case("a config that is not a mapping", lambda: ["train", self.write("list.yaml", "- a\n- b\n"),
                 "--data", data], words=("list.yaml", "mapping")),
            Case("a TSV file given as --data", lambda: ["train", LUONG, "--data", data / "train.tsv"],
                 words=("attnseq data split",)),
            Case("evaluate a folder that is no run", lambda: ["evaluate", self.work, "--data", data],
                 words=("not a run folder",)),
            Case("evaluate --data DIR scores its test.tsv", lambda: ["-q", "evaluate", run, "--data", data, "--json"],
                 expect="handled", check=lambda code, out, *_: "" if json.loads(out)["sentences"] == 40 else "silent"),
            Case("train.precision=bf16 " + ("where this CPU's bf16 beats fp32" if bf16_pays("cpu")[0]
                                            else "where the CPU's bf16 is missing or slower (a warning, fp32)"),
                 lambda: self.train("bf16", "train.precision=bf16", "train.max_steps=2", flags=()), expect="handled",
                 env={}, words=(), check=self.bf16_check),
            Case("data gettext on two catalogs of one's own", lambda: ["data", "gettext", "--lang", "de", "--from",
                 self.catalogs(), "--out", self.path("gt")], expect="handled", check=self.gettext_check),
            Case("translate --po: markup placeholders and plural entries", lambda: ["-q", "translate", run, "--po",
                 self.po_file(), "--output", self.path("filled.po")], expect="handled", check=self.po_check),
            Case("engine numpy with --beam 3", lambda: ["translate", self.numpy_run, "--beam", "3"], stdin=b"abc\n",
                 words=("decode.beam_size", "torch-only")),
            Case("compare labels its checkpoint rule", lambda: ["-q", "compare", LUONG, "--data", data, "--out",
                 self.path("cmp"), "--budget-minutes", "1", *sets(*TINY, "train.max_steps=3")], expect="handled",
                 check=lambda *_: "" if "best_step" in (self.path("cmp") / "comparison.md").read_text() and "ties broken"
                 in (self.path("cmp") / "comparison.md").read_text() else "silent: no checkpoint rule"),
            Case("-q hides progress; a piped log has no bar fragments", lambda: self.train("quiet", "train.max_steps=3",
                 "train.progress=true"), expect="handled",
                 check=lambda code, out, err, s: "" if "%|" not in err and "\r" not in err else "silent: bar in log"),
            Case("serve --port 99999", lambda: ["serve", run, "--port", "99999"], words=("--port", "65535")),
            Case("serve a folder that is no run", lambda: ["serve", self.work, "--port", "0"],
                 words=("not a run folder",)),
            Case("output files get the user's umask", lambda: ["translate", run, "--input", self.write("in.txt", "abc\n"),
                 "--output", self.path("out.txt")], expect="handled", check=self.mode_check),
        ]
        return cases

    # -- helpers of the cases --------------------------------------------------------------------
    def train_on(self, name: str, train: bytes, quiet: bool = True) -> list:
        folder = self.data_dir(name, train)
        return [*(["-q"] if quiet else []), "train", LUONG, "--data", folder, "--out", self.path(f"{name}-run"),
                *sets(*TINY, "train.max_steps=2")]

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
        header = ('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n'
                  '"Plural-Forms: nplurals=2; plural=(n != 1);\\n"\n\n')
        return self.write("in.po", header + 'msgid "<b>abc</b>"\nmsgstr ""\n\nmsgid "abc"\nmsgid_plural "abcd"\n'
                          'msgstr[0] ""\nmsgstr[1] ""\n')

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
        mode = stat.S_IMODE(self.path("out.txt").stat().st_mode)
        return "" if mode == 0o666 & ~mask else f"silent: mode {oct(mode)}"


# -- the server ------------------------------------------------------------------------------------
def raw_request(port: int, data: bytes, timeout: float = 30.0) -> bytes:
    """The server's answer to ``data`` written as it is (b'' when the connection is reset or no
    answer comes within ``timeout`` seconds)."""
    import socket

    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            answer = b""
            while chunk := s.recv(65536):
                answer += chunk
            return answer
    except OSError:  # reset, refused or timed out
        return b""


def http_post(body: bytes, length: bytes | None = None) -> bytes:
    """A POST /translate of ``body`` as JSON, with its Content-Length (or ``length`` as written)."""
    declared = str(len(body)).encode() if length is None else length
    return (b"POST /translate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + declared + b"\r\nConnection: close\r\n\r\n" + body)


def http_outcome(answer: bytes, field: str | None, words: tuple[str, ...]) -> Outcome:
    """A refusal is clear when it is a 4xx whose JSON names ``field`` and ``words``; a 5xx, a
    reset or no answer is a crash; a 2xx where a refusal was due is silent."""
    if not answer:
        return Outcome("traceback", "no answer: the connection was reset, refused or timed out")
    status_line, _, rest = answer.partition(b"\r\n")
    parts = status_line.split()
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
    body = rest.partition(b"\r\n\r\n")[2].decode(errors="replace")
    if status >= 500 or status == 0:
        return Outcome("traceback", f"{status_line.decode(errors='replace')}: {body[:120]}")
    if status < 400:
        return Outcome("silent", f"{status} where a refusal was due: {body[:120]}")
    if field is None:  # malformed HTTP: any 4xx, at once
        return Outcome("clear error", status_line.decode(errors="replace"))
    try:
        message = json.loads(body)
    except ValueError:
        return Outcome("silent", f"{status} without a JSON message: {body[:120]!r}")
    missing = [w for w in words if w not in message.get("error", "")]
    if message.get("field") != field or missing:
        return Outcome("silent", f"{status} not naming {field} {missing}: {message}")
    return Outcome("clear error", f"{status} {message['field']}: {message['error'][:100]}")


def server_drill(drill: Drill, only: str | None = None) -> list[tuple[str, Outcome]]:
    """Bad requests and a load of 200 concurrent ones against ``attnseq serve`` on loopback, with a
    torch run and a NumPy-engine run: each refusal a 4xx naming the field, never a 5xx or a hang."""
    sys.path.insert(0, str(ROOT / "bench"))
    from serve_load import date_requests, load_check, start_server

    cases = [  # name, request bytes, field named (None: malformed HTTP), words of the message
        ("a JSON list as the body", http_post(b"[1, 2]"), "body", ("JSON object",)),
        ('{"text": null}', http_post(b'{"text": null}'), "text", ("string",)),
        ("beam_size 1e999", http_post(b'{"text": "abc", "beam_size": 1e999}'), "beam_size", ("finite",)),
        ("beam_size 99", http_post(b'{"text": "abc", "beam_size": 99}'), "beam_size", ("1 to",)),
        ("n_best above the beam", http_post(b'{"text": "abc", "beam_size": 2, "n_best": 3}'), "n_best", ("exceed",)),
        ("an empty text", http_post(b'{"text": "  "}'), "text", ("empty",)),
        ("a 5,000-character text", http_post(b'{"text": "' + b"a" * 5000 + b'"}'), "text", ("limit",)),
        ("an unknown run", http_post(b'{"text": "abc", "run": "nope"}'), "run", ("torch", "numpy")),
        ("a NumPy-engine run with beam 3", http_post(b'{"text": "abc", "run": "numpy", "beam_size": 3}'),
         "beam_size", ("torch-only",)),
        ("Content-Length: -1", http_post(b'{"text": "abc"}', b"-1"), None, ()),
        ("Content-Length: abc", http_post(b'{"text": "abc"}', b"abc"), None, ()),
        ("Content-Length: 100000000", http_post(b"", b"100000000"), None, ()),
    ]
    cases = [case for case in cases if not only or only in f"serve: {case[0]}"]
    load = not only or only in "serve: 200 concurrent requests"
    if not cases and not load:
        return []
    outcomes = []
    server, port = start_server(f"torch={drill.run}", f"numpy={drill.numpy_run}", log=False)
    try:
        for name, request, field, words in cases:
            started = time.perf_counter()
            outcome = http_outcome(raw_request(port, request), field, words)
            if time.perf_counter() - started > 20:
                outcome = Outcome("silent", f"answered after {time.perf_counter() - started:.0f} s: {outcome.detail}")
            outcomes.append((f"serve: {name}", outcome))
        if load:
            ok, lines = load_check(port, drill.run, date_requests(200, [1, 3]))
            outcomes.append(("serve: 200 concurrent requests", Outcome("handled" if ok else "silent", "; ".join(lines))))
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
    return ok, (f"{landed} kills landed, each on a running training ({attempts} starts, kills "
                f"{window[0]:.1f}-{window[1]:.1f} s after a start), the run loaded after {loads}; final weights "
                f"{'equal' if same_weights else 'DIFFER'}, metrics log {'equal' if same_log else 'DIFFERS'} "
                f"(but for timings), {len(leftovers)} temporary files left")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=30, help="SIGKILLs of the kill drill (0: skip it)")
    parser.add_argument("--only", help="run only the cases whose name holds this")
    parser.add_argument("--keep", help="work in this folder and keep it (default: a temporary one)")
    args = parser.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="attnseq-drill-"))
    drill = Drill(work)
    print(f"reliability drill in {work}: training the drill's small runs ...", flush=True)
    drill.prepare()
    counts: dict[str, int] = {}
    for case in drill.cases():
        if args.only and args.only not in case.name:
            continue
        outcome = case.run()
        counts[outcome.kind] = counts.get(outcome.kind, 0) + 1
        print(f"{outcome.kind:>11}  {case.name}: {outcome.detail}", flush=True)
    for name, outcome in server_drill(drill, args.only):
        counts[outcome.kind] = counts.get(outcome.kind, 0) + 1
        print(f"{outcome.kind:>11}  {name}: {outcome.detail}", flush=True)
    if args.kills:
        ok, detail = kill_drill(work, drill.data, args.kills)
        kind = "handled" if ok else "lost"
        counts[kind] = counts.get(kind, 0) + 1
        print(f"{kind:>11}  kill drill: {detail}", flush=True)
    tried = sum(counts.values())
    print(f"{tried} tried, {counts.get('clear error', 0)} clear errors, {counts.get('handled', 0)} handled, "
          f"{counts.get('traceback', 0)} tracebacks, {counts.get('silent', 0)} silent, {counts.get('lost', 0)} lost")
    return 1 if any(counts.get(k) for k in ("traceback", "silent", "lost")) else 0


if __name__ == "__main__":
    sys.exit(main())
