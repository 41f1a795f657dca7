"""Tokenizers: text <-> tokens. A registry maps ``data.tokenizer`` names to classes; a tokenizer
with settings registers its options dataclass (``data.tokenizer: {name: sentencepiece, ...}``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..registry import Registry

TOKENIZERS: Registry[type[Tokenizer]] = Registry("tokenizer")


class Tokenizer:
    """Splits text into tokens and joins tokens back into text.

    Tokenizers that learn from data (sentencepiece) set ``trainable`` and override ``fit``,
    ``save`` and ``restore``; ``joint`` says one learned model serves both sides.
    """

    trainable = False
    joint = False
    vocab_order = "frequency"  # how a vocabulary of these tokens is ordered (see Vocab.build)
    char_level = False  # every character a token, spaces too (so padding is tokens: see FixedWidth)

    def __init__(self, options=None):
        self.options = options

    def tokenize(self, text: str) -> list[str]:
        raise NotImplementedError

    def detokenize(self, tokens: Sequence[str]) -> str:
        raise NotImplementedError

    def fit(self, texts: Sequence[str], run_dir: Path, side: str) -> None:
        """Learn from ``texts`` (nothing for fixed tokenizers)."""

    def save(self, run_dir: Path, side: str) -> None:
        """Store what was learned in the run folder (nothing for fixed tokenizers)."""

    def restore(self, run_dir: Path, side: str) -> None:
        """Take back what ``save`` stored in ``run_dir`` for ``side`` (nothing for fixed ones)."""


@TOKENIZERS.register("char")
class CharTokenizer(Tokenizer):
    """Every character is a token (spaces included)."""

    vocab_order = "appearance"  # the book's character vocabularies
    char_level = True

    def tokenize(self, text: str) -> list[str]:
        return list(text)

    def detokenize(self, tokens: Sequence[str]) -> str:
        return "".join(tokens)


@TOKENIZERS.register("word")
class WordTokenizer(Tokenizer):
    """Tokens separated by whitespace."""

    def tokenize(self, text: str) -> list[str]:
        return text.split()

    def detokenize(self, tokens: Sequence[str]) -> str:
        return " ".join(tokens)
