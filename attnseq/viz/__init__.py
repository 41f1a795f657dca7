"""Plots: attention heatmaps (a hypothesis, a layer, a grid of heads), training curves,
positional encodings."""

from __future__ import annotations

import io
from pathlib import Path


def pyplot():
    """matplotlib.pyplot on the Agg backend (files only, no screen needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def figure_file(path: str | Path) -> Path:
    """The file a figure for ``path`` is written to: ``path``, with ``.png`` added when it names a
    file without a suffix (as matplotlib does)."""
    path = Path(path)
    if path.suffix or path.name in ("", ".", "..") or path.is_dir():
        return path
    return path.with_name(path.name + ".png")


def save_figure(fig, path: str | Path, layout: bool = True, **savefig) -> Path:
    """Lay out ``fig`` (``layout``), write it to ``path`` (its suffix the format; folders created)
    through attnseq.files.write_output, close it; returns the path written (figure_file).

    A figure replaces an earlier file at ``path``: the command that names the path refuses an
    existing one before it draws (attnseq.files.check_output with its ``--overwrite``)."""
    from ..errors import UserError
    from ..files import write_output

    path = figure_file(path)
    kind = path.suffix[1:].lower()
    plt = pyplot()
    if kind not in fig.canvas.get_supported_filetypes():
        plt.close(fig)
        raise UserError(f"{path}: cannot draw a .{kind} file; give a .png, .pdf or .svg path")
    if layout:
        fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format=kind, **savefig)
    plt.close(fig)
    return write_output(path, buffer.getvalue(), overwrite=True)
