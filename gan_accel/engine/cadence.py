"""What a task adds to the engine, in one style (``engine.add(*items)``): cadence hooks
(samples, evaluation, EMA, user callbacks) and state saved in every checkpoint; and best-model
keeping, for every recipe."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

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


LAST = "last"  # TrainState.best_key when no metric selects any more: the last generator is kept


class BestKeeper:
    """Keeps the best value of one metric in ``TrainState.best_metric`` (so it survives a resume)
    and calls ``export()`` whenever it improves. A non-finite value is never the best; ``accept``
    can refuse more (e.g. an evaluation whose other metrics are not finite).

    ``ties(metrics, key, best)`` says when a later evaluation that scored worse is indistinguishable
    from the best one (e.g. the best value lies inside the later one's confidence interval): the
    later model is exported instead, since it trained longer, while ``best_metric`` keeps the lowest
    (or highest) value seen, so a run of small ties cannot drift away from the best.

    ``fallbacks`` and ``saturated``: a metric can stop ranking (a distance no larger than between
    two sets of real images). ``saturated(metrics)`` names the keys saturated in an evaluation; the
    first evaluation that names a key records its step in ``TrainState.saturated``, and from then
    on that key never selects again (near its floor it would flip in and out). The choice falls to
    the first of ``(key, *fallbacks)`` not saturated and present in the evaluation, whose best starts
    at the kept model's own value of it (``TrainState.best_values``: the kept evaluation's values of
    every selecting key, so the kept model is weighed by the new metric, not forgotten); when none is
    left, every evaluation with finite values is exported (the last model is kept).
    ``TrainState.best_key`` names the selecting key ("" before any switch: ``key``), so a resume
    continues with the same metric and best value."""

    def __init__(
        self,
        state,
        key: str,
        greater_is_better: bool,
        export: Callable[[Dict[str, float]], None],
        accept: Optional[Callable[[Dict[str, float]], bool]] = None,
        ties: Optional[Callable[[Dict[str, float], str, float], bool]] = None,
        fallbacks: Sequence[str] = (),
        saturated: Optional[Callable[[Dict[str, float]], Iterable[str]]] = None,
    ) -> None:
        self.state = state
        self.key = key
        self.keys = (key, *fallbacks)
        self.greater_is_better = greater_is_better
        self.export = export
        self.accept = accept
        self.ties = ties
        self.saturated = saturated
        # A keeper of one metric that never saturates reads and writes best_metric only.
        self.switches = bool(fallbacks) or saturated is not None
        self.newly_saturated: List[str] = []  # keys the last update saw saturate for the first time

    @property
    def selecting(self) -> Optional[str]:
        """The key that picks the kept model now; None: none is left, the last model is kept."""
        best_key = self.state.best_key
        return self.key if not best_key else (None if best_key == LAST else best_key)

    def improved(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        best = self.state.best_metric
        if best is None or math.isnan(best):
            return True
        return value > best if self.greater_is_better else value < best

    def tied(self, metrics: Dict[str, float], key: str) -> bool:
        # Asked only when the value did not improve: a finite value then means a finite best.
        if self.ties is None or not math.isfinite(metrics[key]):
            return False
        return bool(self.ties(metrics, key, self.state.best_metric))

    def _note_saturation(self, metrics: Dict[str, float]) -> List[str]:
        newly = [k for k in (self.saturated(metrics) if self.saturated else ()) if k not in self.state.saturated]
        for k in newly:
            self.state.saturated[k] = self.state.step
        return newly

    def _select(self, metrics: Dict[str, float]) -> Optional[str]:
        """The selecting key for this evaluation; a switch starts its best at the kept model's value."""
        current = self.selecting
        if current is not None and current not in self.state.saturated and current in metrics:
            return current
        key = next((k for k in self.keys if k not in self.state.saturated and k in metrics), None)
        if key != current:
            self.state.best_key = key or LAST
            self.state.best_metric = self.state.best_values.get(key, math.nan) if key else math.nan
        return key

    def _export(self, metrics: Dict[str, float]) -> None:
        if self.switches:
            values = {k: float(metrics[k]) for k in self.keys if k in metrics and math.isfinite(metrics[k])}
            self.state.best_values = values
        self.export(metrics)

    def update(self, metrics: Dict[str, float]) -> bool:
        """True when the selecting key's value is the new best or ties it, or, with no key left,
        when every value is finite (then the model was exported)."""
        self.newly_saturated = self._note_saturation(metrics)
        if self.accept is not None and not self.accept(metrics):
            return False
        key = self._select(metrics) if self.switches else self.key
        if key is None:
            if not all(math.isfinite(metrics[k]) for k in self.keys if k in metrics):
                return False
        elif self.improved(metrics[key]):
            self.state.best_metric = metrics[key]
        elif not self.tied(metrics, key):
            return False
        self._export(metrics)
        return True
