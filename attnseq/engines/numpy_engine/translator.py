"""The numpy engine's Translator: the book's batched greedy generation behind the Translator interface."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...config import Config
from ...data.pipeline import TextPipeline
from ...decoding.common import Hypothesis
from ...runs import checkpoint_path, read_checkpoint
from ...translator import Translator
from .blas import blas_threads
from .designs import numpy_design
from .layouts import LAYOUTS, ArrayLayout, real_columns
from .weights import load_params


class _KeepScores:
    """Stands in for a model's loss layer to capture the scores (N, T, V) of a forward pass."""

    def __init__(self):
        self.scores = None

    def forward(self, xs: np.ndarray, ts: np.ndarray) -> float:
        self.scores = xs
        return 0.0


def _log_softmax(x: np.ndarray) -> np.ndarray:
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


class NumpyTranslator(Translator):
    """A numpy model with its text pipeline: the Translator interface over batched greedy search
    (``layout.steps`` steps, cut at eos unless the layout is the book's). Sources are padded to
    ``layout.source_len`` (longer ones to the longest of their batch). Attention (T_out, S)
    covers the real source tokens only: the weight the book's unmasked padding draws is left
    out, so a row may sum to less than 1."""

    max_beam_size = 1  # greedy search only

    def __init__(self, model, pipeline: TextPipeline, config: Config, layout: ArrayLayout, threads: int = 1):
        super().__init__(pipeline, config)
        self.model, self.layout, self.threads = model, layout, threads

    def decode_batch(self, src_ids: list[list[int]], decode, keep_attention: bool = False) -> list[list[Hypothesis]]:
        reverse = self.pipeline.config.reverse_source
        xs = self.layout.sources(src_ids, reverse)  # (N, S)
        with blas_threads(self.threads):
            ids = self.model.generate(xs, self.layout.start, self.layout.steps(decode))  # (N, L)
            alignment = getattr(self.model.decoder, "attention_weights", None)  # (N, L, S)
            logp = self._log_probs(xs, ids)  # (N, L)
        hyps = []
        for row, src in enumerate(src_ids):
            tokens, steps = self.layout.output(ids[row])
            a = None
            if keep_attention and alignment is not None:
                a = alignment[row, :steps, real_columns(len(src), xs.shape[1], reverse)].astype(np.float32)
            hyps.append([Hypothesis(tokens, float(logp[row, :steps].sum()), a)])
        return hyps

    def _log_probs(self, xs: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Log-probabilities (N, L) of the tokens ``ids`` (N, L), fed back as the decoder's inputs."""
        ts = np.concatenate([np.full((len(ids), 1), self.layout.start, dtype=ids.dtype), ids], axis=1)
        loss_layer, keep = self.model.softmax, _KeepScores()
        self.model.softmax = keep
        try:
            self.model.forward(xs, ts)
        finally:
            self.model.softmax = loss_layer
        logp = _log_softmax(keep.scores.astype(np.float64))  # (N, L, V)
        return np.take_along_axis(logp, ids[:, :, None], axis=2)[:, :, 0]


def build_numpy_model(design: str, config: Config, pipeline: TextPipeline, layout: ArrayLayout, rng):
    """The book's model ``design`` with the sizes of ``config`` and the vocabularies of the run,
    built from the fused layers (scratch/fused.py: the book's layers' functions, faster)."""
    from ...scratch import build_model, fused

    return build_model(
        design,
        layout.vocab_size(pipeline.src_vocab),
        config.model.embed_size,
        config.model.hidden_size,
        dtype=np.float32,
        rng=rng,
        ignore_label=layout.ignore_label,
        target_vocab_size=layout.vocab_size(pipeline.tgt_vocab),
        layers=fused,
    )


def load_numpy_translator(run_dir: str | Path, config: Config, checkpoint: str = "best") -> NumpyTranslator:
    """The numpy model of ``run_dir`` (``checkpoint`` best, falling back to last), ready to
    translate."""
    run_dir = Path(run_dir)
    design = numpy_design(config)
    pipeline = TextPipeline.load(config.data, run_dir)
    path = checkpoint_path(run_dir, checkpoint)
    weights, metadata = read_checkpoint(path)
    layout = LAYOUTS[config.data.format](
        pipeline, int(metadata.get("source_len", 0)), int(metadata.get("target_len", 0))
    )
    model = build_numpy_model(design, config, pipeline, layout, np.random.RandomState(0))
    load_params(model, weights, path)
    return NumpyTranslator(model, pipeline, config, layout, config.train.threads or 1)
