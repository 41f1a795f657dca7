"""Text <-> ids for one run: the tokenizers and vocabularies of both sides, and how text was
normalised and laid out for training, saved with the run so that inference reads text the same way.

What the pipeline records besides vocabularies and tokenizer models (``pipeline.json``):

- ``unicode``: the Unicode normal form of both sides (``data.unicode``; nfc by default), so the
  same text typed composed or decomposed is one input;
- ``fixed_width``: the width and padding of training sources that were all padded to one width
  (the book's files: questions padded with spaces to 29 characters). An input is laid out the
  same way (padded to the width), so an unpadded "3/4/21" is read as the model saw it.

A run written before these were recorded has no ``pipeline.json`` and reads text as it did then
(no normalisation, no padding).
"""

from __future__ import annotations

import itertools
import json
import logging
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import DataError
from ..files import read_once
from ..utils import atomic_write_text
from .inputs import build_input
from .sources import SOURCES
from .tokenizers import TOKENIZERS, Tokenizer
from .vocab import Vocab

SOURCE, TARGET, JOINT = "source", "target", "joint"
PIPELINE_FILE = "pipeline.json"  # the text layout the run was trained with
UNICODE_FORMS = ("nfc", "nfkc", "none")  # data.unicode
log = logging.getLogger("attnseq")


@dataclass
class Example:
    """One sentence pair as ids: source as the encoder reads it (ids; or, for an input kind that
    reads files, its features (L, F): data/inputs); target without bos/eos.

    For a copying model (model.copy) also the extended ids (nn/copy.py): ``src_ext`` the source
    tokens as target ids (in the encoder's order), those outside the target vocabulary numbered
    from its size in the order of ``oov``; ``tgt_ext`` the target with the tokens it copies from
    ``oov`` by those ids (``tgt`` has unk for them, what the decoder reads back)."""

    src: list[int] | np.ndarray
    tgt: list[int]
    src_ext: list[int] | None = None
    tgt_ext: list[int] | None = None
    oov: tuple[str, ...] = ()


@dataclass
class Extended:
    """A source as a copying model reads it: its tokens as extended target ids (the encoder's
    order) and the tokens outside the target vocabulary, id len(tgt_vocab) + j for ``oov[j]``."""

    ids: list[int]
    oov: tuple[str, ...]


@dataclass(frozen=True)
class FixedWidth:
    """Sources padded on the right with ``pad`` to ``width`` characters, as the book's files are."""

    width: int
    pad: str = " "

    @classmethod
    def of(cls, sources: Sequence[str], pad: str = " ") -> FixedWidth | None:
        """The layout of training ``sources`` when they have one: every source as wide as the
        others (at least two of them) and some ending in ``pad``; else None."""
        return cls.of_widths(len(sources), {len(s) for s in sources}, any(s.endswith(pad) for s in sources), pad)

    @classmethod
    def of_widths(cls, count: int, widths: set[int], padded: bool, pad: str = " ") -> FixedWidth | None:
        """``of`` told by what it looks at: the number of sources, their widths (two of them are
        enough to say there are several) and whether some end in ``pad``."""
        if count < 2 or len(widths) != 1 or not padded:
            return None
        return cls(next(iter(widths)), pad)

    def lay_out(self, text: str) -> str:
        """``text`` padded to the width (its own trailing padding first removed, so a padded
        input stays as it is); a wider text is left as it is, and a blank one blank."""
        text = text.rstrip(self.pad)
        return text.ljust(self.width, self.pad) if text else text


@dataclass
class EncodedSource:
    """A source text as the encoder reads it, and what in it the model never saw. A source of an
    input kind that reads files (data.input: image) has no tokens: ``ids`` are its features
    (L, F) and ``size`` the input's extent (InputKind.geometry)."""

    tokens: list[str]  # reading order, laid out as the training sources were (the first ``limit``)
    ids: list[int] | np.ndarray  # as the encoder reads them (reversed with ``reverse_source``)
    unknown: list[str] = field(default_factory=list)  # tokens outside the source vocabulary, reading order
    cut: bool = False  # the text held more than ``limit`` tokens (positions, for features)
    wider: bool = False  # wider than the run's fixed-width training sources
    size: tuple[int, ...] = ()  # a file's input: its extent ((height, width) of an image as read)


