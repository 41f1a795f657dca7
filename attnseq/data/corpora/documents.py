"""Generated restaurant reviews whose label depends on one sentence, for hierarchical attention.

A review is several sentences of neutral description ("we sat near the window", "the table was
not round") and one verdict ("the soup was delicious", "the service was not friendly", "i would
not recommend this place"); the label, ``positive`` or ``negative``, is the verdict's, with
"not" turning it around. Neutral sentences use the same words (the dishes, "was", "not"), so
the model has to find the sentence that decides and read its words in order. Every document
knows which sentence that is (``key``), so tests can check where the model attends.

With ``neutral`` > 0 that share of the reviews has no verdict at all and the label ``neutral``
(``key`` -1): a third class whose reviews differ from the others only by the verdict's absence,
so a model must tell one deciding sentence among many from none.

A pair's source is the sentences, each ended by " ."; its target is the label.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

Pair = tuple[str, str]

DISHES = ("soup", "pasta", "fish", "salad", "steak", "bread", "coffee", "cake", "pizza", "dessert")
ASPECTS = DISHES + ("service", "waiter", "staff", "food", "wine")
THINGS = ("table", "menu", "room", "chair", "door", "plate", "bowl", "wall", "window", "bill")
PLAIN = ("blue", "round", "large", "small", "square", "wooden", "white", "new", "old", "tall")
PEOPLE = ("friend", "sister", "brother", "wife", "husband", "colleague")
PLACES = ("window", "door", "bar", "kitchen", "garden", "stairs")
TIMES = ("six", "seven", "eight", "nine", "noon")
GOOD = ("excellent", "delicious", "wonderful", "great", "superb", "fantastic", "friendly", "perfect")
BAD = ("awful", "terrible", "bland", "horrible", "rude", "cold", "disappointing", "poor")
ADVERBS = ("really", "truly", "quite")
LABELS = ("negative", "positive")
NEUTRAL = "neutral"  # the label of a review without a verdict


@dataclass
class Document:
    """A review: its sentences, its label, and ``key``, the index of the sentence that decides it
    (-1: none, a neutral review)."""

    sentences: list[str]
    label: str
    key: int

    def pair(self) -> Pair:
        """(source, target): the sentences each ended by " .", and the label."""
        return " ".join(f"{s} ." for s in self.sentences), self.label


def neutral_sentence(rng: random.Random) -> str:
    """A sentence that says nothing about the restaurant's quality."""
    kind = rng.randrange(5)
    if kind == 0:
        return f"the {rng.choice(THINGS)} was {'not ' if rng.random() < 0.3 else ''}{rng.choice(PLAIN)}"
    if kind == 1:
        return f"my {rng.choice(PEOPLE)} ordered the {rng.choice(DISHES)}"
    if kind == 2:
        return f"we sat near the {rng.choice(PLACES)}"
    if kind == 3:
        return f"we arrived at {rng.choice(TIMES)}"
    return f"the {rng.choice(DISHES)} came on a {rng.choice(PLAIN)} plate"


def verdict_sentence(rng: random.Random, positive: bool) -> str:
    """A sentence whose opinion is ``positive`` (or not), with "not" in half of them."""
    negated = rng.random() < 0.5
    if rng.random() < 0.15:
        return f"i would {'not ' if not positive else ''}recommend this place"
    good = positive != negated  # "not" turns the adjective's opinion around
    adjective = rng.choice(GOOD if good else BAD)
    adverb = f"{rng.choice(ADVERBS)} " if rng.random() < 0.3 and not negated else ""
    return f"the {rng.choice(ASPECTS)} was {'not ' if negated else ''}{adverb}{adjective}"


def generate_document(rng: random.Random, sentences: tuple[int, int] = (3, 8), neutral: float = 0.0) -> Document:
    """A review of ``sentences`` (inclusive range) sentences, one of them the verdict; with
    probability ``neutral``, none (label ``neutral``)."""
    count = rng.randint(*sentences)
    if neutral > 0 and rng.random() < neutral:
        return Document([neutral_sentence(rng) for _ in range(count)], NEUTRAL, -1)
    positive = rng.random() < 0.5
    key = rng.randrange(count)
    text = [verdict_sentence(rng, positive) if i == key else neutral_sentence(rng) for i in range(count)]
    return Document(text, LABELS[positive], key)


def make_document_splits(
    n_train: int = 10000,
    n_dev: int = 500,
    n_test: int = 1000,
    seed: int = 1,
    sentences: tuple[int, int] = (3, 8),
    neutral: float = 0.0,
) -> dict[str, list[Document]]:
    """{"train", "dev", "test"}: documents with no source in two splits, deterministic in ``seed``;
    ``neutral``: the share of reviews without a verdict."""
    for name, count in (("n_train", n_train), ("n_dev", n_dev), ("n_test", n_test)):
        if count < 0:
            raise ValueError(f"{name} must be >= 0, got {count}")
    if not 1 <= sentences[0] <= sentences[1]:
        raise ValueError(f"sentences must satisfy 1 <= low <= high, got {sentences[0]}-{sentences[1]}")
    if not 0.0 <= neutral < 1.0:
        raise ValueError(f"neutral must be a share in [0, 1), got {neutral}")
    rng = random.Random(seed)
    seen: set[str] = set()
    splits = {}
    for split, count in (("test", n_test), ("dev", n_dev), ("train", n_train)):
        documents: list[Document] = []
        while len(documents) < count:
            document = generate_document(rng, sentences, neutral)
            if document.pair()[0] not in seen:
                seen.add(document.pair()[0])
                documents.append(document)
        splits[split] = documents
    return {name: splits[name] for name in ("train", "dev", "test")}
