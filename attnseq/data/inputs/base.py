"""Input kinds (``data.input``): what a source column holds and how it becomes what the encoder
reads. A registry maps a name to a class and its options dataclass:

- ``text`` (today's behaviour): the source is text, tokenised and looked up in the source
  vocabulary (data/pipeline.py does it; the kind only says so, ``reads_text``);
- a kind that reads files (``image`` in data/inputs/image.py; ``audio``): the source column
  names a file, relative to the TSV's folder, read into a float array of features
  ``(L, F)``: L positions along the axis a batch pads (an image's columns, audio frames), F
  values at each (an image's pixel rows, filterbank channels).

A kind that reads files implements ``read(path) -> (L, F) array`` (a DataError naming the file
when it cannot), ``feature_size`` (F), ``geometry(features)`` (what a plot needs to draw the
source) and ``default_frontend`` (the model.frontend that encodes it, nn/frontends). Batches pad
every kind the same way (data/batching.py ``pad_features``): zeros after the last position, a
mask True on the real ones. This module imports neither torch nor an image library: choosing a
kind loads what it reads with only when it reads.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ConfigError, DataError
from ...registry import Registry

INPUTS: Registry[type[InputKind]] = Registry("input kind")


@dataclass(frozen=True)
class SourceShape:
    """Where a source's attention falls, for plots: ``kind`` (``image``, ``audio``), ``size``
    the input's own extent ((height, width) pixels of an image as the model read it, (frames,) of
    audio) and ``grid`` the memory's cells over it ((rows, columns) of an image's feature grid,
    (steps,) over frames). The attention's source axis S runs over the grid's cells column by
    column (S = column x rows + row for an image: the real cells first, padding after, as a
    text's tokens), each cell covering ``size[i] / grid[i]`` of the input along axis i."""

    kind: str
    size: tuple[int, ...]
    grid: tuple[int, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "size": list(self.size), "grid": list(self.grid)}


def reported(method: Callable) -> Callable:
    """``read(path)`` or ``read_bytes(data, name)`` of an input kind, with any exception the file's
    parser raises (Pillow's SyntaxError on a broken PNG, the wave module's RuntimeError on a chunk
    longer than the file, ...) turned into a DataError naming the file: the one boundary between
    a user's file and every kind's reader."""

    @functools.wraps(method)
    def read(self, source, *rest):
        try:
            return method(self, source, *rest)
        except DataError:
            raise
        except Exception as err:  # noqa: BLE001  (a parser of untrusted bytes raises anything)
            name = rest[0] if isinstance(source, (bytes, bytearray)) else source
            raise DataError(f"{name}: cannot read as {self.name} input ({type(err).__name__}: {err})") from None

    return read


class InputKind:
    """What a source column holds (``data.input``); ``options`` its options dataclass. A
    subclass's ``read`` and ``read_bytes`` are wrapped by ``reported``."""

    reads_text = False  # the source is text (the tokenizers and the source vocabulary read it)
    default_frontend: str | None = None  # the model.frontend (nn/frontends) that encodes these features

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for method in ("read", "read_bytes"):
            if method in cls.__dict__:
                setattr(cls, method, reported(cls.__dict__[method]))

    def __init__(self, options=None):
        self.options = options

    @property
    def name(self) -> str:
        return next((name for name in INPUTS if INPUTS.get(name) is type(self)), type(self).__name__)

    @property
    def feature_size(self) -> int:
        """F: the values at each position of the features ``read`` returns (0 for text)."""
        return 0

    def check(self, data) -> None:
        """Raise a ConfigError naming the key for a setting of ``data`` (a DataConfig) that does
        not apply to this kind."""

    def read(self, path: Path, positions: int = 0) -> np.ndarray:
        """The features (L, F) of the file ``path`` (uint8 arrays are read as value / 255, any
        other dtype as it is, when batched); a DataError naming the file when it cannot. With
        ``positions`` the caller keeps only the first ``positions``: a kind whose files say how
        long they are before they are decoded reads little more than that (at least one position
        more where the file has more, so the caller sees it cut)."""
        raise NotImplementedError

    def read_bytes(self, data: bytes, name: str, positions: int = 0) -> np.ndarray:
        """The features of a file's bytes (an upload), ``name`` naming it in errors; ``positions``
        as in ``read``."""
        raise NotImplementedError

    def geometry(self, features: np.ndarray) -> tuple[int, ...]:
        """The input's own extent (``SourceShape.size``) of ``features`` as ``read`` made them."""
        return (len(features),)

    def probe(self, path: Path) -> str | None:
        """What is wrong with the file ``path`` as this kind's input, found cheaply (it exists,
        is readable, looks like this kind's file), or None. Reading a data set's TSV checks every
        source with it, so a bad one is named with its TSV line before training starts."""
        try:
            with open(path, "rb"):
                return None
        except OSError as err:
            return err.strerror or str(err)


@INPUTS.register("text")
class TextInput(InputKind):
    """The source is text: tokenised by data.tokenizer and looked up in the source vocabulary."""

    reads_text = True


TEXT_ONLY = (
    ("reverse_source", "reverses a text's tokens"),
    ("shared_vocab", "makes one vocabulary of the source's tokens and the target's"),
)


def check_text_settings(kind: InputKind, data) -> None:
    """Raise a ConfigError naming the key when ``data`` (a DataConfig) sets a text-only setting
    for a kind that does not read text."""
    for key, what in TEXT_ONLY:
        if getattr(data, key):
            raise ConfigError(
                f"data.{key}: {what}, and data.input {kind.name} reads no text; set data.{key}: false",
                key=f"data.{key}",
            )
    tokenizer = data.tokenizer
    if tokenizer.name == "sentencepiece" and not tokenizer.options.get("joint", True):
        raise ConfigError(
            f"data.tokenizer.joint: false gives each side its own sentencepiece model, and data.input "
            f"{kind.name} has no text side; set it to true (one model, of the targets)",
            key="data.tokenizer.joint",
        )
    if data.format != "tsv":
        raise ConfigError(
            f"data.format: data.input {kind.name} reads files named in a TSV's source column; set data.format: tsv",
            key="data.format",
        )


def build_input(data) -> InputKind:
    """The input kind ``data.input`` names (data: a DataConfig), its options checked."""
    return INPUTS.build(data.input, "data.input")


def locate_sources(
    kind: InputKind, pairs: Sequence[tuple[str, str]], lines: Sequence[int], tsv: str | Path
) -> list[tuple[str, str]]:
    """``pairs`` of the TSV file ``tsv`` (``lines``: each pair's line) with each source, a file
    name relative to the TSV's folder, made a path that names it from here; a file that is
    missing or that ``kind`` cannot read is a DataError naming ``tsv`` and the line."""
    folder = Path(tsv).parent
    located = []
    for (source, target), line in zip(pairs, lines):
        path = Path(source) if Path(source).is_absolute() else folder / source
        wrong = kind.probe(path)
        if wrong is not None:
            raise DataError(
                f"{tsv}:{line}: {source}: {wrong} (data.input {kind.name} reads the file the source "
                "column names, relative to the TSV's folder)"
            )
        located.append((str(path), target))
    return located
