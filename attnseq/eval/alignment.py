"""Whether an attention moves forward over its source: the check that a model reading speech
aligns its output with the frames in order (Chan et al. 2016, fig. 2), or one reading a formula
reads it left to right (Deng et al. 2017), the share of a test set's outputs that do, and how far
through their sources they get (``reach``: an attention that moves forward by construction
could also stay at the start)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np


def moves_forward(positions: Sequence[int], slack: int = 0) -> bool:
    """True when no position of ``positions`` (each output token's most attended source
    position, in output order) lies more than ``slack`` positions before the one before it."""
    positions = np.asarray(positions)
    return bool(len(positions) < 2 or (np.diff(positions) >= -slack).all())


def source_positions(translation) -> int:
    """How many positions ``attended_positions`` counts along ``translation``'s source: its
    tokens or listener steps, or its image grid's columns."""
    shape = getattr(translation, "shape", None)
    if shape is not None and len(shape.grid) == 2:
        return int(shape.grid[1])
    return int(np.asarray(translation.attention[0]).shape[-1])


def attended_positions(translation, skip: Collection[str] = ()) -> np.ndarray:
    """Where each output token of ``translation``'s best output (searched with attention) looks
    most, along the source's last axis: a token's position in a text, a listener step over an
    utterance (``shape.grid`` (steps,)), the column of an image's grid (rows, columns; its cells
    laid out column by column); the end-of-output step and the tokens in ``skip`` (markup that
    draws nothing of its own) left out. (output tokens kept,)"""
    tokens = translation.output_tokens[0]
    flat = np.asarray(translation.attention[0])[: len(tokens)].argmax(-1)
    shape = getattr(translation, "shape", None)
    if shape is not None and len(shape.grid) == 2:
        flat = flat // shape.grid[0]
    return flat[[token not in skip for token in tokens[: len(flat)]]]


def monotonic_share(translations, slack: int = 0, skip: Collection[str] = ()) -> float:
    """The share (0..1) of ``translations`` (searched with attention: Translator.search with
    ``keep_attention``) whose output tokens' most attended positions (``attended_positions``,
    without the tokens in ``skip``) move forward (``moves_forward``); an output of one token or
    none counts as monotonic."""
    found = [moves_forward(attended_positions(t, skip), slack) for t in translations]
    return sum(found) / len(found) if found else 0.0


def reach(translations, skip: Collection[str] = ()) -> float:
    """How far through its source an output's attention gets: the mean over ``translations``
    (searched with attention) of the last output token's most attended position (``attended_positions``,
    without the tokens in ``skip``) over the source's last position, 0..1; outputs with no token
    kept, or a source of one position, left out (0.0 when none is left)."""
    shares = []
    for t in translations:
        positions, last = attended_positions(t, skip), source_positions(t) - 1
        if len(positions) and last > 0:
            shares.append(positions[-1] / last)
    return float(np.mean(shares)) if shares else 0.0
