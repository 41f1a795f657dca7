"""Writing what a command outputs: the one writer of every file a user names (``--out``,
``--output``, ``--html``), and the one line an operating-system error becomes (attnseq.errors).

The rule, the same for every command:

- a file is written whole or not at all (a temporary file in the same folder, synced, then
  renamed over the path), missing folders above it are created;
- a path that is a symbolic link is written through: its target takes the bytes and the link
  stays (a link that loops is refused by name), as a shell's ``>`` does;
- never over one of the command's inputs (the same file, however it is reached: a symlink, a
  hard link, another spelling of the path), whatever ``overwrite`` says;
- an existing file, or a folder that holds anything, is replaced (written into) only with
  ``overwrite=True`` (``--overwrite``); otherwise a UserError names the path and the flag;
- output too large to hold (a generated corpus, the split of a big one) is written as it is
  made, through streams (``open_outputs``), under the same rule: every file appears whole when
  the command succeeds, and nothing appears when it fails.
- a folder that is one output (an exported model, write_folder) is built whole in a temporary
  folder beside it and renamed into place; ``--overwrite`` replaces an earlier one of its kind,
  never a folder of other files.

Every message reads ``<path>: <what is wrong>; <what to do>``.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from glob import escape as glob_escape
from pathlib import Path
from typing import TextIO

from .errors import UserError, os_error_message
from .utils import DIR_MODE, atomic_write_bytes, replace_with, temporary_beside, through_links

Data = str | bytes
PathLike = str | Path
STREAM_BUFFER = 1 << 20  # bytes an output stream gathers before it writes them


def same_file(a: PathLike, b: PathLike) -> bool:
    """True when ``a`` and ``b`` are one file: the same inode when both exist (through symlinks
    and hard links), else the same absolute path."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return Path(a).resolve() == Path(b).resolve()


def _file_above(path: Path) -> Path | None:
    """The nearest folder-to-be above ``path`` that exists but is not a folder (so nothing can be
    written under it), or None."""
    for parent in path.absolute().parents:
        if parent.exists() or parent.is_symlink():
            return None if parent.is_dir() else parent
    return None


STANDARD = "-"  # a path that means standard input (read) or standard output (written)


def check_output(path: PathLike, *, inputs: Iterable[PathLike | None] = (), overwrite: bool = False) -> Path:
    """``path`` when a command may write the file there; otherwise a UserError that names it:
    it is one of ``inputs`` (always refused), a folder, under a file, or it exists and
    ``overwrite`` is False. ``-`` is standard output, always writable."""
    if str(path) == STANDARD:
        return Path(STANDARD)
    path = Path(path)
    clear_leftovers(path.absolute().parent, [path.name])  # of an earlier write killed outright
    return _checked_file(path, inputs, overwrite)


def _checked_file(path: Path, inputs: Iterable[PathLike | None], overwrite: bool) -> Path:
    """check_output's checks of ``path``, its folder's leftovers already cleared; the path the
    bytes go to (through_links: the target of a symbolic link)."""
    _no_loop(path)
    for source in inputs:
        if source is not None and same_file(path, source):
            raise UserError(f"{path}: this is the input {source}; write the output to another file")
    if path.is_dir():
        raise UserError(f"{path}: a folder; give the path of a file to write")
    above = _file_above(path)
    if above is not None:
        raise UserError(f"{path}: {above} is a file, not a folder; give a path under a folder")
    if path.exists() and not overwrite and not is_stream(path):
        raise UserError(f"{path}: exists; give --overwrite to replace it, or another path")
    target = through_links(path)
    if target != path:  # a link: the file it points at is written, and its folder checked too
        if target.is_dir():
            raise UserError(f"{path}: a link to the folder {target}; give the path of a file to write")
        above = _file_above(target)
        if above is not None:
            raise UserError(f"{path}: links to {target}, under the file {above}; give a path under a folder")
        clear_leftovers(target.parent, [target.name])
    return target


def _no_loop(path: Path) -> None:
    """A UserError when ``path`` is a symbolic link that leads back to itself."""
    if path.is_symlink():
        try:
            os.stat(path)
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise UserError(f"{path}: a symbolic link that loops; give a file or a link to one") from None


def read_once(path: PathLike) -> bool:
    """True when ``path`` can be read only once: ``-`` (standard input), a pipe, a FIFO (what a
    shell's ``<(command)`` names), a terminal or another device."""
    return str(path) == STANDARD or is_stream(Path(path))


