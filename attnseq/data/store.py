"""The token store: a corpus's training pairs as token ids in a folder, memory-mapped (fairseq's
design), so a process holds only the pages it reads, however large the corpus.

A store folder holds, for each side (``src``, ``tgt``):

- ``<side>.ids.npy``: every pair's ids, one pair after another (uint16 when the vocabulary
  allows, else int32); sources as the encoder reads them (reversed with data.reverse_source),
  targets without bos/eos;
- ``<side>.offsets.npy``: where each pair's ids start, and the end (int64, (N + 1,));
- ``<side>.lengths.npy``: each pair's length in tokens (int32, (N,)), what batches are cut by;

and ``store.json``: what it holds (pairs, tokens, the unknown tokens among them, what was dropped
on the way) and how it was made. The folder is written whole elsewhere and renamed into place
(data.prepare), so a store that exists is complete. ``TokenStore`` reads one; ``StoreWriter``
writes one from pieces in order; ``TokenStore.packed`` holds the same arrays in memory, packed
from Examples a part at a time (a run's dev set). ``ExampleStore`` is the same interface over
Examples held in memory, for the training data a store of vocabulary ids cannot hold (a copying
model's extended ids, sources that are files' features).
"""

from __future__ import annotations

import itertools
import json
import mmap
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import DataError
from ..utils import atomic_write_text
from .pipeline import Example
from .vocab import Vocab

if TYPE_CHECKING:
    from .batching import Batch

SIDES = ("src", "tgt")
MANIFEST = "store.json"
FORMAT = 1  # the layout of a store folder; a store of another format is made again


def ids_dtype(vocab_size: int) -> np.dtype:
    """The narrowest dtype that holds every id of a vocabulary of ``vocab_size``."""
    return np.dtype(np.uint16) if vocab_size <= np.iinfo(np.uint16).max + 1 else np.dtype(np.int32)


def mapped(path: Path, scattered: bool = False) -> np.ndarray:
    """The one-dimensional .npy file ``path`` mapped read-only; ``scattered``: read a few items at
    a time at random places (a batch's pairs), so the system reads no pages ahead of them from the
    disk (its readahead would read far more of a store larger than the page cache than is used)."""
    with open(path, "rb") as file:
        version = np.lib.format.read_magic(file)
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran, dtype = read(file)
        offset = file.tell()
        if len(shape) != 1 or fortran:
            raise ValueError(f"{path.name}: not a one-dimensional array")
        if shape[0] == 0:
            return np.zeros(0, dtype)
        view = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    if scattered and hasattr(view, "madvise"):
        view.madvise(mmap.MADV_RANDOM)
    return np.frombuffer(view, dtype=dtype, count=shape[0], offset=offset)


