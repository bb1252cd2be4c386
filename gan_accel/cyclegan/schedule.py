"""Learning-rate schedules of the CycleGAN recipe, counted in optimizer updates.

``reference``: the CycleGAN schedule: the initial rate for ``n_epochs`` epochs, then linear decay
to 0 over ``n_epochs_decay`` epochs (the reference steps it per epoch; here per update, the same
line sampled finer). ``constant``/``linear``/``cosine``: the toolkit's warm-up schedules from
``transformers.get_scheduler`` over the whole run.

A prepared scheduler steps once per process for every optimizer update (Accelerate's default
``step_scheduler_with_optimizer=True`` with ``split_batches=False``), so every length below is
multiplied by ``num_processes``: the schedule then ends on the last update whatever the number of
processes.
"""
from __future__ import annotations

import torch
from transformers import get_scheduler

SCHEDULERS = ("reference", "constant", "linear", "cosine")


def reference_factor(update: int, constant_updates: int, decay_updates: int) -> float:
    """The multiplier of the initial rate for ``update`` (0-based): 1 for the first
    ``constant_updates``, then a straight line that reaches 0 after ``decay_updates`` more."""
    if decay_updates <= 0:
        return 1.0
    return max(0.0, 1.0 - max(0, update - constant_updates) / decay_updates)


def build_scheduler(name: str, optimizer: torch.optim.Optimizer, *, constant_updates: int, decay_updates: int,
                    total_updates: int, warmup_updates: int, num_processes: int):
    P = num_processes
    if name == "reference":
        return torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda tick: reference_factor(tick // P, constant_updates, decay_updates))
    kind = {"constant": "constant_with_warmup", "linear": "linear", "cosine": "cosine"}[name]
    return get_scheduler(kind, optimizer, num_warmup_steps=warmup_updates * P, num_training_steps=total_updates * P)
