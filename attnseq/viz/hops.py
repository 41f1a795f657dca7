"""A memory network's hops as the paper's table: the story's sentences down, one column per hop,
each cell coloured by the weight that hop gives the sentence."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from . import pyplot, save_figure


def plot_hops(weights: np.ndarray, sentences: Sequence[str], question: str, answer: str, path: str | Path) -> Path:
    """Write the table of ``weights`` (hops, sentences) over ``sentences`` to ``path`` (PNG);
    the title says the question and the model's answer. Returns the path."""
    plt = pyplot()
    weights = np.asarray(weights, dtype=float).T  # (sentences, hops)
    rows, hops = weights.shape
    width = 2.2 + 0.075 * max((len(s) for s in sentences), default=10) + 0.75 * hops
    fig, ax = plt.subplots(figsize=(width, 1.3 + 0.32 * rows), dpi=110)
    ax.imshow(weights, cmap="Reds", vmin=0.0, vmax=1.0, aspect="auto")
    for i in range(rows):
        for k in range(hops):
            value = weights[i, k]
            ax.text(
                k, i, f"{value:.2f}", ha="center", va="center", fontsize=8, color="white" if value > 0.6 else "black"
            )
    ax.set_xticks(range(hops), [f"hop {k + 1}" for k in range(hops)], fontsize=8)
    ax.xaxis.tick_top()
    ax.set_yticks(range(rows), list(sentences), fontsize=8)
    ax.set_title(f"{question}   answer: {answer}", fontsize=9, pad=22)
    return save_figure(fig, path)
