"""``engine: numpy``: the book's models (attnseq/scratch) trained and served like the torch ones.

The adapter between attnseq and the NumPy-only layers: which configs the book's models can be
(designs.py), the arrays they read (layouts.py), weights between the engines (convert.py) and
in files (weights.py), BLAS threads (blas.py), the translator and the trainer. Nothing here
imports torch.
"""

from __future__ import annotations

from ..base import ENGINES, TrainingEngine


@ENGINES.register("numpy")
class NumpyEngine(TrainingEngine):
    """The book's baseline, Peeky and attention seq2seq (and attention with a BiLSTM encoder)."""

    def check(self, config):
        from ...data.sources import check_data
        from .designs import check_numpy

        config = check_numpy(config)
        check_data(config.data)
        return config

    def train(self, config, run_dir, resume=False, on_eval=None, overwrite=False):
        from .trainer import train_numpy

        return train_numpy(config, run_dir, resume, on_eval, overwrite)

    def load(self, run_dir, config, checkpoint="best", device="cpu"):
        from ...errors import UserError
        from .translator import load_numpy_translator

        if str(device) != "cpu":
            raise UserError(f"device {device}: the numpy engine runs on the CPU")
        return load_numpy_translator(run_dir, config, checkpoint)
