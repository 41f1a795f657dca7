"""Every file a command outputs goes through one writer (attnseq/files.py): written whole, never
over an input or a run's file, over an existing file or into a folder holding files only with
--overwrite; operating-system errors a user causes end as one line at the CLI's boundary."""

from __future__ import annotations

import ast
import errno
import os
import re
import stat
from pathlib import Path

import pytest
from helpers import ROOT, parsers, reverse_pairs, write_tsv

import attnseq.files
from attnseq.cli import COMMANDS, build_parser, main
from attnseq.errors import UserError
from attnseq.files import MANIFEST, check_folder, os_error_message, write_files, write_folder, write_output

PACKAGE = ROOT / "attnseq"


def one_error_line(capsys) -> str:
    """The one line the command printed on stderr (it must be exactly one, no traceback)."""
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("attnseq: error: "), err
    return err[0]


# -- the writer ----------------------------------------------------------------------------------
def test_write_output_creates_folders_and_leaves_no_temporary_file(tmp_path):
    path = write_output(tmp_path / "a" / "b" / "out.txt", "héllo\n")
    assert path.read_text(encoding="utf-8") == "héllo\n"
    assert write_output(tmp_path / "bytes.bin", b"\x00\x01").read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in (tmp_path / "a" / "b").iterdir()) == ["out.txt"]


