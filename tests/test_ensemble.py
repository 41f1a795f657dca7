"""Ensembles: several models decoded as one through the decoder step protocol (nn/ensemble.py),
their step the mean of the members' log-probabilities (checked by hand on two table models), an
ensemble of one decoding exactly as its model, greedy and beam, and the runs an ensemble refuses
(another target vocabulary, another text pipeline, the numpy engine), each in one line."""

from __future__ import annotations

import math
import shutil

import numpy as np
import pytest
import torch

import attnseq
from attnseq.cli import main
from attnseq.config import load_config
from attnseq.data.batching import SourceBatch, pad
from attnseq.data.vocab import Vocab
from attnseq.decoding.beam import beam_search
from attnseq.decoding.greedy import greedy_search
from attnseq.nn.ensemble import Ensemble
from attnseq.nn.model import build_model
from attnseq.nn.state import Memory, State

EOS, A, B = 2, 4, 5  # Vocab: pad 0, bos 1, eos 2, unk 3; two real tokens a and b
V = 6


class FixedDecoder(torch.nn.Module):
    """The step protocol with the same next-token probabilities ``probs`` ({token: p}) at every
    step, and the alignment ``alignment`` (a list over the source, or None)."""

    def __init__(self, probs: dict[int, float], alignment: list[float] | None):
        super().__init__()
        self.probs, self.alignment = probs, alignment

    def init_state(self, memory: Memory) -> State:
        return State(rows=torch.arange(memory.mask.shape[0]))

    def step(self, prev_tokens, state):
        logp = torch.full((len(prev_tokens), V), -1e9)
        for token, p in self.probs.items():
            logp[:, token] = math.log(p)
        alignment = None if self.alignment is None else torch.tensor([self.alignment] * len(prev_tokens))
        return logp, state, alignment


class FixedModel(torch.nn.Module):
    def __init__(self, probs, alignment=None):
        super().__init__()
        self.decoder = FixedDecoder(probs, alignment)

    def encode(self, source: SourceBatch):
        return Memory(keys=source.ids.float(), values=source.ids.float(), mask=source.mask)


def test_the_step_of_two_members_is_the_mean_of_their_log_probs_worked_by_hand():
    """p_1 = (a .5, b .25, eos .25), p_2 = (a .25, b .5, eos .25): the mean of the log-probs gives
    the geometric means sqrt(.125) = .353553 for a and b and .25 for eos, which sum to .957107;
    normalised by the search's log-softmax: a and b .369398, eos .261204. The alignment is the
    mean of the members' that attend: (1, 0) and (0, 1) give (.5, .5); a member without one is
    left out."""
    ensemble = Ensemble(
        [FixedModel({A: 0.5, B: 0.25, EOS: 0.25}, [1.0, 0.0]), FixedModel({A: 0.25, B: 0.5, EOS: 0.25}, [0.0, 1.0])]
    )
    src, mask = pad([[7, 8]])
    state = ensemble.decoder.init_state(ensemble.encode(SourceBatch(src, mask)))
    logits, state, alignment = ensemble.decoder.step(torch.tensor([Vocab.bos_id]), state)
    probs = torch.softmax(logits, -1)[0]
    assert probs[A].item() == pytest.approx(0.369398, abs=1e-6)
    assert probs[B].item() == pytest.approx(0.369398, abs=1e-6)
    assert probs[EOS].item() == pytest.approx(0.261204, abs=1e-6)
    assert logits[0, A].item() == pytest.approx(math.log(math.sqrt(0.125)), abs=1e-6)  # the mean itself
    assert alignment.tolist() == [[0.5, 0.5]]
    partly = Ensemble([FixedModel({A: 0.5, B: 0.25, EOS: 0.25}, [1.0, 0.0]), FixedModel({A: 0.5, B: 0.25, EOS: 0.25})])
    _, _, alignment = partly.decoder.step(
        torch.tensor([Vocab.bos_id]), partly.decoder.init_state(partly.encode(SourceBatch(src, mask)))
    )
    assert alignment.tolist() == [[1.0, 0.0]]  # the member without attention is left out
    # greedy search over the ensemble: a and b tie at .369398, a comes first; then a again (the
    # members do not look at the prefix) until the limit of 3
    [[hyp]] = greedy_search(ensemble, SourceBatch(src, mask), torch.tensor([3]))
    assert hyp.tokens == [A, A, A] and hyp.score == pytest.approx(3 * math.log(0.369398), abs=1e-5)


def small_model(kind: str, seed: int):
    torch.manual_seed(seed)
    settings = {
        "rnn": ["model.hidden_size=16", "model.embed_size=8", "model.attention=general"],
        "transformer": [
            "model.arch=transformer",
            "model.hidden_size=16",
            "model.ff_size=32",
            "model.heads=2",
            "model.layers=2",
        ],
    }[kind]
    return build_model(load_config(None, settings).model, 9, 9).eval()


def decoded(model, beam: int):
    """Each sentence's hypotheses (tokens, score, alignment) of a fixed batch of three."""
    src, mask = pad([[4, 5, 6, 7, 8], [8, 7, 6], [5, 5, 4, 4]])
    limits = torch.tensor([8, 6, 7])
    hyps = (
        greedy_search(model, SourceBatch(src, mask), limits, keep_attention=True)
        if beam == 1
        else beam_search(model, SourceBatch(src, mask), limits, beam, n_best=2, keep_attention=True)
    )
    return [[(h.tokens, h.score, h.alignment) for h in sentence] for sentence in hyps]


