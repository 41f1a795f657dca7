"""Tokenizers: text <-> tokens. A registry maps ``data.tokenizer`` names to classes."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ..registry import Registry

TOKENIZERS: Registry[type["Tokenizer"]] = Registry("tokenizer")


class Tokenizer:
    """Splits text into tokens and joins tokens back into text.

    Tokenizers that learn from data (sentencepiece) override ``fit``, ``save`` and ``load``.
    """

    trainable = False

    def __init__(self, config=None):
        self.config = config  # the DataConfig, for tokenizers with settings

    def tokenize(self, text: str) -> list[str]:
        raise NotImplementedError

    def detokenize(self, tokens: Sequence[str]) -> str:
        raise NotImplementedError

    def fit(self, texts: Sequence[str], run_dir: Path, side: str) -> None:
        """Learn from ``texts`` (nothing for fixed tokenizers)."""

    def save(self, run_dir: Path, side: str) -> None:
        """Store what was learned in the run folder (nothing for fixed tokenizers)."""

    @classmethod
    def load(cls, run_dir: Path, side: str, config=None) -> "Tokenizer":
        """The tokenizer stored in ``run_dir`` for ``side`` ("source" or "target")."""
        return cls(config)


@TOKENIZERS.register("char")
class CharTokenizer(Tokenizer):
    """Every character is a token (spaces included)."""

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


from . import subword  # noqa: E402,F401  (registers "sentencepiece")
