"""Passages of realistic length made of gettext messages: parallel text at the lengths of a
news corpus, for corpora of any size built from what the system holds (nothing downloaded).

A user-interface message runs 4-5 words; a sentence of WMT14 English-German about 25 words a
side. A passage joins messages drawn at random from one split's pool of the gettext corpus
(data/gettext.py assigns each message its split by a hash of its source) until its English side
reaches a length drawn for it from a log-normal distribution of median ``MEDIAN_WORDS``, at most
``MAX_WORDS`` (with the last message's words, about 25 words a side on average, with a long
tail); the other side joins the same messages' translations. Dev and test passages are made of messages that no training passage holds.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from ...utils import stream_seed

Pair = tuple[str, str]
MEDIAN_WORDS = 18  # with SIGMA and whole messages, passages of about 25 English words on average
SIGMA = 0.6
MAX_WORDS = 120  # the longest length drawn


def passage_length(rng: random.Random) -> int:
    """The English words a passage is filled to: log-normal, median MEDIAN_WORDS, 1 to MAX_WORDS."""
    return max(1, min(MAX_WORDS, round(rng.lognormvariate(math.log(MEDIAN_WORDS), SIGMA))))


def passage(rng: random.Random, messages: Sequence[Pair], words: Sequence[int]) -> Pair:
    """One passage: messages drawn with ``rng`` (``words``: each one's English words) joined by
    spaces until the English side holds at least the length drawn for it."""
    wanted, held, chosen, n = passage_length(rng), 0, [], len(messages)
    while held < wanted:
        i = int(rng.random() * n)  # uniform (to 2**-53), at half randrange's cost
        chosen.append(messages[i])
        held += words[i]
    return " ".join(s for s, _ in chosen), " ".join(t for _, t in chosen)


@dataclass
class PassageBlocks:
    """Blocks of passages from one split's ``messages``: ``self(index, size)`` is block ``index``
    of that split, ``size`` passages drawn from ``random.Random(stream_seed(seed, "passages",
    split, index))``, so any process can make any block."""

    messages: Sequence[Pair]
    seed: int
    split: str
    _words: list[int] = field(default_factory=list, repr=False)

    def __call__(self, index: int, size: int) -> list[Pair]:
        if not self._words:  # once per process: the messages without surrounding spaces, and their words
            self.messages = [(s.strip(), t.strip()) for s, t in self.messages]
            self._words = [max(1, len(s.split())) for s, _ in self.messages]
        rng = random.Random(stream_seed(self.seed, "passages", self.split, index))
        return [passage(rng, self.messages, self._words) for _ in range(size)]
