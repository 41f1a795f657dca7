"""Attention over an image: each output token's weights over the grid of cells
(data.inputs.SourceShape) laid over the image, as a strip of overlays; and the check that reading
goes left to right along a formula (the share of items whose argmax column never moves back, markup that draws nothing
left out).

The attention's S positions are the grid's cells column by column; a cell covers size / grid pixels
of the image along each axis (the last row and column may reach past its edge: the grid rounds
up)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

import numpy as np

from ..eval.alignment import monotonic_share as alignment_share
from ..eval.alignment import moves_forward
from . import pyplot, save_figure


def cell_weights(alignment: np.ndarray, grid: Sequence[int]) -> np.ndarray:
    """``alignment`` (T, S), S the cells column by column, as (T, rows, columns) over the grid."""
    rows, columns = grid
    return np.asarray(alignment, dtype=np.float64).reshape(len(alignment), columns, rows).transpose(0, 2, 1)


def argmax_columns(alignment: np.ndarray, grid: Sequence[int], steps: int | None = None) -> np.ndarray:
    """The grid column of the most attended cell of each of the first ``steps`` output steps
    (default: all): (steps,)."""
    cells = cell_weights(alignment, grid)[:steps]
    flat = cells.reshape(len(cells), -1).argmax(1)
    return flat % grid[1]


def moves_left_to_right(columns: Sequence[int], slack: int = 1) -> bool:
    """True when no argmax column is more than ``slack`` columns left of the one before it (a
    token without ink of its own, a brace, may look a cell back at what it closes):
    eval.alignment.moves_forward with a formula's slack."""
    return moves_forward(columns, slack)


def monotonic_share(translations, slack: int = 1, skip: Collection[str] = ()) -> float:
    """The share of ``translations`` (searched with attention, of a run whose sources are
    images) whose output tokens' argmax columns move left to right (``moves_left_to_right``);
    the end-of-output step is left out, and the tokens in ``skip``: markup that draws nothing of
    its own (a formula's braces, ``^`` and ``_``: data.corpora.formulas.INKLESS), which has no place
    in the image to be read at. Items without output tokens count as monotonic:
    eval.alignment.monotonic_share with a formula's slack."""
    return alignment_share(translations, slack, skip)


def overlay(weights: np.ndarray, size: Sequence[int]) -> np.ndarray:
    """The weights of one step over the grid (rows, columns) spread over the image's pixels:
    (height, width), each cell's weight on the pixels it covers."""
    height, width = size
    rows, columns = weights.shape
    row_of = np.minimum(np.arange(height) * rows // height, rows - 1)
    column_of = np.minimum(np.arange(width) * columns // width, columns - 1)
    return weights[row_of][:, column_of]


def plot_image_attention(
    image: np.ndarray,
    alignment: np.ndarray,
    grid: Sequence[int],
    output_tokens: Sequence[str],
    path: str | Path,
    title: str = "",
) -> Path:
    """Write a strip of overlays to ``path``: for each output step (rows beyond ``output_tokens``
    are the end step, ``</s>``) the image (H, W) grey with that step's attention over it, each
    step's weights scaled to its own maximum (tinted the more, the higher), labelled with the
    token; returns the path."""
    plt = pyplot()
    cells = cell_weights(alignment, grid)
    labels = list(output_tokens)[: len(cells)] + ["</s>"] * (len(cells) - len(output_tokens))
    height, width = image.shape
    scale = 2.2 / max(height, 1)  # inches per pixel: 2.2 in high a row
    shown = max(width, 5 * height)  # pixel columns each row shows
    fig, axes = plt.subplots(
        len(cells), 1, figsize=(shown * scale + 1.2, 1.25 * len(cells) + 0.4), dpi=110, squeeze=False
    )
    for ax, weights, label in zip(axes[:, 0], cells, labels):
        heat = overlay(weights / max(weights.max(), 1e-12), (height, width))
        tint = np.zeros((height, width, 4))
        tint[..., :3] = (1.0, 0.27, 0.0)  # orange-red, as opaque as the cell's weight is high
        tint[..., 3] = 0.7 * heat
        ax.imshow(image, cmap="gray", vmin=0, vmax=255, aspect="equal")
        ax.imshow(tint, aspect="equal")
        ax.set_xlim(-0.5, max(width, shown) - 0.5)  # a short formula drawn at the left of a readable width
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_ylabel(label, rotation=0, ha="right", va="center", fontsize=10)
    if title:  # over the first row (a figure title sits at the figure's top, far above a long strip's rows)
        axes[0, 0].set_title(title, fontsize=10)
    return save_figure(fig, path, layout=False, bbox_inches="tight")
