"""What a task adds to the engine, in one style (``engine.add(*items)``): cadence hooks
(samples, evaluation, EMA, user callbacks) and state saved in every checkpoint; and best-model
keeping, for every recipe."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Optional

from ..errors import ConfigError

# When a hook runs, relative to an update of the progress optimizer (a run step):
UPDATE = "update"  # after every update, before logging (EMA, local SGD)
STEP = "step"  # on its cadence, before that step's checkpoint (evaluation)
AFTER_CHECKPOINT = "after_checkpoint"  # on its cadence, after the checkpoint and not on a signal stop:
#                                        outputs that may fail (image grids) must never cost a checkpoint
BEFORE_SAVE = "before_save"  # before every checkpoint (e.g. average local-SGD replicas)
WHEN = (UPDATE, STEP, AFTER_CHECKPOINT, BEFORE_SAVE)


@dataclass
class Hook:
    """``fn()`` at ``when``; for the cadence kinds, when one of the conditions holds."""

    fn: Callable[[], None]
    every: int = 0  # every k-th step (0: never on a count)
    at_end: bool = True  # after the last step
    at_epoch_end: bool = False  # after the update that ends a pass over the training data
    when: str = STEP

    def __post_init__(self) -> None:
        if self.when not in WHEN:
            raise ConfigError(f"Hook(when={self.when!r}): must be one of {', '.join(WHEN)}")

    def due(self, step: int, done: bool, epoch_end: bool) -> bool:
        return (
            (self.every > 0 and step % self.every == 0) or (self.at_end and done) or (self.at_epoch_end and epoch_end)
        )


@dataclass
class State:
    """Something saved into every checkpoint and restored on resume, besides weights and optimizers.

    ``State(name, obj)``: ``obj.state_dict()`` (a flat dict of tensors) as ``NAME.safetensors``,
    restored with ``obj.load_state_dict`` (an EMA copy, image pools). ``State(name, write=...,
    read=...)``: a file of the task's own, ``write(folder)`` / ``read(folder)``.
    """

    name: str
    obj: Any = None
    write: Optional[Callable[[Path], None]] = None
    read: Optional[Callable[[Path], None]] = None

    def __post_init__(self) -> None:
        if (self.obj is None) == (self.write is None or self.read is None):
            raise ConfigError(
                f"State({self.name!r}): give either an object with state_dict/load_state_dict, or both write and read"
            )


class BestKeeper:
    """Keeps the best value of one metric in ``TrainState.best_metric`` (so it survives a resume)
    and calls ``export()`` whenever it improves. A non-finite value is never the best; ``accept``
    can refuse more (e.g. an evaluation whose other metrics are not finite).

    ``ties(metrics, best)`` says when a later evaluation that scored worse is indistinguishable from
    the best one (e.g. the best value lies inside the later one's confidence interval): the later
    model is exported instead, since it trained longer, while ``best_metric`` keeps the lowest (or
    highest) value seen, so a run of small ties cannot drift away from the best."""

    def __init__(
        self,
        state,
        key: str,
        greater_is_better: bool,
        export: Callable[[Dict[str, float]], None],
        accept: Optional[Callable[[Dict[str, float]], bool]] = None,
        ties: Optional[Callable[[Dict[str, float], float], bool]] = None,
    ) -> None:
        self.state = state
        self.key = key
        self.greater_is_better = greater_is_better
        self.export = export
        self.accept = accept
        self.ties = ties

    def improved(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        best = self.state.best_metric
        if best is None or math.isnan(best):
            return True
        return value > best if self.greater_is_better else value < best

    def tied(self, metrics: Dict[str, float]) -> bool:
        # Asked only when the value did not improve: a finite value then means a finite best.
        if self.ties is None or not math.isfinite(metrics[self.key]):
            return False
        return bool(self.ties(metrics, self.state.best_metric))

    def update(self, metrics: Dict[str, float]) -> bool:
        """True when ``metrics[key]`` is the new best or ties it (then it was exported)."""
        if self.accept is not None and not self.accept(metrics):
            return False
        value = metrics[self.key]
        if self.improved(value):
            self.state.best_metric = value
        elif not self.tied(metrics):
            return False
        self.export(metrics)
        return True
