"""The Python API's checking boundary: the arguments of every public entry point (``attnseq.load``,
``attnseq.fit``, ``Translator.translate``, ``search``, ``evaluate``) checked here, once, before
any work is done.

An argument of the wrong type raises ArgumentTypeError (a TypeError), a wrong value
ArgumentValueError (a ValueError). Both are UserErrors too, so the command line prints them as one
line; both carry ``argument``, the name of the argument at fault, and their message starts with
it (and the index of the item at fault): ``texts[2]: expected a str, got NoneType``,
``beam_size (decode.beam_size): expected a value >= 1, got 0``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping, Set
from pathlib import Path
from typing import Any

from ..config import DecodeConfig
from ..errors import ConfigError, UserError


class ArgumentTypeError(UserError, TypeError):
    """An argument of the wrong type; ``argument`` names it, and the message starts with it."""

    def __init__(self, argument: str, message: str):
        super().__init__(f"{argument}: {message}")
        self.argument, self.detail = argument, message


class ArgumentValueError(UserError, ValueError):
    """An argument of the right type with a wrong value; ``argument`` names it, and the message
    starts with it (and the config key it sets, when it sets one: ``beam_size (decode.beam_size): ...``)."""

    def __init__(self, argument: str, message: str, key: str | None = None):
        super().__init__(f"{argument} ({key}): {message}" if key else f"{argument}: {message}")
        self.argument, self.key, self.detail = argument, key, message


def type_name(value: Any) -> str:
    return type(value).__name__


def flag(value: Any, name: str) -> bool:
    """``value``, which must be True or False."""
    if not isinstance(value, bool):
        raise ArgumentTypeError(name, f"expected True or False, got {type_name(value)}")
    return value


def items(value: Any, name: str, what: str) -> list:
    """The items of ``value``, a list, tuple or other ordered iterable (not a str, bytes, mapping
    or set); ``what`` says what it should hold, for the message."""
    if isinstance(value, (str, bytes, bytearray, Mapping, Set)) or not isinstance(value, Iterable):
        raise ArgumentTypeError(name, f"expected a list of {what}, got {type_name(value)}")
    return list(value)


def texts_argument(texts: Any, name: str = "texts", files: bool = False) -> tuple[list[str], bool]:
    """(the texts, whether one was given alone) of ``texts``: one str, or a list of str. With
    ``files`` (a run whose sources are files: data.input image) a text is a file's path, and
    bytes (a file's contents, an upload) are taken too."""
    if isinstance(texts, str) or (files and isinstance(texts, bytes)):
        return [texts], True
    if not files:
        return strings_argument(texts, name), False
    found = items(texts, name, "paths (str) or file contents (bytes)")
    for i, item in enumerate(found):
        if not isinstance(item, (str, bytes)):
            raise ArgumentTypeError(
                f"{name}[{i}]", f"expected a path (str) or a file's contents (bytes), got {type_name(item)}"
            )
    return found, False


def pairs_argument(pairs: Any, name: str = "pairs") -> list[tuple[str, str]]:
    """``pairs``: a non-empty list of (source, reference) pairs of str."""
    found = items(pairs, name, "(source, reference) pairs")
    if not found:
        raise ArgumentValueError(name, "empty; give at least one (source, reference) pair")
    checked = []
    for i, pair in enumerate(found):
        if isinstance(pair, (str, bytes, Mapping, Set)) or not isinstance(pair, Iterable):
            raise ArgumentTypeError(f"{name}[{i}]", f"expected a (source, reference) pair, got {type_name(pair)}")
        pair = tuple(pair)
        if len(pair) != 2:
            raise ArgumentValueError(f"{name}[{i}]", f"expected a (source, reference) pair, got {len(pair)} items")
        for j, text in enumerate(pair):
            if not isinstance(text, str):
                raise ArgumentTypeError(f"{name}[{i}][{j}]", f"expected a str, got {type_name(text)}")
        checked.append(pair)
    return checked


LOAD_FIELDS = ("precision",)  # decode settings that shape the loaded model: attnseq.load's, not a call's
DECODE_FIELDS = {f.name: f.type for f in dataclasses.fields(DecodeConfig) if f.name not in LOAD_FIELDS}


def decode_request(request: dict[str, Any]) -> dict[str, Any]:
    """``request`` (decode settings of one call: ``beam_size``, ``n_best``, ...; None keeps the
    run's), each a number of its setting's type; their ranges are the decode settings' own."""
    for key, value in request.items():
        if key in LOAD_FIELDS:
            raise ArgumentTypeError(key, f"set when the model is loaded (attnseq.load(run, {key}=...)), not per call")
        if key not in DECODE_FIELDS:
            raise ArgumentTypeError(key, f"not a decode setting; a request takes {', '.join(DECODE_FIELDS)}")
        if value is None:
            continue
        wanted = (int,) if DECODE_FIELDS[key] in (int, "int") else (int, float)
        if isinstance(value, bool) or not isinstance(value, wanted):
            kind = "a whole number" if wanted == (int,) else "a number"
            raise ArgumentTypeError(key, f"expected {kind} or None, got {type_name(value)}")
    return request


def decode_value_error(err: ConfigError) -> ArgumentValueError:
    """A decode setting's ConfigError (``decode.beam_size: ...``) as the error of the argument it
    is about (``beam_size``)."""
    key = err.key or "decode"
    return ArgumentValueError(key.removeprefix("decode."), str(err).removeprefix(f"{key}: "), key)


def path_argument(value: Any, name: str) -> Path:
    """``value``, a str or os.PathLike, as a Path the file system can be asked about."""
    if not isinstance(value, (str, os.PathLike)):
        raise ArgumentTypeError(name, f"expected a path (str or os.PathLike), got {type_name(value)}")
    try:
        path = Path(value)
        encoded = os.fsencode(path)
    except (TypeError, UnicodeError) as err:
        raise ArgumentValueError(name, f"not a path this system can name ({err})") from None
    if b"\0" in encoded:
        raise ArgumentValueError(name, "a path cannot hold a NUL character")
    return path


def strings_argument(value: Any, name: str) -> list[str]:
    """``value``: a list of str (not one str)."""
    found = items(value, name, "str")
    for i, item in enumerate(found):
        if not isinstance(item, str):
            raise ArgumentTypeError(f"{name}[{i}]", f"expected a str, got {type_name(item)}")
    return found


def choice_argument(value: Any, name: str, choices: Iterable[str]) -> str:
    """``value``: one of the strings ``choices``."""
    choices = tuple(choices)
    if not isinstance(value, str):
        raise ArgumentTypeError(name, f"expected one of {', '.join(choices)}, got {type_name(value)}")
    if value not in choices:
        raise ArgumentValueError(name, f"expected one of {', '.join(choices)}, got {value!r}")
    return value


def device_argument(value: Any, name: str = "device") -> str:
    """``value``: "cpu", or "cuda" / "cuda:N" where torch sees a CUDA device."""
    if not isinstance(value, str):
        raise ArgumentTypeError(name, f"expected 'cpu' or 'cuda', got {type_name(value)}")
    if value == "cpu":
        return value
    if value != "cuda" and not (value.startswith("cuda:") and value[5:].isdigit() and value[5:].isascii()):
        raise ArgumentValueError(name, f"expected 'cpu', 'cuda' or 'cuda:N', got {value!r}")
    import torch

    if not torch.cuda.is_available() or int(value[5:] or 0) >= torch.cuda.device_count():
        raise ArgumentValueError(name, f"{value}: no such CUDA device here")
    return value
