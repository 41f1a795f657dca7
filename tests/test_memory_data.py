"""The memory architectures' data: generated stories, algorithmic tasks and documents are
deterministic by seed, answer what they ask, and are written by ``attnseq data ...``."""

from __future__ import annotations

import re

import pytest

from attnseq.cli import main
from attnseq.data.corpora.algorithmic import make_task_splits
from attnseq.data.corpora.documents import BAD, GOOD, make_document_splits
from attnseq.data.corpora.stories import KINDS, PLACES, make_story_splits
from attnseq.data.corpus import read_tsv


def replay_places(sentences: list[str]) -> dict[str, str]:
    """Where each person is after ``sentences`` (a reading independent of the generator)."""
    where = {}
    for s in sentences:
        m = re.match(r"(\w+) (went to|journeyed to|travelled to|moved to|went back to) the (\w+)$", s)
        if m:
            where[m.group(1)] = m.group(3)
    return where


def test_stories_are_deterministic_disjoint_and_answer_their_questions():
    a = make_story_splits(n_train=60, n_dev=10, n_test=20, seed=3)
    b = make_story_splits(n_train=60, n_dev=10, n_test=20, seed=3)
    assert [s.pair() for s in a["train"]] == [s.pair() for s in b["train"]]
    assert [s.pair() for s in a["train"]] != [
        s.pair() for s in make_story_splits(n_train=60, n_dev=10, n_test=20, seed=4)["train"]
    ]
    sources = [{s.pair()[0] for s in a[split]} for split in ("train", "dev", "test")]
    assert not (sources[0] & sources[1] or sources[0] & sources[2] or sources[1] & sources[2])
    assert len(a["train"]) == 60 * len(KINDS) and {s.kind for s in a["test"]} == set(KINDS)
    for story in a["train"] + a["test"]:
        assert story.support or (story.kind, story.answer) == ("counting", "none")  # nothing taken: no fact
        assert all(0 <= i < len(story.sentences) for i in story.support)
        where = replay_places(story.sentences)
        person = story.question.split()[-1] if story.kind == "single" else None
        if story.kind == "single":
            assert story.answer == where[person]
        elif story.kind == "yes-no":
            _, name, _, _, place = story.question.split()
            assert story.answer == ("yes" if where[name] == place else "no")
        elif story.kind in ("two", "three"):
            assert story.answer in PLACES
        source, target = story.pair()
        assert source.endswith(" ?") and source.count(" . ") == len(story.sentences) and target == story.answer


def test_the_answer_of_a_single_fact_question_is_in_its_supporting_sentence():
    for story in make_story_splits(kinds=["single", "two"], n_train=50, n_dev=0, n_test=0, seed=1)["train"]:
        assert any(story.answer in story.sentences[i] for i in story.support)


def test_algorithmic_tasks():
    train, dev, test, longer = make_task_splits("copy", 50, 5, 5, (1, 4), (9,), seed=2, bits=6)
    assert (train, longer) == make_task_splits("copy", 50, 5, 5, (1, 4), (9,), seed=2, bits=6)[::3]
    assert all(s == t and 1 <= len(s.split()) <= 4 for s, t in train)
    assert all(re.fullmatch(r"[01]{6}", token) for s, _ in train for token in s.split())
    assert all(len(s.split()) == 9 for s, _ in longer[9])
    for source, target in make_task_splits("repeat-copy", 30, 0, 0, (1, 3), seed=4, repeats=(1, 4))[0]:
        *sequence, count = source.split()
        assert target.split() == sequence * int(count[1:])
    for source, target in make_task_splits("sort", 30, 0, 0, (2, 6), seed=5, levels=8)[0]:
        tokens = source.split()
        items = sorted(zip(tokens[::2], tokens[1::2]), key=lambda item: -int(item[1][1:]))
        assert target.split() == [v for v, _ in items]
    with pytest.raises(ValueError, match="levels"):
        make_task_splits("sort", 1, 0, 0, (9, 9), levels=8)


