"""The Translator base every engine's translator shares: a trained model with its text pipeline.

A Translator turns texts into source ids, batches them by length, and asks its engine for one
thing, ``decode_batch``: the hypotheses of a batch of source ids. Everything else (decode
settings, attention in reading order, detokenisation, metrics, what the sources held that the
model never saw) is here, once.

Its public methods (``translate``, ``search``, ``evaluate``) check their arguments first
(translator/arguments.py): a wrong type is a TypeError, a wrong value a ValueError, each naming
the argument (and the index of the item) at fault.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..config import Config, DecodeConfig
from ..data.inputs import SourceShape
from ..data.pipeline import EncodedSource, TextPipeline
from ..decoding.common import AttentionViews, Hypothesis
from ..decoding.options import decode_options
from ..errors import ConfigError
from ..progress import StepProgress
from .arguments import decode_request, decode_value_error, flag, pairs_argument, texts_argument

log = logging.getLogger("attnseq")


@dataclass
class Translation:
    """One source's outputs, best first: texts, scores, and attention (T_out, S) per output,
    with source positions in reading order.

    ``unknown`` lists the source's pieces outside the model's vocabulary (reading order), each
    read as the unknown token. A source that is a file (data.input: image) has no tokens, and
    ``shape`` says where its attention falls (data.inputs.SourceShape: the image's size and the
    grid of cells the attention's S positions are, row by row). A ``blank`` source (empty or whitespace only) is not decoded: its
    one output is "" with score 0.0, no tokens, and attention of shape (0, 0) when asked for.
    """

    source: str | bytes  # the text; a file's path, or its contents as given (bytes: an upload)
    outputs: list[str]
    scores: list[float]
    attention: list[np.ndarray | None]
    source_tokens: list[str]
    output_tokens: list[list[str]]
    output_ids: list[list[int]] = field(default_factory=list)  # each output's target ids (no bos/eos)
    unknown: list[str] = field(default_factory=list)  # source pieces outside the vocabulary
    blank: bool = False  # an empty or whitespace-only source, given a blank output
    shape: SourceShape | None = None  # a file's source: its size and the memory's grid over it
    cut: bool = False  # the source held more than decode.max_source_len tokens or positions: the first were read

    @property
    def empty(self) -> bool:
        """The model's best output for a source that is not blank is the empty string (an n-best
        list holds an empty hypothesis only then, at its head)."""
        return not self.blank and bool(self.outputs) and self.outputs[0] == ""


def listed(numbers: Sequence[Any], shown: int = 5) -> str:
    """``1, 2, 3, 4, 5 and 7 more``: the first ``shown`` of ``numbers``, and how many more."""
    more = len(numbers) - shown
    return ", ".join(map(str, numbers[:shown])) + (f" and {more} more" if more > 0 else "")


@dataclass
class InputReport:
    """What a set of sources held that the model never saw: the sources (numbered from 1) holding
    pieces outside its vocabulary, those pieces with their counts (most frequent first), the
    blank sources (given blank outputs), and the sources the model answered with nothing (its best
    output the empty string: an empty line in a file of outputs, said rather than left silent)."""

    total: int
    unknown_sources: list[int] = field(default_factory=list)
    unknown_pieces: dict[str, int] = field(default_factory=dict)
    blank_sources: list[int] = field(default_factory=list)
    empty_outputs: list[int] = field(default_factory=list)  # sources whose best output is the empty string

    @classmethod
    def of(cls, translations: Sequence[Translation]) -> InputReport:
        pieces = Counter(piece for t in translations for piece in t.unknown)
        return cls(
            len(translations),
            [n for n, t in enumerate(translations, start=1) if t.unknown],
            dict(pieces.most_common()),
            [n for n, t in enumerate(translations, start=1) if t.blank],
            [n for n, t in enumerate(translations, start=1) if t.empty],
        )

    def as_dict(self) -> dict[str, Any]:
        """``unknown_sources``, ``unknown_pieces``, ``blank_sources`` and ``empty_outputs`` (what
        evaluate's metrics carry)."""
        return {
            "unknown_sources": self.unknown_sources,
            "unknown_pieces": self.unknown_pieces,
            "blank_sources": self.blank_sources,
            "empty_outputs": self.empty_outputs,
        }

    def warnings(self, what: str = "input") -> list[str]:
        """One line for the sources holding unknown pieces and one for the blank ones (``what``
        names a source: input, line, pair); none when there are none."""
        lines = []
        if self.unknown_sources:
            pieces = [repr(p) + (f" x{n}" if n > 1 else "") for p, n in self.unknown_pieces.items()]
            lines.append(
                f"{len(self.unknown_sources)} of {self.total} {what}s ({listed(self.unknown_sources)}) "
                f"hold pieces outside the model's vocabulary, each read as unknown: {listed(pieces)}"
            )
        if self.blank_sources:
            lines.append(
                f"{len(self.blank_sources)} blank {what}(s) ({listed(self.blank_sources)}) "
                "get blank outputs (nothing to translate)"
            )
        if self.empty_outputs:
            lines.append(
                f"{len(self.empty_outputs)} of {self.total} {what}s ({listed(self.empty_outputs)}) "
                "get an empty output: the model's best translation is the empty string"
            )
        return lines


def in_order(function: Callable, items: Sequence, workers: int) -> Iterator:
    """``function`` of each of ``items``, in their order, computed ``workers`` at a time in
    threads of their own (1: here, one after another); an error or an interrupt where they are
    used cancels those not started yet."""
    if workers <= 1:
        yield from map(function, items)
        return
    pool = ThreadPoolExecutor(workers)
    try:
        yield from pool.map(function, items)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


class Translator(ABC):
    """A model with its text pipeline; subclasses decode batches of source ids."""

    max_beam_size: int | None = None  # the widest beam the engine can search (None: no limit)
    precision: str = "fp32"  # what the model's products run in (decode.precision, as the hardware allows)
    # batches a search decodes at once, each in a thread of its own (an engine whose decode_batch
    # releases the GIL and has workers for them: CTranslate2's inter_threads); 1: one at a time
    batches_at_once: int = 1

    def __init__(self, pipeline: TextPipeline, config: Config):
        self.pipeline, self.config = pipeline, config

    @abstractmethod
    def decode_batch(
        self, src_ids: list[list[int]], decode: DecodeConfig, keep_attention: bool = False
    ) -> list[list[Hypothesis]]:
        """Hypotheses (n-best, best first) for each source (ids as the encoder reads them),
        searched as ``decode`` says; alignments (T_out, S) over the real ids."""

    def decode_sources(
        self, sources: list[EncodedSource], decode: DecodeConfig, keep_attention: bool = False
    ) -> list[list[Hypothesis]]:
        """Hypotheses of each of ``sources``: ``decode_batch`` of the ids their encoder reads. An
        engine whose model reads more of a source than its ids overrides it."""
        return self.decode_batch([self._readable(s.ids) for s in sources], decode, keep_attention)

    def target_words(self, source: EncodedSource) -> Sequence[str]:
        """The words that the target ids past the vocabulary stand for in the outputs of
        ``source``: none, for a model that writes from its vocabulary alone."""
        return ()

    def decode_settings(self, **request) -> DecodeConfig:
        """The run's decode settings with a request's (``beam_size``, ``n_best``, ...), checked
        once here for every caller; a ConfigError naming the key (``decode.beam_size``) otherwise."""
        decode = decode_options(self.config.decode, **request)
        if self.max_beam_size is not None and decode.beam_size > self.max_beam_size:
            if request.get("beam_size") is None and request.get("n_best") is not None:  # widened for n_best
                raise ConfigError(
                    f"decode.n_best: the {self.config.engine} engine searches beams of at most "
                    f"{self.max_beam_size}, so it returns at most {self.max_beam_size} hypotheses an "
                    f"input (more are torch-only); got {decode.n_best}",
                    key="decode.n_best",
                )
            raise ConfigError(
                f"decode.beam_size: the {self.config.engine} engine searches beams of at most "
                f"{self.max_beam_size} (wider beams are torch-only); got {decode.beam_size}",
                key="decode.beam_size",
            )
        return decode

    def search(
        self, texts: Sequence[str], keep_attention: bool = False, *, progress: bool = False, **request
    ) -> list[Translation]:
        """Full results for ``texts`` (a list of str; batched by length, order kept; for a run
        whose sources are files, data.input image, their paths or their contents as bytes).
        ``request``: decode settings for this call (``beam_size``, ``n_best``,
        ``length_penalty``, ...; None keeps the run's). ``progress`` shows how many sentences
        are decoded and how fast (a bar on a terminal; see attnseq.progress).

        Each result lists the source's pieces outside the model's vocabulary (``unknown``); a
        blank source gets a blank output, undecoded (``blank``). Sources cut at
        decode.max_source_len, or wider than the run's fixed-width training sources (the
        book's), are logged as warnings. Raises TypeError or ValueError naming the argument."""
        texts, _ = texts_argument(texts, files=not self.pipeline.inputs.reads_text)
        keep_attention = flag(keep_attention, "keep_attention")
        progress = flag(progress, "progress")
        try:
            decode = self.decode_settings(**decode_request(request))
        except ConfigError as err:
            raise decode_value_error(err) from None
        limit = decode.max_source_len
        sources = [self.pipeline.read_source(t, limit) for t in texts]
        self._warn_length(sources, limit)
        results: list[Translation | None] = [None] * len(texts)
        todo = []
        for i, text in enumerate(texts):
            if text.strip():
                todo.append(i)
            else:
                results[i] = self._blank(text, keep_attention)
        order = sorted(todo, key=lambda i: len(sources[i].ids))
        size = decode.batch_size
        if self.batches_at_once > 1 and order:  # fewer batches than workers: a smaller one each
            size = max(1, min(size, -(-len(order) // self.batches_at_once)))
        batches = [order[start : start + size] for start in range(0, len(order), size)]

        def decoded(rows: list[int]) -> list[list[Hypothesis]]:
            return self.decode_sources([sources[i] for i in rows], decode, keep_attention)

        with StepProgress("decoding", total=len(order), unit="sentence", enabled=progress) as shown:
            for rows, hyps in zip(batches, in_order(decoded, batches, self.batches_at_once)):
                for i, nbest in zip(rows, hyps):
                    results[i] = self._translation(texts[i], sources[i], nbest)
                shown.update(len(rows))
        return results  # type: ignore[return-value]

    def _readable(self, ids):
        """What the encoder reads of a source: its ids (unk alone for a text of no tokens), or a
        file's features (L, F) as they are."""
        return ids if len(ids) else [self.pipeline.src_vocab.unk_id]

    def source_shape(self, source: EncodedSource) -> SourceShape | None:
        """Engine hook: where the attention over a file's ``source`` falls (its size, the grid
        of the model's memory over it); None for text, and where the engine cannot say."""
        return None

    def _warn_length(self, sources: list[EncodedSource], limit: int) -> None:
        """Say which inputs were cut at ``limit`` tokens, and which are wider than the run's
        fixed-width training sources."""
        cut = [n for n, s in enumerate(sources, start=1) if s.cut]
        if cut:
            log.warning(
                "input %s longer than decode.max_source_len=%d tokens: only the first %d translated",
                listed(cut),
                limit,
                limit,
            )
        wider = [n for n, s in enumerate(sources, start=1) if s.wider]
        if wider:
            width = self.pipeline.fixed_width
            log.warning(
                "input %s wider than the run's training sources (all %d characters, padded with %r): "
                "a length the model never saw, translated as it is",
                listed(wider),
                width.width,
                width.pad,
            )

    def _blank(self, text: str, keep_attention: bool) -> Translation:
        """The result of a blank source: one blank output, nothing decoded."""
        attention = np.zeros((0, 0), dtype=np.float32) if keep_attention else None
        return Translation(
            source=text,
            outputs=[""],
            scores=[0.0],
            attention=[attention],
            source_tokens=[],
            output_tokens=[[]],
            output_ids=[[]],
            blank=True,
        )

    def _translation(self, text: str, source: EncodedSource, nbest: list[Hypothesis]) -> Translation:
        """The Translation of ``text`` from its hypotheses (their ids past the target vocabulary
        naming ``target_words``)."""
        oov = self.target_words(source)
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
            outputs=[self.pipeline.decode_target(h.tokens, oov) for h in nbest],
            scores=[h.score for h in nbest],
            attention=attention,
            source_tokens=source.tokens,
            output_tokens=[self.pipeline.target_pieces(h.tokens, oov) for h in nbest],
            output_ids=[list(h.tokens) for h in nbest],
            unknown=source.unknown,
            shape=None if self.pipeline.inputs.reads_text else self.source_shape(source),
            cut=source.cut,
        )

    def views_batch(
        self, src_ids: list[int], outputs: list[list[int]], rows: list[int]
    ) -> tuple[list[AttentionViews], np.ndarray | None]:
        """Engine hook: (views of each hypothesis ``outputs`` of the source ``src_ids``, ``rows``
        decoding steps each; the encoder's self-attention (layers, heads, S, S) or None), source
        positions as the encoder reads them. The base offers none beyond the alignment."""
        return [AttentionViews() for _ in outputs], None

    def attention_views(self, translation: Translation) -> tuple[list[AttentionViews], np.ndarray | None]:
        """What a page shows of each output of ``translation`` (searched with attention) beyond
        its alignment (see decoding.common.AttentionViews), and the encoder's self-attention
        (layers, heads, S, S) or None; source positions in reading order."""
        if translation.blank or not translation.output_ids or any(a is None for a in translation.attention):
            return [AttentionViews() for _ in translation.outputs], None
        src_ids = self._readable(self.pipeline.encode_source(translation.source))
        rows = [a.shape[0] for a in translation.attention]
        views, encoder = self.views_batch(src_ids, translation.output_ids, rows)
        if self.pipeline.config.reverse_source:
            views = [v.reversed_source(len(src_ids)) for v in views]
            encoder = None if encoder is None else encoder[..., ::-1, ::-1].copy()
        return views, encoder

    def translate(self, texts: Sequence[str] | str, return_attention: bool = False, beam_size: int | None = None):
        """Outputs for ``texts`` (a list of str, or one str); with ``return_attention`` a pair
        (outputs, attention matrices (T_out, S) in reading order).

        A blank text gets "" (attention (0, 0)). Texts holding pieces outside the model's
        vocabulary are translated with those pieces read as unknown, and one warning line on the
        "attnseq" logger says which (``search`` returns them per text). Raises TypeError or
        ValueError naming the argument at fault (``texts[2]: expected a str, got NoneType``)."""
        texts, single = texts_argument(texts, files=not self.pipeline.inputs.reads_text)
        return_attention = flag(return_attention, "return_attention")
        results = self.search(texts, keep_attention=return_attention, beam_size=beam_size)
        for line in InputReport.of(results).warnings("input"):
            log.warning("%s", line)
        outputs = [r.outputs[0] for r in results]
        attention = [r.attention[0] for r in results]
        if single:
            return (outputs[0], attention[0]) if return_attention else outputs[0]
        return (outputs, attention) if return_attention else outputs

    def evaluate(
        self,
        pairs: Sequence[tuple[str, str]],
        beam_size: int | None = None,
        bleu: bool = True,
        *,
        progress: bool = False,
    ) -> dict[str, Any]:
        """Metrics of the outputs on (source, reference) pairs (a non-empty list), against the
        references as given (normalised only as the run's data settings say: data.unicode,
        data.strip, data.lowercase; never through the tokenizer or the vocabulary):

        - ``exact_match`` and ``token_accuracy`` (0..1);
        - ``chrf`` (0..100) and ``chrf_signature`` (sacrebleu's), and ``bleu`` with
          ``bleu_signature`` where the references are long enough for BLEU to mean something
          (eval.metrics.bleu_applies);
        - ``sentences``, ``seconds``, ``sentences_per_second``;
        - ``unknown_sources`` (the pair numbers, from 1, whose source holds pieces outside the
          model's vocabulary), ``unknown_pieces`` (those pieces: count, most frequent first),
          ``blank_sources`` (the pairs with a blank source, given a blank output),
          ``empty_outputs`` (those whose best output is the empty string: InputReport).

        The sources are decoded in ``search``'s order and batches, and decoded and scored a part
        at a time (eval.metrics.EVALUATION_PART sentences, in whole batches): memory holds one
        part's sources and one batch's translations and reference n-grams, not the whole set's;
        the metrics are those of the whole set at once (eval.metrics.RunningScores sums counts
        and sacrebleu's statistics). ``progress`` shows the decoding's progress (see
        ``search``). Raises TypeError or ValueError naming the argument at fault (``pairs[3]:
        expected a (source, reference) pair, got 3 items``)."""
        from dataclasses import replace

        from ..eval import metrics as scoring

        pairs = pairs_argument(pairs)
        bleu = flag(bleu, "bleu")
        progress = flag(progress, "progress")
        try:
            decode = self.decode_settings(**decode_request({"beam_size": beam_size}))
        except ConfigError as err:
            raise decode_value_error(err) from None
        started, scored = time.perf_counter(), 0.0  # scored: the seconds spent scoring, not decoding
        pipeline, limit, part_size = self.pipeline, decode.max_source_len, scoring.EVALUATION_PART
        texts = [source for source, _ in pairs]
        # every source read once, for its length (search's order) and what is said of it (cut,
        # wider); kept when they make one part, else read again when its part comes
        keep = len(texts) <= part_size
        kept, lengths, marks, plain = [], [], [], EncodedSource([], [])
        for text in texts:
            source = pipeline.read_source(text, limit)
            lengths.append(len(source.ids))
            marks.append(
                EncodedSource([], [], cut=source.cut, wider=source.wider) if source.cut or source.wider else plain
            )
            if keep:
                kept.append(source)
        self._warn_length(marks, limit)
        del marks
        todo = [i for i, text in enumerate(texts) if text.strip()]
        order = sorted(todo, key=lengths.__getitem__)
        size = decode.batch_size
        if self.batches_at_once > 1 and order:  # fewer batches than workers: a smaller one each (search's)
            size = max(1, min(size, -(-len(order) // self.batches_at_once)))
        batches = [order[start : start + size] for start in range(0, len(order), size)]
        per_part = max(1, part_size // size, self.batches_at_once)
        with_bleu = bleu and scoring.bleu_applies(pipeline.normalise(t) for _, t in pairs)
        scores = scoring.RunningScores(bleu=with_bleu, chrf=bleu)
        # what InputReport.of reads of each translation: it whole (its attention and tokens
        # dropped) where it says something of it, else one that stands for all of which it says nothing
        report: list[Translation | None] = [None] * len(texts)
        silent: Translation | None = None

        def score(rows: list[int], translations: list[Translation]) -> None:
            nonlocal scored, silent
            tick = time.perf_counter()
            references = [pairs[i][1] for i in rows]
            scores.add(
                [t.outputs[0] for t in translations],
                [pipeline.normalise(r) for r in references],
                [t.output_tokens[0] for t in translations],
                [pipeline.target_tokens(r) for r in references],
            )
            for i, t in zip(rows, translations):
                said = InputReport.of([t]).as_dict()
                if not any(said.values()):
                    silent = silent or t
                    report[i] = silent
                    continue
                slim = replace(
                    t, attention=[None] * len(t.attention), source_tokens=[], output_tokens=[], output_ids=[]
                )
                report[i] = slim if InputReport.of([slim]).as_dict() == said else t
            scored += time.perf_counter() - tick

        blank = [i for i in range(len(texts)) if not texts[i].strip()]
        score(blank, [self._blank(texts[i], False) for i in blank])
        with StepProgress("decoding", total=len(order), unit="sentence", enabled=progress) as shown:
            for first in range(0, len(batches), per_part):
                part = batches[first : first + per_part]
                sources = kept or {i: pipeline.read_source(texts[i], limit) for rows in part for i in rows}

                def decoded(rows: list[int], sources=sources) -> list[list[Hypothesis]]:
                    return self.decode_sources([sources[i] for i in rows], decode, False)

                for rows, hyps in zip(part, in_order(decoded, part, self.batches_at_once)):
                    score(rows, [self._translation(texts[i], sources[i], nbest) for i, nbest in zip(rows, hyps)])
                    shown.update(len(rows))
        seconds = time.perf_counter() - started - scored
        metrics = scores.result()
        metrics.update(
            sentences=len(pairs), seconds=seconds, sentences_per_second=len(pairs) / seconds if seconds else 0.0
        )
        metrics.update(InputReport.of(report).as_dict())
        return metrics
