"""Whether a Neural Turing Machine's heads run the program of a task, read off its weightings:
for copy (Graves et al. 2014, §4.1, fig. 6) the write head puts each input vector at the location
next to the one before, and the read head then visits those locations in the order they were
written. The checks take each head's most weighted location at each step, so they are computed
from the weightings, not seen in a picture of them; a sequence follows the program only when
every one of its steps does (a copy whose first two vectors share a location fails, however long).

    writes (B, S): the write head's location at each source step
    reads (B, T): the read head's location at each output step
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def adjacent_steps(writes: np.ndarray, locations: int) -> np.ndarray:
    """(B, S - 1) True where source step t + 1 writes to a location next to step t's (one place
    on, either way round the circular memory of ``locations``): distinct and adjacent."""
    step = (writes[:, 1:] - writes[:, :-1]) % locations
    return (step == 1) | (step == locations - 1)


def reads_in_order(writes: np.ndarray, reads: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
    """(B, T) True where output step j reads the location written at source step ``order[b, j]``
    (default j: a copy's output j is its input j); reads beyond the source's length are False."""
    if order is None:
        steps = min(reads.shape[1], writes.shape[1])
        order = np.broadcast_to(np.arange(steps), (reads.shape[0], steps))
    reads = reads[:, : order.shape[1]]
    return np.take_along_axis(writes, order, axis=1) == reads


@dataclass
class TapeProgram:
    """A test set's shares (0..1) of sequences that follow the copy program: ``writes`` those
    whose every vector goes to the location next to the one before (adjacent_steps everywhere),
    ``reads`` those whose every output step reads where its vector was written (reads_in_order
    everywhere), ``first_two_apart`` those whose first two vectors go to distinct locations; and
    ``focus``, the mean weight of the heads' most weighted locations (how sharp they are)."""

    writes: float
    reads: float
    first_two_apart: float
    focus: float


def tape_program(
    writes: np.ndarray, reads: np.ndarray, locations: int, focus: float, order: np.ndarray | None = None
) -> TapeProgram:
    """The shares of ``TapeProgram`` from the heads' locations (sequences of one length: writes
    (B, S), reads (B, T)) in a memory of ``locations``; ``focus`` passed through."""
    apart = writes[:, 0] != writes[:, 1] if writes.shape[1] > 1 else np.ones(len(writes), dtype=bool)
    return TapeProgram(
        writes=float(adjacent_steps(writes, locations).all(1).mean()),
        reads=float(reads_in_order(writes, reads, order).all(1).mean()),
        first_two_apart=float(apart.mean()),
        focus=focus,
    )


def head_locations(translator, pairs) -> tuple[np.ndarray, np.ndarray, float]:
    """(writes (B, S), reads (B, T), focus) of a torch NTM run (``translator``) on ``pairs`` of one
    source length: the first write head's most weighted location at each source step, the first
    read head's at each output step fed the reference (its T = the reference's tokens), and the
    mean weight of those locations."""
    import torch

    from ..data.batching import SourceBatch

    pipeline, model = translator.pipeline, translator.model
    src = torch.tensor([pipeline.encode_source(s) for s, _ in pairs])  # (B, S)
    tgt = [pipeline.tgt_vocab.encode(t.split()) for _, t in pairs]
    width = max(map(len, tgt))
    tgt_in = torch.tensor(
        [[pipeline.tgt_vocab.bos_id] + t + [pipeline.tgt_vocab.pad_id] * (width - len(t)) for t in tgt]
    )  # (B, T)
    with torch.no_grad():
        tape = model.encode(SourceBatch(src, torch.ones_like(src, dtype=torch.bool)))
        weights = model.decoder.trace(tape, tgt_in)  # (B, T, R + W, N)
    written = tape.writing[:, :, 0]  # (B, S, N)
    read = weights[:, :, 0]  # (B, T, N)
    focus = torch.cat([written.max(-1).values.flatten(), read.max(-1).values.flatten()]).mean()
    return written.argmax(-1).numpy(), read.argmax(-1).numpy(), float(focus)
