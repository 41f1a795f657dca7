"""Several trained torch runs decoded as one model: the Translator of an ensemble (``attnseq
translate RUN1 RUN2``, ``attnseq.load([RUN1, RUN2])``), and the rule its members keep.

The members read each source once, as one sequence of ids, and their predictions are averaged
over one target vocabulary (nn/ensemble.py says how), so they must read and write text the same
way: the same text pipeline files (vocabularies, tokenizer models, pipeline.json) and the same
data settings that read text. That is the simplest rule that is always right; a member with
another source vocabulary would need its own encoding of every source, which attnseq does not do.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ...nn.ensemble import Ensemble
from ...runs import PIPELINE_FILES, TARGET_VOCAB
from ...translator.base import Translator
from .translator import TorchTranslator

# the data settings that say how text is read and written (the rest only choose training pairs)
READING = ("format", "tokenizer", "strip", "lowercase", "unicode", "reverse_source")


def pipeline_difference(run: Path, config, first: Path, first_config) -> str | None:
    """Why the run in ``run`` (its Config ``config``) cannot join an ensemble with ``first``:
    the first text pipeline file or data setting that differs, said as a sentence starting with
    the run; None when it reads and writes text as ``first`` does."""
    for name in (TARGET_VOCAB, *(n for n in PIPELINE_FILES if n != TARGET_VOCAB)):
        mine, theirs = run / name, first / name
        if mine.is_file() != theirs.is_file() or mine.is_file() and mine.read_bytes() != theirs.read_bytes():
            if name == TARGET_VOCAB:
                return (
                    f"{run}: its target vocabulary ({name}) differs from {first}'s; an ensemble averages its "
                    "members' predictions over one target vocabulary"
                )
            return (
                f"{run}: its text pipeline ({name}) differs from {first}'s; the members of an ensemble read "
                f"each source as one, so they must share {', '.join(PIPELINE_FILES)}"
            )
    for key in READING:
        mine, theirs = getattr(config.data, key), getattr(first_config.data, key)
        if mine != theirs:
            return (
                f"{run}: data.{key} is {mine}, {first}'s is {theirs}; the members of an ensemble must read "
                "text the same way"
            )
    return None


class EnsembleTranslator(TorchTranslator):
    """The runs' torch models decoded as one (nn/ensemble.py): at every step the mean of the
    members' log-probabilities, greedy or beam search, n-best lists. Text is read and written
    with the members' shared pipeline; the decode settings are the first member's (with the
    overrides it was loaded with). Each hypothesis' attention is the mean of the members'
    alignments (over the members that attend); the page's further views (heads, windows) are
    not offered for an ensemble."""

    def __init__(self, members: Sequence[TorchTranslator], runs: Sequence[str | Path]):
        first = members[0]
        super().__init__(Ensemble([member.model for member in members]), first.pipeline, first.config, first.device)
        self.members, self.runs = list(members), [Path(run) for run in runs]

    def views_batch(self, src_ids, outputs, rows):
        return Translator.views_batch(self, src_ids, outputs, rows)
