"""Errors that mean "the user asked for something wrong", and the one table that turns what a
command, an API call or a request raised into one line (the CLI's ``attnseq: error: ...``, the
server's 4xx answer, the API's ValueError naming an argument).

TRANSLATIONS holds one row per kind of error, first match wins: the exceptions it catches, the
function giving its one line (None where the row does not apply after all: an errno that is
no user's, a RuntimeError that is no refused memory), and whether it is the user's error (bad
input: a setting, a file, a path, the environment) or something else that is still no bug
(memory the system refused; the output's reader going away). An exception no row explains is a
bug and keeps its traceback. A new translation is one row.
"""

from __future__ import annotations

import errno
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


class UserError(Exception):
    """An error caused by the user's input (config, data, arguments), not by a bug."""


class ConfigError(UserError):
    """An invalid configuration: the message names the key and the allowed values.

    ``key`` is the dotted config key at fault (``"decode.beam_size"``), or None where no single
    key is (a whole file); callers such as the server read the field from it, not the message.
    """

    def __init__(self, message: str, *, key: str | None = None):
        super().__init__(message)
        self.key = key


class DataError(UserError):
    """A malformed data file: the message names the file and the line."""


# errno -> (what is wrong, what to do): the operating-system errors a user causes (a path that
# is wrong, a disk that is full or read-only, permissions); any other errno is a bug to show
USER_ERRNOS = {
    errno.ENOENT: ("no such file or folder", "check the path"),
    errno.ENOTDIR: ("a part of the path is a file, not a folder", "give a path under a folder"),
    errno.EISDIR: ("a folder, not a file", "give a file"),
    errno.EEXIST: ("exists already", "give another path"),
    errno.EACCES: ("permission denied", "check its permissions, or give another path"),
    errno.EPERM: ("operation not permitted", "check its permissions, or give another path"),
    errno.EROFS: ("on a read-only file system", "write somewhere else"),
    errno.ENOSPC: ("no space left on the device", "free some space, or write somewhere else"),
    errno.EDQUOT: ("over the disk quota", "free some space, or write somewhere else"),
    errno.EFBIG: ("too large a file for this file system", "write somewhere else"),
    errno.ENAMETOOLONG: ("too long a name", "give a shorter path"),
    errno.ELOOP: ("a loop of symbolic links", "check the links"),
    errno.ETXTBSY: ("busy (a running program)", "give another path"),
    errno.EADDRINUSE: ("the address is in use", "give another --port (0: any free port)"),
    errno.EADDRNOTAVAIL: ("not an address of this machine", "give another --host"),
}


def os_error_message(err: OSError, path: str | Path | None = None) -> str | None:
    """``<path>: <what is wrong>; <what to do>`` for an operating-system error a user causes
    (``path`` or the file the error names), or None when ``err`` is not one (a bug)."""
    if err.errno not in USER_ERRNOS:
        return None
    what, todo = USER_ERRNOS[err.errno]
    where = path if path is not None else err.filename
    if err.errno == errno.EEXIST and where is not None and not Path(where).is_dir():  # a folder was to be made
        what, todo = "a file, not a folder", "give a folder's path"
    if err.filename2 is not None and path is None:  # a rename or a link: both paths
        where = f"{err.filename} -> {err.filename2}"
    return f"{where}: {what}; {todo}" if where is not None else f"{what}; {todo}"


def out_of_memory(err: BaseException) -> str | None:
    """What was refused when ``err`` is the system refusing memory (NumPy's MemoryError, torch's
    allocators: "can't allocate memory: you tried to allocate N bytes" on the CPU, CUDA's
    out of memory), else None."""
    text = str(err)
    if isinstance(err, MemoryError) or "can't allocate memory" in text or "out of memory" in text.lower():
        asked = re.search(r"tried to allocate (\d+) bytes", text)
        if asked:
            return f"{int(asked.group(1)) / 2**30:,.2f} GiB asked at once"
        return text.strip().splitlines()[0][:200] if text.strip() else type(err).__name__
    return None


def stdout_refuses(err: UnicodeEncodeError) -> str | None:
    """Standard output's encoding when it cannot write the character ``err`` is about (what an
    encoder refused there was standard output's), else None."""
    encoding = getattr(sys.stdout, "encoding", None)
    try:
        err.object[err.start].encode(encoding or "utf-8")
    except UnicodeEncodeError:
        return encoding
    except LookupError:
        pass
    return None


def _out_of_memory_line(err: BaseException) -> str | None:
    refused = out_of_memory(err)
    return refused and (
        f"out of memory ({refused}); ask for less at once: decode.batch_size and decode.beam_size "
        "(--beam) when decoding, train.batch_size or train.batch_tokens when training"
    )


def _stdout_line(err: UnicodeEncodeError) -> str | None:
    encoding = stdout_refuses(err)
    return encoding and (
        f"standard output's encoding, {encoding} (PYTHONIOENCODING or the locale), cannot write "
        f"{ascii(err.object[err.start])} of the output; set PYTHONIOENCODING=utf-8"
    )


@dataclass(frozen=True)
class ErrorLine:
    """One row of TRANSLATIONS: the exceptions ``catches``, their one line (``says``; None where
    the row does not apply to this one, an empty line where nothing went wrong a user must hear
    of), and whether they are the user's error (``users``)."""

    catches: type[BaseException] | tuple[type[BaseException], ...]
    says: Callable[[BaseException], str | None]
    users: bool = True


TRANSLATIONS = (
    ErrorLine(UserError, str),  # a setting, a data file, an argument: its message names the key, file or path
    ErrorLine(BrokenPipeError, lambda err: "", users=False),  # the output's reader went away (head): no error
    ErrorLine(OSError, os_error_message),  # a wrong path, a full or read-only disk; another errno is a bug
    ErrorLine((MemoryError, RuntimeError), _out_of_memory_line, users=False),  # refused memory; another is a bug
    ErrorLine(UnicodeEncodeError, _stdout_line),  # output standard output's encoding cannot hold
    ErrorLine(
        UnicodeDecodeError,  # an input that is not text, read where no reader named it
        lambda err: f"an input file is not UTF-8 text ({err.reason} at byte {err.start}); give a UTF-8 file",
    ),
)


def explained(err: BaseException) -> tuple[str, bool] | None:
    """(the one line for ``err``, whether it is the user's error) from the first row of
    TRANSLATIONS that explains it; None for a bug (no row does)."""
    for row in TRANSLATIONS:
        if isinstance(err, row.catches) and (line := row.says(err)) is not None:
            return line, row.users
    return None


def user_message(err: BaseException) -> str | None:
    """The one line for ``err`` when it is the user's error (bad input: a setting, a data file,
    an argument, a path, the environment), else None."""
    found = explained(err)
    return found[0] if found and found[1] else None
