"""Attention heatmaps: input tokens across, output tokens down."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from . import pyplot, save_figure


def _display(token: str) -> str:
    return {" ": "␣", "\t": "⇥"}.get(token, token)


def plot_attention(alignment: np.ndarray, source_tokens: Sequence[str], output_tokens: Sequence[str],
                   path: str | Path, title: str = "") -> Path:
    """Write a heatmap of ``alignment`` (T_out, S) to ``path`` (PNG); returns the path.

    Rows beyond ``output_tokens`` (the eos step) are labelled ``</s>``.
    """
    plt = pyplot()

    alignment = np.asarray(alignment, dtype=float)
    rows = list(output_tokens) + ["</s>"] * (alignment.shape[0] - len(output_tokens))
    cols = list(source_tokens)[: alignment.shape[1]]
    height = max(3.0, 0.32 * len(rows) + 1.2)
    width = max(4.0, 0.32 * len(cols) + 1.8)
    fig, ax = plt.subplots(figsize=(width, height), dpi=110)
    image = ax.imshow(alignment[:, : len(cols)], cmap="viridis", aspect="auto", vmin=0.0, vmax=1.0)
    ax.set_xticks(range(len(cols)), [_display(t) for t in cols], fontsize=8, rotation=90 if max(map(len, cols), default=1) > 2 else 0)
    ax.set_yticks(range(len(rows)), [_display(t) for t in rows], fontsize=8)
    ax.set_xlabel("input")
    ax.set_ylabel("output")
    if title:
        ax.set_title(title, fontsize=9)
    fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
    return save_figure(fig, path)