@contextmanager
def rereadable(*paths: PathLike | None) -> Iterator[list[Path | None]]:
    """``paths`` as files a command may read more than once: each one that can be read only once
    (``read_once``) copied, as it streams, into a temporary file removed at the end; the others
    (and None) as they are. A UserError raised inside names the input as the user gave it, not
    its copy."""
    with tempfile.TemporaryDirectory(prefix="attnseq-input-") as folder:
        found: list[Path | None] = []
        copies: dict[str, str] = {}
        for i, path in enumerate(paths):
            if path is None or not read_once(path):
                found.append(None if path is None else Path(path))
                continue
            copy = Path(folder) / f"input-{i}"
            try:
                stream = nullcontext(sys.stdin.buffer) if str(path) == STANDARD else open(path, "rb")
                with stream as source, open(copy, "wb") as out:
                    shutil.copyfileobj(source, out, 1 << 20)
            except OSError as err:
                raise UserError(os_error_message(err, path) or f"{path}: cannot be read ({err})") from None
            found.append(copy)
            copies[str(copy)] = "standard input" if str(path) == STANDARD else str(path)
        try:
            yield found
        except UserError as err:
            if err.args and isinstance(err.args[0], str):
                text = err.args[0]
                for copy_name, given in copies.items():
                    text = text.replace(copy_name, given)
                err.args = (text, *err.args[1:])
            raise


LEFTOVER = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)-[^.]+\.(tmp|old)$")  # utils.temporary_beside's names
STALE_SECONDS = 86_400  # a leftover this old is stale whoever holds its process number now


def by_folder(folder: Path, names: Iterable[str]) -> dict[Path, set[str]]:
    """``names`` (relative paths, ``images/train/000001.png`` too) grouped by the folder each is
    written in: {folder: {file names}}."""
    groups: dict[Path, set[str]] = {}
    for name in names:
        path = folder / name
        groups.setdefault(path.parent, set()).add(path.name)
    return groups


def leftovers(folder: Path, names: Iterable[str]) -> list[Path]:
    """The temporary files and folders that a command writing ``names`` into ``folder`` (in its
    subfolders too) left when it was killed outright (kill -9, a lost machine): beside one of
    ``names``, named after it and a process that is gone (or a day old)."""
    found = []
    for where, here in by_folder(folder, names).items():
        try:
            entries = list(where.iterdir())
        except OSError:
            continue
        for entry in entries:
            match = LEFTOVER.match(entry.name)
            if match is None or match["name"] not in here:
                continue
            try:
                old = time.time() - entry.lstat().st_mtime > STALE_SECONDS
            except OSError:
                continue
            if old or not process_alive(int(match["pid"])):
                found.append(entry)
    return found


