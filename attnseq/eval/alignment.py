"""Whether an attention moves forward over its source: the check that a model reading speech
aligns its output with the frames in order (Chan et al. 2016, fig. 2), and the share of a test
set's outputs that do."""
from __future__ import annotations

from typing import Sequence

import numpy as np


def moves_forward(positions: Sequence[int], slack: int = 0) -> bool:
    """True when no position of ``positions`` (each output token's most attended source
    position, in output order) lies more than ``slack`` positions before the one before it."""
    positions = np.asarray(positions)
    return bool(len(positions) < 2 or (np.diff(positions) >= -slack).all())


def monotonic_share(translations, slack: int = 0) -> float:
    """The share (0..1) of ``translations`` (searched with attention: Translator.search with
    ``keep_attention``) whose best output's tokens attend most, one after another, to source
    positions that move forward (``moves_forward``); the end-of-output step is left out, and an
    output of one token or none counts as monotonic."""
    found = [moves_forward(np.asarray(t.attention[0])[: len(t.output_tokens[0])].argmax(-1), slack)
             for t in translations]
    return sum(found) / len(found) if found else 0.0
