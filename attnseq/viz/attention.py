"""Attention heatmaps: input tokens across, output tokens down; a grid of them for every head
of a layer (or every layer and head); local attention's window outlined on each row; a copying
model's p_gen beside its rows."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from . import pyplot, save_figure


def _display(token: str) -> str:
    if token == "":
        return "∅"
    return token.replace(" ", "␣").replace("\t", "⇥").replace("\n", "↵")


def _labels(alignment: np.ndarray, source_tokens: Sequence[str], output_tokens: Sequence[str]):
    rows = list(output_tokens)[: alignment.shape[0]]
    rows += ["</s>"] * (alignment.shape[0] - len(rows))
    return rows, list(source_tokens)[: alignment.shape[1]]


def _draw(ax, alignment: np.ndarray, rows: Sequence[str], cols: Sequence[str], window=None, title: str = ""):
    """One heatmap on ``ax``; ``window`` (T, 2) first and last position of each row's window."""
    image = ax.imshow(alignment[: len(rows), : len(cols)], cmap="viridis", aspect="auto", vmin=0.0, vmax=1.0)
    ax.set_xticks(
        range(len(cols)),
        [_display(t) for t in cols],
        fontsize=8,
        rotation=90 if max(map(len, cols), default=1) > 2 else 0,
    )
    ax.set_yticks(range(len(rows)), [_display(t) for t in rows], fontsize=8)
    if window is not None:
        from matplotlib.patches import Rectangle

        for i, (low, high) in enumerate(np.asarray(window)[: len(rows)]):
            ax.add_patch(
                Rectangle((low - 0.5, i - 0.5), high - low + 1, 1, fill=False, edgecolor="#ff4d4d", linewidth=1.2)
            )
    if title:
        ax.set_title(title, fontsize=9)
    return image


def _draw_p_gen(ax, p_gen: np.ndarray, rows: int) -> None:
    """A copying model's p_gen of each output row as a strip on ``ax``, each cell with its value
    (1: written from the vocabulary, 0: copied from where the row attends)."""
    values = np.asarray(p_gen, dtype=float)[:rows].reshape(-1, 1)
    ax.imshow(values, cmap="cividis", aspect="auto", vmin=0.0, vmax=1.0)
    for i, value in enumerate(values[:, 0]):
        ax.text(0, i, f"{value:.2f}", ha="center", va="center", fontsize=7, color="black" if value > 0.5 else "white")
    ax.set_xticks([0], ["p_gen"], fontsize=8)
    ax.tick_params(left=False, labelleft=False)


def plot_attention(
    alignment: np.ndarray,
    source_tokens: Sequence[str],
    output_tokens: Sequence[str],
    path: str | Path,
    title: str = "",
    window=None,
    axis_names=("input", "output"),
    p_gen=None,
) -> Path:
    """Write a heatmap of ``alignment`` (T_out, S) to ``path`` (PNG or SVG by its suffix);
    returns the path. Rows beyond ``output_tokens`` (the eos step) are labelled ``</s>``;
    ``window`` (T_out, 2) outlines each row's local-attention window; ``p_gen`` (T_out,), a
    copying model's generation probability of each row, is drawn as a strip beside it."""
    plt = pyplot()
    alignment = np.asarray(alignment, dtype=float)
    rows, cols = _labels(alignment, source_tokens, output_tokens)
    height = max(3.0, 0.32 * len(rows) + 1.2)
    width = max(4.0, 0.32 * len(cols) + 1.8)
    if p_gen is None:
        fig, ax = plt.subplots(figsize=(width, height), dpi=110)
    else:
        fig, (ax, strip) = plt.subplots(
            1,
            2,
            figsize=(width + 0.7, height),
            dpi=110,
            gridspec_kw={"width_ratios": [max(len(cols), 1), 1.4], "wspace": 0.05},
        )
    image = _draw(ax, alignment, rows, cols, window, title)
    ax.set_xlabel(axis_names[0])
    ax.set_ylabel(axis_names[1])
    if p_gen is not None:
        _draw_p_gen(strip, p_gen, len(rows))
    fig.colorbar(image, ax=ax if p_gen is None else [ax, strip], fraction=0.04, pad=0.02)
    return save_figure(fig, path, layout=p_gen is None, **({} if p_gen is None else {"bbox_inches": "tight"}))


def plot_attention_grid(
    maps: Sequence[tuple[str, np.ndarray]],
    source_tokens: Sequence[str],
    output_tokens: Sequence[str],
    path: str | Path,
    columns: int,
    title: str = "",
    axis_names=("input", "output"),
) -> Path:
    """Write heatmaps ``maps`` ((caption, matrix (T_out, S)), ...) in a grid of ``columns``
    columns to ``path``; returns the path."""
    plt = pyplot()
    columns = max(1, min(columns, len(maps)))
    grid_rows = -(-len(maps) // columns)
    first = np.asarray(maps[0][1], dtype=float)
    rows, cols = _labels(first, source_tokens, output_tokens)
    cell_h, cell_w = max(2.2, 0.26 * len(rows) + 0.9), max(2.6, 0.26 * len(cols) + 1.0)
    fig, axes = plt.subplots(
        grid_rows, columns, figsize=(cell_w * columns + 0.8, cell_h * grid_rows + 0.6), dpi=110, squeeze=False
    )
    image = None
    for ax, (caption, matrix) in zip(axes.flat, maps):
        image = _draw(ax, np.asarray(matrix, dtype=float), rows, cols, title=caption)
    for ax in axes.flat[len(maps) :]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel(axis_names[1])
    for ax in axes[-1, :]:
        ax.set_xlabel(axis_names[0])
    if title:
        fig.suptitle(title, fontsize=10)
    fig.colorbar(image, ax=list(axes.flat), fraction=0.02, pad=0.01)
    return save_figure(fig, path, layout=False, bbox_inches="tight")