def test_an_existing_file_is_replaced_only_with_overwrite(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("mine")
    with pytest.raises(UserError, match=rf"^{re.escape(str(path))}: exists; give --overwrite"):
        write_output(path, "new")
    assert path.read_text() == "mine"
    write_output(path, "new", overwrite=True)
    assert path.read_text() == "new"


@pytest.mark.parametrize("spelling", ["same", "dotted", "symlink", "hardlink"])
def test_an_input_is_never_written_over_however_it_is_named(tmp_path, spelling, monkeypatch):
    source = tmp_path / "in.txt"
    source.write_text("precious")
    target = {
        "same": source,
        "dotted": tmp_path / "." / "sub" / ".." / "in.txt",
        "symlink": tmp_path / "link.txt",
        "hardlink": tmp_path / "hard.txt",
    }[spelling]
    (tmp_path / "sub").mkdir()
    if spelling == "symlink":
        target.symlink_to(source)
    if spelling == "hardlink":
        os.link(source, target)
    monkeypatch.chdir(tmp_path)
    for given in (source, "in.txt"):  # the input given as an absolute or a relative path
        with pytest.raises(UserError, match="this is the input"):
            write_output(target, "translated", inputs=[given], overwrite=True)
    assert source.read_text() == "precious"


def test_a_folder_or_a_path_under_a_file_is_refused_by_name(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="a folder; give the path of a file"):
        write_output(tmp_path, "x")
    with pytest.raises(UserError, match=r"file/deeper/out.txt: .*file is a file, not a folder"):
        write_output(tmp_path / "file" / "deeper" / "out.txt", "x")
    with pytest.raises(UserError, match="a file, not a folder"):
        check_folder(tmp_path / "file")


def test_a_folder_holding_files_is_written_into_only_with_overwrite(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match=r"d: holds files already \(notes.txt\); give --overwrite"):
        write_files(tmp_path / "d", {"a.tsv": "1", "b.tsv": "2"})
    assert not (tmp_path / "d" / "a.tsv").exists()  # nothing written
    write_files(tmp_path / "d", {"a.tsv": "1", "b.tsv": "2"}, overwrite=True)
    assert (tmp_path / "d" / "notes.txt").read_text() == "mine"  # files of other names are kept
    # one file that may not be written stops all of them, before any is written
    (tmp_path / "e").mkdir()
    with pytest.raises(UserError, match="this is the input"):
        write_files(tmp_path / "e", {"a.tsv": "1", "in.tsv": "2"}, inputs=[tmp_path / "e" / "in.tsv"])
    assert list((tmp_path / "e").iterdir()) == []


def test_a_folder_output_appears_whole_and_replaces_only_an_earlier_one_of_its_kind(tmp_path):
    out = tmp_path / "model"
    write_folder(
        out, {"marker.json": "{}", "a.bin": b"1"}, lambda tmp: (tmp / "b.txt").write_text("2"), marker="marker.json"
    )
    listed = lambda: sorted(p.name for p in out.iterdir() if p.name != MANIFEST)  # noqa: E731
    assert listed() == ["a.bin", "b.txt", "marker.json"]
    assert (out / MANIFEST).read_text().split() == ["a.bin", "b.txt", "marker.json"]  # what the output is
    with pytest.raises(UserError, match=r"model: holds files already \(\.attnseq-output, a.bin, b.txt and 1 more\)"):
        write_folder(out, {"marker.json": "{}"}, marker="marker.json")
    (out / "my-notes.txt").write_text("the user's")  # put beside the output: no file of the command
    write_folder(out, {"marker.json": "{}", "c.bin": b"3"}, marker="marker.json", overwrite=True)
    assert listed() == ["c.bin", "marker.json", "my-notes.txt"]  # replaced, not written into; the user's kept
    assert (out / "my-notes.txt").read_text() == "the user's"
    (out / "my-notes.txt").unlink()

    def fail(tmp):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(UserError, match=f"^{re.escape(str(out))}: no space left on the device"):
        write_folder(out, {"marker.json": "{}"}, fail, marker="marker.json", overwrite=True)
    assert listed() == ["c.bin", "marker.json"]  # the earlier one, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # no temporary folder left
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    with pytest.raises(UserError, match="not an earlier output of this command"):
        write_folder(mine, {"marker.json": "{}"}, marker="marker.json", overwrite=True)
    with pytest.raises(UserError, match="holds the input"):
        write_folder(tmp_path, {"marker.json": "{}"}, marker="marker.json", inputs=[mine / "notes.txt"], overwrite=True)
    assert (mine / "notes.txt").read_text() == "keep"


@pytest.mark.parametrize(
    "code, words",
    [
        (errno.ENOSPC, "no space left on the device; free some space"),
        (errno.EROFS, "on a read-only file system; write somewhere else"),
        (errno.EACCES, "permission denied"),
    ],
)
def test_a_full_or_read_only_disk_is_one_line_naming_the_output(tmp_path, monkeypatch, code, words):
    def fail(path, data):
        raise OSError(code, os.strerror(code))  # as write() raises it: no file name

    monkeypatch.setattr(attnseq.files, "atomic_write_bytes", fail)
    with pytest.raises(UserError) as error:
        write_output(tmp_path / "out.txt", "x")
    assert str(error.value).startswith(f"{tmp_path / 'out.txt'}: {words}")


def test_os_error_messages_name_the_path_and_what_to_do(tmp_path):
    (tmp_path / "f").write_text("x")
    assert (
        os_error_message(FileExistsError(errno.EEXIST, "File exists", str(tmp_path / "f")))
        == f"{tmp_path / 'f'}: a file, not a folder; give a folder's path"
    )
    assert (
        os_error_message(NotADirectoryError(errno.ENOTDIR, "Not a directory", "f/x"))
        == "f/x: a part of the path is a file, not a folder; give a path under a folder"
    )
    assert os_error_message(OSError(errno.EBADF, "Bad file descriptor")) is None  # not the user's: a bug


# -- the error boundary ----------------------------------------------------------------------------
def raising(error):
    def run(args):
        raise error

    return run


@pytest.mark.parametrize(
    "error, line",
    [
        (
            OSError(errno.EROFS, "Read-only file system", "/mnt/x"),
            "attnseq: error: /mnt/x: on a read-only file system; write somewhere else",
        ),
        (
            PermissionError(errno.EACCES, "Permission denied", "/etc/shadow"),
            "attnseq: error: /etc/shadow: permission denied; check its permissions, or give another path",
        ),
        (
            IsADirectoryError(errno.EISDIR, "Is a directory", "data"),
            "attnseq: error: data: a folder, not a file; give a file",
        ),
        (
            UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"),
            "attnseq: error: an input file is not UTF-8 text (invalid start byte at byte 0); give a UTF-8 file",
        ),
    ],
)
def test_errors_a_user_causes_are_one_line_at_the_boundary(monkeypatch, capsys, error, line):
    from attnseq.cli import plot

    monkeypatch.setitem(plot.DRAW, "positional", raising(error))
    assert main(["plot", "positional"]) == 2
    assert capsys.readouterr().err.strip() == line


@pytest.mark.parametrize(
    "error", [OSError(errno.EBADF, "Bad file descriptor"), RuntimeError("a bug"), KeyError("a bug")]
)
def test_a_bug_still_shows_its_traceback(monkeypatch, error):
    from attnseq.cli import plot

    monkeypatch.setitem(plot.DRAW, "positional", raising(error))
    with pytest.raises(type(error)):
        main(["plot", "positional"])


@pytest.mark.parametrize(
    "argv, words",
    [
        (["data", "dates"], "data dates: the following arguments are required: --out (see attnseq data dates --help)"),
        (["data", "dates", "--out", "x", "--train", "-1"], "argument --train: expected a whole number >= 0, got -1"),
        (
            ["data", "split", "--input", "a", "--out", "x", "--dev", "-1"],
            "argument --dev: expected a fraction in [0, 1)",
        ),
        (["data", "split", "--input", "a", "--out", "x", "--test", "2.5"], "argument --test: expected a fraction in"),
        (["train", "--data", "-"], "--data -: training reads its data more than once; give a folder"),
        (["nope"], "invalid choice: 'nope'"),
        (["plot", "positional", "--bogus"], "unrecognized arguments: --bogus"),
        (["plot", "positional", "-q"], "-q goes before the command: attnseq -q COMMAND"),
        (["translate", "RUN", "--input", "a", "--po", "b.po"], "argument --po: not allowed with argument --input"),
    ],
)
def test_a_wrong_argument_is_one_line_and_status_2(argv, words, capsys):
    assert main(argv) == 2
    assert words in one_error_line(capsys)


# -- every command that writes -----------------------------------------------------------------------
def test_translate_refuses_to_write_over_its_input(tmp_path, capsys):
    source = tmp_path / "sentences.txt"
    source.write_text("abc\n")
    link = tmp_path / "link.txt"
    link.symlink_to(source)
    for output in (source, link):
        assert (
            main(["translate", str(tmp_path / "run"), "--input", str(source), "--output", str(output), "--overwrite"])
            == 2
        )
        assert "this is the input" in one_error_line(capsys)
    assert source.read_text() == "abc\n"
    (tmp_path / "out.txt").write_text("earlier")
    assert (
        main(["translate", str(tmp_path / "run"), "--input", str(source), "--output", str(tmp_path / "out.txt")]) == 2
    )  # refused before the run is even loaded
    assert "out.txt: exists; give --overwrite" in one_error_line(capsys)


def test_translate_never_writes_over_the_runs_files(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("model: {arch: rnn}\n")
    assert main(["translate", str(run), "--output", str(run / "config.yaml"), "--overwrite"]) == 2
    assert "this is the input" in one_error_line(capsys)
    assert main(["translate", str(run), "--po", "x.po", "--output", str(run / "best.safetensors")]) == 2
    assert "this is the input" in one_error_line(capsys)
    assert main(["translate", str(run), "--po", str(tmp_path / "x.po"), "--n-best", "2", "--output", "o.po"]) == 2
    assert "--po and --n-best" in one_error_line(capsys)


@pytest.mark.parametrize(
    "source",
    [
        ["dates", "--train", "6", "--dev", "2", "--test", "2"],
        ["copy", "--train", "6", "--dev", "2", "--test", "2", "--test-lengths", "12"],
        ["stories", "--train", "3", "--dev", "2", "--test", "2", "--kinds", "single"],
        ["documents", "--train", "6", "--dev", "2", "--test", "2"],
    ],
)
def test_data_refuses_a_folder_holding_files_without_overwrite(tmp_path, capsys, source):
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    assert main(["-q", "data", *source, "--out", str(out)]) == 2
    assert "holds files already (mine.txt); give --overwrite" in one_error_line(capsys)
    assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]
    assert main(["-q", "data", *source, "--out", str(out), "--overwrite"]) == 0
    assert {"train.tsv", "dev.tsv", "test.tsv", "mine.txt"} <= {p.name for p in out.iterdir()}
    (tmp_path / "file").write_text("x")
    for bad in (tmp_path / "file", tmp_path / "file" / "under"):
        assert main(["-q", "data", *source, "--out", str(bad)]) == 2
        assert "a file, not a folder" in one_error_line(capsys)


def test_data_split_never_writes_over_its_input(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    source = write_tsv(data / "train.tsv", reverse_pairs(30, seed=1))
    before = source.read_bytes()
    assert main(["-q", "data", "split", "--input", str(source), "--out", str(data), "--overwrite"]) == 2
    assert "train.tsv: this is the input" in one_error_line(capsys)
    assert source.read_bytes() == before and sorted(p.name for p in data.iterdir()) == ["train.tsv"]
    assert main(["-q", "data", "split", "--input", str(source), "--src", str(source), "--out", "x"]) == 2
    assert "--input and --src" in one_error_line(capsys)


def test_plot_refuses_an_existing_image_and_a_format_it_cannot_draw(tmp_path, capsys):
    out = tmp_path / "pe.png"
    assert main(["plot", "positional", "--out", str(out), "--positions", "8", "--dims", "8"]) == 0
    first = out.read_bytes()
    assert main(["plot", "positional", "--out", str(out), "--positions", "9", "--dims", "8"]) == 2
    assert "pe.png: exists; give --overwrite" in one_error_line(capsys)
    assert out.read_bytes() == first
    assert main(["plot", "positional", "--out", str(out), "--positions", "9", "--dims", "8", "--overwrite"]) == 0
    assert out.read_bytes() != first
    assert main(["plot", "positional", "--out", str(tmp_path / "pe.txt")]) == 2
    assert "cannot draw a .txt file" in one_error_line(capsys)
    assert main(["plot", "positional", "--out", str(tmp_path)]) == 2
    assert "a folder" in one_error_line(capsys)


@pytest.mark.parametrize(
    "argv, words",
    [
        (["plot", "positional", "--metric", "bleu"], "plot positional: --metric is for plot curve"),
        (["plot", "curve", "RUN", "--text", "x"], "plot curve: --text is for plot attention and memory"),
        (["plot", "positional", "RUN"], "plot positional: draws no run"),
        (["reproduce", "--list", "book-ch8"], "reproduce --list and book-ch8"),
    ],
)
def test_a_flag_the_chosen_mode_ignores_is_refused_by_name(argv, words, capsys):
    assert main(argv) == 2
    assert words in one_error_line(capsys)


def test_reproduce_refuses_to_replace_an_earlier_page_before_it_trains(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "README.md").write_text("# my project\n")
    assert main(["reproduce", "nadaraya-watson", "--out", str(out), "--runs", str(tmp_path / "runs")]) == 2
    assert "README.md: exists; give --overwrite" in one_error_line(capsys)
    assert not (tmp_path / "runs").exists()  # nothing trained
    (out / "README.md").unlink()
    (out / "nadaraya-watson-fit.png").write_bytes(b"earlier")
    assert main(["reproduce", "nadaraya-watson", "--out", str(out), "--runs", str(tmp_path / "runs")]) == 2
    assert "nadaraya-watson-fit.png: exists; give --overwrite" in one_error_line(capsys)


def test_demo_refuses_a_folder_holding_files_before_it_trains(tmp_path, capsys):
    (tmp_path / "mine.txt").write_text("keep")
    assert main(["demo", "--out", str(tmp_path)]) == 2
    assert "holds files already (mine.txt); give --overwrite" in one_error_line(capsys)


# -- mechanical checks over the source --------------------------------------------------------------
WRITES = {"write_text", "write_bytes", "savefig", "to_csv", "atomic_write", "atomic_write_text", "atomic_write_bytes"}
MOVES = {
    ("os", "replace"),
    ("os", "rename"),
    ("shutil", "copyfile"),
    ("shutil", "copy"),
    ("shutil", "copy2"),
    ("shutil", "copytree"),
    ("shutil", "move"),
}
# the writer (files.py) and the atomic write it ends in (utils.py: a temporary file, synced, renamed)
WRITER = {"files.py", "utils.py"}
# the writes outside the writer that are not a user's output: (file, call) -> how many, and why
NOT_OUTPUTS = {
    # a figure rendered into memory; its bytes go through write_output
    ("viz/__init__.py", "savefig"): 1,
    # a WAV file's bytes made in memory (wave.open on a BytesIO); data speech writes them through write_output
    ("data/audio.py", "open"): 1,
    # a run's own files, written by training into the folder runs.prepare_run_dir guards
    # (refused unless --resume or --overwrite): checkpoints, the metrics log, the vocabularies,
    # the text pipeline (pipeline.json)
    ("runs.py", "atomic_write"): 1,
    ("runs.py", "atomic_write_bytes"): 1,
    ("runs.py", "write_text"): 1,
    ("runs.py", "open"): 2,  # the log; the lock
    ("config.py", "atomic_write_text"): 1,
    ("data/vocab.py", "atomic_write_text"): 1,
    ("data/subword.py", "atomic_write_bytes"): 1,
    ("data/pipeline.py", "atomic_write_text"): 1,
    # the training data prepared once, in the cache (data.prepare), never where a user points: a
    # store's arrays and manifest, written in a folder of its own and renamed into place whole
    # (the pipeline's too); the parts the workers write; the lock; the data files' digests
    ("data/store.py", "open"): 1,
    ("data/store.py", "atomic_write_text"): 1,
    ("data/prepare.py", "open"): 3,
    ("data/prepare.py", "os.replace"): 2,
    ("data/texts.py", "atomic_write_text"): 1,
}


def writes_in(path: Path) -> list[tuple[str, int]]:
    """(call, line) of every call in ``path`` that writes a file: open() with a writing mode,
    write_text/write_bytes/savefig/to_csv, the atomic writers, os's renames and shutil's copies."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        owner = getattr(getattr(node.func, "value", None), "id", None)  # os in os.replace
        if (owner, name) in MOVES:
            found.append((f"{owner}.{name}", node.lineno))
            continue
        if name == "open":
            mode = (
                node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"), None)
            )
            if isinstance(mode, ast.Constant) and not set(str(mode.value)) & set("wax+"):
                continue  # reading
            if mode is None:
                continue
        elif name not in WRITES:
            continue
        found.append((name, node.lineno))
    return found


def test_every_file_written_goes_through_the_writer():
    counts: dict[tuple[str, str], list[int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        if where in WRITER:
            continue
        for name, line in writes_in(path):
            counts.setdefault((where, name), []).append(line)
    stray = [
        f"attnseq/{where}:{lines[0]}: {name}() writes a file; write through attnseq.files.write_output"
        for (where, name), lines in counts.items()
        if len(lines) > NOT_OUTPUTS.get((where, name), 0)
    ]
    assert not stray, "\n".join(stray)
    gone = [key for key in NOT_OUTPUTS if key not in counts]
    assert not gone, f"listed as allowed but no longer there (remove them from NOT_OUTPUTS): {gone}"


# flags of other programs the code runs
FOREIGN_FLAGS = {
    "--short": "git rev-parse --short",
    "--porcelain": "git status --porcelain",
    "--format": "git log --format",
    "--nproc_per_node": "torchrun",
    "--stdout": "espeak-ng --stdout",
}
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9_]*(?:-[a-z0-9_]+)*")
COMMAND = re.compile(r"attnseq ([a-z][a-z-]*(?: [a-z][a-z-]*)?)")


def test_every_flag_a_message_names_exists_on_its_command():
    """A message (or help) that names ``--flag`` names one its command has: the command named
    before it on its line (``attnseq train --out``), else the command of its cli/ module, else
    some command."""
    commands: dict[str, set[str]] = {}  # flag -> the command paths that have it ("data split", "")
    for path, parser in parsers(build_parser()):
        for action in parser._actions:
            for flag in action.option_strings:
                commands.setdefault(flag, set()).add(path.removeprefix("attnseq").strip())
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE)
        module_command = where.stem if where.parent.name == "cli" and where.stem in COMMANDS else None
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            for match in FLAG.finditer(node.value):
                flag = match.group(0)
                if flag in FOREIGN_FLAGS:
                    continue
                line = node.value[node.value.rfind("\n", 0, match.start()) + 1 : match.start()]
                named = [m.group(1) for m in COMMAND.finditer(line)]  # a command named before it on its line
                command = named[-1] if named else module_command
                owners = commands.get(flag, set())
                if command is not None:  # on that command, one of its subcommands, or the top level
                    owners = {
                        c
                        for c in owners
                        if c == "" or c == command or c.startswith(command + " ") or command.startswith(c + " ") and c
                    }
                if not owners:
                    wrong.append(
                        f"attnseq/{where}:{node.lineno}: {flag} is not a flag of "
                        f"{'attnseq ' + command if command else 'any command'}"
                    )
    assert not wrong, "\n".join(wrong)


@pytest.mark.skipif(os.geteuid() != 0, reason="making device nodes (mknod) needs root")
def test_a_device_is_written_into_never_replaced(tmp_path):
    """An output that is a device (a copy of /dev/null, of /dev/full) or a pipe is a stream: written
    into without --overwrite, never renamed over; a full device is one line naming it."""
    null, full = tmp_path / "null", tmp_path / "full"
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    os.mknod(full, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    assert write_output(null, "x\n") == null and stat.S_ISCHR(null.stat().st_mode)
    with pytest.raises(UserError, match=f"^{full}: no space left on the device"):
        write_output(full, "x\n", overwrite=True)
    assert stat.S_ISCHR(full.stat().st_mode)


def _writers(tmp_path: Path) -> dict:
    """Each writer of a user's path, as (name, write(path, text, overwrite)): the file writer, the
    all-together folder writer, the streaming writer and the folder-output writer (its path a
    folder; the text goes to its file 'm')."""
    from attnseq.files import open_outputs

    def streamed(path, text, overwrite):
        with open_outputs(path.parent, [path.name], overwrite=True) as streams:
            streams[path.name].write(text)

    return {
        "write_output": lambda path, text, overwrite: write_output(path, text, overwrite=overwrite),
        "write_files": lambda path, text, overwrite: write_files(path.parent, {path.name: text}, overwrite=True),
        "open_outputs": streamed,
    }


@pytest.mark.parametrize("writer", ["write_output", "write_files", "open_outputs"])
@pytest.mark.parametrize("chain", [1, 2])
def test_a_symbolic_link_is_written_through_and_stays_a_link(tmp_path, writer, chain):
    """A file output that is a symbolic link (or a chain of them) keeps the link: the file it points
    at takes the bytes, as a shell's '>' does, an existing target replaced only with --overwrite
    (write_output's rule) and a dangling link's target made; nothing temporary is left."""
    write = _writers(tmp_path)[writer]
    (tmp_path / "elsewhere").mkdir()
    target = tmp_path / "elsewhere" / "target.txt"
    target.write_text("old")
    link = tmp_path / "out" / "link.txt"
    link.parent.mkdir()
    hops = [link] + [tmp_path / f"hop{i}" for i in range(1, chain)]
    for here, there in zip(hops, [*hops[1:], target]):
        os.symlink(there, here)
    if writer == "write_output":
        with pytest.raises(UserError, match="exists; give --overwrite"):
            write(link, "new", False)
        assert target.read_text() == "old"
    write(link, "new", True)
    assert link.is_symlink() and target.read_text() == "new"
    dangling = tmp_path / "out" / "dangling.txt"
    os.symlink(tmp_path / "elsewhere" / "made.txt", dangling)
    write(dangling, "made", False)
    assert dangling.is_symlink() and (tmp_path / "elsewhere" / "made.txt").read_text() == "made"
    left = [p.name for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]
    assert left == []


def test_a_looping_link_or_a_link_to_a_folder_is_refused_by_name(tmp_path):
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    with pytest.raises(UserError, match=f"^{loop}: a symbolic link that loops"):
        write_output(loop, "x", overwrite=True)
    (tmp_path / "folder").mkdir()
    to_folder = tmp_path / "to-folder"
    os.symlink(tmp_path / "folder", to_folder)
    with pytest.raises(UserError, match=f"^{to_folder}: a folder"):
        write_output(to_folder, "x", overwrite=True)


def test_a_folder_output_through_a_link_is_made_where_the_link_points(tmp_path):
    """write_folder (an export, an average) at a symbolic link to a folder makes the folder it
    points at anew and leaves the link in place."""
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    os.symlink(real, link)
    write_folder(link, {"m": "1"}, marker="m")
    write_folder(link, {"m": "2"}, marker="m", overwrite=True)
    assert link.is_symlink() and (real / "m").read_text() == "2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real"]


@pytest.mark.parametrize("names", [["a.tsv"], ["images/train/000001.png", "images/dev/000002.png", "train.tsv"]])
def test_a_killed_writers_temporaries_are_cleared_by_the_rerun_in_subfolders_too(tmp_path, names):
    """write_files into a folder (and its subfolders: a formula data set's images/SPLIT/NNNNNN.png)
    after a writer killed outright: its temporaries, named after the file and a process that is
    gone, are removed; a live process's and another file's are left alone."""
    import subprocess
    import sys

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead, alive = int(gone.stdout), os.getppid()
    left, kept = [], []
    for name in names:
        path = tmp_path / "out" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        left.append(path.parent / f".{path.name}.{dead}-abc123.tmp")
        kept.append(path.parent / f".{path.name}.{alive}-abc123.tmp")  # a live process writes it now
        kept.append(path.parent / f".other.{dead}-abc123.tmp")  # not one of the files written
    for entry in left + kept:
        entry.write_bytes(b"half")
    write_files(tmp_path / "out", {name: "x\n" for name in names}, overwrite=True)
    assert not any(entry.exists() for entry in left)
    assert all(entry.exists() for entry in kept)
    assert all((tmp_path / "out" / name).read_text() == "x\n" for name in names)
