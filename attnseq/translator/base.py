"""The Translator base every engine's translator shares: a trained model with its text pipeline.

A Translator turns texts into source ids, batches them by length, and asks its engine for one
thing, ``decode_batch``: the hypotheses of a batch of source ids. Everything else (decode
settings, attention in reading order, detokenisation, metrics) is here, once.
"""
from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ..config import Config, DecodeConfig
from ..data.pipeline import TextPipeline
from ..decoding.common import AttentionViews, Hypothesis
from ..decoding.options import decode_options
from ..errors import ConfigError
from ..eval.metrics import bleu as bleu_score, bleu_applies, chrf as chrf_score, exact_match, token_accuracy

log = logging.getLogger("attnseq")


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
    output_ids: list[list[int]] = field(default_factory=list)  # each output's target ids (no bos/eos)


class Translator(ABC):
    """A model with its text pipeline; subclasses decode batches of source ids."""

    max_beam_size: int | None = None  # the widest beam the engine can search (None: no limit)

    def __init__(self, pipeline: TextPipeline, config: Config):
        self.pipeline, self.config = pipeline, config

    @abstractmethod
    def decode_batch(self, src_ids: list[list[int]], decode: DecodeConfig, keep_attention: bool = False
                     ) -> list[list[Hypothesis]]:
        """Hypotheses (n-best, best first) for each source (ids as the encoder reads them),
        searched as ``decode`` says; alignments (T_out, S) over the real ids."""

    def decode_settings(self, **request) -> DecodeConfig:
        """The run's decode settings with a request's (``beam_size``, ``n_best``, ...), checked
        once here for every caller."""
        decode = decode_options(self.config.decode, **request)
        if self.max_beam_size is not None and decode.beam_size > self.max_beam_size:
            raise ConfigError(f"decode.beam_size: the {self.config.engine} engine searches beams of at most "
                              f"{self.max_beam_size} (wider beams are torch-only); got {decode.beam_size}",
                              key="decode.beam_size")
        return decode

    def search(self, texts: Sequence[str], keep_attention: bool = False, **request) -> list[Translation]:
        """Full results for ``texts`` (batched by length; order kept). ``request``: decode
        settings for this call (``beam_size``, ``n_best``, ``length_penalty``, ...)."""
        decode = self.decode_settings(**request)
        limit = decode.max_source_len
        src_ids = [self.pipeline.encode_source(t, limit) or [self.pipeline.src_vocab.unk_id] for t in texts]
        cut = [i + 1 for i, t in enumerate(texts) if len(src_ids[i]) == limit and
               len(self.pipeline.source_tokens(t)) > limit]
        if cut:
            log.warning("input %s longer than decode.max_source_len=%d tokens: only the first %d translated",
                        ", ".join(map(str, cut[:5])) + (f" and {len(cut) - 5} more" if len(cut) > 5 else ""),
                        limit, limit)
        order = sorted(range(len(texts)), key=lambda i: len(src_ids[i]))
        results: list[Translation | None] = [None] * len(texts)
        for start in range(0, len(order), decode.batch_size):
            rows = order[start : start + decode.batch_size]
            hyps = self.decode_batch([src_ids[i] for i in rows], decode, keep_attention)
            for i, nbest in zip(rows, hyps):
                results[i] = self._translation(texts[i], nbest, limit)
        return results  # type: ignore[return-value]

    def _translation(self, text: str, nbest: list[Hypothesis], limit: int = 0) -> Translation:
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
            source_tokens=self.pipeline.source_tokens(text, limit),
            output_tokens=[self.pipeline.target_pieces(h.tokens) for h in nbest],
            output_ids=[list(h.tokens) for h in nbest],
        )

    def views_batch(self, src_ids: list[int], outputs: list[list[int]], rows: list[int]
                    ) -> tuple[list[AttentionViews], np.ndarray | None]:
        """Engine hook: (views of each hypothesis ``outputs`` of the source ``src_ids``, ``rows``
        decoding steps each; the encoder's self-attention (layers, heads, S, S) or None), source
        positions as the encoder reads them. The base offers none beyond the alignment."""
        return [AttentionViews() for _ in outputs], None

    def attention_views(self, translation: Translation) -> tuple[list[AttentionViews], np.ndarray | None]:
        """What a page shows of each output of ``translation`` (searched with attention) beyond
        its alignment (see decoding.common.AttentionViews), and the encoder's self-attention
        (layers, heads, S, S) or None; source positions in reading order."""
        if not translation.output_ids or any(a is None for a in translation.attention):
            return [AttentionViews() for _ in translation.outputs], None
        src_ids = self.pipeline.encode_source(translation.source) or [self.pipeline.src_vocab.unk_id]
        rows = [a.shape[0] for a in translation.attention]
        views, encoder = self.views_batch(src_ids, translation.output_ids, rows)
        if self.pipeline.config.reverse_source:
            views = [v.reversed_source(len(src_ids)) for v in views]
            encoder = None if encoder is None else encoder[..., ::-1, ::-1].copy()
        return views, encoder

    def translate(self, texts: Sequence[str] | str, return_attention: bool = False,
                  beam_size: int | None = None):
        """Outputs for ``texts`` (a list, or one string); with ``return_attention`` a pair
        (outputs, attention matrices (T_out, S) in reading order)."""
        single = isinstance(texts, str)
        results = self.search([texts] if single else list(texts), keep_attention=return_attention,
                              beam_size=beam_size)
        outputs = [r.outputs[0] for r in results]
        attention = [r.attention[0] for r in results]
        if single:
            return (outputs[0], attention[0]) if return_attention else outputs[0]
        return (outputs, attention) if return_attention else outputs

    def evaluate(self, pairs: Sequence[tuple[str, str]], beam_size: int | None = None,
                 bleu: bool = True) -> dict[str, float]:
        """Metrics on (source, reference) pairs: exact_match and token_accuracy (0..1),
        chrf (0..100), bleu (0..100) where the references are long enough for it to mean
        something (eval.metrics.bleu_applies), sentences, seconds."""
        started = time.perf_counter()
        results = self.search([s for s, _ in pairs], beam_size=beam_size)
        seconds = time.perf_counter() - started
        refs = [self.pipeline.decode_target(self.pipeline.encode_target(t)) for _, t in pairs]
        hyps = [r.outputs[0] for r in results]
        metrics = {
            "exact_match": exact_match(hyps, refs),
            "token_accuracy": token_accuracy([r.output_tokens[0] for r in results],
                                             [self.pipeline.target_tokens(t) for _, t in pairs]),
        }
        if bleu:
            if bleu_applies(refs):
                metrics["bleu"] = bleu_score(hyps, refs)
            metrics["chrf"] = chrf_score(hyps, refs)
        metrics.update(sentences=len(pairs), seconds=seconds,
                       sentences_per_second=len(pairs) / seconds if seconds else 0.0)
        return metrics
