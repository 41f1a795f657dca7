"""Text <-> ids for one run: the tokenizers and vocabularies of both sides, saved with the run."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from .sources import SOURCES
from .tokenizers import TOKENIZERS, Tokenizer
from .vocab import Vocab

SOURCE, TARGET, JOINT = "source", "target", "joint"
log = logging.getLogger("attnseq")


@dataclass
class Example:
    """One sentence pair as ids: source as the encoder reads it; target without bos/eos."""

    src: list[int]
    tgt: list[int]


class TextPipeline:
    """Turns source and target text into ids and target ids back into text.

    ``reverse_source`` feeds the source tokens in reverse (Sutskever et al. 2014; the book);
    ``source_tokens`` still returns them in reading order for display. ``shares_vocab`` says
    both sides use one vocabulary (the same ids), so their embeddings may be one matrix.
    """

    def __init__(self, config, src_tokenizer: Tokenizer, tgt_tokenizer: Tokenizer,
                 src_vocab: Vocab, tgt_vocab: Vocab, shares_vocab: bool = False):
        self.config = config  # DataConfig
        self.src_tokenizer, self.tgt_tokenizer = src_tokenizer, tgt_tokenizer
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.shares_vocab = shares_vocab

    # -- building and storing -------------------------------------------------------------
    @staticmethod
    def _tokenizer(config) -> Tokenizer:
        return TOKENIZERS.build(config.tokenizer, "data.tokenizer")

    @classmethod
    def fit(cls, config, pairs: Sequence[tuple[str, str]], run_dir: Path) -> "TextPipeline":
        """Tokenizers trained (if they learn) and vocabularies built from the training pairs,
        or the data source's own vocabulary (the book's)."""
        src_tok = cls._tokenizer(config)
        source = SOURCES.get(config.format, "data.format")()
        fixed = source.vocabulary(config)
        if fixed is not None:
            return cls(config, src_tok, src_tok, fixed, fixed, shares_vocab=True)
        sources = [cls._normalise(config, s) for s, _ in pairs]
        targets = [cls._normalise(config, t) for _, t in pairs]
        tgt_tok = src_tok
        if src_tok.trainable:
            if src_tok.joint:
                src_tok.fit(sources + targets, run_dir, JOINT)
            else:
                tgt_tok = cls._tokenizer(config)
                src_tok.fit(sources, run_dir, SOURCE)
                tgt_tok.fit(targets, run_dir, TARGET)
        order = src_tok.vocab_order
        src_seqs = [src_tok.tokenize(s) for s in sources]
        tgt_seqs = [tgt_tok.tokenize(t) for t in targets]
        if config.shared_vocab:
            src_vocab = tgt_vocab = Vocab.build(src_seqs + tgt_seqs, config.min_freq, config.max_vocab, order)
        else:
            src_vocab = Vocab.build(src_seqs, config.min_freq, config.max_vocab, order)
            tgt_vocab = Vocab.build(tgt_seqs, config.min_freq, config.max_vocab, order)
        return cls(config, src_tok, tgt_tok, src_vocab, tgt_vocab, shares_vocab=source.shares_vocab(config))

    def save(self, run_dir: Path) -> None:
        """Write vocabularies (and learned tokenizer models) into ``run_dir``."""
        run_dir = Path(run_dir)
        self.src_vocab.save(run_dir / "vocab.source.json")
        self.tgt_vocab.save(run_dir / "vocab.target.json")
        if self.src_tokenizer is self.tgt_tokenizer:
            self.src_tokenizer.save(run_dir, JOINT)
        else:
            self.src_tokenizer.save(run_dir, SOURCE)
            self.tgt_tokenizer.save(run_dir, TARGET)

    @classmethod
    def load(cls, config, run_dir: Path) -> "TextPipeline":
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
        return cls(config, src_tok, tgt_tok, Vocab.load(run_dir / "vocab.source.json"),
                   Vocab.load(run_dir / "vocab.target.json"), shares_vocab=shares)

    # -- text <-> ids ---------------------------------------------------------------------
    @staticmethod
    def _normalise(config, text: str) -> str:
        if config.strip:
            text = text.strip()
        return text.lower() if config.lowercase else text

    def source_tokens(self, text: str, limit: int = 0) -> list[str]:
        """Source tokens in reading order (the first ``limit`` of them when ``limit``)."""
        tokens = self.src_tokenizer.tokenize(self._normalise(self.config, text))
        return tokens[:limit] if limit else tokens

    def encode_source(self, text: str, limit: int = 0) -> list[int]:
        """Source ids as the encoder reads them (reversed with ``reverse_source``), of the first
        ``limit`` tokens when ``limit``."""
        ids = self.src_vocab.encode(self.source_tokens(text, limit))
        return ids[::-1] if self.config.reverse_source else ids

    def target_tokens(self, text: str) -> list[str]:
        return self.tgt_tokenizer.tokenize(self._normalise(self.config, text))

    def encode_target(self, text: str) -> list[int]:
        """Target ids without bos/eos."""
        return self.tgt_vocab.encode(self.target_tokens(text))

    def decode_target(self, ids: Sequence[int]) -> str:
        """Text of target ids (stops at eos)."""
        return self.tgt_tokenizer.detokenize(self.tgt_vocab.decode(ids))

    def target_pieces(self, ids: Sequence[int]) -> list[str]:
        """Target tokens of ``ids`` (stops at eos), for plots."""
        return self.tgt_vocab.decode(ids)

    def encode_pairs(self, pairs: Sequence[tuple[str, str]], max_src: int = 0, max_tgt: int = 0,
                     name: str = "") -> list[Example]:
        """Examples of ``pairs``; pairs longer than the limits (tokens, 0 = none) or with an
        empty source are dropped, with a warning that says which (``name`` names the set)."""
        examples, too_long = [], []
        for number, (src, tgt) in enumerate(pairs, start=1):
            ex = Example(self.encode_source(src), self.encode_target(tgt))
            if (max_src and len(ex.src) > max_src) or (max_tgt and len(ex.tgt) > max_tgt):
                too_long.append(number)
            elif ex.src:
                examples.append(ex)
        if too_long:
            shown = ", ".join(map(str, too_long[:5])) + (f" and {len(too_long) - 5} more" if len(too_long) > 5 else "")
            log.warning("%s: dropped %d pair(s) longer than data.max_source_len=%d / data.max_target_len=%d "
                        "tokens (pair %s)", name or "data", len(too_long), max_src, max_tgt, shown)
        return examples
