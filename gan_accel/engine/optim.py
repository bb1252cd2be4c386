"""Optimizer and scheduler construction, once for every recipe."""

from __future__ import annotations

import math
from typing import Callable, Iterable, List

import torch
import torch.nn as nn

from .recipe import SCHEDULES, LRSchedule


def fused_or_foreach(cls, params, **kwargs) -> torch.optim.Optimizer:
    """The fused kernel where the device has it (CPU and CUDA do): one kernel for all tensors, and
    it can skip a non-finite update on the device without a host sync (see ``apply_update``);
    otherwise the foreach implementation."""
    try:
        return cls(params, fused=True, **kwargs)
    except (RuntimeError, ValueError):
        return cls(params, foreach=True, **kwargs)


def parameters_of(modules: Iterable[nn.Module]) -> List[nn.Parameter]:
    return [p for m in modules for p in m.parameters() if p.requires_grad]


def adam(lr: float, betas=(0.9, 0.999), **kwargs) -> Callable[[List[nn.Module]], torch.optim.Optimizer]:
    """``Optimizer.make`` for Adam over all parameters of the optimizer's networks."""
    return lambda modules: fused_or_foreach(torch.optim.Adam, parameters_of(modules), lr=lr, betas=betas, **kwargs)


def build_scheduler(schedule: LRSchedule, optimizer, num_processes: int):
    """A prepared scheduler steps ``num_processes`` times per optimizer update (Accelerate steps it
    once per process so that a schedule written for one process over the unsharded data ends on
    time), so the lengths are counted in those ticks: the schedule then ends exactly at the last
    update for any number of processes. Build it on the RAW optimizer and prepare both together
    (a scheduler is bound to the optimizer object it was built on)."""
    from transformers import get_scheduler

    if schedule.length is not None:
        schedule = LRSchedule("custom", factor=curve_factor(schedule.kind, schedule.warmup_updates, schedule.length))
    if schedule.kind == "custom":
        factor = schedule.factor
        P = num_processes
        return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda tick: factor(tick // P))
    return get_scheduler(
        SCHEDULES[schedule.kind],
        optimizer,
        num_warmup_steps=schedule.warmup_updates * num_processes,
        num_training_steps=schedule.total_updates * num_processes,
    )


def curve_factor(kind: str, warmup_updates: int, total_updates: Callable[[], int]) -> Callable[[int], float]:
    """The multiplier of the initial learning rate after ``n`` updates on transformers'
    constant-with-warm-up, linear and cosine curves, with the length read at each call (a
    ``LRSchedule.length``: a budgeted run's length is known only after it has measured itself)."""

    def factor(n: int) -> float:
        if n < warmup_updates:
            return n / max(1, warmup_updates)
        if kind == "constant":
            return 1.0
        progress = (n - warmup_updates) / max(1, total_updates() - warmup_updates)
        if kind == "linear":
            return max(0.0, 1.0 - progress)
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))

    return factor