class ArrayFile:
    """A one-dimensional .npy file of ``length`` items of ``dtype``, written in pieces, in order."""

    def __init__(self, path: Path, dtype: np.dtype, length: int):
        self.path, self.dtype, self.length, self.written = path, np.dtype(dtype), length, 0
        self.file = open(path, "wb")
        header = {"descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False, "shape": (length,)}
        np.lib.format.write_array_header_2_0(self.file, header)

    def write(self, values: np.ndarray) -> None:
        values = np.asarray(values).astype(self.dtype, copy=False)
        values.tofile(self.file)
        self.written += len(values)

    def close(self) -> None:
        self.file.close()
        if self.written != self.length:
            raise RuntimeError(f"{self.path}: {self.written} items written, {self.length} announced")


class StoreWriter:
    """Writes a store folder from consecutive runs of pairs (``add``), then its manifest (``close``)."""

    def __init__(self, folder: Path, pairs: int, tokens: dict[str, int], dtype: np.dtype):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.files = {}
        self.ends = {side: 0 for side in SIDES}
        for side in SIDES:
            self.files[side, "ids"] = ArrayFile(self.folder / f"{side}.ids.npy", dtype, tokens[side])
            self.files[side, "lengths"] = ArrayFile(self.folder / f"{side}.lengths.npy", np.int32, pairs)
            self.files[side, "offsets"] = ArrayFile(self.folder / f"{side}.offsets.npy", np.int64, pairs + 1)
            self.files[side, "offsets"].write(np.zeros(1, np.int64))

    def add(self, side: str, ids: np.ndarray, lengths: np.ndarray) -> None:
        """The next pairs' ids of ``side`` (one after another) and their lengths."""
        self.files[side, "ids"].write(ids)
        self.files[side, "lengths"].write(lengths)
        self.files[side, "offsets"].write(self.ends[side] + np.cumsum(lengths, dtype=np.int64))
        self.ends[side] += int(np.sum(lengths, dtype=np.int64))

    def close(self, manifest: dict) -> None:
        """Close the arrays and write ``store.json`` (``manifest`` and the format)."""
        for array in self.files.values():
            array.close()
        atomic_write_text(self.folder / MANIFEST, json.dumps({"format": FORMAT, **manifest}, indent=1))


class TokenStore:
    """The training pairs of a store folder, memory-mapped: ``len(store)`` pairs, their lengths
    (``src_lengths``, ``tgt_lengths``: (N,) int32) for the sampler, and ``batch(index)``, which
    reads only the pairs it is given."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        try:
            self.manifest = json.loads((self.folder / MANIFEST).read_text(encoding="utf-8"))
            if self.manifest.get("format") != FORMAT:
                raise ValueError(f"format {self.manifest.get('format')}, not {FORMAT}")
            arrays = {
                (side, kind): mapped(self.folder / f"{side}.{kind}.npy", kind != "lengths")
                for side in SIDES
                for kind in ("ids", "offsets", "lengths")
            }
        except (OSError, ValueError) as err:
            raise DataError(
                f"{self.folder}: not a token store ({err}); delete the folder to prepare it again"
            ) from None
        self.ids = {side: arrays[side, "ids"] for side in SIDES}
        self.offsets = {side: arrays[side, "offsets"] for side in SIDES}
        self.src_lengths, self.tgt_lengths = arrays["src", "lengths"], arrays["tgt", "lengths"]

    @classmethod
    def packed(cls, parts: Iterable[Sequence[Example]], vocab_size: int) -> TokenStore:
        """A store held in memory, not a folder, of the Examples of ids (a dev set's) that
        ``parts`` gives a part at a time: each part's lists are packed into arrays as it comes
        (ids of a vocabulary of ``vocab_size``: 2 bytes each while it has at most 65,536 entries),
        so memory holds the ids so packed and one part's lists, where Python lists of every pair
        would take ten times as much or more."""
        store = cls.__new__(cls)
        store.folder = None
        dtype = ids_dtype(vocab_size)
        ids: dict[str, list[np.ndarray]] = {side: [] for side in SIDES}
        lengths: dict[str, list[np.ndarray]] = {side: [] for side in SIDES}
        for part in parts:
            for side in SIDES:
                rows = [getattr(example, side) for example in part]
                lengths[side].append(np.fromiter(map(len, rows), dtype=np.int32, count=len(rows)))
                ids[side].append(np.fromiter(itertools.chain.from_iterable(rows), dtype=dtype))
        store.ids, store.offsets = {}, {}
        for side in SIDES:
            counts = np.concatenate([np.zeros(0, np.int32), *lengths[side]])
            store.ids[side] = np.concatenate([np.zeros(0, dtype), *ids[side]])
            store.offsets[side] = np.concatenate([np.zeros(1, np.int64), np.cumsum(counts, dtype=np.int64)])
            setattr(store, f"{side}_lengths", counts)
        store.manifest = {"read": len(store.src_lengths), "pairs": len(store.src_lengths)}
        return store

    def __len__(self) -> int:
        return len(self.src_lengths)

    def __getitem__(self, k):
        """Pair ``k`` as an Example, or the pairs of a slice as a list of them."""
        if isinstance(k, slice):
            return self.examples(range(len(self))[k])
        if not -len(self) <= k < len(self):
            raise IndexError(f"pair {k} of {len(self)}")
        return self.examples([k % len(self)])[0]

    @property
    def unknown_share(self) -> float:
        """The fraction of the stored source and target ids that are the unknown token's."""
        tokens = sum(self.manifest["tokens"].values())
        return self.manifest["unknown"] / tokens if tokens else 0.0

    def pair(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """(source ids, target ids) of pair ``i``."""
        return tuple(self.ids[side][self.offsets[side][i] : self.offsets[side][i + 1]] for side in SIDES)

    def examples(self, index: Sequence[int] | None = None) -> list[Example]:
        """The pairs ``index`` (default: all of them) as Examples (Python lists: for small sets)."""
        index = range(len(self)) if index is None else index
        return [Example(*(ids.tolist() for ids in self.pair(int(i)))) for i in index]

    def _rows(
        self, side: str, index: np.ndarray, before: int | None = None, after: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(ids (B, L), mask (B, L)) of the pairs ``index``'s ``side``, right-padded, with the id
        ``before`` in front of each and ``after`` behind it when given."""
        starts, ends = self.offsets[side][index], self.offsets[side][index + 1]
        lead = int(before is not None)
        lengths = ends - starts + lead + int(after is not None)
        rows = np.full((len(index), int(lengths.max())), Vocab.pad_id, dtype=np.int64)
        ids = self.ids[side]
        for row, (start, end) in enumerate(zip(starts.tolist(), ends.tolist())):
            rows[row, lead : lead + end - start] = ids[start:end]
            if after is not None:
                rows[row, lead + end - start] = after
        if before is not None:
            rows[:, 0] = before
        return rows, np.arange(rows.shape[1])[None, :] < lengths[:, None]

    def batch(self, index: Sequence[int]) -> Batch:
        """The Batch of the pairs ``index`` (what batching.collate makes of their Examples)."""
        import torch  # the store itself needs numpy alone (the numpy engine trains from it)

        from .batching import Batch, SourceBatch

        index = np.asarray(index, dtype=np.int64)
        src, src_mask = self._rows("src", index)
        tgt_in, _ = self._rows("tgt", index, before=Vocab.bos_id)
        tgt_out, tgt_mask = self._rows("tgt", index, after=Vocab.eos_id)
        src, src_mask, tgt_in, tgt_out, tgt_mask = (
            torch.from_numpy(array) for array in (src, src_mask, tgt_in, tgt_out, tgt_mask)
        )
        return Batch(SourceBatch(src, src_mask), tgt_in, tgt_out, tgt_mask, index.tolist())


class ExampleStore:
    """Training Examples held in memory behind TokenStore's interface (what the sampler and the
    trainer read): ``len``, ``src_lengths`` and ``tgt_lengths`` ((N,) int32), ``unknown_share``,
    ``batch(index)`` and ``examples(index)``. For what a store of vocabulary ids cannot hold: a
    copying model's extended ids (model.copy), the features of sources that are files."""

    def __init__(self, examples: Sequence[Example], unknown_share: float = 0.0):
        self.items = list(examples)
        self.src_lengths = np.array([len(e.src) for e in self.items], dtype=np.int32)
        self.tgt_lengths = np.array([len(e.tgt) for e in self.items], dtype=np.int32)
        self.unknown_share = unknown_share
        self.manifest = {"read": len(self.items)}

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, k):
        return self.items[k]

    def examples(self, index: Sequence[int] | None = None) -> list[Example]:
        return self.items if index is None else [self.items[int(i)] for i in index]

    def batch(self, index: Sequence[int]) -> Batch:
        """The Batch of the Examples ``index`` (batching.collate)."""
        from .batching import collate

        index = [int(i) for i in index]
        return collate([self.items[i] for i in index], index)
