"""Property-based tests (Hypothesis): whatever a user types or feeds, the command line ends in a
right answer or one clear line.

- argument lists drawn from the parser itself (every command that is fast with bad input; the
  run and data folders given are never valid, so nothing trains), with values that are files,
  folders, missing paths, paths under a file, numbers and garbage: status 0, or 2 with one
  ``attnseq: error:`` line and no traceback;
- TSV files of any bytes fed to ``data split``: a split, or one line naming the file;
- gettext catalogs written by polib (and damaged ones) fed to ``data gettext``: a data folder,
  or one line naming the catalog;
- YAML configs over real and unknown keys, given twice, of wrong types, empty: a Config, or a
  ConfigError naming the key or the file.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import tempfile
from pathlib import Path

import pytest
from helpers import parsers
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from attnseq.cli import build_parser, main
from attnseq.config import DataConfig, DecodeConfig, RNNConfig, TrainConfig, TransformerConfig, load_config
from attnseq.errors import ConfigError

# a few seconds each in the fast suite; ATTNSEQ_EXAMPLES=2000 searches longer
FAST = settings(
    max_examples=int(os.environ.get("ATTNSEQ_EXAMPLES", 40)),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def run_main(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    """``attnseq.cli.main(argv)`` in ``cwd``: (status, stdout, stderr). It must return, not raise."""
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(argv)
    finally:
        os.chdir(here)
    return status, out.getvalue(), err.getvalue()


def assert_one_clear_line(status: int, err: str, argv) -> str | None:
    """Status 0, or 2 with the last stderr line the only ``attnseq:`` one; no traceback. The line."""
    assert status in (0, 2), (argv, status, err)
    assert "Traceback" not in err, (argv, err)
    if status == 0:
        return None
    lines = err.strip().splitlines()
    ours = [line for line in lines if line.startswith("attnseq:")]
    assert len(ours) == 1 and lines[-1] == ours[0] and ours[0].startswith("attnseq: error: "), (argv, err)
    return ours[0]


# -- a small world of paths to give as arguments -----------------------------------------------------
def make_world(root: Path) -> dict[str, str]:
    """Paths of every kind a user may give: files (text, TSV, not UTF-8, empty), folders (empty,
    holding files but never a valid data folder or run), missing, under a file, a symlink."""
    (root / "pairs.tsv").write_text("abc\tcba\nde\ted\nfgh\thgf\nij\tji\nklm\tmlk\n", encoding="utf-8")
    (root / "notes.txt").write_text("hello\nworld\n", encoding="utf-8")
    (root / "binary.bin").write_bytes(b"\xff\xfe\x00garbage\n")
    (root / "empty.txt").write_bytes(b"")
    (root / "config.yaml").write_text("model:\n  hidden_size: 3\n  hidden_size: 4\n", encoding="utf-8")
    (root / "emptydir").mkdir()
    (root / "full").mkdir()
    (root / "full" / "dev.tsv").write_text("a\tb\n", encoding="utf-8")  # no train.tsv: never trains
    (root / "full" / "config.yaml").write_text("", encoding="utf-8")  # an empty config: never a run
    (root / "link.tsv").symlink_to(root / "pairs.tsv")
    return {
        "file": "pairs.tsv",
        "text": "notes.txt",
        "binary": "binary.bin",
        "empty": "empty.txt",
        "yaml": "config.yaml",
        "emptydir": "emptydir",
        "folder": "full",
        "missing": "nothing/here",
        "under a file": "notes.txt/inside",
        "symlink": "link.tsv",
        "png": "missing.png",
        "folder file": "full/dev.tsv",
        "dot": ".",
    }


PATH_DESTS = {
    "out",
    "output",
    "input",
    "src",
    "tgt",
    "file",
    "data",
    "po",
    "html",
    "runs",
    "run",
    "config",
    "configs",
    "paths",
}
# values that keep a command fast (no large generation, no real catalog or reproduction)
SMALL = {
    "train": st.integers(-2, 40),
    "dev": st.one_of(st.integers(-1, 8), st.floats(-1, 2)),
    "test": st.one_of(st.integers(-1, 8), st.floats(-1, 2)),
    "dev_size": st.integers(-1, 8),
    "positions": st.integers(-1, 12),
    "dims": st.integers(-1, 12),
    "bits": st.integers(-1, 10),
    "levels": st.integers(-1, 40),
    "port": st.integers(-5, 70000),
    "threads": st.integers(-1, 3),
    "seeds": st.integers(-1, 2),
    "beam": st.integers(-1, 3),
    "n_best": st.integers(-1, 3),
    "hyp": st.integers(-1, 3),
    "max_chars": st.integers(-1, 50),
    "max_beam": st.integers(-1, 4),
    "minutes": st.floats(-1, 1),
    "budget_minutes": st.floats(-1, 1),
    "max_minutes": st.floats(-1, 1),
    "lengths": st.sampled_from(["1-3", "2-4", "0-2", "5-1", "x", "3"]),
    "test_lengths": st.sampled_from(["5", "4,6", "", "x", "-1"]),
    "repeats": st.sampled_from(["1-2", "2-3", "0-1", "a"]),
    "sentences": st.sampled_from(["1-3", "2-2", "3-1", "z"]),
    "locales": st.sampled_from(["en", "de,fr", "xx", "", "all,en"]),
    "kinds": st.sampled_from(["single", "two,counting", "nope", ""]),
    "lang": st.sampled_from(["zz", "qq_ZZ", ""]),
    "name": st.sampled_from(["no-such-claim", "x", ""]),
    "set": st.sampled_from(["train.epochs=1", "nope=1", "model.hidden_size=x", "=", "decode.beam_size=0"]),
    "layer": st.sampled_from(["1", "all", "avg", "0", "x"]),
    "head": st.sampled_from(["1", "all", "avg", "-2"]),
    "metric": st.sampled_from(["bleu", "loss", "nope"]),
    "text": st.text(max_size=8),
    "host": st.sampled_from(["127.0.0.1", "no.such.host.invalid"]),
}
GARBAGE = st.sampled_from(["", "-", "--", "x", "1e999", "nan", "-7", "0", "é"])
# arguments always given to commands whose defaults take minutes (20,000 formulas drawn, 13,500
# utterances spoken), and flags never drawn (reproduce --all trains every reproduction; its
# refusals are tests/test_reproduce.py's)
ALWAYS = {("data", "formulas"): {"train", "dev", "test"}, ("data", "speech"): {"train", "dev", "test"}}
NEVER = {("reproduce",): {"all"}}


def fast_commands() -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """(command words, parser) of every leaf command that ends quickly on bad input: not demo (it
    trains into any fresh folder); reproduce only with names that are not reproductions."""
    leaves = []
    for path, parser in parsers(build_parser()):
        words = tuple(path.split()[1:])
        has_sub = any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)
        if words and not has_sub and words[0] != "demo":
            leaves.append((words, parser))
    return leaves


COMMANDS = fast_commands()


@st.composite
def command_lines(draw, world: dict[str, str]) -> list[str]:
    """An argument list for one command: its words, then positionals and a random subset of its
    optional arguments (sometimes a made-up flag, a missing value), values drawn per argument."""
    words, parser = draw(st.sampled_from(COMMANDS))
    paths = st.sampled_from(sorted(world.values()))

    def value(action) -> str:
        if action.choices is not None and draw(st.booleans()):
            return str(draw(st.sampled_from(list(action.choices))))
        if action.dest in PATH_DESTS:
            return draw(paths)
        if action.dest in SMALL:
            return str(draw(SMALL[action.dest]))
        return draw(GARBAGE)

    argv = list(words)
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction,)) or action.dest == "func":
            continue
        if not action.option_strings:  # a positional
            if action.nargs in ("?", "*") and draw(st.booleans()):
                continue
            count = draw(st.integers(1, 2)) if action.nargs in ("+", "*") else 1
            argv += [value(action) for _ in range(count)]
        elif action.dest in NEVER.get(words, ()):
            continue
        elif (
            draw(st.integers(0, 3)) == 0
            or (action.required and draw(st.integers(0, 5)) > 0)
            or action.dest in ALWAYS.get(words, ())
        ):
            flag = draw(st.sampled_from(action.option_strings))
            if action.nargs == 0:
                argv.append(flag)
            else:
                count = draw(st.integers(1, 2)) if action.nargs == "+" else 1
                argv += [flag, *(value(action) for _ in range(count))]
    if draw(st.integers(0, 9)) == 0:
        argv.insert(draw(st.integers(0, len(argv))), draw(st.sampled_from(["--bogus", "-z", "--out"])))
    if draw(st.integers(0, 3)) == 0:
        argv.insert(0, "-q")
    return argv


@FAST
@given(data=st.data())
def test_any_command_line_ends_in_a_result_or_one_clear_line(data):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        world = make_world(root)
        argv = data.draw(command_lines(world), label="argv")
        status, _, err = run_main(argv, root)
        assert_one_clear_line(status, err, argv)
        assert (root / "pairs.tsv").read_text(encoding="utf-8").startswith("abc\tcba\n"), argv  # inputs intact


# -- TSV files into data split -------------------------------------------------------------------------
FIELD = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
LINE = st.one_of(
    st.tuples(FIELD, FIELD).map(lambda p: f"{p[0]}\t{p[1]}"),  # a pair
    FIELD,  # no tab
    st.lists(FIELD, min_size=3, max_size=4).map("\t".join),  # too many tabs
    st.just(""),
    st.just("   "),  # blank
    st.sampled_from(["source\ttarget", "src\ttgt", "en\tde"]),  # a header
    st.tuples(FIELD, FIELD).map(lambda p: f"{p[0]}\x00\t{p[1]}"),  # a NUL
    st.just("x" * 20000 + "\t" + "y" * 20000),  # a huge line
)


@st.composite
def tsv_bytes(draw) -> bytes:
    lines = draw(st.lists(LINE, max_size=30))
    ending = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    text = ending.join(lines) + (ending if lines and draw(st.booleans()) else "")
    data = text.encode("utf-8")
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data  # a byte-order mark
    if draw(st.integers(0, 7)) == 0:  # a byte that is not UTF-8 somewhere
        at = draw(st.integers(0, len(data)))
        data = data[:at] + b"\xff" + data[at:]
    return data


@FAST
@given(content=tsv_bytes())
def test_data_split_of_any_tsv_writes_a_split_or_names_the_file(content):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "in.tsv").write_bytes(content)
        argv = ["-q", "data", "split", "--input", "in.tsv", "--out", "out"]
        status, _, err = run_main(argv, root)
        line = assert_one_clear_line(status, err, argv)
        if status == 0:
            from attnseq.data.corpus import read_tsv

            assert all(read_tsv(root / "out" / f"{split}.tsv") for split in ("train", "dev", "test"))
        else:
            assert "in.tsv" in line, line
            assert not (root / "out").exists()  # nothing half-written
        assert (root / "in.tsv").read_bytes() == content


# -- gettext catalogs into data gettext -------------------------------------------------------------
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), max_size=15)
ENTRY = st.fixed_dictionaries(
    {
        "msgid": st.one_of(TEXT, st.sampled_from(["Open file", "Save %s", "Quit", "a\nb"])),
        "msgstr": st.one_of(TEXT, st.sampled_from(["Datei öffnen", "%s speichern", "Beenden", ""])),
        "plural": st.booleans(),
        "fuzzy": st.booleans(),
        "obsolete": st.booleans(),
    }
)


@st.composite
def po_bytes(draw) -> bytes:
    import polib

    catalog = polib.POFile()
    catalog.metadata = {"Content-Type": "text/plain; charset=UTF-8", "Plural-Forms": "nplurals=2; plural=(n != 1);"}
    seen = set()
    for entry in draw(st.lists(ENTRY, max_size=12)):
        if not entry["msgid"] or entry["msgid"] in seen:
            continue
        seen.add(entry["msgid"])
        options = {"msgid": entry["msgid"], "obsolete": entry["obsolete"], "flags": ["fuzzy"] if entry["fuzzy"] else []}
        if entry["plural"]:
            options.update(msgid_plural=entry["msgid"] + "s", msgstr_plural={0: entry["msgstr"], 1: entry["msgstr"]})
        else:
            options["msgstr"] = entry["msgstr"]
        catalog.append(polib.POEntry(**options))
    data = str(catalog).encode("utf-8")
    damage = draw(st.integers(0, 5))
    if damage == 0:  # cut short
        data = data[: draw(st.integers(0, len(data)))]
    elif damage == 1:  # a byte that is not UTF-8
        at = draw(st.integers(0, len(data)))
        data = data[:at] + b"\xff\xfe" + data[at:]
    return data


@FAST
@given(content=po_bytes(), suffix=st.sampled_from([".po", ".mo"]))
def test_data_gettext_of_any_catalog_writes_a_folder_or_names_the_file(content, suffix):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / f"de{suffix}").write_bytes(content)
        argv = ["-q", "data", "gettext", "--lang", "de", "--from", f"de{suffix}", "--out", "out"]
        status, _, err = run_main(argv, root)
        line = assert_one_clear_line(status, err, argv)
        if status == 0:
            assert all((root / "out" / f"{split}.tsv").stat().st_size for split in ("train", "dev", "test"))
        else:
            assert f"de{suffix}" in line, line


# -- YAML configs -------------------------------------------------------------------------------------
SECTIONS = {"data": DataConfig, "model": RNNConfig, "train": TrainConfig, "decode": DecodeConfig}
KEYS = {name: [f for f in cls.__dataclass_fields__] + ["nope"] for name, cls in SECTIONS.items()}
KEYS["model"] += list(TransformerConfig.__dataclass_fields__)
VALUE = st.one_of(
    st.integers(-3, 600),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.sampled_from(
        [
            "lstm",
            "transformer",
            "rnn",
            "general",
            "x",
            "",
            "noam",
            "1e-3",
            "[1, 2]",
            "{name: local_p, window: 3}",
            "{name: nope}",
            "yes",
        ]
    ),
    st.lists(st.integers(0, 3), max_size=2),
)


@st.composite
def yaml_text(draw) -> str:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(st.sampled_from(["", "# nothing\n", "---\n", "[1, 2]\n", "just text\n", "model: [\n", "a: b: c\n"]))
    lines = []
    for section in draw(st.lists(st.sampled_from([*SECTIONS, "engine", "extra"]), max_size=5)):
        if section == "engine":
            lines.append(f"engine: {draw(st.sampled_from(['torch', 'numpy', 'tpu', '3']))}")
            continue
        lines.append(f"{section}:")
        for key in draw(st.lists(st.sampled_from(KEYS.get(section, ["x", "y"])), max_size=4)):
            raw = draw(VALUE)
            text = raw if isinstance(raw, str) else json.dumps(raw)
            lines.append(f"  {key}: {text}")
    return "\n".join(lines) + "\n"


@FAST
@given(text=yaml_text())
def test_any_yaml_config_is_a_config_or_a_config_error_naming_the_key_or_file(text):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "c.yaml"
        path.write_text(text, encoding="utf-8")
        try:
            config = load_config(path)
        except ConfigError as err:
            message = str(err)
            assert "\n" not in message
            assert (err.key and err.key.split(".")[-1] in message) or str(path) in message, (text, message, err.key)
        else:
            assert config.to_dict()  # a whole Config


@pytest.mark.parametrize(
    "text, words, key",
    [
        (
            "model:\n  hidden_size: 8\n  cell: gru\n  hidden_size: 9\n",
            ":4: model.hidden_size is given twice (first on line 2)",
            "model.hidden_size",
        ),
        ("train:\n  epochs: 1\ntrain:\n  lr: 0.1\n", ":3: train is given twice (first on line 1)", "train"),
        ("", ": an empty config", None),
        ("# only a comment\n", ": an empty config", None),
    ],
)
def test_a_key_given_twice_or_an_empty_config_is_refused(tmp_path, text, words, key):
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert str(error.value).startswith(f"{path}{words}") and error.value.key == key


# -- the process's own settings: standard output's encoding, matplotlib's backend ----------------------


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(st.characters(exclude_categories=["Cs"]), max_size=12),
    encoding=st.sampled_from(["ascii", "latin-1", "cp1252", "utf-8", "US-ASCII"]),
)
def test_an_output_standard_outputs_encoding_cannot_hold_is_one_line(text, encoding):
    """Whatever a command prints, to a standard output of whatever encoding (PYTHONIOENCODING=ascii
    made translate end in UnicodeEncodeError's traceback): printed, or exit 2 in one line naming
    the encoding and the character."""
    from attnseq.cli import translate

    stdout = io.TextIOWrapper(io.BytesIO(), encoding=encoding)
    err = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(err):
        patch.setattr(translate, "run", lambda args: print(text))
        status = main(["translate", "some-run"])
    line = assert_one_clear_line(status, err.getvalue(), text)
    try:
        text.encode(encoding)
    except UnicodeEncodeError as refused:
        assert line is not None and f"standard output's encoding, {stdout.encoding} " in line
        assert ascii(text[refused.start]) in line and "PYTHONIOENCODING=utf-8" in line
    else:
        assert status == 0


@pytest.mark.slow  # a process of its own: matplotlib reads the variable when first imported (2 s)
def test_a_backend_matplotlib_does_not_know_does_not_stop_a_plot(tmp_path):
    """MPLBACKEND=nonsense made matplotlib's import raise ValueError; attnseq draws to files with
    Agg whatever the variable says."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "attnseq.cli", "plot", "positional", "--out", str(tmp_path / "p.png")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "MPLBACKEND": "nonsense"},
        cwd=Path(__file__).parent.parent,
    )
    assert done.returncode == 0 and (tmp_path / "p.png").stat().st_size > 0, done.stderr[-2000:]


