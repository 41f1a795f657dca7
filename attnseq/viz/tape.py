"""A Neural Turing Machine at work, as the paper's figure: its inputs and outputs over time, and
where its write and read heads point in memory at every step."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from . import pyplot, save_figure


def symbol_columns(tokens: Sequence[str | None], steps: int) -> np.ndarray:
    """(channels, steps): a token of 0s and 1s as its bits, any other token (a count, a priority)
    as a 1 on the last channel; None (no symbol at that step) as zeros."""
    bits = max((len(t) for t in tokens if t and set(t) <= {"0", "1"}), default=0)
    columns = np.zeros((bits + 1, steps))
    for t, token in enumerate(tokens[:steps]):
        if token and set(token) <= {"0", "1"} and len(token) == bits:
            columns[:bits, t] = [int(b) for b in token]
        elif token:
            columns[bits, t] = 1.0
    return columns


def plot_tape(
    source: Sequence[str],
    output: Sequence[str],
    writes: np.ndarray,
    reads: np.ndarray,
    path: str | Path,
    title: str = "",
) -> Path:
    """Write the picture to ``path`` (PNG) and return it. ``source``: the input symbols; ``output``:
    the emitted ones; ``writes``, ``reads`` (steps, locations): the write and read weightings at
    every step, the source's steps first, then one per emitted token (and the eos)."""
    plt = pyplot()
    steps, locations = writes.shape
    inputs = symbol_columns(list(source) + [None] * (steps - len(source)), steps)
    outputs = symbol_columns([None] * len(source) + list(output) + [None] * steps, steps)
    used = np.flatnonzero((writes.max(0) > 0.02) | (reads.max(0) > 0.02))
    top = int(min(locations, (used.max() + 3) if used.size else locations))  # the locations the heads visit
    fig, axes = plt.subplots(
        2,
        2,
        figsize=(max(6.0, 0.16 * steps + 3.0), 5.2),
        dpi=110,
        gridspec_kw={"height_ratios": [1, max(1.2, top / 12)]},
    )
    panels = [
        (inputs, "inputs", "Greys"),
        (outputs, "outputs", "Greys"),
        (writes[:, :top].T, "write weightings", "viridis"),
        (reads[:, :top].T, "read weightings", "viridis"),
    ]
    for ax, (image, name, cmap) in zip(axes.flat, panels):
        ax.imshow(image, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest")
        ax.set_title(name, fontsize=9)
        ax.axvline(len(source) - 0.5, color="tab:red", linewidth=0.8)  # where the output phase starts
        ax.set_xlabel("time", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[1, 0].set_ylabel("memory location", fontsize=8)
    axes[0, 0].set_ylabel("bits", fontsize=8)
    if title:
        fig.suptitle(title, fontsize=9)
    return save_figure(fig, path)
