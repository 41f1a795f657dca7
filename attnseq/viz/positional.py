"""The sinusoidal positional encodings as a picture: positions across, dimensions down."""

from __future__ import annotations

from pathlib import Path

from . import pyplot, save_figure


def plot_positional(path: str | Path, positions: int = 100, dims: int = 64) -> Path:
    """Write a heatmap of the sinusoidal encodings of ``positions`` positions in ``dims``
    dimensions (table (positions, dims), drawn transposed) to ``path`` (PNG); returns the path."""
    plt = pyplot()

    from ..errors import UserError
    from ..nn.transformer.positional import sinusoidal_table

    if positions < 1 or dims < 1:
        raise UserError(f"plot positional: --positions and --dims must be positive, got {positions} and {dims}")
    table = sinusoidal_table(positions, dims).numpy().T  # (dims, positions)
    width = min(14.0, max(5.0, 0.06 * positions + 2.0))
    height = min(10.0, max(3.0, 0.06 * dims + 1.5))
    fig, ax = plt.subplots(figsize=(width, height), dpi=110)
    image = ax.imshow(table, cmap="RdBu", aspect="auto", vmin=-1.0, vmax=1.0, interpolation="nearest")
    ax.set_xlabel("position")
    ax.set_ylabel("dimension (even: sin, odd: cos)")
    ax.set_title(f"sinusoidal positional encoding, d = {dims}", fontsize=9)
    fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
    return save_figure(fig, path)