def read_stream(path: str | Path) -> str | Path | bytes:
    """``path``, or its bytes read now where it can be read only once (a FIFO, a device): what
    read_file and a search take for a file source, so that a stream is read once for both."""
    if not read_once(path):
        return path
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise DataError(f"{path}: cannot be read ({err.strerror or err})") from None


class TextPipeline:
    """Turns source and target text into ids and target ids back into text.

    ``reverse_source`` feeds the source tokens in reverse (Sutskever et al. 2014; the book);
    ``source_tokens`` still returns them in reading order for display. ``shares_vocab`` says
    both sides use one vocabulary (the same ids), so their embeddings may be one matrix.

    ``inputs`` is the input kind (``data.input``): for a kind that reads files (an image) the
    source is a path, read into features by the kind; the source vocabulary then holds the
    special tokens alone.
    """

    def __init__(
        self,
        config,
        src_tokenizer: Tokenizer,
        tgt_tokenizer: Tokenizer,
        src_vocab: Vocab,
        tgt_vocab: Vocab,
        shares_vocab: bool = False,
        unicode: str = "none",
        fixed_width: FixedWidth | None = None,
    ):
        self.config = config  # DataConfig
        self.src_tokenizer, self.tgt_tokenizer = src_tokenizer, tgt_tokenizer
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.shares_vocab = shares_vocab
        self.unicode = unicode  # the normal form text is brought to (data.unicode), or "none"
        self.fixed_width = fixed_width  # how training sources were laid out, or None
        self.inputs = build_input(config)  # what the source column holds (data.input)

    # -- building and storing -------------------------------------------------------------
    @staticmethod
    def _tokenizer(config) -> Tokenizer:
        return TOKENIZERS.build(config.tokenizer, "data.tokenizer")

    @classmethod
    def fit(cls, config, pairs: Sequence[tuple[str, str]], run_dir: Path) -> TextPipeline:
        """Tokenizers trained (if they learn) and vocabularies built from the training pairs,
        or the data source's own vocabulary (the book's); the training sources' fixed width
        recorded when they have one (char tokens, padding kept: see FixedWidth.of). (A corpus
        on disk is fitted without holding it: data.prepare.)"""
        if not build_input(config).reads_text:  # files: a vocabulary of the targets alone
            return cls._fit_targets(config, cls._tokenizer(config), pairs, run_dir)
        sources = [normalise(config, config.unicode, s) for s, _ in pairs]
        targets = [normalise(config, config.unicode, t) for _, t in pairs]
        src_tok, tgt_tok = cls.fit_tokenizers(config, lambda: (sources, targets), run_dir)
        src_counts = Counter(token for text in sources for token in src_tok.tokenize(text))
        tgt_counts = Counter(token for text in targets for token in tgt_tok.tokenize(text))
        return cls.from_counts(config, src_tok, tgt_tok, src_counts, tgt_counts, FixedWidth.of(sources))

    @classmethod
    def fit_tokenizers(
        cls, config, texts: Callable[[], tuple[Iterable[str], Iterable[str]]], run_dir: Path
    ) -> tuple[Tokenizer, Tokenizer]:
        """The tokenizers of the source and target sides (one object when one serves both); a
        tokenizer that learns is trained on ``texts()``, the normalised training sources and
        targets (called only then; they may stream), and writes its model into ``run_dir``."""
        src_tok = cls._tokenizer(config)
        if not src_tok.trainable:
            return src_tok, src_tok
        sources, targets = texts()
        if src_tok.joint:
            src_tok.fit(itertools.chain(sources, targets), run_dir, JOINT)
            return src_tok, src_tok
        tgt_tok = cls._tokenizer(config)
        src_tok.fit(sources, run_dir, SOURCE)
        tgt_tok.fit(targets, run_dir, TARGET)
        return src_tok, tgt_tok

    @classmethod
    def from_counts(
        cls,
        config,
        src_tok: Tokenizer,
        tgt_tok: Tokenizer,
        src_counts: Mapping[str, int],
        tgt_counts: Mapping[str, int],
        fixed_width: FixedWidth | None,
    ) -> TextPipeline:
        """The pipeline of the tokenizers ``fit_tokenizers`` gave, with vocabularies built from the
        token counts of the training sources and targets (each in order of first appearance), or
        the data source's own vocabulary (the book's); ``fixed_width``: the training sources'
        (FixedWidth.of), kept for char tokens."""
        source = SOURCES.get(config.format, "data.format")()
        layout = {"unicode": config.unicode, "fixed_width": fixed_width if src_tok.char_level else None}
        fixed = source.vocabulary(config)
        if fixed is not None:
            return cls(config, src_tok, src_tok, fixed, fixed, shares_vocab=True, **layout)
        order = src_tok.vocab_order
        if config.shared_vocab:
            counts = Counter(src_counts)
            counts.update(tgt_counts)  # the sources' tokens first, as in one pass over both
            src_vocab = tgt_vocab = Vocab.from_counts(counts, config.min_freq, config.max_vocab, order)
        else:
            src_vocab = Vocab.from_counts(src_counts, config.min_freq, config.max_vocab, order)
            tgt_vocab = Vocab.from_counts(tgt_counts, config.min_freq, config.max_vocab, order)
        return cls(config, src_tok, tgt_tok, src_vocab, tgt_vocab, shares_vocab=source.shares_vocab(config), **layout)

    @classmethod
    def _fit_targets(
        cls, config, tokenizer: Tokenizer, pairs: Sequence[tuple[str, str]], run_dir: Path
    ) -> TextPipeline:
        """The pipeline of sources that are files (data.input: image): the tokenizer fitted (if
        it learns) and the vocabulary built on the targets; the source vocabulary has the special
        tokens alone."""
        targets = [normalise(config, config.unicode, t) for _, t in pairs]
        if tokenizer.trainable:
            tokenizer.fit(targets, run_dir, JOINT)  # one model: saved and restored as a joint one
        target_vocab = Vocab.build(
            [tokenizer.tokenize(t) for t in targets], config.min_freq, config.max_vocab, tokenizer.vocab_order
        )
        return cls(config, tokenizer, tokenizer, Vocab([]), target_vocab, unicode=config.unicode)

    def save(self, run_dir: Path) -> None:
        """Write vocabularies (and learned tokenizer models) into ``run_dir``."""
        run_dir = Path(run_dir)
        self.src_vocab.save(run_dir / "vocab.source.json")
        self.tgt_vocab.save(run_dir / "vocab.target.json")
        width = self.fixed_width
        atomic_write_text(
            run_dir / PIPELINE_FILE,
            json.dumps(
                {
                    "unicode": self.unicode,
                    "fixed_width": None if width is None else {"width": width.width, "pad": width.pad},
                },
                ensure_ascii=False,
            ),
        )
        if self.src_tokenizer is self.tgt_tokenizer:
            self.src_tokenizer.save(run_dir, JOINT)
        else:
            self.src_tokenizer.save(run_dir, SOURCE)
            self.tgt_tokenizer.save(run_dir, TARGET)

    @classmethod
    def load(cls, config, run_dir: Path) -> TextPipeline:
        """The pipeline stored in ``run_dir`` by ``save``."""
        run_dir = Path(run_dir)
        src_tok = tgt_tok = cls._tokenizer(config)
        if src_tok.trainable:
            if src_tok.joint:
                src_tok.restore(run_dir, JOINT)
            else:
                tgt_tok = cls._tokenizer(config)
                src_tok.restore(run_dir, SOURCE)
                tgt_tok.restore(run_dir, TARGET)
        shares = SOURCES.get(config.format, "data.format")().shares_vocab(config)
        return cls(
            config,
            src_tok,
            tgt_tok,
            Vocab.load(run_dir / "vocab.source.json"),
            Vocab.load(run_dir / "vocab.target.json"),
            shares_vocab=shares,
            **read_layout(run_dir),
        )

    # -- text <-> ids ---------------------------------------------------------------------
    def normalise(self, text: str) -> str:
        """``text`` as the run's data settings normalise it (Unicode form, data.strip,
        data.lowercase): what the model was trained to read and to write."""
        return normalise(self.config, self.unicode, text)

    def read_source(self, text: str, limit: int = 0) -> EncodedSource:
        """``text`` normalised, laid out as the training sources were, tokenised (the first
        ``limit`` tokens when ``limit``) and looked up in the source vocabulary. For an input kind
        that reads files, ``text`` names the file and its features are read (the first ``limit``
        positions when ``limit``)."""
        if not self.inputs.reads_text:  # a path, or a file's contents (an upload)
            return self.read_file("upload", limit, text) if isinstance(text, bytes) else self.read_file(text, limit)
        text = self.normalise(text)
        wider = False
        if self.fixed_width is not None:
            laid_out = self.fixed_width.lay_out(text)
            text, wider = laid_out, len(laid_out) > self.fixed_width.width
        tokens = self.src_tokenizer.tokenize(text)
        cut = bool(limit) and len(tokens) > limit
        if cut:
            tokens = tokens[:limit]
        ids = self.src_vocab.encode(tokens)
        unknown = [t for t, i in zip(tokens, ids) if i == self.src_vocab.unk_id]
        return EncodedSource(tokens, ids[::-1] if self.config.reverse_source else ids, unknown, cut, wider)

    def read_file(self, path: str | Path, limit: int = 0, data: bytes | None = None) -> EncodedSource:
        """The source the file ``path`` holds (or the bytes ``data`` of a file so named: an upload)
        as the encoder reads it: features (L, F) of the input kind, the first ``limit`` positions
        when ``limit``; a DataError naming the file when the kind cannot read it."""
        kind = self.inputs
        if data is None:
            source = read_stream(path)
            data = source if isinstance(source, bytes) else None
        features = kind.read(Path(path), limit) if data is None else kind.read_bytes(data, str(path), limit)
        size = kind.geometry(features)
        cut = bool(limit) and len(features) > limit
        if cut:
            features = features[:limit]
        return EncodedSource([], features, cut=cut, size=size)

    def source_tokens(self, text: str, limit: int = 0) -> list[str]:
        """Source tokens in reading order (the first ``limit`` of them when ``limit``)."""
        return self.read_source(text, limit).tokens

    def encode_source(self, text: str, limit: int = 0) -> list[int]:
        """Source ids as the encoder reads them (reversed with ``reverse_source``), of the first
        ``limit`` tokens when ``limit``."""
        return self.read_source(text, limit).ids

    def target_tokens(self, text: str) -> list[str]:
        """Target tokens of ``text`` (normalised as the run's data settings say)."""
        return self.tgt_tokenizer.tokenize(self.normalise(text))

    def encode_target(self, text: str) -> list[int]:
        """Target ids without bos/eos."""
        return self.tgt_vocab.encode(self.target_tokens(text))

    def decode_target(self, ids: Sequence[int], oov: Sequence[str] = ()) -> str:
        """Text of target ids (stops at eos); ids past the vocabulary are the copied ``oov``
        tokens of the source (``extend_source``)."""
        return self.tgt_tokenizer.detokenize(self.tgt_vocab.decode(ids, oov))

    def target_pieces(self, ids: Sequence[int], oov: Sequence[str] = ()) -> list[str]:
        """Target tokens of ``ids`` (stops at eos; ``oov`` as in decode_target), for plots."""
        return self.tgt_vocab.decode(ids, oov)

    def extend_source(self, tokens: Sequence[str]) -> Extended:
        """The source ``tokens`` (reading order, as ``read_source`` gives them) as a copying model
        reads them: target ids, the tokens outside the target vocabulary numbered after it in
        order of first appearance; in the encoder's order (reversed with reverse_source)."""
        known, size = self.tgt_vocab.stoi, len(self.tgt_vocab)
        outside: dict[str, int] = {}
        ids = [known[t] if t in known else outside.setdefault(t, size + len(outside)) for t in tokens]
        return Extended(ids[::-1] if self.config.reverse_source else ids, tuple(outside))

    def extend_target(self, tokens: Sequence[str], oov: Sequence[str]) -> list[int]:
        """Target ``tokens`` as extended ids: a token outside the vocabulary that the source holds
        (``oov``) by its extended id, else unk."""
        known, size, unk = self.tgt_vocab.stoi, len(self.tgt_vocab), self.tgt_vocab.unk_id
        copied = {t: size + j for j, t in enumerate(oov)}
        return [known.get(t, copied.get(t, unk)) for t in tokens]

    def encode_pairs(
        self,
        pairs: Sequence[tuple[str, str]],
        max_src: int = 0,
        max_tgt: int = 0,
        name: str = "",
        extended: bool = False,
        warn: bool = True,
    ) -> list[Example]:
        """Examples of ``pairs``; pairs longer than the limits (tokens, 0 = none) or with an
        empty source are dropped, with a warning that says which (``name`` names the set; none
        without ``warn``). With ``extended`` the examples carry the extended ids a copying model
        trains on."""
        examples, too_long = [], []
        for number, (src, tgt) in enumerate(pairs, start=1):
            if not self.inputs.reads_text:
                ex = Example(self.read_file(src).ids, self.encode_target(tgt))
            elif extended:
                source, target = self.read_source(src), self.target_tokens(tgt)
                ext = self.extend_source(source.tokens)
                ex = Example(
                    source.ids, self.tgt_vocab.encode(target), ext.ids, self.extend_target(target, ext.oov), ext.oov
                )
            else:
                ex = Example(self.encode_source(src), self.encode_target(tgt))
            if (max_src and len(ex.src) > max_src) or (max_tgt and len(ex.tgt) > max_tgt):
                too_long.append(number)
            elif len(ex.src):
                examples.append(ex)
        if too_long and warn:
            warn_too_long(name or "data", too_long[:5], len(too_long), max_src, max_tgt)
        return examples


