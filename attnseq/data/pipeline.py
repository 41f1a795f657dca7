"""Text <-> ids for one run: the tokenizers and vocabularies of both sides, saved with the run."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ..errors import ConfigError
from .book import SEPARATOR, read_book_pairs
from .tokenizers import TOKENIZERS, Tokenizer
from .vocab import Vocab

SOURCE, TARGET = "source", "target"


def book_vocab(path) -> Vocab:
    """The book's one character vocabulary of a question_answer file: the characters of whole
    lines ('_' included) in order of first appearance (after the four specials, so character
    ids are the book's ids + 4)."""
    return Vocab.build([q + SEPARATOR + a for q, a in read_book_pairs(path)], order="appearance")


class TextPipeline:
    """Turns source and target text into ids and target ids back into text.

    ``reverse_source`` feeds the source tokens in reverse (Sutskever et al. 2014; the book);
    ``source_tokens`` still returns them in reading order for display.
    """

    def __init__(self, config, src_tokenizer: Tokenizer, tgt_tokenizer: Tokenizer,
                 src_vocab: Vocab, tgt_vocab: Vocab):
        self.config = config  # DataConfig
        self.src_tokenizer, self.tgt_tokenizer = src_tokenizer, tgt_tokenizer
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab

    # -- building and storing -------------------------------------------------------------
    @classmethod
    def fit(cls, config, pairs: Sequence[tuple[str, str]], run_dir: Path) -> "TextPipeline":
        """Tokenizers trained (if they learn) and vocabularies built from the training pairs."""
        tok_cls = TOKENIZERS.get(config.tokenizer, "data.tokenizer")
        src_tok, tgt_tok = tok_cls(config), tok_cls(config)
        if config.format == "book":
            if config.tokenizer != "char":
                raise ConfigError(f"data.tokenizer: data.format book is character-level (the book's); "
                                  f"got {config.tokenizer!r}")
            return cls(config, src_tok, src_tok, *[book_vocab(config.train)] * 2)
        sources = [cls._normalise(config, s) for s, _ in pairs]
        targets = [cls._normalise(config, t) for _, t in pairs]
        if tok_cls.trainable:
            if config.spm_joint:
                src_tok.fit(sources + targets, run_dir, "joint")
                tgt_tok = src_tok
            else:
                src_tok.fit(sources, run_dir, SOURCE)
                tgt_tok.fit(targets, run_dir, TARGET)
        order = "appearance" if config.tokenizer == "char" else "frequency"
        src_seqs = [src_tok.tokenize(s) for s in sources]
        tgt_seqs = [tgt_tok.tokenize(t) for t in targets]
        if config.shared_vocab:
            src_vocab = tgt_vocab = Vocab.build(src_seqs + tgt_seqs, config.min_freq, config.max_vocab, order)
        else:
            src_vocab = Vocab.build(src_seqs, config.min_freq, config.max_vocab, order)
            tgt_vocab = Vocab.build(tgt_seqs, config.min_freq, config.max_vocab, order)
        return cls(config, src_tok, tgt_tok, src_vocab, tgt_vocab)

    def save(self, run_dir: Path) -> None:
        """Write vocabularies (and learned tokenizer models) into ``run_dir``."""
        run_dir = Path(run_dir)
        self.src_vocab.save(run_dir / "vocab.source.json")
        self.tgt_vocab.save(run_dir / "vocab.target.json")
        if self.src_tokenizer is self.tgt_tokenizer:
            self.src_tokenizer.save(run_dir, "joint")
        else:
            self.src_tokenizer.save(run_dir, SOURCE)
            self.tgt_tokenizer.save(run_dir, TARGET)

    @classmethod
    def load(cls, config, run_dir: Path) -> "TextPipeline":
        """The pipeline stored in ``run_dir`` by ``save``."""
        run_dir = Path(run_dir)
        tok_cls = TOKENIZERS.get(config.tokenizer, "data.tokenizer")
        if tok_cls.trainable and config.spm_joint:
            src_tok = tgt_tok = tok_cls.load(run_dir, "joint", config)
        else:
            src_tok = tok_cls.load(run_dir, SOURCE, config)
            tgt_tok = tok_cls.load(run_dir, TARGET, config)
        return cls(config, src_tok, tgt_tok, Vocab.load(run_dir / "vocab.source.json"),
                   Vocab.load(run_dir / "vocab.target.json"))

    # -- text <-> ids ---------------------------------------------------------------------
    @staticmethod
    def _normalise(config, text: str) -> str:
        if config.strip:
            text = text.strip()
        return text.lower() if config.lowercase else text

    def source_tokens(self, text: str) -> list[str]:
        """Source tokens in reading order."""
        return self.src_tokenizer.tokenize(self._normalise(self.config, text))

    def encode_source(self, text: str) -> list[int]:
        """Source ids as the encoder reads them (reversed with ``reverse_source``)."""
        ids = self.src_vocab.encode(self.source_tokens(text))
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
