"""Cadence hooks (samples, evaluation, user callbacks) and best-model keeping, for every recipe."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Dict


@dataclass
class Hook:
    """``fn()`` after an update of the progress optimizer when one of the conditions holds."""

    fn: Callable[[], None]
    every: int = 0             # every k-th step (0: never on a count)
    at_end: bool = True        # after the last step
    at_epoch_end: bool = False  # after the update that ends a pass over the training data

    def due(self, step: int, done: bool, epoch_end: bool) -> bool:
        return (self.every > 0 and step % self.every == 0) or (self.at_end and done) or (self.at_epoch_end and epoch_end)


class BestKeeper:
    """Keeps the best value of one metric in ``TrainState.best_metric`` (so it survives a resume)
    and calls ``export()`` whenever it improves. A non-finite value is never the best."""

    def __init__(self, state, key: str, greater_is_better: bool, export: Callable[[Dict[str, float]], None]) -> None:
        self.state, self.key, self.greater_is_better, self.export = state, key, greater_is_better, export

    def improved(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        best = self.state.best_metric
        if best is None or math.isnan(best):
            return True
        return value > best if self.greater_is_better else value < best

    def update(self, metrics: Dict[str, float]) -> bool:
        """True when ``metrics[key]`` is the new best (then it was exported)."""
        value = metrics[self.key]
        if not self.improved(value):
            return False
        self.state.best_metric = value
        self.export(metrics)
        return True
