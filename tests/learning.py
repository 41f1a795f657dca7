"""What the tests that train a model to a threshold (marked ``learns``) share: the seed they
train from, and one way to hold a measured value against its threshold.

Two environment variables turn the suite's learning tests into a measurement (bench/margins.py):
- ``ATTNSEQ_TEST_SEED=K`` adds K to every seed a learning test trains from (initialisation,
  shuffling, dropout), so the same tests run over other seeds;
- ``ATTNSEQ_MARGINS=FILE`` appends each measured value, its bound and the test to FILE as a JSON
  line instead of asserting, so that one run records every value of a test, not only those
  before its first miss; bench/margins.py gives the verdict.
Without them the tests assert as any test does, from the seeds they were written with.
"""

from __future__ import annotations

import json
import os
import re

import pytest

learns = pytest.mark.learns  # the marker: `pytest -m learns` runs the learning tests alone


def seed(base: int = 0) -> int:
    """The seed a learning test trains from: ``base``, shifted by $ATTNSEQ_TEST_SEED."""
    return base + int(os.environ.get("ATTNSEQ_TEST_SEED", "0"))


def _test_name() -> str:
    """The running test's id (``tests/test_x.py::test_y[param]``)."""
    return re.sub(r" \((setup|call|teardown)\)$", "", os.environ.get("PYTEST_CURRENT_TEST", "?"))


def _held(what: str, value: float, bound: float, kind: str) -> None:
    value = float(value)  # a number, or a tensor of one
    ok = value >= bound if kind == "at_least" else value <= bound
    path = os.environ.get("ATTNSEQ_MARGINS")
    if path:
        record = {
            "test": _test_name(),
            "what": what,
            "value": value,
            "bound": float(bound),
            "kind": kind,
            "seed": seed(),
            "kernels": os.environ.get("ATTNSEQ_KERNELS", "native"),
        }
        with open(path, "a", encoding="utf-8") as f:  # one short line per write: whole under O_APPEND
            f.write(json.dumps(record) + "\n")
        return
    assert ok, f"{what}: {value:.4g}, the test asks {'>=' if kind == 'at_least' else '<='} {bound:.4g}"


def at_least(what: str, value: float, bound: float) -> None:
    """``value`` (what the trained model reached, named ``what``) is at least ``bound``."""
    _held(what, value, bound, "at_least")


def at_most(what: str, value: float, bound: float) -> None:
    """``value`` is at most ``bound`` (an error, or what a model that cannot do the task reaches)."""
    _held(what, value, bound, "at_most")
