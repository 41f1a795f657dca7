"""Recurrent encoder-decoders: cells (fused: cells.py; time loops: loop_cells.py), encoders,
decoder designs, and the ``rnn`` architecture (model.py). Importing the package registers them."""

from . import cells, decoders, encoders, loop_cells, model  # noqa: F401  (fill the registries)