def warn_too_long(name: str, first: Sequence[int], count: int, max_src: int, max_tgt: int) -> None:
    """The log's warning that ``count`` pairs of ``name`` were dropped for their length, naming
    the ``first`` of them (numbers from 1)."""
    more = f" and {count - len(first)} more" if count > len(first) else ""
    log.warning(
        "%s: dropped %d pair(s) longer than data.max_source_len=%d / data.max_target_len=%d tokens (pair %s%s)",
        name,
        count,
        max_src,
        max_tgt,
        ", ".join(map(str, first)),
        more,
    )


def unknown_share(examples: Sequence[Example]) -> float:
    """The fraction of the examples' source and target ids that are the unknown token's."""

    def count(ids) -> int:
        return ids.count(Vocab.unk_id) if isinstance(ids, list) else 0  # features hold no ids

    total = sum(len(ids) for ex in examples for ids in (ex.src, ex.tgt) if isinstance(ids, list))
    unknown = sum(count(ex.src) + count(ex.tgt) for ex in examples)
    return unknown / total if total else 0.0


def normalise(config, unicode: str, text: str) -> str:
    """``text`` in the Unicode normal form ``unicode`` ("nfc", "nfkc" or "none"), stripped with
    ``config.strip`` and lowercased with ``config.lowercase`` (config: a DataConfig)."""
    if unicode != "none":
        text = unicodedata.normalize(unicode.upper(), text)
    if config.strip:
        text = text.strip()
    return text.lower() if config.lowercase else text


def read_layout(run_dir: Path) -> dict:
    """The text layout a run recorded (``unicode``, ``fixed_width``): the keyword arguments of a
    TextPipeline; a run without ``pipeline.json`` (written before attnseq recorded it) reads
    text as it did then: no normalisation, no padding."""
    path = Path(run_dir) / PIPELINE_FILE
    if not path.exists():
        return {"unicode": "none", "fixed_width": None}
    try:
        values = json.loads(path.read_text(encoding="utf-8"))
        width, unicode = values["fixed_width"], values["unicode"]
        if unicode not in UNICODE_FORMS:
            raise ValueError(f"unicode: expected one of {', '.join(UNICODE_FORMS)}, got {unicode!r}")
        return {
            "unicode": unicode,
            "fixed_width": None if width is None else FixedWidth(int(width["width"]), str(width["pad"])),
        }
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise DataError(f"{path}: cannot read the run's text layout ({err})") from None