def test_an_openmp_affinity_torch_could_hang_on_is_one_line(monkeypatch, tmp_path):
    """GOMP_CPU_AFFINITY=abc made any command hang for ever as it imported torch (its OpenMP
    runtime's parser loops): refused in one line before anything imports torch."""
    monkeypatch.setenv("GOMP_CPU_AFFINITY", "abc")
    status, _, err = run_main(["translate", "no-such-run"], tmp_path)
    line = assert_one_clear_line(status, err, "GOMP_CPU_AFFINITY=abc")
    assert status == 2 and line.startswith("attnseq: error: GOMP_CPU_AFFINITY='abc': not a list of CPUs")


@pytest.mark.slow  # a process importing torch each example (about 1.5 s)
@settings(max_examples=12, deadline=None)
@given(value=st.text(st.sampled_from("0123456789 ,-:.x"), min_size=1, max_size=8))
@example(value="0 3 1-2 4-15:2")
@example(value="\uff10")  # a digit of another script: it hangs
def test_an_openmp_affinity_attnseq_accepts_never_hangs_torchs_import(value):
    """Every value of GOMP_CPU_AFFINITY the check lets through is one torch imports with (the
    check's grammar is GNU OpenMP's documented one; outside it some values loop for ever)."""
    import subprocess
    import sys

    from attnseq.errors import UserError
    from attnseq.threads import check_openmp_environment

    try:
        check_openmp_environment({"GOMP_CPU_AFFINITY": value})
    except UserError:
        return
    done = subprocess.run(
        [sys.executable, "-c", "import torch; torch.ones(4096).add_(1)"],
        capture_output=True,
        timeout=60,
        env={**os.environ, "GOMP_CPU_AFFINITY": value},
    )
    assert done.returncode == 0, (value, done.stderr[-500:])


