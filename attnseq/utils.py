"""Small shared helpers: atomic file writes, seeding, devices, a value quoted in a message."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


FILE_MODE = 0o666 & ~_umask()  # what open() would give a new file: the user's umask applies
DIR_MODE = 0o777 & ~_umask()  # what mkdir() would give a new folder


def through_links(path: str | Path) -> Path:
    """Where writing ``path`` puts the bytes: the file a symbolic link ``path`` points at (through
    a chain of links; a dangling link's target is made), else ``path`` itself. A file is written
    beside this and renamed over it, so a link stays a link and its target takes the new bytes."""
    path = Path(path)
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def temporary_beside(path: str | Path) -> str:
    """The path of a new empty temporary file in ``path``'s folder (created if needed), named
    after it and the writing process (``.NAME.PID-XXXX.tmp``): where a file is written before it
    replaces ``path``; a rerun knows it for a leftover once that process is gone (files.leftovers)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}-", suffix=".tmp", dir=path.parent)
    os.close(fd)
    return tmp


def replace_with(tmp: str, path: str | Path) -> None:
    """Move the written temporary file ``tmp`` over ``path`` in one step, synced first, with the
    permissions a newly created file gets (the user's umask), not mkstemp's 0600."""
    with open(tmp, "rb+") as fh:
        os.fsync(fh.fileno())
    os.chmod(tmp, FILE_MODE)
    os.replace(tmp, path)


def atomic_write(path: str | Path, write: Callable[[str], None]) -> None:
    """Call ``write(tmp_path)`` then move the temporary file over ``path`` in one step (over the
    file a symbolic link ``path`` points at: through_links)."""
    path = through_links(path)
    tmp = temporary_beside(path)
    try:
        write(tmp)
        replace_with(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    atomic_write(path, lambda tmp: Path(tmp).write_bytes(data))


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8, newlines as written) to ``path`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


def stream_seed(*parts: object) -> int:
    """A seed for a random stream named by ``parts`` (``stream_seed(seed, "train", 7)``): a hash
    of them, so streams of different names are independent and the same name always gives the
    same stream, in any process."""
    name = "/".join(map(str, parts)).encode("utf-8")
    return int.from_bytes(hashlib.blake2b(name, digest_size=8).digest(), "big")


def shown(value, width: int = 40) -> str:
    """``value`` as its JSON text, cut to ``width`` characters (``null``, ``"3"``, ``NaN``,
    ``[1, 2]``; a value JSON has no text for: its type's name), for a message about a field of a
    request or a file."""
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError):
        text = type(value).__name__
    return text if len(text) <= width else text[: width - 3] + "..."


def whole_number(text: str) -> int | None:
    """``text`` (an environment variable's value, say) as a whole number >= 0 written in ASCII
    digits, spaces around it allowed; None otherwise ("²" is a digit to str.isdigit that int()
    refuses; "-1", "1.0" and "" are None)."""
    text = text.strip()
    return int(text) if text.isascii() and text.isdigit() else None
