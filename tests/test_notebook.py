"""The learner's notebook (docs/notebooks/book-ch8.ipynb, issue 44) runs from top to bottom: it
trains the book's date model, draws its attention and checks the torch engine against it.

The notebook is stored without outputs; this test executes it in a fresh python3 kernel with
nbclient, from its own folder, and reads what its cells printed and drew.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbclient
import nbformat
import pytest
from helpers import ROOT, book_file
from learning import at_least, learns, seed

NOTEBOOK = ROOT / "docs" / "notebooks" / "book-ch8.ipynb"
CELL_TIMEOUT = 300  # seconds for any one cell: training is the longest


def with_seed(nb, value: int) -> None:
    """Set ``SEED`` in the notebook's cell tagged "parameters" (as papermill would)."""
    (cell,) = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    cell.source, count = re.subn(r"^SEED = \d+", f"SEED = {value}", cell.source, flags=re.M)
    assert count == 1, "the parameters cell sets SEED once"


def printed(cell) -> str:
    """What a code cell wrote to stdout."""
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream" and o.name == "stdout")


def executed(tmp_path: Path, monkeypatch) -> list:
    """The notebook's code cells after running it (CellExecutionError on any cell's error)."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), "stored with outputs"
    with_seed(nb, seed(1984))
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(name, "1")  # the kernel computes on one core, as the tests do
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "matplotlib"))
    client = nbclient.NotebookClient(
        nb, timeout=CELL_TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute()
    return [c for c in nb.cells if c.cell_type == "code"]


@pytest.mark.slow
@learns
def test_the_chapter_8_notebook_trains_draws_and_matches_the_torch_engine(tmp_path, monkeypatch):
    book_file("date.txt")  # skipped, with the reason, where the book's data is not beside the checkout
    cells = executed(tmp_path, monkeypatch)
    text = "\n".join(printed(c) for c in cells)

    epochs = re.findall(r"epoch (\d+) \| loss ([\d.]+) \| test accuracy ([\d.]+)%", text)
    assert [int(e) for e, _, _ in epochs] == [1, 2, 3, 4]
    losses = [float(loss) for _, loss, _ in epochs]
    assert losses[-1] < losses[0]
    # 400 updates: 0.985 or more of the test dates over seeds 1984-1988 (the book: 99.9% after 1,053)
    at_least("test accuracy after 4 short epochs", float(epochs[-1][2]) / 100, 0.90)

    # one date's attention, drawn as a picture
    assert any("image/png" in o.get("data", {}) for c in cells for o in c.outputs)
    # the parity cell ran to its end (its asserts passed): same answers, attention and loss in torch
    parity = re.search(r"torch engine: the same (\d+) characters, attention within ([\d.e+-]+)", text)
    assert parity and int(parity[1]) == 1000 and float(parity[2]) < 1e-4
