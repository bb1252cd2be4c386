"""The loop's counters: everything besides model/optimizer/scheduler state that a resume needs."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Dict


@dataclass
class TrainState:
    step: int = 0  # updates of the recipe's progress optimizer (G updates on the GAN path)
    micro_step: int = 0  # batches consumed since the start (drives per-step noise seeds)
    epoch: int = 0  # current pass over the data
    epoch_start: int = 0  # samples (over all processes) of this epoch already consumed
    nonfinite_total: int = 0  # updates skipped for non-finite losses/gradients
    nonfinite_streak: int = 0  # consecutive skipped updates
    best_metric: float = float("nan")
    # Which metric picks the kept model and what it knows (engine.cadence.BestKeeper): "" = its
    # first key (checkpoints from before this field); the kept evaluation's values of each selecting
    # key; the step at which each metric first saturated.
    best_key: str = ""
    best_values: Dict[str, float] = field(default_factory=dict)
    saturated: Dict[str, int] = field(default_factory=dict)
    windows: int = 0  # update windows completed (a window: one update's worth of micro-batches)
    updates: Dict[str, int] = field(default_factory=dict)  # completed updates per optimizer name

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "TrainState":
        if "d_updates" in data and "updates" not in data:
            # A GAN checkpoint from before per-optimizer counters: d_updates counted D's updates
            # (one per window) and step G's.
            data = {
                **data,
                "updates": {"D": data["d_updates"], "G": data.get("step", 0)},
                "windows": data["d_updates"],
            }
        # None is how a non-finite value (best_metric before any evaluation) is stored in JSON.
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names and v is not None})
