"""Optimisers and learning-rate schedules from the TrainConfig."""
from __future__ import annotations

import torch


def build_optimizer(params, cfg) -> torch.optim.Optimizer:
    """Adam or SGD as ``cfg.optimizer`` says."""
    params = [p for p in params if p.requires_grad]
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    return torch.optim.Adam(params, lr=cfg.lr, betas=tuple(cfg.adam_betas), eps=cfg.adam_eps,
                            weight_decay=cfg.weight_decay, foreach=True)


def noam_factor(step: int, warmup: int) -> float:
    """Inverse-square-root warm-up (Vaswani et al. 2017), 1.0 at the end of warm-up."""
    step = max(step, 1)
    return min(step / warmup, (warmup / step) ** 0.5) if warmup else step ** -0.5


def build_scheduler(optimizer: torch.optim.Optimizer, cfg):
    """A LambdaLR for ``constant`` and ``noam``; ``plateau`` is applied by the trainer after
    each evaluation (the factor ``cfg.lr_decay``)."""
    if cfg.schedule == "noam":
        return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: noam_factor(s + 1, cfg.warmup_steps))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