def test_documents_are_labelled_by_their_verdict():
    splits = make_document_splits(200, 10, 10, seed=1)
    assert [d.pair() for d in splits["train"]] == [d.pair() for d in make_document_splits(200, 10, 10, seed=1)["train"]]
    labels = [d.label for d in splits["train"]]
    assert 60 < labels.count("positive") < 140
    for d in splits["train"]:
        verdict = d.sentences[d.key].split()
        opinion = set(verdict) & (set(GOOD) | set(BAD))
        others = [w for i, s in enumerate(d.sentences) if i != d.key for w in s.split()]
        assert not (set(others) & (set(GOOD) | set(BAD)))  # only the verdict has an opinion
        if opinion:
            good = bool(opinion & set(GOOD))
            assert d.label == ("positive" if good != ("not" in verdict) else "negative")
        else:
            assert d.label == ("negative" if "not" in verdict else "positive")  # "i would (not) recommend"


def test_neutral_documents_have_no_verdict_and_the_rest_are_as_before():
    mixed = make_document_splits(300, 0, 0, seed=2, neutral=0.4)["train"]
    neutral = [d for d in mixed if d.label == "neutral"]
    assert 60 < len(neutral) < 180 and all(d.key == -1 for d in neutral)
    opinions = set(GOOD) | set(BAD) | {"recommend"}
    assert not any(set(s.split()) & opinions for d in neutral for s in d.sentences)  # nothing decides
    assert all(set(d.sentences[d.key].split()) & opinions for d in mixed if d.key >= 0)
    # no neutral share: the generator draws exactly as before (the existing data sets stay the same)
    assert [d.pair() for d in make_document_splits(50, 0, 0, seed=1, neutral=0.0)["train"]] == [
        d.pair() for d in make_document_splits(50, 0, 0, seed=1)["train"]
    ]
    with pytest.raises(ValueError, match="neutral"):
        make_document_splits(1, 0, 0, neutral=1.0)


def test_data_commands_write_the_splits_and_the_extra_test_files(tmp_path, capsys):
    assert (
        main(
            [
                "data",
                "stories",
                "--out",
                str(tmp_path / "s"),
                "--kinds",
                "single,counting",
                "--train",
                "20",
                "--dev",
                "4",
                "--test",
                "6",
            ]
        )
        == 0
    )
    assert len(read_tsv(tmp_path / "s" / "train.tsv")) == 40
    assert len(read_tsv(tmp_path / "s" / "test-counting.tsv")) == 6
    assert (
        main(
            [
                "data",
                "copy",
                "--out",
                str(tmp_path / "c"),
                "--train",
                "10",
                "--dev",
                "2",
                "--test",
                "3",
                "--lengths",
                "2-3",
                "--test-lengths",
                "7",
            ]
        )
        == 0
    )
    assert all(len(s.split()) == 7 for s, _ in read_tsv(tmp_path / "c" / "test-len7.tsv"))
    assert (
        main(["data", "sort", "--out", str(tmp_path / "o"), "--train", "5", "--lengths", "2-4", "--test-lengths", ""])
        == 0
    )
    assert (
        main(
            [
                "data",
                "repeat-copy",
                "--out",
                str(tmp_path / "r"),
                "--train",
                "5",
                "--repeats",
                "2-3",
                "--test-lengths",
                "",
            ]
        )
        == 0
    )
    assert main(["data", "documents", "--out", str(tmp_path / "d"), "--train", "10", "--dev", "2", "--test", "2"]) == 0
    capsys.readouterr()
    assert main(["data", "stories", "--out", str(tmp_path / "x"), "--kinds", "single,riddles"]) == 2
    assert "riddles" in capsys.readouterr().err
    assert main(["data", "copy", "--out", str(tmp_path / "x"), "--lengths", "5-2"]) == 2
