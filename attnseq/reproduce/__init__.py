"""Reproductions of the literature: one command per claim of the documents attnseq implements,
each training attnseq's presets and writing a result page with its table and figures.

    attnseq reproduce --list
    attnseq reproduce book-ch8 [--budget-minutes N] [--seeds K] [--out docs/results]

base.py holds the registry, the options' budget, the context and the result; page.py writes the
pages; runner.py runs one; each claim is a module of its own. Importing the package registers
every reproduction.
"""

from . import (  # noqa: F401
    attention_pooling,
    bahdanau_length,
    beam_vs_greedy,
    bidirectional,
    book_ch8,
    context_every_step,
    formulas,
    heads,
    local_cost,
    luong_scorers,
    memory_hops,
    nadaraya_watson,
    ntm,
    peeky_by_length,
    placement,  # (register every reproduction)
    positions,
    reversal,
    scaled_dot,
    skip_connections,
    speech,
    transformer_vs_rnn,
)
from .base import REPRODUCTIONS, Reproduction, Result
from .runner import listing, reproduce

__all__ = ["REPRODUCTIONS", "Reproduction", "Result", "listing", "reproduce"]
