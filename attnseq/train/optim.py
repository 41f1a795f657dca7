"""Optimisers (``train.optimizer``) and learning-rate schedules (``train.schedule``) for the
torch engine, each a registered variant with its own options."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..registry import Registry
from ..schema import number

OPTIMIZERS: Registry = Registry(
    "optimizer", key="train.optimizer"
)  # functions (params, train config, options) -> Optimizer
SCHEDULES: Registry[type[Schedule]] = Registry("learning-rate schedule", key="train.schedule")


@dataclass
class AdamOptions:
    betas: tuple[float, float] = number((0.9, 0.999), 0.0, 1.0, high_open=True)
    eps: float = number(1e-8, 0.0, low_open=True)


@OPTIMIZERS.register("adam", options=AdamOptions)
def adam(params, tc, options: AdamOptions) -> torch.optim.Optimizer:
    """Adam (Kingma & Ba 2015), torch's fused kernel (one pass over every parameter instead of a
    loop over the tensors)."""
    return torch.optim.Adam(
        params, lr=tc.lr, betas=tuple(options.betas), eps=options.eps, weight_decay=tc.weight_decay, fused=True
    )


@dataclass
class SGDOptions:
    momentum: float = number(0.0, 0.0, 1.0, high_open=True)


@OPTIMIZERS.register("sgd", options=SGDOptions)
def sgd(params, tc, options: SGDOptions) -> torch.optim.Optimizer:
    """Stochastic gradient descent, with momentum when ``momentum`` > 0."""
    return torch.optim.SGD(params, lr=tc.lr, momentum=options.momentum, weight_decay=tc.weight_decay)


def build_optimizer(params, tc) -> torch.optim.Optimizer:
    """The optimizer ``tc.optimizer`` names, over the parameters that require gradients."""
    params = [p for p in params if p.requires_grad]
    return OPTIMIZERS.get(tc.optimizer.name, "train.optimizer")(
        params, tc, OPTIMIZERS.options(tc.optimizer, "train.optimizer")
    )


class Schedule:
    """A learning-rate schedule: ``factor(step)`` times the base rate after ``step`` updates,
    and ``after_evaluation`` for schedules that react to the dev score. ``budget_used(step)``,
    set by the trainer, is the share of the run's budget spent after ``step`` updates (0 to 1), for
    schedules that follow the budget."""

    def __init__(self, optimizer: torch.optim.Optimizer, options=None):
        self.options = options
        self.budget_used: Callable[[int], float] = lambda step: 0.0
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: self.factor(s))

    def factor(self, step: int) -> float:
        return 1.0

    def step(self) -> None:
        """Called after every update."""
        self.scheduler.step()

    def after_evaluation(self, improved: bool) -> None:
        """Called after every evaluation that scored the dev set; ``improved``: a new best."""

    def state_dict(self) -> dict:
        return self.scheduler.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.scheduler.load_state_dict(state)


@SCHEDULES.register("constant")
class Constant(Schedule):
    """``train.lr`` throughout."""


@dataclass
class NoamOptions:
    warmup_steps: int = number(4000, 0)


def noam_factor(step: int, warmup: int) -> float:
    """Inverse-square-root warm-up (Vaswani et al. 2017), 1.0 at the end of warm-up."""
    step = max(step, 1)
    return min(step / warmup, (warmup / step) ** 0.5) if warmup else step**-0.5


@SCHEDULES.register("noam", options=NoamOptions)
class Noam(Schedule):
    """A linear warm-up to ``train.lr`` over ``warmup_steps`` updates, then 1/sqrt(step)
    (Vaswani et al. 2017): ``train.lr`` is the peak rate."""

    def factor(self, step: int) -> float:
        return noam_factor(step + 1, self.options.warmup_steps)


@dataclass
class PlateauOptions:
    decay: float = number(0.5, 0.0, 1.0, low_open=True)  # factor applied when the dev score stops improving
    patience: int = number(0, 0)  # evaluations in a row without a new best that leave the rate as it is


@SCHEDULES.register("plateau", options=PlateauOptions)
class Plateau(Schedule):
    """The rate is multiplied by ``decay`` once ``patience`` + 1 evaluations in a row have not
    been a new best (torch's ReduceLROnPlateau; patience 0: after every one), and the count
    starts again."""

    def __init__(self, optimizer: torch.optim.Optimizer, options=None):
        super().__init__(optimizer, options)
        self.bad = 0  # evaluations since the last new best or the last decay

    def after_evaluation(self, improved: bool) -> None:
        self.bad = 0 if improved else self.bad + 1
        if self.bad > self.options.patience:
            self.bad = 0
            factor = self.options.decay
            self.scheduler.base_lrs = [lr * factor for lr in self.scheduler.base_lrs]
            for group, lr in zip(self.scheduler.optimizer.param_groups, self.scheduler.get_last_lr()):
                group["lr"] = lr * factor

    def state_dict(self) -> dict:
        return {**super().state_dict(), "bad_evaluations": self.bad}

    def load_state_dict(self, state: dict) -> None:
        state = dict(state)
        self.bad = state.pop("bad_evaluations", 0)
        super().load_state_dict(state)


@dataclass
class BudgetOptions:
    warmup: float = number(0.03, 0.0, 1.0, high_open=True)  # the budget's share over which the rate rises to train.lr
    final: float = number(0.0, 0.0, 1.0)  # the rate at the budget's end, as a share of train.lr


def budget_factor(used: float, warmup: float, final: float) -> float:
    """The rate's factor when ``used`` of the budget is spent: a linear rise over ``warmup``, then
    a linear fall to ``final`` at the end."""
    used = min(max(used, 0.0), 1.0)
    if used < warmup:
        return max(used / warmup, 1e-3)
    return final + (1.0 - final) * (1.0 - used) / (1.0 - warmup)


@SCHEDULES.register("budget", options=BudgetOptions)
class BudgetSchedule(Schedule):
    """A rate that follows the run's budget (budgeted training, Li, Yumer & Ramanan 2020): a
    linear warm-up over ``warmup`` of it, then a linear fall to ``final`` x ``train.lr`` where it
    ends. The budget is the larger share spent of train.max_minutes (the run's clock) and of
    train.max_steps, or of the epochs' updates when neither is set; so a short ``--max-minutes``
    run spends its last updates at a small rate instead of stopping at the top one. Early stops
    (train.patience) still end a run before its budget."""

    def factor(self, step: int) -> float:
        return budget_factor(self.budget_used(step), self.options.warmup, self.options.final)


def build_schedule(optimizer: torch.optim.Optimizer, tc) -> Schedule:
    """The schedule ``tc.schedule`` names."""
    return SCHEDULES.build(tc.schedule, "train.schedule", optimizer)


def check_train(tc):
    """``tc`` (a TrainConfig) with its optimizer and schedule checked and their options written out."""
    import dataclasses

    return dataclasses.replace(
        tc,
        optimizer=OPTIMIZERS.resolve(tc.optimizer, "train.optimizer"),
        schedule=SCHEDULES.resolve(tc.schedule, "train.schedule"),
    )
