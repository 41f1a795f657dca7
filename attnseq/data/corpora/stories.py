"""Generated stories with questions in the style of the bAbI tasks (Weston et al. 2015), for the
memory networks: people move between places and pick up and drop objects; a question about the
story has a one-word answer. Not the bAbI release: the same kinds of question, our own world.

Kinds (and the bAbI task each imitates):

- ``single``: "where is mary ?" (1, one supporting fact: her last move);
- ``two``: "where is the milk ?" (2, two supporting facts: who has it, where they are);
- ``three``: "where was the milk before the kitchen ?" (3, three supporting facts);
- ``yes-no``: "is mary in the kitchen ?" (6, yes or no);
- ``counting``: "how many objects is mary carrying ?" (7, none, one, two or three).

A pair's source is the story's sentences, each ended by " .", then the question ending in " ?";
its target is the answer. Every story knows which of its sentences support the answer. The
same seed gives the same stories.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

PEOPLE = ("mary", "john", "daniel", "sandra")
PLACES = ("kitchen", "garden", "office", "bathroom", "hallway", "bedroom")
OBJECTS = ("milk", "football", "apple")
MOVES = ("went to", "journeyed to", "travelled to", "moved to", "went back to")
TAKES = ("picked up", "got", "grabbed", "took")
DROPS = ("dropped", "left", "discarded", "put down")
NUMBERS = ("none", "one", "two", "three")

Pair = tuple[str, str]


@dataclass
class Story:
    """One story and its question: ``support`` are the indices of the sentences the answer
    follows from."""

    kind: str
    sentences: list[str]
    question: str
    answer: str
    support: list[int]

    def pair(self) -> Pair:
        """(source, target): the sentences each ended by " .", the question, the answer."""
        return " ".join(f"{s} ." for s in self.sentences) + f" {self.question} ?", self.answer


class World:
    """Where everyone and everything is, and which sentence said so.

    place[person] = (place, sentence index); holder[object] = (person, index of the taking);
    history[object] = the places the object has been, each with the sentences that put it
    there; dropped[object] = (place, sentences) while it lies somewhere.
    """

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.sentences: list[str] = []
        self.place: dict[str, tuple[str, int]] = {}
        self.holder: dict[str, tuple[str, int]] = {}
        self.history: dict[str, list[tuple[str, list[int]]]] = {o: [] for o in OBJECTS}
        self.dropped: dict[str, tuple[str, list[int]]] = {}

    def carried_by(self, person: str) -> list[str]:
        return [o for o, (p, _) in self.holder.items() if p == person]

    def move(self, person: str) -> None:
        here = self.place.get(person, (None, -1))[0]
        there = self.rng.choice([p for p in PLACES if p != here])
        index = self._say(f"{person} {self.rng.choice(MOVES)} the {there}")
        self.place[person] = (there, index)
        for thing in self.carried_by(person):
            self.history[thing].append((there, [self.holder[thing][1], index]))

    def take(self, person: str, thing: str) -> None:
        index = self._say(f"{person} {self.rng.choice(TAKES)} the {thing}")
        self.holder[thing] = (person, index)
        self.dropped.pop(thing, None)
        place, moved = self.place[person]
        if not self.history[thing] or self.history[thing][-1][0] != place:
            self.history[thing].append((place, [index, moved]))

    def drop(self, person: str, thing: str) -> None:
        index = self._say(f"{person} {self.rng.choice(DROPS)} the {thing}")
        del self.holder[thing]
        self.dropped[thing] = (self.place[person][0], [index, self.place[person][1]])

    def can_take(self, person: str) -> list[str]:
        """Objects ``person`` may take: nobody holds them, and they lie where the person is or
        have not been seen yet."""
        if person not in self.place:
            return []
        here = self.place[person][0]
        return [o for o in OBJECTS if o not in self.holder and (o not in self.dropped or self.dropped[o][0] == here)]

    def random_event(self, objects: bool, take_bias: float = 0.0) -> None:
        """One more sentence: a move, or (with ``objects``) a taking or a dropping."""
        rng = self.rng
        person = rng.choice(PEOPLE)
        if objects and person in self.place:
            roll = rng.random()
            takeable = self.can_take(person)
            if roll < 0.3 + take_bias and takeable:
                return self.take(person, rng.choice(takeable))
            if roll < 0.5 and self.carried_by(person):
                return self.drop(person, rng.choice(self.carried_by(person)))
        self.move(person)

    def _say(self, sentence: str) -> int:
        self.sentences.append(sentence)
        return len(self.sentences) - 1


def _single(rng: random.Random) -> Story:
    world = World(rng)
    for _ in range(rng.randint(2, 10)):
        world.random_event(objects=False)
    person = rng.choice(sorted(world.place))
    place, index = world.place[person]
    return Story("single", world.sentences, f"where is {person}", place, [index])


def _yes_no(rng: random.Random) -> Story:
    world = World(rng)
    for _ in range(rng.randint(2, 10)):
        world.random_event(objects=False)
    person = rng.choice(sorted(world.place))
    place, index = world.place[person]
    asked = place if rng.random() < 0.5 else rng.choice([p for p in PLACES if p != place])
    return Story("yes-no", world.sentences, f"is {person} in the {asked}", "yes" if asked == place else "no", [index])


def _located(world: World) -> list[tuple[str, str, list[int]]]:
    """(object, place, supporting sentences) for every object whose place is known."""
    found = []
    for thing in OBJECTS:
        if thing in world.holder:
            person, taken = world.holder[thing]
            place, moved = world.place[person]
            found.append((thing, place, sorted({taken, moved})))
        elif thing in world.dropped:
            place, support = world.dropped[thing]
            found.append((thing, place, sorted(set(support))))
    return found


def _two(rng: random.Random) -> Story | None:
    world = World(rng)
    for _ in range(rng.randint(2, 14)):
        world.random_event(objects=True, take_bias=0.1)
    known = _located(world)
    if not known:
        return None
    thing, place, support = rng.choice(known)
    return Story("two", world.sentences, f"where is the {thing}", place, support)


def _three(rng: random.Random) -> Story | None:
    world = World(rng)
    for _ in range(rng.randint(5, 20)):
        world.random_event(objects=True, take_bias=0.1)
    places = {thing: [p for p, _ in world.history[thing]] for thing in OBJECTS}
    moves = [
        (thing, i)
        for thing in OBJECTS
        for i in range(1, len(places[thing]))
        if places[thing].count(places[thing][i]) == 1
    ]
    if not moves:
        return None
    thing, i = rng.choice(moves)  # a place the object visited once: "before" is unambiguous
    before, support_before = world.history[thing][i - 1]
    after, support_after = world.history[thing][i]
    support = sorted(set(support_before) | set(support_after))
    return Story("three", world.sentences, f"where was the {thing} before the {after}", before, support)


def _counting(rng: random.Random) -> Story | None:
    world = World(rng)
    for _ in range(rng.randint(2, 10)):
        world.random_event(objects=True, take_bias=0.2)
    people = sorted(world.place)
    if not people:
        return None

    def handling(person: str) -> list[int]:  # the sentences where ``person`` takes or drops something
        return [
            i
            for i, s in enumerate(world.sentences)
            if s.startswith(person + " ") and not any(s.startswith(f"{person} {m} ") for m in MOVES)
        ]

    busy = [p for p in people if handling(p)]
    person = rng.choice(busy if busy and rng.random() < 0.8 else people)  # fewer "none" answers
    carried = world.carried_by(person)
    support = handling(person)
    return Story("counting", world.sentences, f"how many objects is {person} carrying", NUMBERS[len(carried)], support)


GENERATORS: dict[str, Callable[[random.Random], Story | None]] = {
    "single": _single,
    "two": _two,
    "three": _three,
    "yes-no": _yes_no,
    "counting": _counting,
}
KINDS = tuple(GENERATORS)


def generate_stories(kind: str, n: int, rng: random.Random, seen: set[str] | None = None) -> list[Story]:
    """``n`` stories of ``kind`` whose sources are all new (not in ``seen``, which is updated)."""
    if kind not in GENERATORS:
        raise ValueError(f"unknown kind of story {kind!r}; choose from {', '.join(KINDS)}")
    seen = set() if seen is None else seen
    stories: list[Story] = []
    attempts = 0
    while len(stories) < n:
        attempts += 1
        if attempts > 50 * n + 1000:
            raise ValueError(f"could not make {n} different {kind} stories")
        story = GENERATORS[kind](rng)
        if story is None or story.pair()[0] in seen:
            continue
        seen.add(story.pair()[0])
        stories.append(story)
    return stories


def make_story_splits(
    kinds: Sequence[str] = KINDS, n_train: int = 1000, n_dev: int = 100, n_test: int = 1000, seed: int = 1
) -> dict[str, list[Story]]:
    """{"train", "dev", "test"}: ``n_*`` stories of each kind, no source in two splits, the kinds
    interleaved, deterministic in ``seed``."""
    for name, count in (("n_train", n_train), ("n_dev", n_dev), ("n_test", n_test)):
        if count < 0:
            raise ValueError(f"{name} must be >= 0, got {count}")
    if not kinds:
        raise ValueError("give at least one kind of story")
    rng = random.Random(seed)
    seen: set[str] = set()
    splits = {}
    for split, count in (("test", n_test), ("dev", n_dev), ("train", n_train)):
        stories = [s for kind in kinds for s in generate_stories(kind, count, rng, seen)]
        rng.shuffle(stories)
        splits[split] = stories
    return {name: splits[name] for name in ("train", "dev", "test")}
