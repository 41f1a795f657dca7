"""Generated requests with names that the test never shares with training, for copy attention.

A request is a templated English sentence about people and places ("send the report to Xylander
tomorrow", "tomorrow , remind Quorin about the invoice in Palvex"); its target is the request as a
structured command whose arguments are the request's words, spaced so that each is a token of
the word tokenizer: ``SEND ( report , Xylander , tomorrow )``. The verbs, objects and times come
from small fixed lists; the names are pronounceable random strings (syllables of a consonant
and a vowel, sometimes closed by a consonant), drawn for each split from its own pool, so that
no dev or test name occurs in training. A model that can only write words of its vocabulary
gets almost no test request right; one that copies from its source (model.copy) can.

A split has about as many names as requests, so a name occurs in 1.7 of its split's requests on
average, and a vocabulary of the words seen at least ``data.min_freq`` times (configs/copy-names.yaml:
4) holds the template words and few names: in training too the model reads most names as unknown
and learns to write them, as it must at test time.
"""

from __future__ import annotations

import random

Pair = tuple[str, str]

ONSETS = (
    "b",
    "d",
    "f",
    "g",
    "k",
    "l",
    "m",
    "n",
    "p",
    "r",
    "s",
    "t",
    "v",
    "z",
    "br",
    "dr",
    "kl",
    "tr",
    "st",
    "qu",
    "x",
    "th",
    "sh",
)
VOWELS = ("a", "e", "i", "o", "u", "ai", "ou", "y")
CODAS = ("n", "r", "s", "l", "x", "m", "nd", "rt")
OBJECTS = ("report", "invoice", "slides", "contract", "photos", "budget", "minutes", "draft", "schedule", "tickets")
TIMES = ("today", "tomorrow", "tonight", "monday", "tuesday", "wednesday", "thursday", "friday", "later", "now")
TOPICS = ("meeting", "deadline", "payment", "review", "launch", "interview", "trip", "dinner")

# (source template, target template): {a} and {b} names, {o} an object, {t} a time, {p} a topic
TEMPLATES = (
    ("send the {o} to {a} {t}", "SEND ( {o} , {a} , {t} )"),
    ("{t} , send {a} the {o}", "SEND ( {o} , {a} , {t} )"),
    ("please call {a} {t}", "CALL ( {a} , {t} )"),
    ("call {a} and {b} {t}", "CALL ( {a} , {b} , {t} )"),
    ("remind {a} about the {p} {t}", "REMIND ( {a} , {p} , {t} )"),
    ("{t} , remind {a} about the {p} in {b}", "REMIND ( {a} , {p} , {t} , {b} )"),
    ("book a flight from {a} to {b} for {t}", "BOOK ( flight , {a} , {b} , {t} )"),
    ("ask {a} to forward the {o} to {b}", "FORWARD ( {o} , {a} , {b} )"),
    ("meet {a} in {b} {t}", "MEET ( {a} , {b} , {t} )"),
    ("does {a} have the {o} ?", "ASK ( {a} , {o} )"),
)


def make_name(rng: random.Random) -> str:
    """A pronounceable capitalised string of 2 to 3 syllables (``Xylander``, ``Quorin``)."""
    syllables = [rng.choice(ONSETS) + rng.choice(VOWELS) for _ in range(rng.randint(2, 3))]
    if rng.random() < 0.6:
        syllables.append(rng.choice(CODAS))
    return "".join(syllables).capitalize()


def name_pools(sizes: tuple[int, ...], rng: random.Random) -> list[list[str]]:
    """Disjoint pools of distinct names, one of each size (sorted, so a pool is a function of the seed)."""
    seen: set[str] = set()
    pools = []
    for size in sizes:
        pool: list[str] = []
        while len(pool) < size:
            name = make_name(rng)
            if name not in seen:
                seen.add(name)
                pool.append(name)
        pools.append(sorted(pool))
    return pools


def request(rng: random.Random, names: list[str]) -> Pair:
    """One (request, command) pair with its names drawn from ``names``."""
    source, target = rng.choice(TEMPLATES)
    a, b = rng.sample(names, 2)
    slots = {"a": a, "b": b, "o": rng.choice(OBJECTS), "t": rng.choice(TIMES), "p": rng.choice(TOPICS)}
    return source.format(**slots), target.format(**slots)


def make_name_splits(
    train: int, dev: int, test: int, seed: int = 1, uses: int = 1
) -> tuple[list[Pair], list[Pair], list[Pair]]:
    """Pairs of each split, each split's names from a pool of its own, a name for every ``uses``
    requests (a request names 1.7 on average): no name occurs in two splits."""
    if uses < 1:
        raise ValueError(f"uses: expected a number from 1, got {uses}")
    rng = random.Random(seed)
    sizes = tuple(max(2, n // uses) for n in (train, dev, test))
    pools = name_pools(sizes, rng)
    splits = [[request(rng, pool) for _ in range(n)] for n, pool in zip((train, dev, test), pools)]
    return splits[0], splits[1], splits[2]
