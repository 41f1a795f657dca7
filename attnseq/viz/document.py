"""A hierarchical attention network's reading of a document, as the paper's figure: each sentence
on its own line behind a bar coloured by its sentence weight, each word coloured by its word
weight scaled by the square root of its sentence's (so words of ignored sentences fade)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from . import pyplot, save_figure


def plot_document(
    sentences: Sequence[Sequence[str]],
    sentence_weights: np.ndarray,
    word_weights: np.ndarray,
    path: str | Path,
    title: str = "",
) -> Path:
    """Write the picture to ``path`` (PNG) and return it. ``sentences``: the words of each
    sentence; ``sentence_weights`` (N,); ``word_weights`` (N, L), row i over sentence i's words."""
    plt = pyplot()
    from matplotlib import colormaps

    reds, blues = colormaps["Reds"], colormaps["Blues"]
    rows = len(sentences)
    longest = max((sum(len(w) + 1 for w in s) for s in sentences), default=20)
    fig = plt.figure(figsize=(min(16.0, 1.6 + 0.11 * longest), 0.9 + 0.34 * rows), dpi=110)
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_axis_off()
    renderer = fig.canvas.get_renderer()
    line = 1.0 / (rows + 1.5)
    if title:
        ax.text(0.01, 1 - 0.6 * line, title, fontsize=9, va="center")
    for i, words in enumerate(sentences):
        y = 1 - (i + 1.5) * line
        p = float(sentence_weights[i])
        ax.text(
            0.01,
            y,
            f"{p:.2f}",
            fontsize=8,
            va="center",
            family="monospace",
            color="white" if p > 0.6 else "black",
            bbox={"facecolor": reds(0.15 + 0.85 * p), "edgecolor": "none", "pad": 2},
        )
        x = 0.6 / fig.get_figwidth()  # the words start 0.6 inch from the left
        scale = np.sqrt(p)
        for j, word in enumerate(words):
            strength = float(scale * word_weights[i, j])
            text = ax.text(
                x,
                y,
                word,
                fontsize=9,
                va="center",
                bbox={"facecolor": blues(0.05 + 0.9 * strength), "edgecolor": "none", "pad": 1.5},
                color="white" if strength > 0.6 else "black",
            )
            x += (text.get_window_extent(renderer).width + 6) / fig.bbox.width  # 6 pixels apart
    return save_figure(fig, path, layout=False)  # no tight layout: the axes fill the figure
