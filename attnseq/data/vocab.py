"""Vocabularies: token <-> id, with the special tokens pad, bos, eos and unk."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ..errors import DataError
from ..utils import atomic_write_text

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIALS = (PAD, BOS, EOS, UNK)


class Vocab:
    """A list of tokens; ids 0..3 are pad, bos, eos, unk."""

    pad_id, bos_id, eos_id, unk_id = 0, 1, 2, 3

    def __init__(self, tokens: Sequence[str]):
        self.itos = list(SPECIALS) + [t for t in tokens if t not in SPECIALS]
        self.stoi = {t: i for i, t in enumerate(self.itos)}
        if len(self.stoi) != len(self.itos):
            raise ValueError("vocabulary tokens must be unique")

    @classmethod
    def build(
        cls, sequences: Iterable[Sequence[str]], min_freq: int = 1, max_size: int = 0, order: str = "frequency"
    ) -> Vocab:
        """A vocabulary of the tokens in ``sequences`` (see ``from_counts``)."""
        counts: Counter[str] = Counter()
        for seq in sequences:
            counts.update(seq)
        return cls.from_counts(counts, min_freq, max_size, order)

    @classmethod
    def from_counts(
        cls, counts: Mapping[str, int], min_freq: int = 1, max_size: int = 0, order: str = "frequency"
    ) -> Vocab:
        """A vocabulary of the tokens ``counts`` counts, its keys in order of first appearance.

        ``order="frequency"``: most frequent first (ties by first appearance);
        ``order="appearance"``: in order of first appearance (the book's char vocabularies).
        ``max_size`` counts the tokens besides the four specials; 0 means no limit.
        """
        tokens = [t for t, c in counts.items() if c >= min_freq]  # dict order = first appearance
        if order == "frequency":
            tokens.sort(key=lambda t: -counts[t])  # stable: ties keep first appearance
        if max_size:
            tokens = tokens[:max_size]
        return cls(tokens)

    def __len__(self) -> int:
        return len(self.itos)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocab) and self.itos == other.itos

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """Ids of ``tokens``; unknown tokens become unk."""
        get, unk = self.stoi.get, self.unk_id
        return [get(t, unk) for t in tokens]

    def decode(self, ids: Iterable[int], extra: Sequence[str] = ()) -> list[str]:
        """Tokens of ``ids``, stopping at eos and skipping pad and bos; an id past the vocabulary,
        len(self) + j, is ``extra[j]`` (a token a copying model copied from its source)."""
        out = []
        size = len(self.itos)
        for i in ids:
            i = int(i)
            if i == self.eos_id:
                break
            if i in (self.pad_id, self.bos_id):
                continue
            out.append(self.itos[i] if i < size else extra[i - size])
        return out

    def save(self, path: str | Path) -> None:
        """Write the token list as JSON (atomically)."""
        atomic_write_text(path, json.dumps(self.itos[len(SPECIALS) :], ensure_ascii=False, indent=0))

    @classmethod
    def load(cls, path: str | Path) -> Vocab:
        """Read a vocabulary written by ``save``."""
        try:
            tokens = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as err:
            raise DataError(f"{path}: cannot read vocabulary ({err})") from None
        return cls(tokens)