def process_alive(pid: int) -> bool:
    """Whether a process numbered ``pid`` runs on this machine."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # another user's, or no answer: not ours to clear
    return True


def clear_leftovers(folder: Path, names: Iterable[str]) -> None:
    """Remove ``leftovers(folder, names)``: a rerun of a killed command starts clean."""
    for entry in leftovers(folder, names):
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def _clear_own(folder: Path, names: Iterable[str]) -> None:
    """Remove the temporary files this process made in ``folder`` for ``names``: one made by
    mkstemp when a signal came before its name was kept (temporary_beside's names carry the PID)."""
    for where, here in by_folder(folder, names).items():
        for name in here:
            for entry in where.glob(f".{glob_escape(name)}.{os.getpid()}-*.tmp"):
                entry.unlink(missing_ok=True)


def is_stream(path: Path) -> bool:
    """True when ``path`` is a device, a pipe or a socket (``/dev/stdout``, ``/dev/null``, a FIFO):
    written into as a stream, never replaced by a file."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def check_folder(
    folder: PathLike, names: Iterable[str] = (), *, inputs: Iterable[PathLike | None] = (), overwrite: bool = False
) -> Path:
    """``folder`` when a command may write the files ``names`` into it; otherwise a UserError:
    it is a file or under one, it holds anything already and ``overwrite`` is False, or one of
    ``names`` may not be written (see check_output)."""
    folder, names = Path(folder), list(names)
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{folder}: a file, not a folder; give a folder to write into")
    above = _file_above(folder)
    if above is not None:
        raise UserError(f"{folder}: {above} is a file, not a folder; give a path under a folder")
    if folder.is_dir():
        clear_leftovers(folder, names)
    if folder.is_dir() and not overwrite:
        held = sorted(entry.name for entry in folder.iterdir())
        if held:
            shown = ", ".join(held[:3]) + (f" and {len(held) - 3} more" if len(held) > 3 else "")
            raise UserError(
                f"{folder}: holds files already ({shown}); give --overwrite to write into it, or another folder"
            )
    inputs = list(inputs)
    for name in names:
        _checked_file(folder / name, inputs, overwrite=True)
    return folder


def user_error_of(err: OSError, path: PathLike, named: bool = True) -> UserError:
    """``err`` of writing ``path`` as the one-line UserError os_error_message has for it (a full or
    read-only disk, a missing folder); ``err`` itself is raised again where it has none, or where
    ``named`` is False (an error that is not the write's: a read's, say)."""
    message = os_error_message(err, path) if named else None
    if message is None:
        raise err
    return UserError(message)


def write_output(
    path: PathLike, data: Data, *, inputs: Iterable[PathLike | None] = (), overwrite: bool = False
) -> Path:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` after check_output; returns the path.
    The file appears whole or not at all; an operating-system error (a full or read-only disk)
    becomes a UserError naming ``path``."""
    path = check_output(path, inputs=inputs, overwrite=overwrite)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        if str(path) == STANDARD:
            sys.stdout.flush()
            sys.stdout.buffer.write(payload)
            sys.stdout.buffer.flush()
        elif is_stream(path):  # a device or a pipe takes the bytes; renaming a file over it would replace it
            with open(path, "wb") as stream:
                stream.write(payload)
        else:
            atomic_write_bytes(path, payload)
    except OSError as err:
        raise user_error_of(err, path) from None
    return path


def write_files(
    folder: PathLike, files: Mapping[str, Data], *, inputs: Iterable[PathLike | None] = (), overwrite: bool = False
) -> dict[str, Path]:
    """Write each of ``files`` ({name: data}) into ``folder``, every one checked before any is
    written (check_folder); {name: path}. All of them appear together or none does: each is
    written beside its path first, and they replace their paths once all are written (a run
    averaged, say, is never a config without its weights)."""
    inputs = list(inputs)
    folder = check_folder(folder, files, inputs=inputs, overwrite=overwrite)
    paths = {name: through_links(folder / name) for name in files}  # each checked by check_folder
    streams = {name for name, path in paths.items() if is_stream(path)}
    temporary: dict[str, str] = {}
    try:
        for name, data in files.items():
            if name not in streams:
                temporary[name] = temporary_beside(paths[name])
                with open(temporary[name], "wb") as out:
                    out.write(data.encode("utf-8") if isinstance(data, str) else data)
        for name in streams:  # a device or a pipe takes its bytes; nothing to replace
            write_output(paths[name], files[name], inputs=inputs, overwrite=True)
        for name in list(temporary):
            replace_with(temporary.pop(name), paths[name])
    except OSError as err:
        raise user_error_of(err, folder) from None
    finally:
        for tmp in temporary.values():  # an error or a stop before all were in place
            Path(tmp).unlink(missing_ok=True)
        _clear_own(folder, files)  # (one a stop came for between mkstemp and its name kept)
    return paths


@contextmanager
def open_outputs(
    folder: PathLike, names: Iterable[str], *, inputs: Iterable[PathLike | None] = (), overwrite: bool = False
) -> Iterator[dict[str, TextIO]]:
    """{name: a text stream (UTF-8, lines as written)} writing each of ``names`` into ``folder``,
    for output too large to hold in memory; checked first as write_files checks (check_folder).

    Each stream writes a temporary file beside its path; when the block ends without an error,
    all of them are synced and moved over their paths. An error in the block leaves nothing
    behind: no temporary file, no folder the call made. An operating-system error of a write
    (a full disk) becomes a UserError naming the folder."""
    names, inputs = list(names), list(inputs)
    folder = check_folder(folder, names, inputs=inputs, overwrite=overwrite)
    made = [p for p in [folder, *folder.absolute().parents] if not p.exists()]  # deepest first
    temporary: dict[str, str] = {}
    streams: dict[str, TextIO] = {}
    try:
        try:
            for name in names:
                path = through_links(folder / name)
                if not is_stream(path):  # a device or a pipe is written into, never replaced
                    temporary[name] = temporary_beside(path)
                streams[name] = open(
                    temporary.get(name, path), "w", encoding="utf-8", newline="", buffering=STREAM_BUFFER
                )
            yield streams
            for stream in streams.values():
                stream.close()
            for name, tmp in temporary.items():
                replace_with(tmp, through_links(folder / name))
        except BaseException:
            for stream in streams.values():
                try:
                    stream.close()
                except OSError:  # what it held cannot be flushed: its file is removed below
                    pass
            for tmp in temporary.values():
                if os.path.exists(tmp):
                    os.unlink(tmp)
            _clear_own(folder, names)
            for path in made:
                try:
                    path.rmdir()
                except OSError:
                    break
            raise
    except OSError as err:
        raise user_error_of(err, folder, named=err.filename is None) from None  # a write's, not a read's


def _inside(path: Path, folder: Path) -> bool:
    """True when ``path`` is ``folder`` or lies under it (through symlinks)."""
    path, folder = path.resolve(), folder.resolve()
    return path == folder or folder in path.parents


def check_new_folder(
    folder: PathLike, *, marker: str, inputs: Iterable[PathLike | None] = (), overwrite: bool = False
) -> Path:
    """``folder`` (the folder it links to, when it is a symbolic link) when write_folder may make
    it (see there); otherwise a UserError that names it:
    it holds one of ``inputs`` or is one, it is a file or under one, it holds files and
    ``overwrite`` is False, or they are not an earlier output of the kind (no ``marker``)."""
    folder = Path(folder)
    _no_loop(folder)
    folder = through_links(folder)  # a link to a folder: the folder it points at is made anew, the link stays
    for source in inputs:
        if source is not None and _inside(Path(source), folder):
            raise UserError(f"{folder}: holds the input {source}; write the output to another folder")
    clear_leftovers(folder.absolute().parent, [folder.name])  # of an earlier write killed outright
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{folder}: a file, not a folder; give a folder to write into")
    above = _file_above(folder)
    if above is not None:
        raise UserError(f"{folder}: {above} is a file, not a folder; give a path under a folder")
    held = sorted(entry.name for entry in folder.iterdir()) if folder.is_dir() else []
    if held:
        shown = ", ".join(held[:3]) + (f" and {len(held) - 3} more" if len(held) > 3 else "")
        if not overwrite:
            raise UserError(
                f"{folder}: holds files already ({shown}); give --overwrite to replace it, or another folder"
            )
        if marker not in held:
            raise UserError(
                f"{folder}: holds files that are not an earlier output of this command ({shown}; "
                f"no {marker}); --overwrite replaces only such a folder: give a new or empty one"
            )
    return folder


MANIFEST = ".attnseq-output"  # in a folder write_folder made: the names it wrote there, one a line


def _manifest(folder: Path) -> list[str]:
    """What write_folder wrote into ``folder`` (its MANIFEST); an earlier output without one is
    taken as all of its files."""
    try:
        return (folder / MANIFEST).read_text(encoding="utf-8").splitlines()
    except OSError:
        return [entry.name for entry in folder.iterdir()]


def write_folder(
    folder: PathLike,
    files: Mapping[str, Data],
    build: Callable[[Path], None] | None = None,
    *,
    marker: str,
    inputs: Iterable[PathLike | None] = (),
    overwrite: bool = False,
) -> Path:
    """Make ``folder`` whole or not at all: ``files`` ({name: data}) are written into a new
    temporary folder beside it and ``build(tmp)`` adds what a library writes itself (a model
    saved by its engine), then the temporary folder is renamed to ``folder``; returns the folder.

    ``marker`` names the file of ``files`` that every such output holds. A folder that
    exists and holds anything is refused without ``overwrite``; with it, it is replaced (the
    earlier one removed once the new one is in place) only when it holds ``marker``, an earlier
    output of the same kind: never a folder of other files; what the user put in it beside the
    earlier output (a file the new one does not hold) is kept in the new. Never one of ``inputs`` or a folder
    holding one, whatever ``overwrite`` says. An operating-system error (a full or read-only
    disk) becomes a UserError naming ``folder``; nothing is left of the temporary folder."""
    folder = check_new_folder(folder, marker=marker, inputs=inputs, overwrite=overwrite)
    held = folder.is_dir() and any(folder.iterdir())
    tmp = old = None
    try:
        folder.absolute().parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(
            tempfile.mkdtemp(prefix=f".{folder.name}.{os.getpid()}-", suffix=".tmp", dir=folder.absolute().parent)
        )
        os.chmod(tmp, DIR_MODE)
        for name, data in files.items():
            (tmp / name).write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        if build is not None:
            build(tmp)
        for path in tmp.rglob("*"):  # on disk before the folder appears
            if path.is_file():
                with open(path, "rb") as fh:
                    os.fsync(fh.fileno())
        made = sorted(entry.name for entry in tmp.iterdir())
        (tmp / MANIFEST).write_text("".join(name + "\n" for name in made), encoding="utf-8")
        if held:  # the user's files carried over; the earlier folder aside, the new one in (or all back)
            ours = set(_manifest(folder)) | {MANIFEST}
            theirs = [entry.name for entry in folder.iterdir() if entry.name not in ours and entry.name not in made]
            for name in theirs:
                os.rename(folder / name, tmp / name)
            old = Path(
                tempfile.mkdtemp(prefix=f".{folder.name}.{os.getpid()}-", suffix=".old", dir=folder.absolute().parent)
            )
            try:
                os.rename(folder, old / folder.name)
                try:
                    os.rename(tmp, folder)
                except OSError:
                    os.rename(old / folder.name, folder)
                    raise
            except OSError:
                for name in theirs:
                    os.rename(tmp / name, folder / name)
                raise
        else:
            os.rename(tmp, folder)  # over an empty folder too
        tmp = None
    except OSError as err:
        raise user_error_of(err, folder) from None
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    return folder