@settings(max_examples=200, deadline=None)
@given(
    value=st.one_of(
        st.integers(0, 10**6).map(str),
        st.lists(st.integers(0, 5000), min_size=1, max_size=3).map(lambda ns: ",".join(map(str, ns))),
        st.text(max_size=8),
    )
)
@example(value="100000")  # torch's OpenMP runtime failed to create its threads and ended the process
def test_an_omp_num_threads_no_machine_runs_is_one_line(value):
    """OMP_NUM_THREADS, whatever it holds: accepted unless one of its numbers (a nested list such as
    "4,2" has several) asks for more than threads.MAX_THREADS threads; that is a UserError
    naming the variable, before torch creates them."""
    from attnseq.errors import UserError
    from attnseq.threads import MAX_THREADS, check_openmp_environment
    from attnseq.utils import whole_number

    too_many = any((n := whole_number(part)) is not None and n > MAX_THREADS for part in value.split(","))
    if too_many:
        with pytest.raises(UserError, match=r"^OMP_NUM_THREADS=.*: more threads than attnseq runs"):
            check_openmp_environment({"OMP_NUM_THREADS": value})
    else:
        check_openmp_environment({"OMP_NUM_THREADS": value})


def _refused_memory():
    """What torch's CPU allocator raises when the system refuses it memory (as ulimit -v made
    translate --beam 100000 raise; a traceback before)."""
    import torch

    try:
        torch.empty(1 << 62, dtype=torch.uint8)
    except RuntimeError as err:
        return err
    raise AssertionError("an exbibyte tensor was allocated")


