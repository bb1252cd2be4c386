"""Learning-rate schedules of the CycleGAN recipe, counted in optimizer updates.

``reference``: the CycleGAN schedule: the initial rate for ``n_epochs`` epochs, then linear decay
to 0 over ``n_epochs_decay`` epochs (the reference steps it per epoch; here per update, the same
line sampled finer). ``constant``/``linear``/``cosine``: the toolkit's warm-up schedules over the
whole run. The engine builds the schedulers (and scales them for the number of processes).
"""

from __future__ import annotations

import functools

from ..engine import LRSchedule

SCHEDULERS = ("reference", "constant", "linear", "cosine")


def reference_factor(update: int, constant_updates: int, decay_updates: int) -> float:
    """The multiplier of the initial rate after ``update`` updates: 1 for the first
    ``constant_updates``, then a straight line that reaches 0 after ``decay_updates`` more."""
    if decay_updates <= 0:
        return 1.0
    return max(0.0, 1.0 - max(0, update - constant_updates) / decay_updates)


def lr_schedule(
    name: str, *, constant_updates: int, decay_updates: int, total_updates: int, warmup_updates: int
) -> LRSchedule:
    if name == "reference":
        factor = functools.partial(reference_factor, constant_updates=constant_updates, decay_updates=decay_updates)
        return LRSchedule("custom", factor=factor)
    return LRSchedule(name, warmup_updates=warmup_updates, total_updates=total_updates)
