"""The Python API: load a trained run and translate text with it.

    import attnseq
    model = attnseq.load("runs/demo")
    model.translate(["september 27, 1994"])            # -> ["1994-09-27"]
    outputs, attention = model.translate([...], return_attention=True)
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from .config import Config, load_config
from .data.batching import pad
from .data.pipeline import TextPipeline
from .decoding.common import Hypothesis
from .decoding.search import search
from .errors import UserError
from .eval.metrics import exact_match, token_accuracy


@dataclass
class Translation:
    """One source's outputs, best first: texts, scores, and attention (T_out, S) per output,
    with source positions in reading order."""

    source: str
    outputs: list[str]
    scores: list[float]
    attention: list[np.ndarray | None]
    source_tokens: list[str]
    output_tokens: list[list[str]]


class Translator:
    """A model with its text pipeline, ready to translate."""

    def __init__(self, model: torch.nn.Module, pipeline: TextPipeline, config: Config,
                 device: str | torch.device = "cpu"):
        self.model, self.pipeline, self.config = model, pipeline, config
        self.device = torch.device(device)
        self.model.to(self.device).eval()

    def search(self, texts: Sequence[str], keep_attention: bool = False, **decode_overrides
               ) -> list[Translation]:
        """Full results for ``texts`` (batched by length; order kept)."""
        decode = dataclasses.replace(self.config.decode, **{k: v for k, v in decode_overrides.items() if v is not None})
        src_ids = [self.pipeline.encode_source(t) or [self.pipeline.src_vocab.unk_id] for t in texts]
        order = sorted(range(len(texts)), key=lambda i: len(src_ids[i]))
        results: list[Translation | None] = [None] * len(texts)
        for start in range(0, len(order), decode.batch_size):
            rows = order[start : start + decode.batch_size]
            hyps = self.decode_batch([src_ids[i] for i in rows], decode, keep_attention)
            for i, nbest in zip(rows, hyps):
                results[i] = self._translation(texts[i], nbest)
        return results  # type: ignore[return-value]

    def decode_batch(self, src_ids: list[list[int]], decode, keep_attention: bool = False
                     ) -> list[list[Hypothesis]]:
        """Hypotheses (n-best, best first) for each source (ids as the encoder reads them),
        searched as ``decode`` (a DecodeConfig) says; alignments (T_out, S) over the real ids."""
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                src, mask = pad(src_ids)
                return search(self.model, src.to(self.device), mask.to(self.device), decode, keep_attention)
        finally:
            self.model.train(was_training)

    def _translation(self, text: str, nbest: list[Hypothesis]) -> Translation:
        attention = []
        for h in nbest:
            a = None
            if h.alignment is not None:
                a = np.asarray(h.alignment)
                if self.pipeline.config.reverse_source:
                    a = a[:, ::-1].copy()  # back to reading order
            attention.append(a)
        return Translation(
            source=text,
            outputs=[self.pipeline.decode_target(h.tokens) for h in nbest],
            scores=[h.score for h in nbest],
            attention=attention,
            source_tokens=self.pipeline.source_tokens(text),
            output_tokens=[self.pipeline.target_pieces(h.tokens) for h in nbest],
        )

    def translate(self, texts: Sequence[str] | str, return_attention: bool = False, beam: int | None = None):
        """Outputs for ``texts`` (a list, or one string); with ``return_attention`` a pair
        (outputs, attention matrices (T_out, S) in reading order)."""
        single = isinstance(texts, str)
        results = self.search([texts] if single else list(texts), keep_attention=return_attention,
                              beam_size=beam)
        outputs = [r.outputs[0] for r in results]
        attention = [r.attention[0] for r in results]
        if single:
            return (outputs[0], attention[0]) if return_attention else outputs[0]
        return (outputs, attention) if return_attention else outputs

    def evaluate(self, pairs: Sequence[tuple[str, str]], beam: int | None = None,
                 bleu: bool = True) -> dict[str, float]:
        """Metrics on (source, reference) pairs: exact_match and token_accuracy (0..1),
        bleu and chrf (0..100), sentences, seconds."""
        from .eval.metrics import bleu as bleu_score, chrf as chrf_score

        started = time.perf_counter()
        results = self.search([s for s, _ in pairs], beam_size=beam)
        seconds = time.perf_counter() - started
        normalise = lambda t: self.pipeline.decode_target(self.pipeline.encode_target(t))  # noqa: E731
        refs = [normalise(t) for _, t in pairs]
        hyps = [r.outputs[0] for r in results]
        metrics = {
            "exact_match": exact_match(hyps, refs),
            "token_accuracy": token_accuracy([r.output_tokens[0] for r in results],
                                             [self.pipeline.target_tokens(t) for _, t in pairs]),
        }
        if bleu:
            metrics["bleu"] = bleu_score(hyps, refs)
            metrics["chrf"] = chrf_score(hyps, refs)
        metrics.update(sentences=len(pairs), seconds=seconds,
                       sentences_per_second=len(pairs) / seconds if seconds else 0.0)
        return metrics


def load(run_dir: str | Path, checkpoint: str = "best", device: str = "cpu",
         overrides: Sequence[str] = ()) -> Translator:
    """The model trained in ``run_dir`` (``checkpoint`` "best" or "last"), ready to translate."""
    from .nn.model import build_model
    from .train.checkpoint import BEST, CONFIG_FILE, LAST, load_weights

    run_dir = Path(run_dir)
    if not (run_dir / CONFIG_FILE).exists():
        raise UserError(f"{run_dir}: not a run folder (no {CONFIG_FILE})")
    config = load_config(run_dir / CONFIG_FILE, list(overrides))
    pipeline = TextPipeline.load(config.data, run_dir)
    if config.engine == "numpy":
        from .scratch.engine import load_numpy_translator

        return load_numpy_translator(run_dir, config, pipeline, checkpoint)
    model = build_model(config.model, len(pipeline.src_vocab), len(pipeline.tgt_vocab))
    path = run_dir / (BEST if checkpoint == "best" else LAST)
    if checkpoint == "best" and not path.exists():
        path = run_dir / LAST
    load_weights(model, path)
    return Translator(model, pipeline, config, device)