@pytest.mark.parametrize(
    "raised, said",
    [
        (_refused_memory, "out of memory (4,294,967,296.00 GiB asked at once)"),
        (lambda: MemoryError(), "out of memory (MemoryError)"),
        (lambda: __import__("numpy").empty(1 << 62, dtype="uint8"), "out of memory (Unable to allocate"),
    ],
)
def test_memory_the_system_refuses_is_one_line_saying_what_to_ask_less_of(raised, said, tmp_path):
    """Memory asked of the system and refused (torch's allocator, NumPy's, Python's MemoryError):
    exit 2 in one line saying how much was asked and which settings ask for less."""
    from attnseq.cli import translate

    def run(args):
        found = raised()
        raise found if isinstance(found, BaseException) else AssertionError("allocated")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(translate, "run", run)
        status, _, err = run_main(["translate", "some-run"], tmp_path)
    line = assert_one_clear_line(status, err, said)
    assert status == 2 and line.startswith(f"attnseq: error: {said}") and "decode.beam_size" in line, line


def test_another_runtime_error_is_still_a_bugs_traceback(tmp_path):
    from attnseq.cli import translate

    def run(args):
        raise RuntimeError("shape mismatch")

    with pytest.MonkeyPatch.context() as patch, pytest.raises(RuntimeError, match="shape mismatch"):
        patch.setattr(translate, "run", run)
        run_main(["translate", "some-run"], tmp_path)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    value=st.one_of(st.integers(-3, 2000).map(str), st.text(max_size=6)),
    command=st.sampled_from(["workers", "threads"]),
)
@example(value="\u0663", command="threads")
@example(value="1025", command="threads")
@example(value="3", command="workers")
def test_a_count_of_processes_or_threads_is_done_or_one_line(value, command, tmp_path_factory):
    """data --workers and reproduce --threads, whatever they are given (on a machine of 2 CPUs):
    the data written or the reproduction started, or exit 2 in one line naming the option; past
    the CPUs (workers) or 1,024 (threads) never reaches a pool or torch."""
    import attnseq.hardware
    import attnseq.reproduce

    folder = tmp_path_factory.mktemp("counts")
    argv = (
        ["data", "dates", "--train", "40", "--dev", "5", "--test", "5", "--out", str(folder / "d"), "--workers"]
        if command == "workers"
        else ["reproduce", "placement", "--out", str(folder / "p"), "--threads"]
    )
    started = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(attnseq.hardware, "usable_cpus", lambda: 2)
        patch.setattr(attnseq.reproduce, "reproduce", lambda *args, threads, **kwargs: started.append(threads))
        status, _, err = run_main([*argv, value], folder)
    line = assert_one_clear_line(status, err, [*argv, value])
    try:
        number = int(value)  # (as argparse reads both: "٣", "1_0" and " 2" are numbers too)
    except ValueError:
        number = None
    fits = number is not None and 1 <= number <= (2 if command == "workers" else 1024)
    if line is not None:
        assert "--workers" in line or "--threads" in line, line
    assert (status == 0) == fits, (value, line)
    assert started == ([number] if fits and command == "threads" else [])
