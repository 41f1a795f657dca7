"""Decode settings for one request, normalised once for every caller (CLI, API, server).

``decode_options(run_decode, beam_size=..., n_best=..., ...)`` takes the run's DecodeConfig and
a request's changes (None: keep the run's) and returns the checked settings:

- ``beam_size`` >= 1 (1 is greedy search); ``n_best`` >= 1;
- n hypotheses need a beam at least n wide: ``n_best`` alone widens the run's beam to it, while
  a ``beam_size`` given narrower than ``n_best`` is an error (never fewer hypotheses than asked);
- every other field keeps its range (``decode.max_len`` >= 1, ...).

``output_limits`` is each sentence's limit on output tokens that decode.max_len,
max_len_ratio and max_len_offset set, the same for every engine.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..config import DecodeConfig
from ..errors import ConfigError
from ..schema import build, plain


def decode_options(
    decode: DecodeConfig, beam_size: int | None = None, n_best: int | None = None, **changes
) -> DecodeConfig:
    """The settings to search with: the run's ``decode`` with the request's changes, checked."""
    values = plain(decode)
    values.update({k: v for k, v in changes.items() if v is not None})
    if n_best is not None:
        values["n_best"] = n_best
        if beam_size is None and isinstance(n_best, int) and n_best > decode.beam_size:
            values["beam_size"] = n_best  # n hypotheses need a beam at least n wide
    if beam_size is not None:
        values["beam_size"] = beam_size
    unknown = set(values) - {f.name for f in dataclasses.fields(DecodeConfig)}
    if unknown:
        key = f"decode.{sorted(unknown)[0]}"
        raise ConfigError(f"{key}: unknown decode setting", key=key)
    return build(DecodeConfig, values, "decode.")


def output_limits(source_lengths, ratio: float, offset: int, cap: int) -> list[int]:
    """Each sentence's limit on output tokens (eos included): min(cap, floor(ratio * source
    length) + offset), at least 1, computed in float32 as every engine computes it."""
    limits = np.floor(np.asarray(source_lengths, dtype=np.float32) * np.float32(ratio)).astype(np.int64) + offset
    return np.clip(limits, 1, cap).tolist()
