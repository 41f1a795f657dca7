"""Where a long step stands (generating or splitting a corpus, sampling text for sentencepiece,
decoding many lines): a tqdm bar with its rate on a terminal; elsewhere (a log file, a pipe) a
plain log line every ``interval`` seconds; nothing with ``-q``. The training's epoch display
(train.loop.ProgressDisplay) is one, counting batches.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm import tqdm

log = logging.getLogger("attnseq")
T = TypeVar("T")


class StepProgress:
    """Progress of one step: ``update(n)`` as work is done, ``close()`` (or a ``with`` block) at
    the end. ``total`` may be None (a stream of unknown length: the bar shows count and rate).
    ``enabled=False`` shows nothing, as ``-q`` does (the ``attnseq`` logger above INFO)."""

    def __init__(
        self,
        description: str,
        total: int | None = None,
        unit: str = "pair",
        enabled: bool = True,
        interval: float = 30.0,
        scale: bool = False,
        done: int = 0,
    ):
        self.description, self.total, self.unit, self.interval = description, total, unit, interval
        self.done = self.done_before = done  # done: units done before this display began (a resumed epoch)
        self.started = self.last = time.perf_counter()
        enabled = enabled and log.isEnabledFor(logging.INFO)
        self.bar = None
        if enabled and sys.stderr.isatty():
            self.bar = tqdm(
                total=total,
                initial=done,
                desc=description,
                unit=unit,
                leave=False,
                dynamic_ncols=True,
                unit_scale=scale,
            )
        self.lines = enabled and self.bar is None

    def update(self, n: int = 1, **figures: str) -> None:
        """``n`` more units done; ``figures`` (``loss="2.31"``) shown beside the count."""
        self.done += n
        if self.bar is not None:
            if figures:
                self.bar.set_postfix(figures, refresh=False)
            self.bar.update(n)
        elif self.lines and time.perf_counter() - self.last >= self.interval:
            self.last = time.perf_counter()
            log.info("%s: %s", self.description, self.line(figures))

    def line(self, figures: dict[str, str]) -> str:
        """What a log line says: the status, and ``figures``."""
        return "  ".join([self.status(), *(f"{k} {v}" for k, v in figures.items())])

    def over(self, items: Iterable[T], every: int = 4096) -> Iterator[T]:
        """``items`` as they come, counted as done ``every`` at a time (and the rest at the end):
        progress of a stream of many small steps at little cost to each."""
        n = 0
        for n, item in enumerate(items, start=1):
            yield item
            if not n % every:
                self.update(every)
        self.update(n % every)

    def status(self) -> str:
        """``1,200,000 of 5,000,000 pairs, 98,000 pairs/s``: the count so far and its rate."""
        seconds = time.perf_counter() - self.started
        rate = (self.done - self.done_before) / seconds if seconds > 0 else 0.0
        of = f" of {self.total:,}" if self.total is not None else ""
        return f"{self.done:,}{of} {self.unit}s, {rate:,.0f} {self.unit}s/s"

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self) -> StepProgress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
