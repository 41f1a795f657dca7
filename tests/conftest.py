"""The fixtures every test module can ask for; the helpers they use are in helpers.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import QuickRuns, bf16_lstm_capped, write_reverse_dir


@pytest.fixture(autouse=True, scope="session")
def one_torch_thread() -> None:
    """Torch computes on one thread in each test process (pytest -n 2 runs two). Imported here,
    not at the top, so that pytest-xdist's controller, which runs no test, never loads torch."""
    import torch

    torch.set_num_threads(1)


@pytest.fixture(autouse=True, scope="session")
def token_store_cache(tmp_path_factory) -> Path:
    """The stores training prepares (attnseq.data.prepare) go to a folder of the test session,
    not the user's cache; the commands tests run in subprocesses take it too."""
    folder = tmp_path_factory.mktemp("cache")
    os.environ["ATTNSEQ_CACHE"] = str(folder)
    return folder


@pytest.fixture(scope="session")
def run_shared_folder(tmp_path_factory) -> Path:
    """A folder every process of this pytest run shares (under pytest -n, the workers' common
    parent of their own temporary folders), and no other run: what one test process makes once
    for several tests, guarded by a lock, goes there."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture
def reverse_data(tmp_path: Path) -> Path:
    """A folder with train/dev/test.tsv of the reversal task."""
    return write_reverse_dir(tmp_path / "data")


@pytest.fixture(scope="session")
def quick_runs(tmp_path_factory) -> QuickRuns:
    """Two-step runs of each kind the attention page shows, shared by the tests of a session."""
    return QuickRuns(tmp_path_factory.mktemp("quick-runs"))


def pytest_runtest_setup(item: pytest.Item) -> None:
    """The tests marked ``bf16_lstm`` skipped, with the reason, where oneDNN cannot make a
    bfloat16 LSTM (held to AVX2 on a bfloat16 CPU: bench/isa.py's variables)."""
    if item.get_closest_marker("bf16_lstm") and (why := bf16_lstm_capped()):
        pytest.skip(why)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked ``minutes`` first, the rest in their order: pytest -n 2 hands each
    process one test at a time (--maxschedchunk 1, the Makefile's), so the long ones start at
    once and the short ones fill the other core, instead of one starting last and the run
    ending on one core."""
    items.sort(key=lambda item: item.get_closest_marker("minutes") is None)
