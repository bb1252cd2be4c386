"""What a phase's loss function sees: the networks, this micro-batch, the counters, and values
shared between phases (one forward serving two phases)."""

from __future__ import annotations

from typing import Any, Dict, FrozenSet


class Nets(dict):
    """Prepared networks by name, also as attributes: ``nets.G``."""

    def __getattr__(self, name: str):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class Step:
    """One micro-batch of one update window.

    ``step["fake"] = ...`` / ``step["fake"]``: values shared by the phases of this micro-batch
    (the recipe's ``inputs`` fills them first). ``runs("G")``: whether phase G runs in this
    window (e.g. keep G's graph only when G trains on this forward).
    """

    __slots__ = ("nets", "batch", "micro_step", "window", "updates", "accelerator", "_active", "_values")

    def __init__(
        self,
        nets: Nets,
        batch: Any,
        micro_step: int,
        window: int,
        updates: Dict[str, int],
        accelerator,
        active: FrozenSet[str],
    ) -> None:
        self.nets = nets  # prepared networks by name
        self.batch = batch  # this process's micro-batch, as the loader gave it
        self.micro_step = micro_step  # micro-batches consumed before this one (seeds per-step randomness)
        self.window = window  # update windows completed before this one
        self.updates = updates  # completed updates per optimizer name
        self.accelerator = accelerator
        self._active = active
        self._values: Dict[str, Any] = {}

    def runs(self, phase: str) -> bool:
        return phase in self._active

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._values[key] = value

    def update(self, values: Dict[str, Any]) -> None:
        self._values.update(values)
