"""``attnseq data names``: requests naming people never seen in training, and the copy-names
preset that writes them (copy attention), against the same model without copying."""

from __future__ import annotations

import contextlib
import io
import re

import pytest
from helpers import ROOT, sets
from learning import at_least, at_most, learns

from attnseq.data.corpora.names import make_name_splits

NAME = re.compile(r"\b[A-Z][a-z]+\b")


def names_of(pairs) -> set[str]:
    return {n for source, _ in pairs for n in NAME.findall(source)}


def test_test_names_are_never_training_names_and_each_answer_repeats_its_request_names():
    train, dev, test = make_name_splits(2000, 100, 200, seed=3)
    assert (len(train), len(dev), len(test)) == (2000, 100, 200)
    seen = names_of(train)
    assert not names_of(dev) & seen and not names_of(test) & seen and not names_of(dev) & names_of(test)
    for source, target in train + test:
        names = NAME.findall(source)
        assert names and all(f" {n} " in f" {target} " for n in names)  # every name a token of the answer
        assert re.fullmatch(r"[A-Z]+ \( .* \)", target)
    assert make_name_splits(2000, 100, 200, seed=3) == (train, dev, test)  # a function of the seed
    assert len(seen) > 1000  # names are rare: about as many as requests


def test_the_command_writes_the_three_splits(tmp_path):
    from attnseq.cli import main
    from attnseq.data.corpus import read_tsv

    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert (
            main(["data", "names", "--out", str(tmp_path / "names"), "--train", "300", "--dev", "20", "--test", "30"])
            == 0
        )
    assert "300 train, 20 dev, 30 test requests" in out.getvalue()
    assert len(read_tsv(tmp_path / "names" / "test.tsv")) == 30


def train_names(data, run, *settings: str) -> float:
    """Train configs/copy-names.yaml (with ``settings``) on ``data``; its test exact match."""
    from attnseq.api import load
    from attnseq.cli import main
    from attnseq.data.corpus import read_tsv

    with contextlib.redirect_stdout(io.StringIO()):
        assert (
            main(
                [
                    "-q",
                    "train",
                    str(ROOT / "configs" / "copy-names.yaml"),
                    "--data",
                    str(data),
                    "--out",
                    str(run),
                    *sets("train.progress=false", "train.log_every=0", *settings),
                ]
            )
            == 0
        )
    return load(run).evaluate(read_tsv(data / "test.tsv"), bleu=False)["exact_match"]


def write_names(folder, train: int, dev: int, test: int):
    from attnseq.data.splits import write_split_dir

    write_split_dir(folder, *make_name_splits(train, dev, test, seed=5))
    return folder


def test_a_copying_run_trains_and_translates_names_it_never_saw(tmp_path):
    """The wiring, in a few updates: the run trains on extended ids, and its translator hands the
    search each source's extended ids and writes what it copies (an unseen name is no unk)."""
    from attnseq.api import load

    data = write_names(tmp_path / "data", 300, 20, 20)
    train_names(data, tmp_path / "run", "train.max_steps=3", "train.eval_max_sentences=5")
    translator = load(tmp_path / "run")
    assert translator.copies
    result = translator.search(["send the report to Zorblatt tomorrow"], keep_attention=True)[0]
    assert "Zorblatt" in result.unknown and "<unk>" not in result.output_tokens[0]
    views, _ = translator.attention_views(result)
    assert views[0].p_gen.shape == (result.attention[0].shape[0],)


@pytest.mark.slow
@learns
def test_copy_attention_writes_unseen_names_that_the_same_model_cannot(tmp_path):
    """configs/copy-names.yaml: >= 95% test exact match on requests whose every name is new; the
    same model without copying (model.copy=false), trained as long, gets almost none."""
    data = write_names(tmp_path / "data", 8000, 200, 300)
    copying = train_names(data, tmp_path / "copy", "train.max_steps=400", "train.threads=1")
    plain = train_names(data, tmp_path / "plain", "model.copy=false", "train.max_steps=400", "train.threads=1")
    at_least("test exact match with copying", copying, 0.95)
    at_most("test exact match without copying", plain, 0.05)