@pytest.mark.parametrize("kind", ["rnn", "transformer"])
@pytest.mark.parametrize("beam", [1, 3])
def test_an_ensemble_of_one_decodes_exactly_as_its_model(kind, beam):
    model = small_model(kind, seed=1)
    alone, as_ensemble = decoded(model, beam), decoded(Ensemble([model]), beam)
    for mine, theirs in zip(as_ensemble, alone):
        assert [(t, s) for t, s, _ in mine] == [(t, s) for t, s, _ in theirs]  # the same tokens and scores, to the bit
        assert all(torch.equal(a, b) for (_, _, a), (_, _, b) in zip(mine, theirs))


@pytest.mark.parametrize("beam", [1, 3])
def test_an_ensemble_of_two_steps_by_the_mean_and_decodes_otherwise_than_each(beam):
    rnn, transformer = small_model("rnn", seed=1), small_model("transformer", seed=2)
    ensemble = Ensemble([rnn, transformer])
    src, mask = pad([[4, 5, 6, 7, 8], [8, 7, 6]])
    tokens = torch.tensor([Vocab.bos_id] * 2)
    logits, _, alignment = ensemble.decoder.step(
        tokens, ensemble.decoder.init_state(ensemble.encode(SourceBatch(src, mask)))
    )
    steps = [m.decoder.step(tokens, m.decoder.init_state(m.encode(SourceBatch(src, mask)))) for m in (rnn, transformer)]
    mean = sum(torch.log_softmax(s[0], -1) for s in steps) / 2
    torch.testing.assert_close(logits, mean, rtol=0, atol=1e-6)
    torch.testing.assert_close(alignment, (steps[0][2] + steps[1][2]) / 2)
    together = decoded(ensemble, beam)
    for member in (rnn, transformer):
        assert [[s for _, s, _ in h] for h in together] != [[s for _, s, _ in h] for h in decoded(member, beam)]
    assert all(len(h) == (1 if beam == 1 else 2) for h in together)


# -- runs: the API and the command line -------------------------------------------------------------
def search_all(model, beam: int):
    return [
        (r.outputs, r.scores)
        for r in model.search(["abc", "fedcba", "ab"], beam_size=beam, n_best=1 if beam == 1 else 2)
    ]


def test_load_of_one_run_as_a_list_decodes_as_the_run_and_two_runs_as_their_ensemble(quick_runs, tmp_path, capsys):
    """attnseq.load([run]) equals attnseq.load(run) (greedy and beam, outputs and scores); the rnn
    and transformer quick runs (one text pipeline) decode as one through load and translate."""
    rnn, transformer = quick_runs["rnn"], quick_runs["transformer"]
    one, alone = attnseq.load([rnn]), attnseq.load(rnn)
    for beam in (1, 3):
        assert search_all(one, beam) == search_all(alone, beam)
    both = attnseq.load([rnn, transformer])
    assert len(both.members) == 2 and both.runs == [rnn, transformer]
    results = search_all(both, 3)
    assert results != search_all(alone, 3) and all(len(outputs) == 2 for outputs, _ in results)
    _, attention = both.translate(["abc"], return_attention=True)
    assert attention[0].shape[1] == 3 and np.allclose(attention[0].sum(1), 1, atol=1e-5)
    assert (
        main(
            [
                "-q",
                "translate",
                str(rnn),
                str(transformer),
                "--beam",
                "3",
                "--n-best",
                "2",
                "--input",
                str(quick_runs.data / "test.tsv"),
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 * len((quick_runs.data / "test.tsv").read_text().splitlines())
    assert all(float(line.split("\t")[0]) <= 0 for line in lines)


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("attnseq: error: "), err
    return err[0]


def copy_run(run, to):
    """A copy of ``run``'s config and text pipeline (no weights: an ensemble is refused before)."""
    shutil.copytree(run, to, ignore=shutil.ignore_patterns("*.safetensors", ".lock"))
    return to


def test_runs_an_ensemble_cannot_hold_are_refused_by_name(quick_runs, tmp_path, capsys):
    rnn = quick_runs["rnn"]
    other = copy_run(rnn, tmp_path / "other-target")
    vocab = other / "vocab.target.json"
    vocab.write_text(vocab.read_text().replace('"a"', '"z"'))
    source = copy_run(rnn, tmp_path / "other-source")
    (source / "vocab.source.json").write_text((source / "vocab.source.json").read_text().replace('"a"', '"z"'))
    numpy_run = copy_run(rnn, tmp_path / "numpy")
    (numpy_run / "config.yaml").write_text(
        "engine: numpy\n" + (numpy_run / "config.yaml").read_text().replace("engine: torch\n", "")
    )
    reversed_run = copy_run(rnn, tmp_path / "reversed")
    (reversed_run / "config.yaml").write_text(
        (reversed_run / "config.yaml").read_text().replace("reverse_source: false", "reverse_source: true")
    )
    for run, words in (
        (other, f"error: {other}: its target vocabulary (vocab.target.json) differs from {rnn}'s"),
        (source, "its text pipeline (vocab.source.json) differs"),
        (numpy_run, "a numpy-engine run; an ensemble decodes torch-engine runs only"),
        (reversed_run, "data.reverse_source is True"),
    ):
        for command in (
            ["translate", str(rnn), str(run)],
            ["evaluate", str(rnn), str(run), "--data", str(quick_runs.data / "test.tsv")],
        ):
            assert main(command) == 2
            assert words in one_error_line(capsys)
        with pytest.raises(ValueError, match=r"^run_dir\[1\]: "):
            attnseq.load([rnn, run])
    with pytest.raises(ValueError, match=r"^run_dir: empty"):
        attnseq.load([])
