"""The clock of a run's training and its budget (``train.max_minutes``): wall-clock time from the
start of training, set-up, data loading and evaluations included, summed over resumed sessions;
whether another update fits is predicted from the last update's and the last evaluation's time."""

from __future__ import annotations

import time
from collections.abc import Callable


class Clock:
    """Wall-clock seconds of a run's training: ``earlier`` (the sessions before a resume) plus
    the time since this session's clock was made (when the trainer started, before the data)."""

    def __init__(self, now: Callable[[], float] = time.perf_counter):
        self.now = now
        self.started = now()
        self.earlier = 0.0

    def seconds(self) -> float:
        return self.earlier + self.now() - self.started


class Budget:
    """``minutes`` of a Clock (0: no limit), with the time of the last update (``step``) and of
    the last evaluation with its checkpoints (``evaluation``) to predict what still fits."""

    def __init__(self, minutes: float, clock: Clock):
        self.seconds, self.clock = 60 * minutes, clock
        self.step = 0.0
        self.evaluation = 0.0

    def next_fits(self) -> bool:
        """True while another update and the evaluation that ends the run would end within the
        budget (always, without one). Unknown times (before the first update or evaluation) count
        as nothing, so a budget is overshot by at most the first update and evaluation."""
        return not self.seconds or self.clock.seconds() + self.step + self.evaluation <= self.seconds
