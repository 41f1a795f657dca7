"""Attention over speech: the utterance's log-mel spectrogram with, under it on the same time
axis, each output token's weights over the listener's steps (data.inputs.SourceShape: ``size``
(frames,), ``grid`` (steps,); step i covers frames [i * frames / steps, (i + 1) * frames / steps),
10 ms each), and a line through each token's most attended step on the spectrogram."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from . import pyplot, save_figure
from .attention import _display, _labels

FRAME_SECONDS = 0.01  # the features' hop (data/features.py)


def step_seconds(frames: int, steps: int) -> float:
    """The seconds each of the listener's ``steps`` covers of ``frames`` frames."""
    return frames * FRAME_SECONDS / max(steps, 1)


def plot_audio_attention(
    features: np.ndarray, alignment: np.ndarray, output_tokens: Sequence[str], path: str | Path, title: str = ""
) -> Path:
    """Write the spectrogram of ``features`` (frames, n_mels) over the attention ``alignment``
    (T_out, steps) of the ``output_tokens`` (rows beyond them: ``</s>``) to ``path``, both along
    one time axis in seconds; returns the path."""
    plt = pyplot()
    features = np.asarray(features, dtype=float)
    alignment = np.asarray(alignment, dtype=float)
    frames, steps = len(features), alignment.shape[1]
    seconds = frames * FRAME_SECONDS
    rows = [_display(t) for t in _labels(alignment, (), output_tokens)[0]]
    width = max(6.0, min(16.0, 2.2 * seconds + 2.0))
    fig, (top, bottom) = plt.subplots(
        2,
        1,
        sharex=True,
        dpi=110,
        figsize=(width, 2.4 + 0.24 * len(rows) + 0.8),
        gridspec_kw={"height_ratios": [2.4, 0.24 * len(rows) + 0.3], "hspace": 0.08},
    )
    top.imshow(features.T, origin="lower", aspect="auto", cmap="magma", extent=(0, seconds, 0, features.shape[1]))
    top.set_ylabel("mel band")
    per_step = step_seconds(frames, steps)
    peaks = (alignment.argmax(1) + 0.5) * per_step  # (T_out,) the middle of each row's most attended step
    for t, (x, token) in enumerate(zip(peaks, rows)):
        top.axvline(x, color="#7fdbff", linewidth=0.8, alpha=0.8)
        top.text(
            x,
            features.shape[1] * (0.92 - 0.09 * (t % 4)),
            token,
            color="white",
            fontsize=8,
            ha="center",
            bbox={"facecolor": "black", "alpha": 0.5, "pad": 1, "linewidth": 0},
        )
    if title:
        top.set_title(title, fontsize=9)
    image = bottom.imshow(
        alignment,
        aspect="auto",
        cmap="viridis",
        vmin=0.0,
        vmax=1.0,
        extent=(0, steps * per_step, len(rows) - 0.5, -0.5),
        interpolation="nearest",
    )
    bottom.set_yticks(range(len(rows)), rows, fontsize=8)
    bottom.set_ylabel("output")
    bottom.set_xlabel(f"seconds ({steps} listener steps of {per_step * 1000:.0f} ms)")
    bottom.set_xlim(0, seconds)
    fig.colorbar(image, ax=[top, bottom], fraction=0.025, pad=0.01)
    return save_figure(fig, path, layout=False, bbox_inches="tight")
